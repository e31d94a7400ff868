"""Two `grasbot serve` replicas sharing a real redis-server (docs/deploy.md): each replica is its own process,
with its own copy of the vault and its own private state folder, so Redis and GRASBOT_SESSION_KEY are all they
share, as on two machines. The LLM is the fake Ollama (tests/fake_ollama.py), which records every prompt."""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.fake_ollama import FakeOllama
from tests.redis_server import RedisServer, free_port  # (RedisServer skips, with the reason, without a binary)
from tests.service_fixtures import SAMPLE_VAULT, fake_ollama, stop_process  # noqa: F401 - fixture

RUST = "Que sait-il faire en Rust ?"
RUST_NOTE = "20-Competences/rust.md"
TOKEN = "tok-replicas"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
TIMEOUT = httpx.Timeout(30.0, connect=5.0)


@dataclass
class Replica:
    name: str
    vault: Path
    port: int
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=TIMEOUT, trust_env=False)

    def ask(self, q: str, session_id: str | None = None) -> httpx.Response:
        params = {"q": q} | ({"session_id": session_id} if session_id else {})
        with self.client() as c:
            return c.get("/ask", params=params)

    def health(self) -> dict:
        with self.client() as c:
            return c.get("/health").json()

    def reload(self) -> dict:
        with self.client() as c:
            r = c.post("/reload-vault", headers=AUTH)
            assert r.status_code == 200, r.text
            return r.json()


@dataclass
class Cluster:
    redis: RedisServer
    replicas: list[Replica] = field(default_factory=list)

    @property
    def a(self) -> Replica:
        return self.replicas[0]

    @property
    def b(self) -> Replica:
        return self.replicas[1]


def _env(fake: FakeOllama, redis_url: str, state: Path, session_key: str, extra: dict[str, str]) -> dict[str, str]:
    prefixes = ("LANGFUSE_", "GRASBOT_", "UVICORN_", "OLLAMA_", "LLM_", "VAULT", "MEMORY_", "SEARCH_", "CORS_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    env.update(
        OLLAMA_URL=fake.url,
        GRASBOT_REDIS_URL=redis_url,
        GRASBOT_STATE_DIR=str(state),
        GRASBOT_RELOAD_TOKEN=TOKEN,
        GRASBOT_RATE_LIMIT="0",
        GRASBOT_MAX_GENERATIONS="0",
        LLM_TIMEOUT="20",
    )
    if session_key:
        env["GRASBOT_SESSION_KEY"] = session_key
    env.update(extra)
    return env


def _wait_ready(replica: Replica, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with replica.client() as c:
                if c.get("/health").status_code == 200:
                    return
        except httpx.HTTPError:
            pass
        if replica.proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"replica {replica.name} did not start:\n" + replica.log.read_text(encoding="utf-8"))
        time.sleep(0.1)


@contextmanager
def cluster(tmp_path: Path, fake: FakeOllama, session_key: str | None = None, **extra: str) -> Iterator[Cluster]:
    """A redis-server and two replicas, A and B: each with its own vault copy and state folder (nothing on
    disk is shared), the same GRASBOT_SESSION_KEY (unless `session_key=""`), and `extra` settings."""
    key = secrets.token_hex(32) if session_key is None else session_key
    redis = RedisServer(tmp_path / "redis").start()
    group = Cluster(redis)
    try:
        for name in ("a", "b"):
            home = tmp_path / name
            vault = home / "vault"
            shutil.copytree(SAMPLE_VAULT, vault, ignore=shutil.ignore_patterns(".vaulttools_cache"))
            port = free_port()
            log = home / "serve.log"
            cmd = [sys.executable, "-m", "grasbot.service.cli", "serve", "--vault", str(vault), "--port", str(port),
                   "--log-level", "warning"]  # fmt: skip
            env = _env(fake, redis.url, home / "state", key, extra)
            with log.open("wb") as out:  # (the child keeps its own descriptor)
                proc = subprocess.Popen(cmd, env=env, cwd=home, stdout=out, stderr=subprocess.STDOUT)
            group.replicas.append(Replica(name.upper(), vault, port, proc, log))
        for replica in group.replicas:
            _wait_ready(replica)
        yield group
    finally:
        for replica in group.replicas:
            stop_process(replica.proc)
        redis.stop()


def _log(replica: Replica) -> str:
    return replica.log.read_text(encoding="utf-8", errors="replace")


