"""docs/deploy.md as a deployer copies it: its nginx configuration in front of two real `grasbot serve`
replicas sharing a real redis-server, its systemd unit's command line, its environment file and compose
variables, and the defaults of its settings table.

The nginx block is taken from the document and changed only where the document says to adapt it (the
port, the certificate, the upstream ports, the `allow` line); it runs as a real nginx (Debian's, installed
by `.ci/run` when missing) with a self-signed certificate made by `openssl`. Without either, the test skips
and says why."""

from __future__ import annotations

import re
import shlex
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from grasbot.service.cli import build_parser
from grasbot.service.settings import ENV_VARIABLES
from tests.fake_ollama import FakeOllama, faithful_reply
from tests.redis_server import free_port
from tests.service_fixtures import REPO, fake_ollama, stop_process  # noqa: F401 - fixture
from tests.test_replicas import AUTH, RUST, cluster
from tests.test_settings import _defaults, _table_rows, documented_default_matches

DEPLOY = (REPO / "docs" / "deploy.md").read_text(encoding="utf-8")
#: What the bot's own pages send as `Origin` on the real deployment (https, port 443, server_name).
OWN_ORIGIN = "https://bot.example.org"
#: Read by something else than GrasBot's settings: uvicorn (under `grasbot serve`) and the vault snapshot.
OUTSIDE_SETTINGS = {"FORWARDED_ALLOW_IPS", "VAULTTOOLS_CACHE_DIR"}


def _block(language: str, after: str = "") -> str:
    """The first fenced block of `language` in docs/deploy.md after the text `after`."""
    start = DEPLOY.index(after) if after else 0
    return DEPLOY[start:].split(f"```{language}\n", 1)[1].split("```", 1)[0]


def _nginx() -> str:
    binary = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None)
    if binary is None:
        pytest.skip("no nginx binary on this machine (apt-get install nginx)")
    return binary


def _certificate(folder: Path) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("no openssl to make the test certificate")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=bot.example.org",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return cert, key


def adapted_nginx_conf(port: int, upstreams: tuple[int, int], cert: Path, key: Path) -> str:
    """The document's nginx block with what the document says to adapt, and nothing else."""
    text = _block("nginx")
    for old, new in (
        (r"listen 443 ssl http2;", f"listen 127.0.0.1:{port} ssl http2;"),
        (r"ssl_certificate\s+\S+;", f"ssl_certificate {cert};"),
        (r"ssl_certificate_key\s+\S+;", f"ssl_certificate_key {key};"),
        (r"server 127\.0\.0\.1:8001 ", f"server 127.0.0.1:{upstreams[0]} "),
        (r"server 127\.0\.0\.1:8002 ", f"server 127.0.0.1:{upstreams[1]} "),
        (r"allow 10\.0\.0\.0/8;", "allow 127.0.0.1;"),
    ):
        text, count = re.subn(old, new, text)
        assert count == 1, f"docs/deploy.md's nginx block has no `{old}` to adapt"
    return text


