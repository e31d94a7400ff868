"""The service's own guards, through a real uvicorn server on 127.0.0.1 and real HTTP: the reload lock never
freezes the event loop and lives in a private folder; every request body is capped; `/reload-vault` never
names a file that may be private; `/health` keeps where things are for a caller with the token; the
start-up says when the reload is open or the LLM down; `/docs` works offline; `grasbot serve` refuses an
open reload on a public address; the reload clients read the token from the environment or a file."""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import pytest

from grasbot.service.cli import is_loopback
from grasbot.service.state import StateDirError, default_state_dir, lock_path, private_dir
from tests.fake_ollama import FakeOllama
from tests.service_fixtures import *  # noqa: F403
from tests.service_fixtures import SAMPLE_VAULT, run_server, service_settings, state_dir_for_tests, write_note

TOKEN = "tok-guards-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGFUSE_", "GRASBOT_", "UVICORN_"))}
    env["GRASBOT_STATE_DIR"] = str(state_dir_for_tests())
    env.update(extra)
    return env


# -- 14.6: the reload lock ------------------------------------------------------------------------------
HOLD_LOCK = """
import fcntl, sys, time
with open(sys.argv[1], "a") as f:
    fcntl.flock(f.fileno(), fcntl.LOCK_EX)
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_a_held_reload_lock_never_blocks_health(fake_ollama: FakeOllama, service_vault: Path, tmp_path: Path) -> None:
    """Another local process holds the stamp's lock while a reload runs: the reload waits for it off the
    event loop, so `/health` (and every question) keeps answering at once; the reload ends once it is free."""
    hold = 2.0
    with run_server(service_settings(fake_ollama, state_dir=tmp_path / "state"), service_vault) as server:
        client = server.client()
        client.get("/health")  # warm: the probe's connection is open
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLD_LOCK, str(lock_path(server.service.stamp_path)), str(hold)],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
            reloaded: list[httpx.Response] = []
            reloading = threading.Thread(target=lambda: reloaded.append(server.client().post("/reload-vault")))
            started = time.monotonic()
            reloading.start()
            waits: list[float] = []
            while time.monotonic() - started < hold - 0.3:
                t0 = time.perf_counter()
                assert client.get("/health").status_code == 200
                waits.append(time.perf_counter() - t0)
                time.sleep(0.02)
            reloading.join(timeout=20)
        finally:
            holder.kill()
            holder.wait(timeout=5)
    assert len(waits) > 10
    # Generous bounds for a loaded machine; before, /health waited for the whole hold (2 s).
    assert statistics.median(waits) < 0.1 and max(waits) < 0.5, waits
    assert reloaded and reloaded[0].status_code == 200 and reloaded[0].json()["status"] == "reloaded"


def test_stamp_lock_and_key_are_private(fake_ollama: FakeOllama, service_vault: Path, tmp_path: Path) -> None:
    """The stamp, its lock and the session key: mode 0600 in a 0700 folder of the service's user, not a
    predictable name in the shared temp folder (any local user could read it or hold its lock)."""
    state = tmp_path / "state"
    with run_server(service_settings(fake_ollama, state_dir=state), service_vault) as server:
        assert server.client().post("/reload-vault").status_code == 200
        stamp = server.service.stamp_path
        files = {p.name: stat.S_IMODE(p.stat().st_mode) for p in state.iterdir()}
        assert stamp.parent == state and stamp.exists() and lock_path(stamp).exists()
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert files and all(mode == 0o600 for mode in files.values()), files
    assert {"session-key", stamp.name, lock_path(stamp).name} <= set(files)
    assert not default_state_dir().is_relative_to(tempfile.gettempdir())


def test_a_state_folder_others_own_or_may_enter(tmp_path: Path) -> None:
    wide = tmp_path / "wide"
    wide.mkdir(mode=0o777)
    os.chmod(wide, 0o777)
    assert private_dir(wide) == wide and stat.S_IMODE(wide.stat().st_mode) == 0o700  # ours: closed
    (tmp_path / "file").write_text("x")
    with pytest.raises(StateDirError, match="GRASBOT_STATE_DIR"):
        private_dir(tmp_path / "file")
    if os.getuid() == 0:  # as root, a folder another user owns can be made here
        theirs = tmp_path / "theirs"
        theirs.mkdir(mode=0o700)
        os.chown(theirs, 65534, 65534)
        with pytest.raises(StateDirError, match="belongs to another user"):
            private_dir(theirs)
    run = subprocess.run(
        [sys.executable, "-m", "grasbot.service.cli", "serve", "--vault", str(SAMPLE_VAULT), "--port", str(free_port())],
        env=clean_env(GRASBOT_STATE_DIR=str(tmp_path / "file")), capture_output=True, text=True, timeout=60,
        cwd=tmp_path,  # not the repository: a developer's .env there is not read
    )  # fmt: skip
    assert run.returncode == 2 and "GRASBOT_STATE_DIR" in run.stderr and "Traceback" not in run.stderr


# -- 14.7: request bodies ---------------------------------------------------------------------------------
def exchange(url: str, head: bytes, body: bytes, wait: float = 5.0) -> bytes:
    """Send `head` and `body` but never finish the body; return what the server answers within `wait` s."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=wait) as sock:
        sock.sendall(head + body)
        received = b""
        try:
            while b"\r\n\r\n" not in received or len(received.split(b"\r\n\r\n", 1)[1]) < 20:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                received += chunk
        except TimeoutError:
            pass
        return received


