"""Fixtures for the service's tests: fake LLM servers, a Langfuse collector, and real uvicorn servers.

Import with `from tests.service_fixtures import *` in a test module. The server runs `create_app()` in a
thread on 127.0.0.1 with a socket bound to a free port; every log record emitted while it runs is kept in
`server.logs`, so tests can search them. Everything has a timeout: nothing here can hang a test run.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from grasbot.service.app import create_app
from grasbot.service.cli import MAX_REQUEST_HEAD, NoDelayH11Protocol
from grasbot.service.settings import Settings
from grasbot.service.state import lock_path
from tests.fake_ollama import FakeOllama
from tests.fake_openai import FakeOpenAI
from tests.langfuse_collector import LangfuseCollector

REPO = Path(__file__).resolve().parents[1]
SAMPLE_VAULT = REPO / "vault"
CLIENT_TIMEOUT = httpx.Timeout(20.0, connect=5.0)

__all__ = [
    "REPO",
    "SAMPLE_VAULT",
    "LogCapture",
    "RunningServer",
    "closed_port",
    "collector",
    "fake_ollama",
    "fake_openai",
    "grasbot_serve",
    "langfuse_settings",
    "openai_settings",
    "run_server",
    "service_settings",
    "stop_process",
    "service_vault",
    "sse_blocks",
    "sse_events",
    "state_dir_for_tests",
    "write_note",
]


class LogCapture(logging.Handler):
    """Keeps every formatted record (message and traceback) emitted while installed."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))
        self._lock_lines = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = self.format(record)
        except Exception:  # noqa: BLE001
            text = f"{record.levelname} {record.name} <unformattable {record.msg!r}>"
        with self._lock_lines:
            self.lines.append(text)

    def text(self) -> str:
        with self._lock_lines:
            return "\n".join(self.lines)


_LOGGERS = ("grasbot", "uvicorn", "uvicorn.error", "uvicorn.access", "langfuse", "httpx", "opentelemetry")


@dataclass
class RunningServer:
    url: str
    app: Any
    server: uvicorn.Server
    thread: threading.Thread
    logs: LogCapture
    clients: list[httpx.Client] = field(default_factory=list)

    def client(self, **kwargs: Any) -> httpx.Client:
        c = httpx.Client(base_url=self.url, timeout=CLIENT_TIMEOUT, trust_env=False, **kwargs)
        self.clients.append(c)
        return c

    def async_client(self, **kwargs: Any) -> httpx.AsyncClient:
        return httpx.AsyncClient(base_url=self.url, timeout=CLIENT_TIMEOUT, trust_env=False, **kwargs)

    @property
    def service(self) -> Any:
        return self.app.state.service

    def stop(self) -> None:
        for c in self.clients:
            c.close()
        self.server.should_exit = True
        self.thread.join(timeout=20)


@contextmanager
def run_server(settings: Settings, vault_dir: Path | None = None) -> Iterator[RunningServer]:
    """A real uvicorn server for `create_app(settings, vault_dir)` on a free loopback port, with the HTTP
    protocol and request-head limit of `grasbot serve`."""
    capture = LogCapture()
    root = logging.getLogger()
    levels = {name: logging.getLogger(name).level for name in _LOGGERS}
    # uvicorn's own logging config (any `uvicorn.Config` built with its default `log_config`, in this
    # process, earlier) leaves its loggers not propagating: the capture on the root would miss them.
    propagate = {name: logging.getLogger(name).propagate for name in _LOGGERS}
    root.addHandler(capture)
    for name in _LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if name.startswith("grasbot") else logging.INFO)
        logging.getLogger(name).propagate = True
    # proto must say TCP: asyncio sets TCP_NODELAY on accepted sockets only then, and without it every
    # response waits 40 ms for a delayed ACK (Nagle), which made the tests ten times slower.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    running: RunningServer | None = None
    try:
        app = create_app(settings, vault_dir)
        config = uvicorn.Config(
            app,
            log_config=None,
            lifespan="on",
            http=NoDelayH11Protocol,
            h11_max_incomplete_event_size=MAX_REQUEST_HEAD,
            timeout_graceful_shutdown=5,
            limit_concurrency=1000,
            backlog=2048,
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 15
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the test server did not start:\n" + capture.text())
            time.sleep(0.01)
        running = RunningServer(f"http://127.0.0.1:{port}", app, server, thread, capture)
        yield running
    finally:
        if running is not None:
            running.stop()
            stamp = running.service.stamp_path  # the reload stamp in the state folder, and its lock
            stamp.unlink(missing_ok=True)
            lock_path(stamp).unlink(missing_ok=True)
        sock.close()
        root.removeHandler(capture)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
            logging.getLogger(name).propagate = propagate[name]


def wait_for_health(client: httpx.Client, proc: Any, log_path: Path, timeout: float = 30.0) -> None:
    """Poll `GET /health` until a server started as a subprocess (`proc`) answers; fail with its log if it
    exits or does not answer within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            client.get("/health")
            return
        except httpx.HTTPError:
            assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text(encoding="utf-8")
            time.sleep(0.1)


_STATE_DIR: Path | None = None


def state_dir_for_tests() -> Path:
    """The private state folder of this test run's servers (one per process, never the user's own)."""
    global _STATE_DIR
    if _STATE_DIR is None:
        _STATE_DIR = Path(tempfile.mkdtemp(prefix="grasbot-test-state-"))
        atexit.register(shutil.rmtree, _STATE_DIR, True)
    return _STATE_DIR


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(proc: subprocess.Popen, stop: signal.Signals = signal.SIGTERM, timeout: float = 20) -> None:
    """Stop a server a test started: `stop` (SIGTERM: a clean uvicorn shutdown; nginx's graceful one is
    SIGQUIT), SIGKILL if it hangs past `timeout`, then close the pipes the test read it through."""
    proc.send_signal(stop)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)
    for stream in (proc.stdout, proc.stderr):
        if stream:
            stream.close()


#: Variables of the test runner's environment that must not reach a `grasbot serve` under test.
_SERVICE_PREFIXES = ("LANGFUSE_", "GRASBOT_", "LLM_", "OLLAMA_")


@contextmanager
def grasbot_serve(tmp_path: Path, env: dict[str, str], *args: str) -> Iterator[tuple[httpx.Client, subprocess.Popen, Path]]:
    """`grasbot serve --vault <sample> --port <free> *args` as a real process with `env` over a clean
    environment, once `/health` answers: a client on it, the process and the file of its output."""
    port = closed_port()
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(_SERVICE_PREFIXES)}
    full_env |= {"GRASBOT_STATE_DIR": str(state_dir_for_tests())} | env
    cmd = [sys.executable, "-m", "grasbot.service.cli", "serve", "--vault", str(SAMPLE_VAULT), "--port", str(port), *args]
    log_path = tmp_path / "serve.log"
    with log_path.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, env=full_env, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, text=True)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=CLIENT_TIMEOUT, trust_env=False) as client:
            wait_for_health(client, proc, log_path)
            yield client, proc, log_path
    finally:
        stop_process(proc)


def service_settings(fake: FakeOllama | None, **overrides: Any) -> Settings:
    """Settings for a test server: no `.env`, no Langfuse, short timeouts, the fake Ollama, a state
    folder of the test run's own."""
    base = Settings.from_env(environ={}, env_file=None)
    values: dict[str, Any] = {
        "ollama_url": fake.url if fake is not None else "http://127.0.0.1:9",
        "llm_timeout": 10.0,
        "llm_connect_timeout": 1.0,
        "state_dir": state_dir_for_tests(),
        # Every test request comes from 127.0.0.1: the limits have tests of their own (test_replicas.py)
        "rate_limit": 0,
        "max_generations": 0,
    }
    values.update(overrides)
    return base.with_overrides(**values)


