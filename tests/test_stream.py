"""GET /ask/stream at the protocol level, through a real uvicorn server with httpx and the fake Ollama:
what a browser's EventSource relies on (docs/service.md, "The stream"). The same in a real browser:
tests/test_stream_browser.py."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from grasbot.service.settings import ENV_VARIABLES, ConfigError, Settings
from tests.fake_ollama import FakeOllama
from tests.service_fixtures import *  # noqa: F403
from tests.service_fixtures import SAMPLE_VAULT, RunningServer, run_server, service_settings, sse_blocks, sse_events

RUST = "Que sait-il faire en Rust ?"
EVENT_SOURCE = {"Accept": "text/event-stream"}  # what every browser EventSource sends
SITE = "http://site.example"


@pytest.fixture(scope="module")
def shared_fake() -> Iterator[FakeOllama]:
    with FakeOllama() as fake:
        yield fake


@pytest.fixture(scope="module")
def shared_server(shared_fake: FakeOllama) -> Iterator[RunningServer]:
    if not SAMPLE_VAULT.is_dir():
        pytest.skip("the bundled vault/ is missing")
    with run_server(service_settings(shared_fake, cors_origins=(SITE,)), SAMPLE_VAULT) as server:
        yield server


@pytest.fixture
def fake(shared_fake: FakeOllama) -> FakeOllama:
    shared_fake.reset()
    return shared_fake


@pytest.fixture
def api(shared_server: RunningServer, fake: FakeOllama) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=shared_server.url, timeout=httpx.Timeout(20.0, connect=5.0), trust_env=False) as client:
        yield client


def stream_text(client: httpx.Client, headers: dict[str, str] | None = None, **params: Any) -> tuple[httpx.Response, str]:
    with client.stream("GET", "/ask/stream", params=params, headers=headers) as r:
        return r, r.read().decode()


# -- ids and retry ------------------------------------------------------------------------------------
def test_every_event_has_an_id_and_the_stream_opens_with_a_long_retry(api: httpx.Client, fake: FakeOllama) -> None:
    fake.script(reply="Il écrit du Rust [rust] depuis longtemps.")
    r, text = stream_text(api, EVENT_SOURCE, q=RUST)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    blocks = sse_blocks(text)
    # The opening: the retry (a day) and an id, and no data, so a browser dispatches nothing for it.
    assert blocks[0].keys() == {"id", "retry"} and blocks[0]["retry"] == "86400000"
    events = [b for b in blocks if "data" in b]
    assert [b["event"] for b in events][0] == "sources" and events[-1]["event"] == "done"
    ids = [b["id"] for b in blocks if ":" not in b]  # every block but keep-alive comments
    assert len(ids) == len(blocks) - sum(1 for b in blocks if ":" in b) and len(set(ids)) == len(ids)
    stream = {i.split(".")[0] for i in ids}
    assert len(stream) == 1 and re.fullmatch(r"[0-9a-f]{16}", stream.pop())
    assert [int(i.split(".")[1]) for i in ids] == list(range(len(ids)))
    assert "error" not in [b.get("event") for b in blocks]  # an EventSource never gets the deprecated name
    # A second stream's ids differ: a Last-Event-ID names one stream.
    _, again = stream_text(api, EVENT_SOURCE, q=RUST)
    assert sse_blocks(again)[0]["id"].split(".")[0] != ids[0].split(".")[0]


def test_the_retry_comes_from_the_settings(fake_ollama: FakeOllama) -> None:
    with run_server(service_settings(fake_ollama, stream_retry_ms=250), SAMPLE_VAULT) as server:
        _, text = stream_text(server.client(), EVENT_SOURCE, q=RUST)
        assert sse_blocks(text)[0]["retry"] == "250"


# -- reconnections ------------------------------------------------------------------------------------
def test_a_reconnection_gets_204_before_any_work(api: httpx.Client, fake: FakeOllama, shared_server: RunningServer) -> None:
    fake.script(reply="Réponse unique [rust].")
    _, text = stream_text(api, EVENT_SOURCE, q=RUST, session_id="onglet")
    last = [b["id"] for b in sse_blocks(text) if "id" in b][-1]
    assert len(fake.chat_requests()) == 1
    turns = shared_server.service.memory.inner.history("onglet")
    # What a browser sends when it comes back to a finished stream, to one cut mid-answer (an earlier id),
    # or before the first event (the opening's id): 204, no retrieval, no generation, no new turn.
    for seen in (last, last.split(".")[0] + ".1", last.split(".")[0] + ".0"):
        r = api.get("/ask/stream", params={"q": RUST, "session_id": "onglet"}, headers={**EVENT_SOURCE, "Last-Event-ID": seen})
        assert r.status_code == 204 and r.content == b""
    # Even with a question that would be refused: the reconnection is answered first.
    assert api.get("/ask/stream", params={"q": ""}, headers={**EVENT_SOURCE, "Last-Event-ID": last}).status_code == 204
    assert len(fake.chat_requests()) == 1
    assert shared_server.service.memory.inner.history("onglet") == turns


# -- failures -----------------------------------------------------------------------------------------
def test_the_failure_event_is_failed_and_error_only_for_older_clients(api: httpx.Client, fake: FakeOllama) -> None:
    fake.script(fail_status=500, fail_message="out of memory")
    _, text = stream_text(api, EVENT_SOURCE, q=RUST)
    events = sse_events(text)
    assert [e for e, _ in events] == ["sources", "failed"]
    failed = events[-1][1]
    assert failed["status"] == 502 and failed["error"] == "llm_bad_response" and failed["sources"]
    assert "out of memory" not in text
    # A client that does not ask for text/event-stream (curl, a script written for the first version)
    # also gets the old name, with the same data, right after.
    _, text = stream_text(api, q=RUST)
    assert [e for e, _ in sse_events(text)] == ["sources", "failed", "error"]
    assert sse_events(text)[1][1] == sse_events(text)[2][1]


@pytest.mark.parametrize(
    ("params", "status", "code"),
    [
        ({"q": ""}, 400, "empty_question"),
        ({"q": "a" * 2001}, 413, "question_too_long"),
        ({"q": RUST, "session_id": "a b"}, 422, "invalid_session_id"),
    ],
)
def test_rejections_reach_an_event_source_as_one_failed_event(
    api: httpx.Client, fake: FakeOllama, params: dict[str, str], status: int, code: str
) -> None:
    # An EventSource reads no body of a non-200 response: it gets the rejection as a stream.
    r, text = stream_text(api, EVENT_SOURCE, **params)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
    blocks = sse_blocks(text)
    assert blocks[0]["retry"] == "86400000" and all("id" in b for b in blocks)
    events = sse_events(text)
    assert [e for e, _ in events] == ["failed"]
    assert events[0][1]["status"] == status and events[0][1]["error"] == code
    # Other clients get the plain JSON status, as before.
    plain = api.get("/ask/stream", params=params)
    assert plain.status_code == status and plain.json()["error"] == code
    assert fake.chat_requests() == []


def test_an_unexpected_failure_ends_the_stream_with_failed(fake_ollama: FakeOllama) -> None:
    with run_server(service_settings(fake_ollama), SAMPLE_VAULT) as server:

        async def broken(*_: Any, **__: Any) -> Any:
            raise RuntimeError("boom: note text that must not leak")

        server.service.answer = broken  # type: ignore[method-assign]
        _, text = stream_text(server.client(), EVENT_SOURCE, q=RUST)
        assert sse_events(text) == [("failed", {"status": 500, "error": "internal_error", "message": "internal error"})]
        assert "boom" not in text and "boom" not in server.logs.text()


# -- keep-alive ---------------------------------------------------------------------------------------
def test_keep_alive_comments_while_the_model_is_slow(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(reply="Lent mais là [rust].", delay=1.2)
    with run_server(service_settings(fake_ollama, stream_ping_seconds=0.2), SAMPLE_VAULT) as server:
        _, text = stream_text(server.client(), EVENT_SOURCE, q=RUST)
    blocks = sse_blocks(text)
    names = [b.get("event", ":" if ":" in b else "opening") for b in blocks]
    first_token = names.index("token")
    waiting = names[names.index("sources") + 1 : first_token]
    assert waiting.count(":") >= 3, names  # about one every 0.2 s during the 1.2 s wait
    assert all(b[":"] == ["keep-alive"] and b.keys() == {":"} for b in blocks if ":" in b)
    assert names[-1] == "done"


def test_no_keep_alive_comment_when_the_answer_is_quick(api: httpx.Client, fake: FakeOllama) -> None:
    fake.script(reply="Vite [rust].")
    _, text = stream_text(api, EVENT_SOURCE, q=RUST)
    assert not [b for b in sse_blocks(text) if ":" in b]  # the default interval is 15 s


# -- origins ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/ask/stream", "/ask"])
def test_a_disallowed_origin_is_refused_before_any_work(api: httpx.Client, fake: FakeOllama, path: str) -> None:
    r = api.get(path, params={"q": RUST}, headers={**EVENT_SOURCE, "Origin": "http://evil.example"})
    assert r.status_code == 403 and r.json()["error"] == "origin_not_allowed"
    # readable by the refused page, so that its EventSource stops instead of retrying a CORS failure
    assert r.headers["access-control-allow-origin"] == "http://evil.example"
    # No Origin but a cross-site embed (<img>, <script>, <iframe>): refused too.
    for dest in ("image", "script", "iframe", "empty"):
        r = api.get(path, params={"q": RUST}, headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Dest": dest})
        assert r.status_code == 403, dest
    assert fake.chat_requests() == []
    # The listed origin, a link followed from another site, and a client without Origin are answered.
    ok = api.get(path, params={"q": RUST}, headers={"Origin": SITE})
    assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == SITE
    assert api.get(path, params={"q": RUST}, headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Dest": "document"}).status_code == 200
    assert api.get(path, params={"q": RUST}).status_code == 200
    assert len(fake.chat_requests()) == 3


def test_without_cors_only_the_server_s_own_origin_is_answered(fake_ollama: FakeOllama) -> None:
    with run_server(service_settings(fake_ollama), SAMPLE_VAULT) as server:
        client = server.client()
        assert client.get("/ask/stream", params={"q": RUST}, headers={"Origin": SITE}).status_code == 403
        assert client.get("/ask/stream", params={"q": RUST}, headers={"Origin": server.url}).status_code == 200
        assert len(fake_ollama.chat_requests()) == 1


def test_any_origin_with_a_star(fake_ollama: FakeOllama) -> None:
    with run_server(service_settings(fake_ollama, cors_origins=("*",)), SAMPLE_VAULT) as server:
        r = server.client().get("/ask", params={"q": RUST}, headers={"Origin": "http://evil.example"})
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "*"


def test_server_timing_is_exposed_to_the_page(api: httpx.Client) -> None:
    r = api.get("/ask", params={"q": RUST}, headers={"Origin": SITE})
    assert "llm;dur=" in r.headers["server-timing"]
    assert "server-timing" in r.headers["access-control-expose-headers"].lower()


def test_a_reconnection_from_the_listed_origin_is_readable(api: httpx.Client) -> None:
    # A CORS failure on the 204 would be a network error to the browser, which then retries for ever.
    r = api.get("/ask/stream", params={"q": RUST}, headers={**EVENT_SOURCE, "Origin": SITE, "Last-Event-ID": "x.1"})
    assert r.status_code == 204 and r.headers["access-control-allow-origin"] == SITE


# -- the demo page ------------------------------------------------------------------------------------
def test_the_demo_page_is_off_by_default(api: httpx.Client) -> None:
    assert api.get("/demo/").status_code == 404 and api.get("/demo/demo.js").status_code == 404


def test_the_demo_page_when_enabled(fake_ollama: FakeOllama) -> None:
    with run_server(service_settings(fake_ollama, demo_page=True), SAMPLE_VAULT) as server:
        client = server.client()
        page = client.get("/demo/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert '<meta name="grasbot-api" content="">' in page.text and 'src="demo.js"' in page.text
        script = client.get("/demo/demo.js")
        assert script.status_code == 200 and "javascript" in script.headers["content-type"]
        assert "EventSource" in script.text and client.get("/demo/demo.css").status_code == 200
        assert client.get("/demo", follow_redirects=True).url.path == "/demo/"
        assert client.get("/demo/../pyproject.toml").status_code == 404


def test_stream_settings_from_the_environment() -> None:
    s = Settings.from_env({"STREAM_RETRY_MS": "5000", "STREAM_PING_SECONDS": "2.5", "DEMO_PAGE": "true"}, env_file=None)
    assert (s.stream_retry_ms, s.stream_ping_seconds, s.demo_page) == (5000, 2.5, True)
    d = Settings.from_env({}, env_file=None)
    assert (d.stream_retry_ms, d.stream_ping_seconds, d.demo_page) == (86_400_000, 15.0, False)
    for name, value in (("STREAM_RETRY_MS", "-1"), ("STREAM_PING_SECONDS", "0"), ("DEMO_PAGE", "maybe")):
        with pytest.raises(ConfigError, match=name):
            Settings.from_env({name: value}, env_file=None)
    assert {"STREAM_RETRY_MS", "STREAM_PING_SECONDS", "DEMO_PAGE"} <= set(ENV_VARIABLES)


def test_the_demo_files_are_package_data() -> None:
    import tomllib

    from tests.service_fixtures import REPO

    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["grasbot.service"]
    shipped = {p.name for pattern in patterns for p in (REPO / "grasbot" / "service").glob(pattern)}
    assert {"index.html", "demo.js", "demo.css"} <= shipped


def test_a_stream_cut_by_the_client_stops_the_generation(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(reply=" ".join(f"mot{i}" for i in range(100)), chunk_delay=0.2)
    with run_server(service_settings(fake_ollama, llm_timeout=60.0), SAMPLE_VAULT) as server:
        probing = fake_ollama.open_connections  # the start-up probe's keep-alive connection
        with server.client() as client, client.stream("GET", "/ask/stream", params={"q": RUST}, headers=EVENT_SOURCE) as r:
            assert "event: token" in r.iter_lines()
        assert fake_ollama.wait_until(lambda f: f.abandoned_chats == 1 and f.open_connections <= probing, timeout=5)
        deadline = time.monotonic() + 2
        while server.service._tasks and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not server.service._tasks


def test_a_stream_under_way_finishes_when_the_server_is_told_to_stop(tmp_path: Any, fake_ollama: FakeOllama) -> None:
    """SIGTERM to `grasbot serve` lets an answer being streamed end (uvicorn's graceful shutdown, 10 s),
    as any other response: sse-starlette would cut every stream at once."""
    import os
    import signal
    import socket
    import subprocess
    import sys

    from tests.service_fixtures import wait_for_health

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    words = [f"mot{i}" for i in range(20)]
    fake_ollama.script(reply=" ".join(words), chunk_delay=0.1)  # 2 s of tokens
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGFUSE_", "GRASBOT_"))}
    env.update(OLLAMA_URL=fake_ollama.url)
    log_path = tmp_path / "serve.log"
    cmd = [sys.executable, "-m", "grasbot.service.cli", "serve", "--vault", str(SAMPLE_VAULT), "--port", str(port)]
    with log_path.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, text=True)
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10, trust_env=False) as client:
                wait_for_health(client, proc, log_path)
                with client.stream("GET", "/ask/stream", params={"q": RUST}, headers=EVENT_SOURCE) as r:
                    lines = r.iter_lines()
                    assert "event: token" in lines
                    proc.send_signal(signal.SIGTERM)
                    rest = "\n".join(lines)
            assert "event: done" in rest, rest[-500:]
            proc.wait(timeout=20)  # (it ends, by the signal uvicorn raises again once it has shut down)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=5)
