"""State shared by several replicas through Redis (or Valkey) when `GRASBOT_REDIS_URL` is set
(docs/deploy.md): conversation memory and reload announcements. Without it, the in-process memory
(grasbot/service/memory.py) and the stamp file are used, as before.

**Memory.** A session's turns are one Redis list (`<prefix>turns:<session id>`), each entry a JSON object with
the vault version it was answered from. Bounds are the in-process memory's, applied atomically by a Lua script
at every write: turns per session (LTRIM), characters per session (oldest dropped first), and age (the key's
TTL, refreshed on write; older turns filtered on read). The oldest vault version whose answers may be kept is
one key (`<prefix>oldest-version`): a reload that removed a note from the public set raises it, and from then
on a turn answered from an older version is refused by the same script that would store it (so a slow
generation that ends after the reload cannot slip its answer in), never returned by a read, and its session's
key deleted.

**Reload announcements.** The vault version is one counter (`<prefix>vault-version`). A reload on any replica
increments it and publishes the new value on `<prefix>reload`; every replica listens and reloads at once, and
also compares the counter with its own version before each answer, so a replica that missed a message (it was
restarting, or Redis was) catches up at its next request.

**Redis down.** Every call has a short timeout. Memory then answers "no history" and keeps nothing (the answer
is given without context; `/health` says `degraded`), announcements fall back to what this replica knows, and
each failure is logged once, not per request.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from grasbot.answer.conversation import Turn
from grasbot.service.state import read_stamp, write_stamp

log = logging.getLogger("grasbot.shared")

__all__ = ["FileAnnouncer", "RedisAnnouncer", "RedisHealth", "RedisMemory", "connect"]


def connect(url: str, timeout: float = 0.5) -> Any:
    """An asyncio Redis client for `url` (`redis://`, `rediss://`, `unix://`), with short timeouts: a replica
    must not hang on a Redis that went away."""
    import redis.asyncio as aioredis

    return aioredis.Redis.from_url(
        url, socket_timeout=timeout, socket_connect_timeout=timeout, health_check_interval=15, decode_responses=False
    )


class RedisHealth:
    """Whether Redis answers one part of the service (memory, announcements, limits): logs the first failure,
    with what the part does meanwhile, and the recovery, not every failing call."""

    def __init__(self, what: str, meanwhile: str = "going on without it") -> None:
        self.what = what
        self.meanwhile = meanwhile
        self.down_since: float | None = None

    def failed(self, exc: BaseException) -> None:
        if self.down_since is None:
            log.warning("redis unreachable for %s (%s): %s", self.what, type(exc).__name__, self.meanwhile)
            self.down_since = time.monotonic()

    def ok(self) -> None:
        if self.down_since is not None:
            log.warning("redis is back for %s", self.what)
            self.down_since = None

    @property
    def status(self) -> str:
        return "ok" if self.down_since is None else "degraded"


# KEYS[1] the session's list, KEYS[2] the oldest kept version.
# ARGV: entry (JSON), its version, its size, max turns, max chars, ttl (ms, 0: none). Returns 1 if kept.
_REMEMBER = """
local oldest = tonumber(redis.call('GET', KEYS[2]) or '0')
if tonumber(ARGV[2]) < oldest then return 0 end
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[4]), -1)
local maxchars = tonumber(ARGV[5])
local entries = redis.call('LRANGE', KEYS[1], 0, -1)
local total = 0
for i = 1, #entries do total = total + cjson.decode(entries[i])['s'] end
local n = #entries
local i = 1
while n > 1 and total > maxchars do
  total = total - cjson.decode(entries[i])['s']
  redis.call('LPOP', KEYS[1])
  i = i + 1
  n = n - 1