def test_bodies_over_the_cap_are_413_before_being_read(fake_ollama: FakeOllama) -> None:
    settings = service_settings(fake_ollama, max_body_bytes=4096)
    with run_server(settings, SAMPLE_VAULT) as server:
        client = server.client()
        ok = client.post("/feedback", json={"trace_id": "a" * 32, "value": 1, "comment": "utile " * 100})
        assert ok.status_code == 200
        big = client.post("/feedback", json={"trace_id": "a" * 32, "value": 1, "comment": "x" * 5000})
        assert big.status_code == 413 and big.json() == {
            "error": "body_too_large", "message": "the request body is longer than 4096 bytes", "max_bytes": 4096
        }  # fmt: skip
        # A length announced over the cap: 413 at once, though the body (256 MB) never comes.
        head = (b"POST /feedback HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: 268435456\r\n\r\n")  # fmt: skip
        answer = exchange(server.url, head, b'{"trace_id": ')
        assert answer.startswith(b"HTTP/1.1 413") and b'"body_too_large"' in answer, answer[:200]
        # Chunked, no length: 413 as soon as the cap is passed, the rest of the upload never read.
        chunk = b"%x\r\n%s\r\n" % (1024, b" " * 1024)
        head = b"POST /feedback HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        answer = exchange(server.url, head, chunk * 6)
        assert answer.startswith(b"HTTP/1.1 413") and b'"body_too_large"' in answer, answer[:200]
        # Any route: a question with a body over the cap does no retrieval and no generation.
        before = len(fake_ollama.chat_requests())
        r = client.request("GET", "/ask", params={"q": "Rust ?"}, content=b"x" * 5000)
        assert r.status_code == 413 and len(fake_ollama.chat_requests()) == before
        assert client.get("/health").status_code == 200  # and the server goes on


def test_the_default_cap_fits_a_full_feedback(fake_ollama: FakeOllama) -> None:
    with run_server(service_settings(fake_ollama), SAMPLE_VAULT) as server:
        client = server.client()
        full = {"trace_id": "a" * 32, "value": 0, "comment": "é" * 2000}  # the longest comment, escaped as \\u00e9
        assert client.post("/feedback", json=full).status_code == 200
        assert client.post("/feedback", content=b"[" + b" " * 20_000 + b"]").status_code == 413


