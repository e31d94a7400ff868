"""Admission control for a public endpoint that starts an LLM: a per-visitor rate limit and a global cap on
concurrent generations (docs/service.md, "Limits"; docs/deploy.md for several replicas).

- **Rate limit**: GCRA (the generic cell rate algorithm, the one behind most API gateways): `rate` requests per
  `period` seconds per visitor, with bursts of up to `burst`. One number is kept per visitor (the theoretical
  arrival time), so memory is bounded by the number of visitors seen in the last period, and capped.
- **Concurrency cap**: at most `max_generations` answers being generated at once; one more is refused at once
  (429 with Retry-After) rather than queued, so a flood cannot pile up work behind the model.

Two implementations with one interface: `LocalLimits` (one process) and `RedisLimits` (shared by every replica,
through atomic Lua scripts; a generation slot is a lease that expires, so a replica that dies does not keep its
slots). When Redis cannot be reached, `RedisLimits` falls back to its local twin for that request and says
`degraded`: the service keeps answering, each replica then limiting on its own.
"""

from __future__ import annotations

import math
import os
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from grasbot.service.shared import RedisHealth

__all__ = ["Admission", "Limits", "LimitsConfig", "LocalLimits", "RedisLimits"]


@dataclass(frozen=True, slots=True)
class LimitsConfig:
    #: requests allowed per visitor and period (0: no rate limit)
    rate: int = 30
    period: float = 60.0
    #: requests a visitor may send at once on top of the steady rate
    burst: int = 10
    #: answers generated at once, over all visitors (and, with Redis, all replicas); 0: no cap
    max_generations: int = 8
    #: a generation slot is given back after this long even if its holder vanished (Redis only)
    lease_seconds: float = 180.0
    #: visitors remembered at once by the local limiter (least recently seen dropped first)
    max_visitors: int = 100_000


@dataclass(frozen=True, slots=True)
class Admission:
    """The answer to "may this request start?": allowed, or refused with the seconds to wait."""

    allowed: bool
    retry_after: float = 0.0
    reason: str = ""  # "rate" or "busy" when refused

    @property
    def retry_after_header(self) -> str:
        return str(max(1, math.ceil(self.retry_after)))


class Limits(Protocol):
    name: str

    async def admit(self, visitor: str) -> Admission: ...

    async def acquire(self) -> tuple[Admission, str | None]: ...

    async def release(self, token: str | None) -> None: ...

    def status(self) -> str: ...

    async def close(self) -> None: ...


class LocalLimits:
    """The limits of one process."""

    name = "local"

    def __init__(self, config: LimitsConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self._clock = clock
        self._tat: OrderedDict[str, float] = OrderedDict()  # visitor -> theoretical arrival time
        # token -> when its lease ends: a slot whose holder never gave it back (a stream that never
        # started) comes back by itself
        self._leases: dict[str, float] = {}

    def admit_now(self, visitor: str) -> Admission:
        c = self.config
        if c.rate <= 0:
            return Admission(True)
        now = self._clock()
        interval = c.period / c.rate
        tolerance = interval * max(c.burst, 1)
        tat = max(self._tat.get(visitor, now), now)
        if tat - now > tolerance - interval:
            return Admission(False, tat - now - (tolerance - interval), "rate")
        self._tat[visitor] = tat + interval
        self._tat.move_to_end(visitor)
        while len(self._tat) > c.max_visitors:
            self._tat.popitem(last=False)
        return Admission(True)

    async def admit(self, visitor: str) -> Admission:
        return self.admit_now(visitor)

    def acquire_now(self) -> tuple[Admission, str | None]:
        cap = self.config.max_generations
        now = self._clock()
        for token in [t for t, end in self._leases.items() if end <= now]:
            del self._leases[token]
        if cap > 0 and len(self._leases) >= cap:
            return Admission(False, 2.0, "busy"), None
        token = os.urandom(8).hex()
        self._leases[token] = now + self.config.lease_seconds
        return Admission(True), token

    async def acquire(self) -> tuple[Admission, str | None]:
        return self.acquire_now()

    async def release(self, token: str | None) -> None:
        if token is not None:
            self._leases.pop(token, None)

    @property
    def running(self) -> int:
        return len(self._leases)

    def status(self) -> str:
        return "ok"

    async def close(self) -> None:
        return None


# KEYS[1] = the visitor's key; ARGV = now (ms), interval (ms), tolerance (ms). Returns the ms to wait (0: allowed).
_GCRA = """
local now = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local tolerance = tonumber(ARGV[3])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
if tat - now > tolerance - interval then
  return tat - now - (tolerance - interval)
end
redis.call('SET', KEYS[1], tat + interval, 'PX', math.ceil(tat + interval - now + 1000))
return 0
"""

# KEYS[1] = the slots' sorted set; ARGV = now (ms), lease expiry (ms), cap, token. Returns 1 if taken.
_ACQUIRE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if tonumber(ARGV[3]) > 0 and redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('PEXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2]) - tonumber(ARGV[1])) + 1000)
return 1
"""


class RedisLimits:
    """The same limits shared by every replica through one Redis (or Valkey) server."""

    name = "redis"

    def __init__(self, client: Any, config: LimitsConfig, prefix: str = "grasbot:") -> None:
        self.client = client
        self.config = config
        self.prefix = prefix
        self.local = LocalLimits(config)  # used for a request while Redis cannot be reached
        self._gcra = client.register_script(_GCRA)
        self._acquire = client.register_script(_ACQUIRE)
        self.health = RedisHealth("admission limits", "each replica limits on its own until it is back")

    def _now_ms(self) -> int:
        # Replicas compare times through Redis: a wall clock (not a monotonic one) is shared by machines.
        return int(time.time() * 1000)

    async def admit(self, visitor: str) -> Admission:
        c = self.config
        if c.rate <= 0:
            return Admission(True)
        interval = c.period * 1000 / c.rate
        tolerance = interval * max(c.burst, 1)
        try:
            wait = await self._gcra(keys=[f"{self.prefix}rate:{visitor}"], args=[self._now_ms(), interval, tolerance])
        except Exception as exc:  # redis.exceptions.RedisError, OSError, timeouts: never a 500
            self.health.failed(exc)
            return self.local.admit_now(visitor)
        self.health.ok()
        wait = float(wait)
        return Admission(True) if wait <= 0 else Admission(False, wait / 1000, "rate")

    async def acquire(self) -> tuple[Admission, str | None]:
        c = self.config
        token = os.urandom(12).hex()
        now = self._now_ms()
        try:
            taken = await self._acquire(
                keys=[f"{self.prefix}generations"], args=[now, now + int(c.lease_seconds * 1000), c.max_generations, token]
            )
        except Exception as exc:
            self.health.failed(exc)
            admission, local = self.local.acquire_now()
            return admission, (f"local:{local}" if local else None)
        self.health.ok()
        if not int(taken):
            return Admission(False, 2.0, "busy"), None
        return Admission(True), token

    async def release(self, token: str | None) -> None:
        if token is None:
            return
        if token.startswith("local:"):
            await self.local.release(token.removeprefix("local:"))
            return
        try:
            await self.client.zrem(f"{self.prefix}generations", token)
        except Exception as exc:  # the lease expires by itself
            self.health.failed(exc)

    def status(self) -> str:
        return self.health.status

    async def close(self) -> None:
        return None


