"""Short conversation memory: the last few question/answer turns of each `session_id`.

The front-end sends an anonymous `session_id` per browser tab; the last turns of that session go into the
next prompt so a follow-up ("et en quel langage ?") makes sense. Memory is bounded three ways so a visitor
cannot grow the server: turns per session, characters per session, age of a turn; and the number of sessions
held at once (least recently used dropped first). Sessions never see each other's turns.

Memory lives in the process: with several workers a session's turns are in the worker that answered
(see docs/service.md); losing them only makes a follow-up less precise.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from grasbot.answer.conversation import Turn

__all__ = ["ConversationMemory", "Turn"]


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
        self._sessions: OrderedDict[str, list[Turn]] = OrderedDict()
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
            return list(fresh)

    def remember(self, session_id: str | None, question: str, answer: str) -> None:
        """Add one turn to the session, then enforce every bound."""
        if not session_id or not self.enabled:
            return
        # A single answer longer than the whole budget is kept cut rather than dropped: the end of a
        # long answer is what a follow-up usually refers to least.
        budget = max(self.max_chars - len(question), 0)
        turn = Turn(question[: self.max_chars], answer[:budget], self._clock())
        with self._lock:
            turns = self._fresh(self._sessions.pop(session_id, []))
            turns.append(turn)
            turns = turns[-self.max_turns :]
            while len(turns) > 1 and sum(t.size for t in turns) > self.max_chars:
                turns.pop(0)
            self._sessions[session_id] = turns  # re-inserted last: most recently used
            while len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)

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

    def _fresh(self, turns: list[Turn]) -> list[Turn]:
        if self.ttl_seconds <= 0:
            return list(turns)
        horizon = self._clock() - self.ttl_seconds
        return [t for t in turns if t.at >= horizon]