# -- 14.12: what /reload-vault and /health say --------------------------------------------------------------
def test_reload_problems_never_name_a_file_that_may_be_private(fake_ollama: FakeOllama, service_vault: Path) -> None:
    """A private note holding a NUL byte (read as binary: its visibility cannot be read) and a private path
    that is not a regular file: counted in `unlisted_problems`, never named; a public note's problem is."""
    (service_vault / "30-Parcours" / "Plan Secret Rachat.md").write_bytes(
        b"---\ntitle: Plan Secret Rachat\nvisibility: private\n---\nMontant \x00 confidentiel\n"
    )
    os.mkfifo(service_vault / "30-Parcours" / "Projet Cache Fusion.md")
    write_note(service_vault, "20-Competences/publique-cassee.md", "title: [cassee\nvisibility: public", "Texte.")
    with run_server(service_settings(fake_ollama), service_vault) as server:
        body = server.client().post("/reload-vault").json()
    text = json.dumps(body, ensure_ascii=False).casefold()
    assert "secret" not in text and "rachat" not in text and "fusion" not in text and "cache" not in text
    assert body["unlisted_problems"] >= 2
    assert any(p["path"] == "20-Competences/publique-cassee.md" for p in body["problems"])


def test_health_keeps_paths_and_pid_for_a_caller_with_the_token(fake_ollama: FakeOllama, service_vault: Path) -> None:
    state = state_dir_for_tests()
    with run_server(service_settings(fake_ollama, reload_token=TOKEN), service_vault) as server:
        client = server.client()
        anonymous = client.get("/health")
        wrong = client.get("/health", headers={"Authorization": "Bearer nope"})
        detailed = client.get("/health", headers=AUTH).json()
    for r in (anonymous, wrong):
        body = r.json()
        assert "worker_pid" not in body and "dir" not in body["vault"]
        assert "vault_dir" not in body["config"] and "state_dir" not in body["config"]
        assert str(service_vault) not in r.text and str(state) not in r.text
        assert body["vault"]["notes"] > 0 and body["status"] == "ok"  # the status itself is for everyone
    assert detailed["worker_pid"] == os.getpid() and detailed["vault"]["dir"] == str(service_vault)
    assert detailed["config"]["state_dir"] == str(state)
    with run_server(service_settings(fake_ollama), service_vault) as open_server:  # no token: details for nobody
        assert "worker_pid" not in open_server.client().get("/health", headers=AUTH).json()


# -- 18: start-up, /docs offline, the open reload, the token on the command line -----------------------------
def test_start_up_says_when_the_reload_is_open(fake_ollama: FakeOllama) -> None:
    with run_server(service_settings(fake_ollama), SAMPLE_VAULT) as server:
        assert re.search(r"WARNING .*POST /reload-vault is open: GRASBOT_RELOAD_TOKEN is not set", server.logs.text())
    with run_server(service_settings(fake_ollama, reload_token=TOKEN), SAMPLE_VAULT) as server:
        assert "is open" not in server.logs.text()


def test_ready_only_when_the_llm_answers(fake_ollama: FakeOllama) -> None:
    with run_server(service_settings(None, ollama_url=f"http://127.0.0.1:{free_port()}"), SAMPLE_VAULT) as down:
        logs = down.logs.text()
        assert "GrasBot ready" not in logs
        assert re.search(r"WARNING .*GrasBot started, but the LLM is down: Ollama cannot be reached at .*503 `llm_unavailable`", logs)
        assert "/health, /reload-vault and /feedback work" in logs
    with FakeOllama(models=("llama3:8b",)) as other, run_server(service_settings(other), SAMPLE_VAULT) as no_model:
        logs = no_model.logs.text()
        assert "GrasBot ready" not in logs and "does not have the model qwen3:8b (`ollama pull qwen3:8b`)" in logs
    with run_server(service_settings(fake_ollama), SAMPLE_VAULT) as up:
        assert "GrasBot ready: vault" in up.logs.text() and "LLM is down" not in up.logs.text()


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_docs_pages_load_their_assets_from_the_server(fake_ollama: FakeOllama, page: str) -> None:
    """Offline, /docs was blank: Swagger UI came from a CDN. Every script, style and icon it names is now
    served by the API itself (as `curl` sees it: absolute paths on the same server, each answering 200)."""
    with run_server(service_settings(fake_ollama), SAMPLE_VAULT) as server:
        client = server.client()
        html = client.get(page).text
        assets = re.findall(r"""(?:src|href)\s*=\s*['"]([^'"]+)['"]""", html)
        assert assets, html
        for asset in assets:
            assert asset.startswith("/") and not asset.startswith("//"), f"{page} loads {asset} from elsewhere"
            r = client.get(asset)
            assert r.status_code == 200 and len(r.content) > 1000, asset
        assert "/openapi.json" in html and client.get("/openapi.json").status_code == 200


