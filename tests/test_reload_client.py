"""The reload client and `vaulttools reload` against a real HTTP server on 127.0.0.1.

`FakeApi` stands in for GrasBot's `POST /reload-vault`: it records every call (and its Authorization header),
answers like the real service (`{"status": "reloaded", "notes": ..., "added": [...], ...}`), and can be
switched to erroring (HTTP 500) or taken down entirely (its port closed) and brought back on the same port.
`tests/test_watch.py` reuses it.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from vaulttools.cli import main
from vaulttools.reload_client import Pusher, ReloadResult, describe_reload, reload_url, reload_vault

REPO = Path(__file__).resolve().parents[1]


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        # a client that timed out (on purpose, in a test) closed its end before the slow answer: not news
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]


class FakeApi:
    """A tiny stand-in for the GrasBot API. `mode`: ``ok`` | ``error`` (500) | ``slow`` (answers after
    `delay` seconds). `down()` closes the port (connection refused), `up()` listens again on the same port."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token
        self.mode = "ok"
        self.delay = 0.0
        self.calls: list[dict] = []
        self._lock = threading.Condition()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        with socket.socket() as probe:  # pick a free port once, so `up()` after `down()` reuses it
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def up(self) -> FakeApi:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                received = time.monotonic()
                with api._lock:
                    mode, delay = api.mode, api.delay
                auth = self.headers.get("Authorization")
                if self.path != "/reload-vault":
                    return self._send(404, {"error": "not_found", "message": f"no route {self.path}"}, None)
                if api.token is not None and auth != f"Bearer {api.token}":
                    return self._send(401, {"error": "unauthorized", "message": "missing or wrong bearer token"}, auth, received)
                if mode == "slow":
                    time.sleep(delay)
                if mode == "error":
                    return self._send(500, {"error": "reload_failed", "message": "the vault could not be read"}, auth, received)
                self._send(200, {"status": "reloaded", "vault_version": len(api.calls) + 1, "notes": 3,
                                 "added": [], "removed": [], "modified": ["a.md"], "elapsed_ms": 1.0}, auth, received)

            def _send(self, status: int, body: dict, auth: str | None, received: float = 0.0) -> None:
                payload = json.dumps(body).encode()
                # Recorded before the answer goes out: a client that has its answer finds its call counted
                # (recorded after, a test reading `calls` right after the answer raced the server's thread).
                with api._lock:
                    api.calls.append({"status": status, "auth": auth, "time": received or time.monotonic()})
                    api._lock.notify_all()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        server = _QuietServer(("127.0.0.1", self.port), Handler)
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def down(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def set_mode(self, mode: str, delay: float = 0.0) -> None:
        with self._lock:
            self.mode, self.delay = mode, delay

    def ok_calls(self) -> list[dict]:
        with self._lock:
            return [c for c in self.calls if c["status"] == 200]

    def wait_calls(self, n: int, timeout: float = 5.0, ok_only: bool = False) -> bool:
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self.ok_calls() if ok_only else self.calls) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)
            return True


@pytest.fixture
def api():
    fake = FakeApi().up()
    yield fake
    fake.down()


def wait_for(predicate, timeout: float = 5.0, step: float = 0.01) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return bool(predicate())


# -- one push -------------------------------------------------------------------------------------------


def test_reload_ok_summarises_the_answer(api: FakeApi) -> None:
    result = reload_vault(api.url)
    assert result.ok and result.status == 200 and result.exit_code == 0
    assert result.data["status"] == "reloaded"
    line = result.summary()
    assert line.startswith("reload ok: version 1, 3 notes (0 added, 1 changed, 0 removed)")
    assert "\n" not in line
    assert len(api.calls) == 1 and api.calls[0]["auth"] is None


def test_token_from_argument_or_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApi(token="s3cret").up()
    try:
        monkeypatch.delenv("GRASBOT_RELOAD_TOKEN", raising=False)
        denied = reload_vault(api.url)
        assert denied.kind == "api-error" and denied.status == 401 and denied.exit_code == 1
        assert "wrong bearer token" in denied.summary() and "s3cret" not in denied.summary()
        assert reload_vault(api.url, "s3cret").ok
        monkeypatch.setenv("GRASBOT_RELOAD_TOKEN", "s3cret")
        assert reload_vault(api.url).ok
        assert [c["auth"] for c in api.calls] == [None, "Bearer s3cret", "Bearer s3cret"]
    finally:
        api.down()


def test_unreachable_and_server_error(api: FakeApi) -> None:
    api.set_mode("error")
    failed = reload_vault(api.url)
    assert failed.kind == "api-error" and failed.status == 500 and failed.retryable
    assert failed.summary() == "reload failed: HTTP 500: the vault could not be read (reload_failed)"
    api.down()
    gone = reload_vault(api.url)
    assert gone.kind == "unreachable" and gone.exit_code == 2 and gone.retryable
    assert gone.summary().startswith(f"reload failed: API unreachable at {api.url}")


def test_read_timeout_is_an_api_error(api: FakeApi) -> None:
    api.set_mode("slow", delay=1.0)
    result = reload_vault(api.url, timeout=0.2)
    assert result.kind == "api-error" and result.status is None and result.retryable
    assert result.summary() == "reload failed: no answer within 0.2 s"  # said once, not "no answer: no answer"


def test_urls() -> None:
    assert reload_url("http://127.0.0.1:8000") == "http://127.0.0.1:8000/reload-vault"
    assert reload_url("https://bot.example/api/") == "https://bot.example/api/reload-vault"
    assert reload_url("http://h:1/reload-vault") == "http://h:1/reload-vault"
    for bad in ("127.0.0.1:8000", "ftp://h/", ""):
        with pytest.raises(ValueError):
            reload_url(bad)


