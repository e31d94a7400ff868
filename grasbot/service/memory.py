"""Short conversation memory: the last few question/answer turns of each `session_id`.

The server issues the `session_id` (grasbot/service/sessions.py) and the front-end sends it back; the last
turns of that session go into the next prompt so a follow-up ("et en quel langage ?") makes sense. Memory is bounded three ways so a visitor
cannot grow the server: turns per session, characters per session, age of a turn; and the number of sessions
held at once (least recently used dropped first). Sessions never see each other's turns.

Every turn is tagged with the vault version it was answered from. A reload that removes a note from the
public set calls `forget_answers_before(new_version)`: every turn answered before it is forgotten, and a
turn answered from an older version is refused even when its generation ends after the reload (a slow
stream that began before it), since that answer may quote the note and would go back to the model, to
the trace and to the visitor with the next question of its session.

Memory lives in the process: with several workers a session's turns are in the worker that answered
(see docs/service.md); losing them only makes a follow-up less precise.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from grasbot.answer.conversation import Turn

__all__ = ["ConversationMemory", "LocalMemory", "Turn"]


class ConversationMemory:
    """Per-session turns, bounded in count, size and age. Thread-safe."""

    def __init__(
        self,
        max_turns: int = 4,
        max_chars: int = 6000,
        ttl_seconds: float = 1800.0,
        max_sessions: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_turns = max_turns
        self.max_chars = max_chars
        self.ttl_seconds = ttl_seconds
        self.max_sessions = max_sessions
        self._clock = clock
        self._sessions: OrderedDict[str, list[tuple[int, Turn]]] = OrderedDict()  # (vault version, turn)
        self._oldest_version = 0  # turns answered from an older vault version are never kept
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.max_turns > 0 and self.max_chars > 0

    def history(self, session_id: str | None) -> list[Turn]:
        """The session's remembered turns, oldest first (expired ones are forgotten now)."""
        if not session_id or not self.enabled:
            return []
        with self._lock:
            turns = self._sessions.get(session_id)
            if turns is None:
                return []
            fresh = self._fresh(turns)
            if not fresh:
                del self._sessions[session_id]
                return []
            self._sessions[session_id] = fresh
            return [turn for _, turn in fresh]

    def remember(self, session_id: str | None, question: str, answer: str, *, answered_from: int) -> bool:
        """Add one turn, answered from vault version `answered_from`, then enforce every bound.

        False (nothing kept) when a reload since that version removed a note from the public set.
        """
        if not session_id or not self.enabled:
            return False
        # A single answer longer than the whole budget is kept cut rather than dropped: the end of a
        # long answer is what a follow-up usually refers to least.
        budget = max(self.max_chars - len(question), 0)
        turn = Turn(question[: self.max_chars], answer[:budget], self._clock())
        with self._lock:
            if answered_from < self._oldest_version:
                return False
            turns = self._fresh(self._sessions.pop(session_id, []))
            turns.append((answered_from, turn))
            turns = turns[-self.max_turns :]
            while len(turns) > 1 and sum(t.size for _, t in turns) > self.max_chars:
                turns.pop(0)
            self._sessions[session_id] = turns  # re-inserted last: most recently used
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)
            return True

    def forget_answers_before(self, version: int) -> None:
        """Forget every turn answered from a vault version older than `version`, and refuse such turns
        from now on (a generation under way when a reload removed a note ends after it)."""
        with self._lock:
            self._oldest_version = max(self._oldest_version, version)
            self._sessions.clear()

    def forget(self, session_id: str) -> None:
        with self._lock:
            self._sessions.pop(session_id, None)

    def clear(self) -> None:
        with self._lock:
            self._sessions.clear()

    def __len__(self) -> int:
        """Number of sessions currently held."""
        with self._lock:
            return len(self._sessions)

    def _fresh(self, turns: list[tuple[int, Turn]]) -> list[tuple[int, Turn]]:
        kept = [(v, t) for v, t in turns if v >= self._oldest_version]
        if self.ttl_seconds <= 0:
            return kept
        horizon = self._clock() - self.ttl_seconds
        return [(v, t) for v, t in kept if t.at >= horizon]


class LocalMemory:
    """A `ConversationMemory` behind the async interface of `grasbot.service.shared.RedisMemory`, so the
    service awaits either the same way."""

    def __init__(self, memory: ConversationMemory) -> None:
        self.inner = memory

    @property
    def enabled(self) -> bool:
        return self.inner.enabled

    async def history(self, session_id: str | None) -> list[Turn]:
        return self.inner.history(session_id)

    async def remember(self, session_id: str | None, question: str, answer: str, *, answered_from: int) -> bool:
        return self.inner.remember(session_id, question, answer, answered_from=answered_from)

    async def forget_answers_before(self, version: int) -> None:
        self.inner.forget_answers_before(version)

    def status(self) -> str:
        return "ok"