def test_is_loopback() -> None:
    for host in ("127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost", "LOCALHOST"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "192.168.1.10", "example.com", "10.0.0.1"):
        assert not is_loopback(host), host


def test_serve_refuses_an_open_reload_on_a_public_address(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    serve = [sys.executable, "-m", "grasbot.service.cli", "serve", "--vault", str(SAMPLE_VAULT), "--host", "0.0.0.0"]
    refused = subprocess.run([*serve, "--port", str(free_port())], env=clean_env(OLLAMA_URL=fake_ollama.url),
                             capture_output=True, text=True, timeout=60, cwd=tmp_path)  # fmt: skip (no .env read)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "GRASBOT_RELOAD_TOKEN" in refused.stderr and "--allow-open-reload" in refused.stderr
    for extra_args, extra_env in (([], {"GRASBOT_RELOAD_TOKEN": TOKEN}), (["--allow-open-reload"], {}),
                                  ([], {"GRASBOT_ALLOW_OPEN_RELOAD": "true"})):  # fmt: skip
        port = free_port()
        log = tmp_path / f"serve-{port}.log"
        with log.open("w") as out:
            proc = subprocess.Popen([*serve, "--port", str(port), *extra_args], stdout=out, stderr=subprocess.STDOUT,
                                    env=clean_env(OLLAMA_URL=fake_ollama.url, **extra_env), cwd=tmp_path)  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    assert httpx.get(f"http://127.0.0.1:{port}/health", timeout=2, trust_env=False).status_code == 200
                    break
                except httpx.HTTPError:
                    assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                    time.sleep(0.1)
        finally:
            proc.terminate()
            proc.wait(timeout=20)
        assert ("is open" in log.read_text()) == ("GRASBOT_RELOAD_TOKEN" not in extra_env)


def test_reload_reads_the_token_from_a_file_or_the_environment(fake_ollama: FakeOllama, tmp_path: Path) -> None:
    """`vaulttools reload` against a real server with a token: from `--token-file` or GRASBOT_RELOAD_TOKEN
    (never needed on the command line, where `ps` shows it); `--token` still works."""
    token_file = tmp_path / "reload-token"
    token_file.write_text(TOKEN + "\n", encoding="utf-8")
    os.chmod(token_file, 0o600)
    with run_server(service_settings(fake_ollama, reload_token=TOKEN), SAMPLE_VAULT) as server:
        def reload(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, "-m", "vaulttools.cli", "reload", "--api", server.url, *args],
                                  env=clean_env(**env), capture_output=True, text=True, timeout=60)  # fmt: skip

        assert reload("--token-file", str(token_file)).returncode == 0
        assert reload(GRASBOT_RELOAD_TOKEN=TOKEN).returncode == 0
        assert reload("--token", TOKEN).returncode == 0
        assert reload().returncode == 1  # no token: refused by the server
        missing = reload("--token-file", str(tmp_path / "absent"))
        assert missing.returncode == 2 and "--token-file" in missing.stderr and "absent" in missing.stderr
        (tmp_path / "empty").write_text("\n", encoding="utf-8")
        empty = reload("--token-file", str(tmp_path / "empty"))
        assert empty.returncode == 2 and "holds no token" in empty.stderr
        both = reload("--token", TOKEN, "--token-file", str(token_file))
        assert both.returncode == 2 and "not allowed with" in both.stderr
        watch = subprocess.run(
            [sys.executable, "-m", "vaulttools.cli", "watch", str(SAMPLE_VAULT), "--api", server.url,
             "--token-file", str(tmp_path / "absent")],
            env=clean_env(), capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert watch.returncode == 2 and "--token-file" in watch.stderr and "Traceback" not in watch.stderr