end
if tonumber(ARGV[6]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[6]) end
return 1
"""

# KEYS[1] the oldest kept version; ARGV[1] the new floor. Returns the floor now in force.
_RAISE_FLOOR = """
local oldest = tonumber(redis.call('GET', KEYS[1]) or '0')
local wanted = tonumber(ARGV[1])
if wanted > oldest then redis.call('SET', KEYS[1], wanted); return wanted end
return oldest
"""


class RedisMemory:
    """The conversation memory of every replica, in Redis. Same bounds and contract as ConversationMemory,
    with async methods."""

    def __init__(
        self,
        client: Any,
        *,
        max_turns: int = 4,
        max_chars: int = 6000,
        ttl_seconds: float = 1800.0,
        prefix: str = "grasbot:",
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.max_turns = max_turns
        self.max_chars = max_chars
        self.ttl_seconds = ttl_seconds
        self.prefix = prefix
        self._clock = clock
        self._remember = client.register_script(_REMEMBER)
        self._raise_floor = client.register_script(_RAISE_FLOOR)
        self.health = RedisHealth("conversation memory")
        # A floor this replica could not raise (Redis was down during a removing reload): until it is,
        # nothing is read or kept, or turns quoting a note now hidden would come back with Redis.
        self._pending_floor: int | None = None

    @property
    def enabled(self) -> bool:
        return self.max_turns > 0 and self.max_chars > 0

    def _key(self, session_id: str) -> str:
        return f"{self.prefix}turns:{session_id}"

    @property
    def _floor_key(self) -> str:
        return f"{self.prefix}oldest-version"

    async def _settle_floor(self) -> bool:
        if self._pending_floor is None:
            return True
        try:
            await self._raise_floor(keys=[self._floor_key], args=[self._pending_floor])
        except Exception as exc:
            self.health.failed(exc)
            return False
        self._pending_floor = None
        return True

    async def history(self, session_id: str | None) -> list[Turn]:
        if not session_id or not self.enabled or not await self._settle_floor():
            return []
        try:
            async with self.client.pipeline(transaction=True) as pipe:
                pipe.lrange(self._key(session_id), 0, -1)
                pipe.get(self._floor_key)
                raw, floor = await pipe.execute()
        except Exception as exc:  # redis errors, OSError, timeouts: no history, never a failed answer
            self.health.failed(exc)
            return []
        self.health.ok()
        oldest = int(floor or 0)
        horizon = self._clock() - self.ttl_seconds if self.ttl_seconds > 0 else float("-inf")
        turns: list[Turn] = []
        for item in raw[-self.max_turns :]:
            try:
                entry = json.loads(item)
                version, question, answer, at = int(entry["v"]), str(entry["q"]), str(entry["a"]), float(entry["t"])
            except (ValueError, KeyError, TypeError):
                continue  # not ours: ignored
            if version < oldest or at < horizon:
                continue
            turns.append(Turn(question, answer, at))
        return turns

    async def remember(self, session_id: str | None, question: str, answer: str, *, answered_from: int) -> bool:
        if not session_id or not self.enabled or not await self._settle_floor():
            return False
        budget = max(self.max_chars - len(question), 0)
        question, answer = question[: self.max_chars], answer[:budget]
        entry = json.dumps(
            {"v": answered_from, "q": question, "a": answer, "t": self._clock(), "s": len(question) + len(answer)},
            ensure_ascii=False,
        )
        ttl_ms = int(self.ttl_seconds * 1000) if self.ttl_seconds > 0 else 0
        try:
            kept = await self._remember(
                keys=[self._key(session_id), self._floor_key],
                args=[entry, answered_from, len(question) + len(answer), self.max_turns, self.max_chars, ttl_ms],
            )
        except Exception as exc:
            self.health.failed(exc)
            return False
        self.health.ok()
        return bool(int(kept))

    async def forget_answers_before(self, version: int) -> None:
        """Refuse, from now on, every turn answered before `version`, and delete the stored ones."""
        try:
            await self._raise_floor(keys=[self._floor_key], args=[version])
            # Reads already ignore them; deleting them keeps no quote of a note now hidden. Bounded: SCAN
            # walks the keyspace in pages, UNLINK frees in the background.
            async for batch in _batches(self.client.scan_iter(match=f"{self.prefix}turns:*", count=500), 500):
                await self.client.unlink(*batch)
        except Exception as exc:
            # Not raised (or not every key deleted): remembered, and raised before any later read or write.
            self._pending_floor = max(version, self._pending_floor or 0)
            self.health.failed(exc)

    def status(self) -> str:
        return self.health.status


async def _batches(items: Any, size: int) -> Any:
    batch: list[Any] = []
    async for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


class FileAnnouncer:
    """Reload announcements between the workers of one machine: the private stamp file
    (grasbot/service/state.py). The interface RedisAnnouncer has."""

    def __init__(self, stamp_path: Path) -> None:
        self.path = stamp_path

    def current_sync(self) -> str | None:
        return read_stamp(self.path)

    async def current(self) -> str | None:
        return read_stamp(self.path)  # one small file read

    async def announce(self, at_least: int) -> tuple[str | None, int]:
        # In a worker thread: the stamp's lock may be held, and waiting for it on the event loop would
        # freeze every request of this worker, /health included.
        return await asyncio.to_thread(write_stamp, self.path, at_least)

    def listen(self, on_version: Callable[[int], Awaitable[None]]) -> asyncio.Task[None] | None:
        return None  # workers read the stamp before each answer

    def status(self) -> str:
        return "ok"


_ANNOUNCE = """
local v = redis.call('INCR', KEYS[1])
if v < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]); v = tonumber(ARGV[1]) end
redis.call('PUBLISH', KEYS[2], v)
return v
"""


class RedisAnnouncer:
    """The vault version every replica follows: one counter, and a channel that says when it moved.

    Stamps are the version as text (what `stamp_version` reads). An announcement Redis could not take is kept
    and made again before this replica reads the version next, so the other replicas do learn of it."""

    def __init__(self, client: Any, prefix: str = "grasbot:", url: str | None = None) -> None:
        self.client = client
        self.prefix = prefix
        self.url = url  # for the one blocking read at start-up (`current_sync`)
        self.health = RedisHealth("reload announcements")
        self._script = client.register_script(_ANNOUNCE)
        self._pending: int | None = None

    @property
    def _key(self) -> str:
        return f"{self.prefix}vault-version"

    @property
    def channel(self) -> str:
        return f"{self.prefix}reload"

    def current_sync(self, timeout: float = 0.5) -> str | None:
        """The version at start-up, before the event loop runs: one blocking GET with a short timeout."""
        import redis

        if self.url is None:
            return None
        try:
            with redis.Redis.from_url(self.url, socket_timeout=timeout, socket_connect_timeout=timeout) as sync:
                value = sync.get(self._key)
        except Exception as exc:
            self.health.failed(exc)
            return None
        try:
            return str(int(value or 0))
        except ValueError:
            return "0"

    async def version(self) -> int | None:
        """The version announced last, 0 when none ever was, None when Redis cannot say."""
        if self._pending is not None:
            await self.announce(self._pending)
            if self._pending is not None:
                return None
        try:
            value = await self.client.get(self._key)
        except Exception as exc:
            self.health.failed(exc)
            return None
        self.health.ok()
        try:
            return int(value or 0)
        except ValueError:
            return 0

    async def current(self) -> str | None:
        version = await self.version()
        return None if version is None else str(version)

    async def announce(self, at_least: int) -> tuple[str | None, int]:
        """A new version, above every version announced before and at least `at_least`, published to every
        replica: (its stamp, the version). (None, at_least) when Redis cannot take it now (kept, and
        announced again at the next read)."""
        try:
            version = int(await self._script(keys=[self._key, self.channel], args=[at_least]))
        except Exception as exc:
            self.health.failed(exc)
            self._pending = max(at_least, self._pending or 0)
            return None, at_least
        self.health.ok()
        self._pending = None
        return str(version), version

    def status(self) -> str:
        return self.health.status

    def listen(self, on_version: Callable[[int], Awaitable[None]]) -> asyncio.Task[None]:
        """Call `on_version(v)` for every version published by any replica; reconnects by itself. The task
        runs until cancelled."""

        async def run() -> None:
            delay = 0.2
            while True:
                pubsub = self.client.pubsub()
                try:
                    await pubsub.subscribe(self.channel)
                    self.health.ok()  # (listening again after Redis came back)
                    delay = 0.2
                    while True:
                        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                        if message is None:
                            continue
                        try:
                            version = int(message["data"])
                        except (TypeError, ValueError):
                            continue
                        await on_version(version)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    self.health.failed(exc)
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 5.0)
                finally:
                    try:
                        await pubsub.aclose()
                    except Exception:
                        pass

        return asyncio.get_running_loop().create_task(run(), name="grasbot-reload-listener")
