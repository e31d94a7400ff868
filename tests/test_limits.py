"""Per-visitor rate limit and the cap on concurrent generations (grasbot/service/limits.py): in one process,
and shared through a real redis-server, including Redis going away and coming back."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from grasbot.service.limits import LimitsConfig, LocalLimits, RedisLimits
from tests.redis_server import RedisServer, running_redis


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_local_rate_limit_allows_the_burst_then_the_steady_rate() -> None:
    clock = Clock()
    limits = LocalLimits(LimitsConfig(rate=6, period=60, burst=3), clock=clock)
    assert [limits.admit_now("a").allowed for _ in range(4)] == [True, True, True, False]
    refused = limits.admit_now("a")
    assert not refused.allowed and refused.reason == "rate" and 0 < refused.retry_after <= 10
    assert refused.retry_after_header == str(int(-(-refused.retry_after // 1)))
    assert limits.admit_now("b").allowed  # visitors do not share a budget
    clock.now += 10  # one interval (60 s / 6) later: one more request
    assert limits.admit_now("a").allowed and not limits.admit_now("a").allowed


def test_local_visitors_are_bounded() -> None:
    limits = LocalLimits(LimitsConfig(rate=1, period=60, burst=1, max_visitors=100))
    for i in range(1000):
        limits.admit_now(f"v{i}")
    assert len(limits._tat) == 100


def test_local_generation_cap() -> None:
    limits = LocalLimits(LimitsConfig(max_generations=2))
    a, ta = limits.acquire_now()
    b, tb = limits.acquire_now()
    c, tc = limits.acquire_now()
    assert a.allowed and b.allowed and not c.allowed and c.reason == "busy" and tc is None
    asyncio.run(limits.release(ta))
    assert limits.acquire_now()[0].allowed


def test_a_local_slot_never_given_back_expires() -> None:
    clock = Clock()
    limits = LocalLimits(LimitsConfig(max_generations=1, lease_seconds=90), clock=clock)
    assert limits.acquire_now()[0].allowed  # never released (a stream that never started)
    assert not limits.acquire_now()[0].allowed
    clock.now += 91
    assert limits.acquire_now()[0].allowed and limits.running == 1


@pytest.fixture
def redis_server(tmp_path: Path):
    with running_redis(tmp_path / "redis") as server:
        yield server


def _client(url: str):
    import redis.asyncio as aioredis

    return aioredis.Redis.from_url(url, socket_timeout=0.5, socket_connect_timeout=0.5)


def test_redis_limits_are_shared_by_two_replicas(redis_server: RedisServer) -> None:
    async def main() -> None:
        config = LimitsConfig(rate=4, period=60, burst=2, max_generations=3)
        one, two = RedisLimits(_client(redis_server.url), config), RedisLimits(_client(redis_server.url), config)
        verdicts = [await one.admit("1.2.3.4"), await two.admit("1.2.3.4"), await one.admit("1.2.3.4")]
        assert [v.allowed for v in verdicts] == [True, True, False]
        assert verdicts[2].reason == "rate" and verdicts[2].retry_after > 0
        assert (await two.admit("5.6.7.8")).allowed
        slots = [await one.acquire(), await two.acquire(), await one.acquire()]
        assert all(a.allowed for a, _ in slots)
        busy, token = await two.acquire()
        assert not busy.allowed and busy.reason == "busy" and token is None
        await one.release(slots[0][1])
        assert (await two.acquire())[0].allowed
        assert one.status() == two.status() == "ok"
        await one.client.aclose()
        await two.client.aclose()

    asyncio.run(main())


def test_a_lease_held_by_a_dead_replica_expires(redis_server: RedisServer) -> None:
    async def main() -> None:
        config = LimitsConfig(max_generations=1, lease_seconds=0.3)
        dead, alive = RedisLimits(_client(redis_server.url), config), RedisLimits(_client(redis_server.url), config)
        assert (await dead.acquire())[0].allowed  # never released: its replica died
        assert not (await alive.acquire())[0].allowed
        await asyncio.sleep(0.4)
        assert (await alive.acquire())[0].allowed
        await dead.client.aclose()
        await alive.client.aclose()

    asyncio.run(main())


def test_redis_down_falls_back_to_local_limits_and_recovers(redis_server: RedisServer) -> None:
    async def main() -> None:
        config = LimitsConfig(rate=100, period=60, burst=50, max_generations=1)
        limits = RedisLimits(_client(redis_server.url), config)
        assert (await limits.admit("v")).allowed and limits.status() == "ok"
        redis_server.stop()
        assert (await limits.admit("v")).allowed  # answered, from the local twin
        assert limits.status() == "degraded"
        first, token = await limits.acquire()
        assert first.allowed and token is not None and token.startswith("local:")
        assert not (await limits.acquire())[0].allowed  # the cap still holds, per replica
        await limits.release(token)
        redis_server.start()
        for _ in range(50):  # the client reconnects by itself
            if (await limits.admit("v")).allowed and limits.status() == "ok":
                break
            await asyncio.sleep(0.05)
        assert limits.status() == "ok"
        await limits.client.aclose()

    asyncio.run(main())


@pytest.mark.parametrize("policy, generations", [("flag", 1), ("retry", 2)])
def test_a_slot_outlasts_the_longest_answer_of_its_policy(tmp_path: Path, policy: str, generations: int) -> None:
    """Under GRASBOT_VERIFY_POLICY=retry an answer may be generated twice, each up to LLM_TIMEOUT: its slot
    must not come back (and go to another visitor, one generation above GRASBOT_MAX_GENERATIONS) while the
    second generation still runs; it still comes back once no answer could be running."""
    from grasbot.service.service import Service
    from tests.service_fixtures import SAMPLE_VAULT, service_settings

    settings = service_settings(None, verify_policy=policy, llm_timeout=60.0, max_generations=1)
    service = Service(settings, SAMPLE_VAULT)
    clock = Clock()
    service.limits._clock = clock  # (LocalLimits: the monotonic clock, here one the test moves)

    async def main() -> None:
        from grasbot.service.errors import ApiError

        assert await service.admit("a") is not None  # an answer starts, and is still generating
        clock.now += generations * 60.0 - 1  # its last generation may still be running
        with pytest.raises(ApiError) as refused:
            await service.admit("b")
        assert refused.value.status == 429
        clock.now += 32  # past any generation's deadline: the slot of a vanished holder comes back
        assert await service.admit("b") is not None

    asyncio.run(main())