def openai_settings(fake: FakeOpenAI | None, **overrides: Any) -> Settings:
    """Settings for a test server on the OpenAI-compatible backend, pointed at the fake (with its key)."""
    values: dict[str, Any] = {
        "llm_backend": "openai",
        "llm_base_url": fake.base_url if fake is not None else f"http://127.0.0.1:{closed_port()}/v1",
        "llm_api_key": fake.api_key if fake is not None else None,
    }
    return service_settings(None, **(values | overrides))


def langfuse_settings(fake: FakeOllama, collector: LangfuseCollector, **overrides: Any) -> Settings:
    """Settings with tracing on, pointed at the collector. The public key is unique per call: the SDK keeps
    one client per public key for the life of the process, and a test must not reuse a shut-down one."""
    values: dict[str, Any] = {
        "langfuse_public_key": f"pk-lf-test-{uuid.uuid4().hex[:12]}",
        "langfuse_secret_key": f"sk-lf-SECRET-{uuid.uuid4().hex}",
        "langfuse_base_url": collector.url,
        "langfuse_flush_interval": 0.1,
    }
    values.update(overrides)
    return service_settings(fake, **values)


def write_note(root: Path, rel: str, meta: str, body: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{meta.strip()}\n---\n\n{body.strip()}\n", encoding="utf-8")
    return path


def sse_blocks(text: str) -> list[dict[str, Any]]:
    """Every block of a Server-Sent Events body as {field: value} (`data` lines joined, comments under
    ":"), in order, as the wire has them: the opening `retry:`/`id:` block and keep-alive comments too."""
    blocks: list[dict[str, Any]] = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        if not block.strip("\n"):
            continue
        fields: dict[str, Any] = {}
        for line in block.split("\n"):
            name, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if name == "data" and "data" in fields:
                fields["data"] += "\n" + value
            elif name == "":
                fields[":"] = fields.get(":", []) + [value]
            else:
                fields[name] = value
        blocks.append(fields)
    return blocks


def sse_events(text: str) -> list[tuple[str, Any]]:
    """The events a browser would dispatch from a Server-Sent Events body: (event, decoded JSON data)
    pairs; blocks without data (the opening `retry:`, keep-alive comments) dispatch nothing."""
    import json

    return [
        (block.get("event", "message"), json.loads(block["data"]))
        for block in sse_blocks(text)
        if "data" in block
    ]


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllama]:
    with FakeOllama() as fake:
        yield fake


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A fake OpenAI-compatible server that wants an API key."""
    with FakeOpenAI(api_key="sk-test-" + uuid.uuid4().hex) as fake:
        yield fake


@pytest.fixture
def collector() -> Iterator[LangfuseCollector]:
    with LangfuseCollector() as c:
        yield c


@pytest.fixture
def service_vault(tmp_path: Path) -> Path:
    """A writable copy of the bundled sample vault (public and private notes)."""
    if not SAMPLE_VAULT.is_dir():
        pytest.skip("the bundled vault/ is missing")
    dest = tmp_path / "vault"
    shutil.copytree(SAMPLE_VAULT, dest)
    return dest
