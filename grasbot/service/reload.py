"""Reload coordination (docs/service.md, `POST /reload-vault`; docs/deploy.md for several workers and
replicas): `VaultReloads`, which re-reads the vault, swaps the snapshot, and keeps every worker of a
deployment on the vault of the last reload any of them made.

Workers of one deployment serve the same vault folder: a reload in one is announced, in a stamp file in the
private state folder (grasbot/service/state.py, `FileAnnouncer`) or through Redis (several machines,
`RedisAnnouncer`, grasbot/service/shared.py), and the other workers catch up before their next answer
(`catch_up`). Versions come from the announcements, so `vault_version` means the same on every worker. One
reload at a time per worker (the lock); a question that finds a newer announcement waits for it, or gets a
503, never an answer from the vault as it was before.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Coroutine
from contextlib import suppress
from typing import Any, Protocol

from grasbot.service.errors import ApiError
from grasbot.service.memory import LocalMemory
from grasbot.service.shared import FileAnnouncer, RedisAnnouncer, RedisMemory
from grasbot.service.state import stamp_version
from grasbot.service.vault_snapshot import VaultSnapshot, changes

# The service's records keep the logger name they have always had: a logging configuration may route by it.
log = logging.getLogger("grasbot.service.api")

#: Longest a question waits for its worker to catch up with a reload announced by another worker
#: (503 `vault_reloading` after: never an answer from the vault as it was before the reload).
FOLLOW_WAIT_SECONDS = 10.0


class Reloadable(Protocol):
    """What a reload reads and changes of the service (grasbot/service/service.py's `Service`)."""

    snapshot: VaultSnapshot
    memory: LocalMemory | RedisMemory

    def read_vault(self, version: int) -> VaultSnapshot:
        """The vault read again, as `version` (in a worker thread; OSError or ValueError if unreadable)."""
        ...

    async def reload_profile(self) -> None: ...

    def profile_view(self) -> dict[str, Any]: ...

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]: ...