@contextmanager
def running_nginx(folder: Path, site: str, port: int) -> Iterator[Path]:
    """nginx in the foreground with its own prefix, pid, logs and temporary folders, serving `site` (the
    block of docs/deploy.md, included in the `http` block as Debian's nginx.conf includes conf.d/)."""
    binary = _nginx()
    (folder / "logs").mkdir(parents=True)
    (folder / "grasbot.conf").write_text(site, encoding="utf-8")
    temp = "\n".join(f"    {kind}_temp_path {folder}/{kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    conf = folder / "nginx.conf"
    conf.write_text(
        f"daemon off;\nworker_processes 1;\npid {folder}/nginx.pid;\nerror_log {folder}/logs/error.log;\n"
        f"events {{ worker_connections 256; }}\n"
        f"http {{\n    access_log {folder}/logs/access.log;\n{temp}\n    include {folder}/grasbot.conf;\n}}\n",
        encoding="utf-8",
    )
    check = subprocess.run([binary, "-t", "-p", str(folder), "-c", str(conf)], capture_output=True, text=True, timeout=30)
    assert check.returncode == 0, check.stderr  # `nginx -t` accepts the document's configuration
    proc = subprocess.Popen([binary, "-p", str(folder), "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"nginx did not start: {proc.stderr.read() if proc.stderr else ''}") from None
                time.sleep(0.05)
        yield folder
    finally:
        stop_process(proc, signal.SIGQUIT, timeout=10)  # nginx's graceful stop


def test_the_nginx_of_the_document_in_front_of_two_replicas(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    cert, key = _certificate(tmp_path)
    _nginx()
    fake_ollama.script(reply=faithful_reply, chunk_delay=0.1)
    with cluster(tmp_path, fake_ollama) as c:
        port = free_port()
        site = adapted_nginx_conf(port, (c.a.port, c.b.port), cert, key)
        with running_nginx(tmp_path / "nginx", site, port), httpx.Client(
            base_url=f"https://127.0.0.1:{port}", verify=False, trust_env=False, timeout=httpx.Timeout(30.0, connect=5.0),
            headers={"Host": "bot.example.org", "Origin": OWN_ORIGIN},  # a page of the bot's own site
        ) as client:
            assert client.get("/health").json()["shared"]["backend"] == "redis"

            first = client.get("/ask", params={"q": RUST})
            assert first.status_code == 200, first.text
            session = first.json()["session_id"]
            # round robin: the follow-up goes to the other replica, which has the turn (no sticky sessions)
            second = client.get("/ask", params={"q": "Et en Python ?", "session_id": session})
            assert second.status_code == 200, second.text
            assert second.json()["session_id"] == session
            assert [m["role"] for m in fake_ollama.chat_requests()[-1]["messages"]] == ["system", "user", "assistant", "user"]

            # the stream answers the bot's own origin as /ask does, and its events come as they are made
            # (nginx buffering them would deliver them at once, at the end)
            arrivals: list[tuple[float, str]] = []
            with client.stream("GET", "/ask/stream", params={"q": RUST}, headers={"Accept": "text/event-stream"}) as stream:
                assert stream.status_code == 200, stream.read().decode()
                assert stream.headers["content-type"].startswith("text/event-stream")
                for line in stream.iter_lines():
                    if line.startswith("event: "):
                        arrivals.append((time.monotonic(), line.removeprefix("event: ")))
            tokens = [at for at, event in arrivals if event == "token"]
            assert [event for _, event in arrivals][-1] == "done" and len(tokens) >= 5
            assert tokens[-1] - tokens[0] >= 0.5 * 0.1 * (len(tokens) - 1)

            # the reload, allowed from the author's address (the `allow` line), reaches the replicas
            reloaded = client.post("/reload-vault", headers=AUTH)
            assert reloaded.status_code == 200, reloaded.text
            assert reloaded.json()["status"] == "reloaded"


def test_the_settings_table_gives_the_defaults_in_force(monkeypatch: pytest.MonkeyPatch) -> None:
    section = DEPLOY[DEPLOY.index("## 7. Settings that matter at scale") :]
    rows = _table_rows(section)
    assert rows
    for name, column in _defaults(rows):
        if name in OUTSIDE_SETTINGS:
            continue
        assert name in ENV_VARIABLES, f"docs/deploy.md names {name}, which no setting reads"
        assert documented_default_matches(name, column), f"docs/deploy.md gives {name} the default {column}"
    # the two read elsewhere: uvicorn's trusted proxies, and the snapshot's folder
    import uvicorn

    from grasbot.snapshot import cache_dir

    monkeypatch.delenv("FORWARDED_ALLOW_IPS", raising=False)
    monkeypatch.delenv("VAULTTOOLS_CACHE_DIR", raising=False)
    columns = dict(_defaults(rows))
    assert columns["FORWARDED_ALLOW_IPS"].startswith(f"`{uvicorn.Config(app=None, log_config=None).forwarded_allow_ips}`")
    assert columns["VAULTTOOLS_CACHE_DIR"].startswith(f"`{cache_dir(Path('VAULT'))}`")


def _assignments(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_the_environment_file_and_compose_name_real_settings() -> None:
    env_file = _assignments(_block("sh", "`/etc/grasbot/grasbot.env`"))
    compose = _block("yaml")
    compose_env = re.findall(r"^\s+([A-Z][A-Z_]+): ", compose, re.MULTILINE)
    unknown = sorted((set(env_file) | set(compose_env)) - set(ENV_VARIABLES) - OUTSIDE_SETTINGS)
    assert unknown == []  # a misspelt variable would be silently ignored by the service


def test_the_units_command_is_one_grasbot_serve_accepts() -> None:
    unit = _block("ini")
    exec_start = next(line.split("=", 1)[1] for line in unit.splitlines() if line.startswith("ExecStart="))
    argv = shlex.split(exec_start.replace("%i", "8001"))
    assert argv[0] == "/srv/grasbot/.venv/bin/grasbot"
    args = build_parser().parse_args(argv[1:])
    assert (args.command, args.host, args.port) == ("serve", "127.0.0.1", 8001)
    # the folders the unit lets the service write are the ones the environment file names
    env_file = _assignments(_block("sh", "`/etc/grasbot/grasbot.env`"))
    assert "StateDirectory=grasbot" in unit and env_file["GRASBOT_STATE_DIR"] == "/var/lib/grasbot"
    assert "CacheDirectory=grasbot" in unit and env_file["VAULTTOOLS_CACHE_DIR"] == "/var/cache/grasbot"
    assert "EnvironmentFile=/etc/grasbot/grasbot.env" in unit