def test_a_follow_up_sent_to_b_uses_the_turn_answered_by_a(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.script(reply=lambda body: f"Réponse numéro {len(body['messages'])} sur Rust [rust].")
    with cluster(tmp_path, fake_ollama) as c:
        first = c.a.ask(RUST)
        assert first.status_code == 200, first.text
        session, answer = first.json()["session_id"], first.json()["response"]
        second = c.b.ask("Et en Python ?", session)
        assert second.status_code == 200, second.text
        assert second.json()["session_id"] == session  # B accepts the id A issued: the conversation goes on
        messages = fake_ollama.chat_requests()[-1]["messages"]
        # system, A's turn (question and answer), then B's question
        assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
        assert messages[1]["content"] == RUST and messages[2]["content"] == answer
        # and back on A, the turn B answered is there too
        third = c.a.ask("Et en Go ?", session)
        turns = fake_ollama.chat_requests()[-1]["messages"]
        assert third.json()["session_id"] == session
        assert [m["content"] for m in turns[1:5]] == [RUST, answer, "Et en Python ?", second.json()["response"]]


def test_without_a_shared_session_key_b_starts_a_new_conversation(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    """The reason for GRASBOT_SESSION_KEY: two replicas with state folders of their own sign ids with
    different keys, so B cannot continue A's conversation (and says why at start-up)."""
    with cluster(tmp_path, fake_ollama, session_key="") as c:
        session = c.a.ask(RUST).json()["session_id"]
        second = c.b.ask("Et en Python ?", session).json()
        assert second["session_id"] != session
        assert [m["role"] for m in fake_ollama.chat_requests()[-1]["messages"]] == ["system", "user"]
        assert "GRASBOT_SESSION_KEY is not" in _log(c.b)


def _make_private(vault: Path, rel: str) -> None:
    path = vault / rel
    text = path.read_text(encoding="utf-8")
    assert "visibility: public" in text
    path.write_text(text.replace("visibility: public", "visibility: private"), encoding="utf-8")


def test_a_note_made_private_and_reloaded_on_a_is_never_served_by_b(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    with cluster(tmp_path, fake_ollama) as c:
        before = c.b.ask(RUST)
        assert "rust" in [s["slug"] for s in before.json()["sources"]]
        session = before.json()["session_id"]
        # The new files are deployed to both machines, then the author reloads once, on A.
        for replica in c.replicas:
            _make_private(replica.vault, RUST_NOTE)
        reloaded = c.a.reload()
        assert "rust" in reloaded["removed"]
        fake_ollama.reset()
        after = c.b.ask(RUST, session)  # B's very next question, no wait
        assert after.status_code == 200, after.text
        assert "rust" not in [s["slug"] for s in after.json()["sources"]]
        prompt = fake_ollama.chat_prompts()[-1]
        assert "20-Competences/rust" not in prompt and "[rust]" not in prompt
        # the turn answered from the old vault (which quoted the note) is not given back either
        assert [m["role"] for m in fake_ollama.chat_requests()[-1]["messages"]] == ["system", "user"]
        assert c.b.health()["vault"]["vault_version"] == c.a.health()["vault"]["vault_version"]


def test_300_concurrent_questions_across_both_with_reloads_in_the_middle(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.script(reply="Il écrit du Rust [rust].", delay=0.02)
    questions = [RUST, "Quel est son parcours ?", "Parle-moi du projet de télémétrie solaire", "Il connaît Docker ?"]

    async def run(c: Cluster) -> tuple[list[int], list[int]]:
        limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
        async with (
            httpx.AsyncClient(base_url=c.a.url, timeout=TIMEOUT, limits=limits, trust_env=False) as a,
            httpx.AsyncClient(base_url=c.b.url, timeout=TIMEOUT, limits=limits, trust_env=False) as b,
        ):
            async def ask(i: int) -> int:
                client = a if i % 2 else b
                try:
                    r = await client.get("/ask", params={"q": questions[i % len(questions)]})
                except httpx.HTTPError as exc:
                    return -1 if not isinstance(exc, httpx.TimeoutException) else -2
                return r.status_code

            async def reloads() -> list[int]:
                statuses = []
                for i in range(4):
                    await asyncio.sleep(0.15)
                    r = await (a if i % 2 == 0 else b).post("/reload-vault", headers=AUTH)
                    statuses.append(r.status_code)
                return statuses

            results = await asyncio.wait_for(asyncio.gather(reloads(), *(ask(i) for i in range(300))), timeout=120)
            return list(results[1:]), results[0]

    with cluster(tmp_path, fake_ollama) as c:
        started = time.monotonic()
        statuses, reloaded = asyncio.run(run(c))
        elapsed = time.monotonic() - started
        assert reloaded == [200, 200, 200, 200]
        failed = [s for s in statuses if s != 200]
        assert len(statuses) == 300 and not failed, f"{len(failed)} failed: {sorted(set(failed))}"
        assert elapsed < 120
        # both replicas follow the last of the four reloads (each announced one version more)
        versions = {c.a.health()["vault"]["vault_version"], c.b.health()["vault"]["vault_version"]}
        assert len(versions) == 1 and versions.pop() >= 5
        for replica in c.replicas:
            assert "Traceback" not in _log(replica)


def test_redis_killed_mid_run_answers_go_on_and_memory_resumes(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    with cluster(tmp_path, fake_ollama) as c:
        session = c.a.ask(RUST).json()["session_id"]
        assert c.a.health()["shared"] == {"backend": "redis", "memory": "ok", "announcements": "ok", "limits": "ok"}
        c.redis.stop()  # killed: SIGKILL
        for i in range(6):
            replica = c.replicas[i % 2]
            r = replica.ask("Et en Python ?", session)
            assert r.status_code == 200, r.text
            # without Redis, no history: answered as a first question, never a 500
            assert [m["role"] for m in fake_ollama.chat_requests()[-1]["messages"]] == ["system", "user"]
        for replica in c.replicas:
            health = replica.health()
            assert health["status"] == "degraded"
            assert health["shared"]["backend"] == "redis"
            assert health["shared"]["memory"] == "degraded" and health["shared"]["announcements"] == "degraded"
            assert health["shared"]["limits"] == "degraded"
        # a reload while Redis is down holds for the replica that received it
        assert c.a.reload()["status"] == "reloaded"
        # Redis is back (empty: no persistence), on the same address; no replica is restarted
        c.redis.start()
        deadline = time.monotonic() + 20
        while True:
            fresh = c.a.ask(RUST)
            if fresh.status_code == 200 and c.b.ask("Et en Python ?", fresh.json()["session_id"]).status_code == 200:
                roles = [m["role"] for m in fake_ollama.chat_requests()[-1]["messages"]]
                if roles == ["system", "user", "assistant", "user"]:
                    break  # memory resumed: B's follow-up carries A's turn
            assert time.monotonic() < deadline, "memory did not resume after Redis came back"
            time.sleep(0.2)
        for replica in c.replicas:  # (each part says ok again at its first successful call)
            while (health := replica.health())["status"] != "ok" and time.monotonic() < deadline:
                replica.ask(RUST)
                time.sleep(0.2)
            assert health["shared"] == {"backend": "redis", "memory": "ok", "announcements": "ok", "limits": "ok"}
            assert health["status"] == "ok"
        assert c.a.health()["vault"]["vault_version"] == c.b.health()["vault"]["vault_version"]
        for replica in c.replicas:
            assert "Traceback" not in _log(replica)


def test_the_rate_limit_is_shared_across_replicas(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    with cluster(tmp_path, fake_ollama, GRASBOT_RATE_LIMIT="2", GRASBOT_RATE_BURST="3") as c:
        assert [c.a.ask(RUST).status_code for _ in range(3)] == [200, 200, 200]  # A uses the burst
        refused = c.b.ask(RUST)  # the same visitor (127.0.0.1), on B
        assert refused.status_code == 429, refused.text
        assert refused.json()["error"] == "rate_limited"
        wait = int(refused.headers["Retry-After"])
        assert 1 <= wait <= 30  # one request every 30 s at 2 a minute
        chats = len(fake_ollama.chat_requests())
        assert c.a.ask(RUST).status_code == 429 and len(fake_ollama.chat_requests()) == chats  # nothing generated


def test_the_generation_cap_is_shared_across_replicas(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    fake_ollama.script(reply="Lentement [rust].", delay=3.0)
    with cluster(tmp_path, fake_ollama, GRASBOT_MAX_GENERATIONS="1") as c:

        async def run() -> tuple[httpx.Response, httpx.Response]:
            async with (
                httpx.AsyncClient(base_url=c.a.url, timeout=TIMEOUT, trust_env=False) as a,
                httpx.AsyncClient(base_url=c.b.url, timeout=TIMEOUT, trust_env=False) as b,
            ):
                slow = asyncio.ensure_future(a.get("/ask", params={"q": RUST}))
                deadline = time.monotonic() + 10
                while fake_ollama.chats_in_progress < 1:  # A holds the only slot
                    assert time.monotonic() < deadline and not slow.done()
                    await asyncio.sleep(0.02)
                refused = await b.get("/ask", params={"q": RUST})
                return await slow, refused

        slow, refused = asyncio.run(run())
        assert slow.status_code == 200
        assert refused.status_code == 429 and refused.json()["error"] == "busy"
        assert int(refused.headers["Retry-After"]) >= 1
        fake_ollama.script(reply="Vite [rust].")
        assert c.b.ask(RUST).status_code == 200  # the slot came back when A's answer ended


def test_the_session_key_setting() -> None:
    from grasbot.service.settings import ConfigError, Settings

    key = secrets.token_hex(32)
    settings = Settings.from_env(environ={"GRASBOT_SESSION_KEY": key}, env_file=None)
    assert settings.session_key == key
    view = settings.public_view()
    assert view["session_key_set"] is True and key not in repr(settings) and key not in str(view)
    assert Settings.from_env(environ={}, env_file=None).session_key is None
    with pytest.raises(ConfigError, match="GRASBOT_SESSION_KEY.*at least 32"):
        Settings.from_env(environ={"GRASBOT_SESSION_KEY": "too-short"}, env_file=None)