class VaultReloads:
    """The reloads of one worker: its own (`reload`), and those announced by others (`catch_up`, and the
    announcements it hears while `listen`ing)."""

    def __init__(self, service: Reloadable, announcer: FileAnnouncer | RedisAnnouncer) -> None:
        self.service = service
        self.announcer = announcer
        # The version is read before the vault: a reload announced while this worker loads is followed.
        # (None: Redis cannot say now; the first question then compares again and reloads if needed.)
        self.stamp_seen = announcer.current_sync() or ""
        self._lock = asyncio.Lock()
        self._following: asyncio.Task[bool] | None = None
        self._listener: asyncio.Task[None] | None = None

    @property
    def first_version(self) -> int:
        """The version of the snapshot loaded at start: the announced one, or 1."""
        return stamp_version(self.stamp_seen) or 1

    def listen(self) -> None:
        """Every replica hears every announced reload at once (Redis pub/sub) and reloads in the background;
        `catch_up` before each answer is what guarantees it (a message can be missed)."""
        self._listener = self.announcer.listen(self._announced)

    async def stop(self) -> None:
        """Stop listening, and cancel a reload that follows another worker's."""
        if self._listener is not None:
            self._listener.cancel()
            with suppress(asyncio.CancelledError):
                await self._listener
        if self._following is not None and not self._following.done():
            self._following.cancel()
            with suppress(asyncio.CancelledError):
                await self._following

    async def catch_up(self) -> None:
        """Make sure this worker serves the vault of the last reload announced by any worker.

        Called before every answer: once `POST /reload-vault` has answered (on any worker), no worker
        answers from the previous vault, which may hold a note made private since. A question that finds a
        newer stamp waits for the reload (one per worker, shared by the questions that wait); if it fails
        or takes over FOLLOW_WAIT_SECONDS, the question gets a 503 rather than an answer from the old vault.
        Reading the stamp is one small file read.
        """
        deadline = time.monotonic() + FOLLOW_WAIT_SECONDS
        while await self._announced_stamp() != self.stamp_seen:
            if self._following is None or self._following.done():
                self._following = self.service.spawn(self._follow())
            following = self._following
            # `asyncio.wait` never cancels the reload: a question that gives up leaves it to finish.
            done, _ = await asyncio.wait({following}, timeout=max(deadline - time.monotonic(), 0))
            if not done:
                raise ApiError(503, "vault_reloading", "the vault is being reloaded; try again in a moment")
            if following.cancelled() or not following.result():
                raise ApiError(
                    503, "vault_unavailable", "the vault changed and could not be reloaded; try again later"
                )

    async def _announced_stamp(self) -> str:
        """What the announcer says now; what this worker has seen when it cannot say (Redis down: each
        replica then serves what it has, and `/health` says degraded)."""
        stamp = await self.announcer.current()
        return self.stamp_seen if stamp is None else stamp

    async def _announced(self, version: int) -> None:
        """A reload announced by any replica (Redis pub/sub): follow it now, in the background."""
        if str(version) != self.stamp_seen and (self._following is None or self._following.done()):
            self._following = self.service.spawn(self._follow())

    async def _follow(self) -> bool:
        """Reload because another worker announced a reload; False if the vault could not be read."""
        async with self._lock:
            stamp = await self._announced_stamp()  # before reading the vault: what it announces is on disk
            if stamp == self.stamp_seen:
                return True  # done meanwhile (by this worker's own reload)
            try:
                await self._reload_locked(announce=False, stamp=stamp)
            except ApiError:
                return False  # already logged; the next question tries again
            return True

    async def reload(self, announce: bool = True) -> dict[str, Any]:
        """Re-read the vault and swap the snapshot (`POST /reload-vault`): the body of its answer."""
        async with self._lock:
            return await self._reload_locked(announce=announce, stamp=await self._announced_stamp())

    async def _reload_locked(self, announce: bool, stamp: str) -> dict[str, Any]:
        service = self.service
        old = service.snapshot
        started = time.perf_counter()
        try:
            new = await asyncio.to_thread(service.read_vault, old.version + 1)
        except (OSError, ValueError) as error:
            log.error("reload failed, still serving vault version %d: %s", old.version, type(error).__name__)
            raise ApiError(
                500,
                "reload_failed",
                f"the vault could not be read ({type(error).__name__}); still serving the previous version",
            ) from None
        if announce:
            # (never on the event loop: grasbot/service/shared.py)
            written, version = await self.announcer.announce(old.version + 1)
            # (if it could not be announced, what is announced now is what this worker has seen)
            stamp = written if written is not None else await self._announced_stamp()
        else:
            version = stamp_version(stamp) or 0
            if version <= old.version:
                # This replica is ahead of what is announced: it reloaded while the announcement could not
                # go out (Redis down), or Redis lost its counter. Its own next version is announced, so that
                # every replica converges on one number: memory's floor (the oldest version whose answers
                # may be kept) compares versions tagged by different replicas, and a replica whose numbers
                # ran ahead would have answers from before a removing reload pass that floor.
                written, version = await self.announcer.announce(old.version + 1)
                stamp = written if written is not None else stamp
        # Versions only go up in a worker: conversation memory tells answers from before a reload by them.
        new = dataclasses.replace(new, version=max(version, old.version + 1))
        await service.reload_profile()
        # The atomic swap: requests in flight keep their reference to `old`.
        service.snapshot = new
        self.stamp_seen = stamp
        elapsed = (time.perf_counter() - started) * 1000
        changed = changes(old, new)
        if changed["removed"]:
            # A note left the public set (made private, deleted): a remembered answer may quote it, and would
            # go back to the model, the trace and the visitor with the next question of its session. Every
            # turn answered from an older snapshot is forgotten, including those of generations still under
            # way, which end after this reload (grasbot/service/memory.py).
            await service.memory.forget_answers_before(new.version)
        log.info(
            "vault reloaded: version %d, %d notes (+%d -%d ~%d), %d problems, %.0f ms",
            new.version, new.size, len(changed["added"]), len(changed["removed"]),
            len(changed["modified"]), len(new.problems), elapsed,
        )  # fmt: skip
        return {
            "status": "reloaded",
            "vault_version": new.version,
            "notes": new.size,
            "by_type": new.by_type,
            **changed,
            "problems": new.problems,
            "unlisted_problems": new.unlisted_problems,
            "elapsed_ms": round(elapsed, 1),
            "profile": service.profile_view(),
        }
