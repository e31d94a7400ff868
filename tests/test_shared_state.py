"""Conversation memory and reload announcements shared through a real redis-server (grasbot/service/shared.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from grasbot.service.shared import RedisAnnouncer, RedisMemory, connect
from tests.redis_server import RedisServer, running_redis


@pytest.fixture
def redis_server(tmp_path: Path):
    with running_redis(tmp_path / "redis") as server:
        yield server


def run(coro):
    return asyncio.run(coro)


def test_a_turn_remembered_by_one_replica_is_read_by_another(redis_server: RedisServer) -> None:
    async def main() -> None:
        a, b = RedisMemory(connect(redis_server.url)), RedisMemory(connect(redis_server.url))
        assert await a.remember("s1", "Parle-moi de Rust", "Il écrit du Rust [rust].", answered_from=1)
        turns = await b.history("s1")
        assert [(t.question, t.answer) for t in turns] == [("Parle-moi de Rust", "Il écrit du Rust [rust].")]
        assert await b.history("s2") == []  # sessions never see each other's turns
        await a.client.aclose()
        await b.client.aclose()

    run(main())


def test_memory_bounds_turns_chars_and_age(redis_server: RedisServer) -> None:
    async def main() -> None:
        now = [1000.0]
        memory = RedisMemory(connect(redis_server.url), max_turns=3, max_chars=100, ttl_seconds=60, clock=lambda: now[0])
        for i in range(5):
            await memory.remember("s", f"q{i}", "a" * 10, answered_from=1)
        assert [t.question for t in await memory.history("s")] == ["q2", "q3", "q4"]
        await memory.remember("s", "long", "b" * 80, answered_from=1)  # 84 chars: older turns are dropped
        assert [t.question for t in await memory.history("s")] == ["q4", "long"]
        assert sum(len(t.question) + len(t.answer) for t in await memory.history("s")) <= 100
        now[0] += 61
        assert await memory.history("s") == []  # too old
        ttl = await memory.client.pttl("grasbot:turns:s")
        assert 0 < ttl <= 60_000  # Redis forgets the key by itself
        await memory.client.aclose()

    run(main())


def test_a_removing_reload_forgets_and_refuses_older_turns_on_every_replica(redis_server: RedisServer) -> None:
    async def main() -> None:
        a, b = RedisMemory(connect(redis_server.url)), RedisMemory(connect(redis_server.url))
        await a.remember("s1", "q", "quote of note N", answered_from=3)
        await b.forget_answers_before(4)  # replica B reloaded: note N is no longer public
        assert await a.history("s1") == []
        assert await a.client.keys("grasbot:turns:*") == []  # deleted, not only hidden
        # a slow generation answered from version 3 ends after the reload, on replica A: refused
        assert not await a.remember("s1", "q", "quote of note N", answered_from=3)
        assert await b.history("s1") == []
        assert await a.remember("s1", "q2", "new answer", answered_from=4)
        assert [t.answer for t in await b.history("s1")] == ["new answer"]
        await a.client.aclose()
        await b.client.aclose()

    run(main())


def test_memory_without_redis_answers_empty_and_recovers(redis_server: RedisServer) -> None:
    async def main() -> None:
        memory = RedisMemory(connect(redis_server.url))
        await memory.remember("s", "q", "a", answered_from=1)
        redis_server.stop()
        assert await memory.history("s") == [] and memory.health.status == "degraded"
        assert not await memory.remember("s", "q2", "a2", answered_from=1)
        redis_server.start()  # empty again: no persistence
        for _ in range(50):
            if await memory.remember("s", "q3", "a3", answered_from=1):
                break
            await asyncio.sleep(0.05)
        assert [t.question for t in await memory.history("s")] == ["q3"] and memory.health.status == "ok"
        await memory.client.aclose()

    run(main())


def test_announcements_reach_every_replica_and_a_late_one_catches_up(redis_server: RedisServer) -> None:
    async def main() -> None:
        a, b = RedisAnnouncer(connect(redis_server.url)), RedisAnnouncer(connect(redis_server.url))
        heard: list[int] = []
        got = asyncio.Event()

        async def on_version(v: int) -> None:
            heard.append(v)
            got.set()

        task = b.listen(on_version)
        await asyncio.sleep(0.2)  # subscribed
        assert await a.version() == 0
        _, v1 = await a.announce(at_least=1)
        await asyncio.wait_for(got.wait(), 5)
        assert heard == [v1] and await b.version() == v1
        assert (await b.announce(at_least=1))[1] == v1 + 1  # always above every earlier version
        assert (await a.announce(at_least=10)) == ("10", 10)
        late = RedisAnnouncer(connect(redis_server.url))  # missed every message: reads the counter
        assert await late.version() == 10
        task.cancel()
        for c in (a, b, late):
            await c.client.aclose()

    run(main())