def test_describe_reload_is_tolerant() -> None:
    assert describe_reload(None) == "vault reloaded"
    assert describe_reload({"vault_size": 7}) == "7 notes"
    assert describe_reload({"notes": 1}) == "1 note"
    assert describe_reload({"notes": 2, "changes": {"created": 1, "deleted": ["x"]}}) == "2 notes (1 added, 1 removed)"


# -- the background pusher ------------------------------------------------------------------------------


def test_pusher_coalesces_requests(api: FakeApi) -> None:
    # the push stays in flight for 1.5 s: wide enough that a loaded machine still sends the storm meanwhile
    api.set_mode("slow", delay=1.5)
    events = []
    with Pusher(api.url, on_event=events.append) as pusher:
        pusher.request()
        assert wait_for(lambda: len(api.calls) == 0 and pusher._in_flight, 10.0)
        for _ in range(50):  # a storm of requests while one push is in flight
            pusher.request()
        assert pusher.wait_idle(20.0)
    # one in flight, and exactly one more for everything that was asked meanwhile
    assert len(api.calls) == 2
    assert [e.kind for e in events] == ["ok", "ok"]


def test_pusher_says_down_once_then_pushes_when_back(api: FakeApi) -> None:
    api.down()
    events = []
    with Pusher(api.url, on_event=events.append, backoff=0.05, max_backoff=0.2) as pusher:
        pusher.request()
        assert wait_for(lambda: len(events) >= 4, 20.0)  # it keeps retrying, quietly
        assert pusher.failing
        api.up()
        assert api.wait_calls(1, timeout=20.0)
        assert wait_for(lambda: events[-1].kind == "recovered", 10.0)
        printed = [e for e in events if e.should_print]
    assert [e.kind for e in printed] == ["down", "recovered"]
    assert printed[0].result.kind == "unreachable" and printed[0].retry_in == pytest.approx(0.05)
    assert len(api.calls) == 1  # exactly one push reached the API once it was back


def test_pusher_does_not_retry_a_client_error() -> None:
    api = FakeApi(token="right").up()
    events = []
    try:
        with Pusher(api.url, "wrong", on_event=events.append, backoff=0.05) as pusher:
            pusher.request()
            assert pusher.wait_idle(20.0)
            time.sleep(0.3)  # long enough for several retries, had there been any
            assert len(api.calls) == 1
            assert [e.kind for e in events] == ["down"] and events[0].retry_in is None
            pusher.request()  # the next change tries again, quietly
            assert pusher.wait_idle(20.0)
            assert [e.kind for e in events] == ["down", "retry"]
    finally:
        api.down()


def test_pusher_speaks_again_when_the_failure_changes_kind() -> None:
    """Timeouts retried in the background, then the API refuses the token: that is news, said once."""
    api = FakeApi(token="right").up()
    api.set_mode("slow", delay=1.0)
    events = []
    try:
        with Pusher(api.url, "right", on_event=events.append, backoff=0.05, max_backoff=0.1, timeout=0.2) as pusher:
            pusher.request()
            assert wait_for(lambda: len(events) >= 2, 20.0)  # timed out, retried quietly
            assert [e.kind for e in events[:2]] == ["down", "retry"]
            api.token = "rotated"  # the server's token changed: every push is now refused at once
            assert wait_for(lambda: any(e.result.status == 401 for e in events), 20.0)
            assert pusher.wait_idle(20.0)  # a 401 is not retried: it waits for the next change
            pusher.request()  # the next change fails the same way: quiet again
            assert pusher.wait_idle(20.0)
            printed = [e for e in events if e.should_print]
        assert [(e.kind, e.result.failure) for e in printed] == [("down", "no answer"), ("down", "HTTP 401")]
        assert printed[1].retry_in is None and "wrong bearer token" in printed[1].result.summary()
        assert events[-1].kind == "retry" and events[-1].result.status == 401
    finally:
        api.down()


# -- `vaulttools reload` --------------------------------------------------------------------------------


def test_reload_command_exit_codes(api: FakeApi, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reload", "--api", api.url]) == 0
    assert capsys.readouterr().out.startswith("reload ok: version 1, 3 notes")
    api.set_mode("error")
    assert main(["reload", "--api", api.url, "--json"]) == 1
    body = json.loads(capsys.readouterr().out)
    assert body["ok"] is False and body["status"] == 500 and body["kind"] == "api-error"
    api.down()
    assert main(["reload", "--api", api.url]) == 2
    assert "API unreachable" in capsys.readouterr().err
    assert main(["reload", "--api", "not a url"]) == 2
    assert "--api" in capsys.readouterr().err


def test_reload_command_subprocess_uses_env_token(monkeypatch: pytest.MonkeyPatch) -> None:
    api = FakeApi(token="t0k").up()
    try:
        env = {"GRASBOT_RELOAD_TOKEN": "t0k", "PATH": "/usr/bin:/bin"}
        done = subprocess.run(
            [sys.executable, "-m", "vaulttools.cli", "reload", "--api", api.url],
            capture_output=True, text=True, timeout=30, env=env, cwd=REPO,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("reload ok:") and done.stdout.count("\n") == 1
        assert "t0k" not in done.stdout + done.stderr
        assert api.calls[0]["auth"] == "Bearer t0k"
    finally:
        api.down()


def test_result_to_dict_has_no_secrets() -> None:
    result = ReloadResult("ok", "http://h/reload-vault", status=200, data={"notes": 1})
    assert result.to_dict()["summary"] == "reload ok: 1 note (0 ms)"
