"""GET /ask/stream and the demo page in a real headless Chromium (Debian's `chromium`, driven by Playwright).

The page is served from another origin (a second 127.0.0.1 port), as a site embeds the bot, and talks to
a real uvicorn server answered by the fake Ollama, which counts the generations. The retry is shortened
through the settings (STREAM_RETRY_MS) so that a browser that would come back does so within the test;
`test_an_open_tab_for_60_seconds_costs_one_generation` (marked slow, not in `make test`) runs the real
60 s with the production settings: `.venv/bin/python -m pytest -m slow tests/test_stream_browser.py`.

Skipped, with the reason, when Playwright or a Chromium cannot be had (`.ci/run` installs Debian's).
"""

from __future__ import annotations

import re
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from grasbot.service.app import STATIC_DIR
from tests.fake_ollama import FakeOllama
from tests.loopback_server import LoopbackServer
from tests.service_fixtures import *  # noqa: F403
from tests.service_fixtures import SAMPLE_VAULT, RunningServer, run_server, service_settings

RUST = "Que sait-il faire en Rust ?"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
RETRY_MS = 300  # a browser that comes back does so within the test (production: a day)

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')")


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        if found := shutil.which(name):
            return found
    return None


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    executable = chromium_path()
    if executable is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium; .ci/run installs it)")
    if not SAMPLE_VAULT.is_dir():
        pytest.skip("the bundled vault/ is missing")
    with playwright_api.sync_playwright() as p:
        try:
            context = p.chromium.launch_persistent_context(
                str(tmp_path_factory.mktemp("chromium-profile")),  # a fresh --user-data-dir
                executable_path=executable,
                headless=True,
                args=FLAGS,
            )
        except playwright_api.Error as error:
            pytest.skip(f"Chromium at {executable} could not be started: {str(error).splitlines()[0]}")
        context.set_default_timeout(15_000)
        yield context
        context.close()


# -- the site that embeds the bot, and a proxy that can cut a stream ----------------------------------
class Site(LoopbackServer):
    """A static site on its own origin: `pages` maps a path to (content type, bytes)."""

    def __init__(self) -> None:
        super().__init__()
        self.pages: dict[str, tuple[str, bytes]] = {}

    def embed_demo(self, api: str) -> None:
        """The shipped demo page, pointed at the API on its other origin, as a site would copy it."""
        index = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
        marker = '<meta name="grasbot-api" content="">'
        assert marker in index
        self.pages["/"] = ("text/html; charset=utf-8", index.replace(marker, f'<meta name="grasbot-api" content="{api}">').encode())
        self.pages["/demo.js"] = ("text/javascript", (STATIC_DIR / "demo.js").read_bytes())
        self.pages["/demo.css"] = ("text/css", (STATIC_DIR / "demo.css").read_bytes())
        self.pages["/careless"] = ("text/html; charset=utf-8", CARELESS_PAGE.encode())


class _SiteHandler(BaseHTTPRequestHandler):
    owner: Site

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        return

    def do_GET(self) -> None:  # noqa: N802
        page = self.owner.pages.get(self.path.split("?")[0])
        if page is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", page[0])
        self.send_header("Content-Length", str(len(page[1])))
        self.end_headers()
        self.wfile.write(page[1])


Site.handler = _SiteHandler

# A page that opens an EventSource and never closes it: what the server must hold out against.
CARELESS_PAGE = """<!doctype html><meta charset="utf-8"><title>careless</title><p id="text"></p>
<script>
window.seen = [];
window.openStream = (url) => {
  const es = new EventSource(url);
  window.es = es;
  for (const name of ["sources", "token", "done", "failed", "error"]) {
    es.addEventListener(name, (e) => {
      window.seen.push({name, data: e.data === undefined ? null : JSON.parse(e.data), state: es.readyState});
      if (name === "token") document.getElementById("text").textContent += JSON.parse(e.data).text;
    });
  }
};
</script>"""


class CuttingProxy:
    """A TCP proxy to `upstream` that cuts the first connection whose response has carried a whole token
    event (a connection dropped mid-answer); the others pass through."""

    def __init__(self, upstream: str) -> None:
        host, port = upstream.removeprefix("http://").split(":")
        self.upstream = (host, int(port))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.cut_done = threading.Event()
        # Set: cut right after the first whole token event. Cleared: keep forwarding until it is set (a
        # test waits for the page to show a token first: a cut too early, under load, can come before the
        # browser has handed the event to the page, which then shows nothing).
        self.allow_cut = threading.Event()
        self.allow_cut.set()
        self._stop = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            threading.Thread(target=self._pump, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, True), daemon=True).start()

    def _pump(self, source: socket.socket, dest: socket.socket, downstream: bool) -> None:
        seen = b""  # what this connection has carried so far (the response: a token event may come in pieces)
        try:
            while data := source.recv(65536):
                dest.sendall(data)
                if downstream and not self.cut_done.is_set():
                    seen += data
                    # a whole token event went through (and the test lets it be cut now)
                    if re.search(rb"event: token\ndata: [^\n]*\n\n", seen) and self.allow_cut.is_set():
                        self.cut_done.set()
                        break
        except OSError:
            pass
        for s in (source, dest):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self) -> None:
        self._stop = True
        self.listener.close()


# -- helpers ------------------------------------------------------------------------------------------
def stream_statuses(server: RunningServer) -> list[int]:
    """The status of every GET /ask/stream the API received, from its access log (logged at the start)."""
    return [int(m) for m in re.findall(r'"GET /ask/stream\S* HTTP/1\.1" (\d{3})', server.logs.text())]


def ask_statuses(server: RunningServer) -> list[int]:
    return [int(m) for m in re.findall(r'"GET /ask\?\S* HTTP/1\.1" (\d{3})', server.logs.text())]


def ask_on_demo(page: Any, question: str) -> Any:
    page.fill("#q", question)
    page.press("#q", "Enter")
    turn = page.locator(".turn").last
    turn.and_(page.locator(":not([data-state=streaming])")).wait_for()
    return turn


@pytest.fixture
def site() -> Iterator[Site]:
    with Site() as s:
        yield s


@pytest.fixture
def api(fake_ollama: FakeOllama, site: Site) -> Iterator[RunningServer]:
    settings = service_settings(fake_ollama, cors_origins=(site.url,), stream_retry_ms=RETRY_MS, llm_timeout=30.0)
    with run_server(settings, SAMPLE_VAULT) as server:
        site.embed_demo(server.url)
        yield server


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    p = browser.new_page()
    yield p
    p.close()


# -- the demo page --------------------------------------------------------------------------------------
def test_the_demo_page_on_another_origin_answers_once(page: Any, site: Site, api: RunningServer, fake_ollama: FakeOllama) -> None:
    reply = "Aurèle écrit un collecteur de télémétrie en Rust [rust] [collecte-telemetrie-solaire]."
    fake_ollama.script(reply=reply, chunk_delay=0.02)
    page.goto(site.url + "/")
    turn = ask_on_demo(page, RUST)
    assert turn.get_attribute("data-state") == "done"
    assert turn.locator(".response").text_content() == reply
    assert turn.locator(".sources li[data-slug=rust]").count() == 1
    assert turn.locator(".sources li[data-slug=rust] a").get_attribute("href") == "/competences/rust"
    badge = turn.locator(".badge")
    assert badge.is_visible() and "grounded" in badge.get_attribute("class").split() and badge.text_content() == "Réponse sourcée"
    # the server's verification event: each sentence of the answer with its label
    labels = turn.locator(".verification li")
    assert turn.locator(".verification").is_visible() and [labels.nth(i).get_attribute("data-label") for i in range(labels.count())] == ["supported"]
    # The page closed its EventSource on `done`; with a 300 ms retry, an open one would be back by now.
    time.sleep(2)
    assert stream_statuses(api) == [200] and len(fake_ollama.chat_requests()) == 1
    # A follow-up goes on with the conversation the server issued: its session_id is sent back.
    fake_ollama.script(reply="Avec Cargo et Clippy [rust].")
    assert ask_on_demo(page, "Et avec quels outils ?").get_attribute("data-state") == "done"
    second = fake_ollama.chat_requests()[-1]["messages"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"] and second[2]["content"] == reply
    # A new visit starts afresh; an off-topic question: the ungrounded badge, no sources.
    page.reload()
    fake_ollama.script(reply="Je ne parle que de son parcours.")
    turn = ask_on_demo(page, "Quel temps fait-il demain ?")
    assert turn.get_attribute("data-state") == "done" and turn.locator(".sources").is_hidden()
    assert "ungrounded" in turn.locator(".badge").get_attribute("class").split()
    assert [m["role"] for m in fake_ollama.chat_requests()[-1]["messages"]] == ["system", "user"]
    assert len(fake_ollama.chat_requests()) == 3 and stream_statuses(api) == [200, 200, 200]


def test_the_demo_page_shows_a_failure_and_stops(page: Any, site: Site, api: RunningServer, fake_ollama: FakeOllama) -> None:
    fake_ollama.script(fail_status=500, fail_message="out of memory")
    page.goto(site.url + "/")
    turn = ask_on_demo(page, RUST)
    assert turn.get_attribute("data-state") == "failed"
    assert "llm_bad_response" in turn.locator(".status").text_content()
    assert turn.locator(".sources li[data-slug=rust]").count() == 1  # the notes are still shown
    # A rejection before the stream (413) reaches the page as the same event.
    page.evaluate("q => { document.getElementById('q').value = q; }", "a" * 2001)  # (past maxlength)
    page.press("#q", "Enter")
    rejected = page.locator(".turn").nth(1)
    rejected.and_(page.locator(":not([data-state=streaming])")).wait_for()
    assert rejected.get_attribute("data-state") == "failed" and "question_too_long" in rejected.text_content()
    time.sleep(1.5)
    assert stream_statuses(api) == [200, 200] and len(fake_ollama.chat_requests()) == 1


def test_the_demo_page_renders_a_verification_event(page: Any, site: Site, api: RunningServer, fake_ollama: FakeOllama) -> None:
    # The server verifies every answer against the notes the model was given and sends the labels in a
    # `verification` event before `done`: the page lists each sentence with its label.
    fake_ollama.script(reply="Aurèle a appris Rust en 2020, en réécrivant un outil de géocodage [rust]. Il a gagné un prix en 2019 [rust].")
    page.goto(site.url + "/")
    turn = ask_on_demo(page, RUST)
    section = turn.locator(".verification")
    assert section.is_visible() and section.locator(".summary").text_content() == "Statut : partial"
    items = section.locator("li")
    assert [items.nth(i).get_attribute("data-label") for i in range(items.count())] == ["supported", "unsupported"]
    assert items.nth(1).text_content() == "Il a gagné un prix en 2019 [rust].non appuyée"


# -- what the server does for pages that get it wrong ---------------------------------------------------
def test_an_event_source_left_open_after_done_is_told_to_stop(page: Any, site: Site, api: RunningServer, fake_ollama: FakeOllama) -> None:
    fake_ollama.script(reply="Une seule fois [rust].")
    page.goto(site.url + "/careless")
    page.evaluate("url => openStream(url)", f"{api.url}/ask/stream?q=Rust")
    page.wait_for_function("() => seen.some(e => e.name === 'done')")
    # The browser comes back after the retry, with Last-Event-ID; the 204 closes the EventSource for good.
    page.wait_for_function("() => es.readyState === EventSource.CLOSED", timeout=5_000)
    time.sleep(1)
    assert stream_statuses(api) == [200, 204]
    assert len(fake_ollama.chat_requests()) == 1
    seen = page.evaluate("seen")
    assert [e for e in seen if e["name"] == "error" and e["data"] is not None] == []  # the server sent none


def test_a_stream_dropped_mid_answer_is_not_generated_again(page: Any, site: Site, api: RunningServer, fake_ollama: FakeOllama) -> None:
    words = [f"mot{i}" for i in range(60)]
    fake_ollama.script(reply=" ".join(words), chunk_delay=0.1)
    proxy = CuttingProxy(api.url)
    try:
        page.goto(site.url + "/careless")
        proxy.allow_cut.clear()
        page.evaluate("url => openStream(url)", f"{proxy.url}/ask/stream?q=Rust")
        page.wait_for_function("() => document.querySelector('#text').textContent.includes('mot0')", timeout=10_000)
        proxy.allow_cut.set()  # cut at the next piece of the answer
        page.wait_for_function("() => es.readyState === EventSource.CLOSED", timeout=10_000)
        assert proxy.cut_done.is_set()
        time.sleep(1)
        assert stream_statuses(api) == [200, 204]  # the reconnection came back, with Last-Event-ID
        assert len(fake_ollama.chat_requests()) == 1
        assert fake_ollama.wait_until(lambda f: f.abandoned_chats == 1, timeout=5)  # the cut one stopped
        text = page.text_content("#text")
        assert text.count("mot0") == 1 and " ".join(words).startswith(text)  # the start once, never twice
        # The demo page says the answer was lost, and does not come back at all.
        fake_ollama.script(reply=" ".join(words), chunk_delay=0.1)
        proxy.cut_done.clear()
        site.embed_demo(proxy.url)
        page.goto(site.url + "/")
        turn = ask_on_demo(page, RUST)
        assert turn.get_attribute("data-state") == "lost" and "perdue" in turn.locator(".status").text_content()
        time.sleep(1)
        assert stream_statuses(api) == [200, 204, 200] and len(fake_ollama.chat_requests()) == 2
    finally:
        proxy.close()


def test_a_page_of_a_disallowed_origin_gets_nothing_generated(browser: Any, api: RunningServer, fake_ollama: FakeOllama) -> None:
    with Site() as other:  # a third origin, not in CORS_ORIGINS
        other.pages["/careless"] = ("text/html; charset=utf-8", CARELESS_PAGE.encode())
        page = browser.new_page()
        try:
            page.goto(other.url + "/careless")
            page.evaluate("url => openStream(url)", f"{api.url}/ask/stream?q=Rust")
            # and the embeds that send no Origin: an image, a no-cors fetch, an iframe
            page.evaluate(
                """api => {
                    new Image().src = api + "/ask?q=Rust+image";
                    fetch(api + "/ask?q=Rust+fetch", {mode: "no-cors"}).catch(() => {});
                    const frame = document.createElement("iframe");
                    frame.src = api + "/ask?q=Rust+iframe";
                    document.body.appendChild(frame);
                }""",
                api.url,
            )
            # The 403 is readable by the page, so its EventSource stops at once rather than retrying.
            page.wait_for_function("() => es.readyState === EventSource.CLOSED", timeout=5_000)
            time.sleep(1.5)
        finally:
            page.close()
    assert stream_statuses(api) == [403]
    assert ask_statuses(api) == [403, 403, 403]
    assert fake_ollama.chat_requests() == []


def test_rejections_and_headers_a_page_can_read(page: Any, site: Site, api: RunningServer, fake_ollama: FakeOllama) -> None:
    fake_ollama.script(reply="ok [rust]")
    page.goto(site.url + "/careless")
    # the 400 of an over-long URL (the server never parses it) is readable across origins...
    status = page.evaluate("api => fetch(api + '/ask?q=' + 'a'.repeat(300000)).then(r => r.status, e => 'network error')", api.url)
    assert status == 400
    # ...so an EventSource on it stops instead of retrying a CORS failure every few seconds
    page.evaluate("url => openStream(url)", f"{api.url}/ask/stream?q=" + "a" * 300000)
    page.wait_for_function("() => es.readyState === EventSource.CLOSED", timeout=5_000)
    # Server-Timing is exposed to the page.
    timing = page.evaluate("api => fetch(api + '/ask?q=Rust').then(r => r.headers.get('Server-Timing'))", api.url)
    assert timing is not None and "llm;dur=" in timing
    # A 413 reaches the EventSource as a `failed` event; its reconnection then gets the 204.
    page.evaluate("url => openStream(url)", f"{api.url}/ask/stream?q=" + "a" * 2001)
    page.wait_for_function("() => seen.some(e => e.name === 'failed')")
    failed = next(e for e in page.evaluate("seen") if e["name"] == "failed")
    assert failed["data"]["status"] == 413 and failed["data"]["error"] == "question_too_long"
    page.wait_for_function("() => es.readyState === EventSource.CLOSED", timeout=5_000)
    assert len(fake_ollama.chat_requests()) == 1  # the one plain /ask


@pytest.mark.slow
def test_an_open_tab_for_60_seconds_costs_one_generation(browser: Any, fake_ollama: FakeOllama, site: Site) -> None:
    """The issue's check, with the production settings (retry a day, keep-alive every 15 s): the demo page
    and a page that never closes its EventSource, each left open 60 s after its answer."""
    fake_ollama.script(reply="Une réponse [rust].", chunk_delay=0.02)
    with run_server(service_settings(fake_ollama, cors_origins=(site.url,)), SAMPLE_VAULT) as server:
        site.embed_demo(server.url)
        demo, careless = browser.new_page(), browser.new_page()
        try:
            demo.goto(site.url + "/")
            assert ask_on_demo(demo, RUST).get_attribute("data-state") == "done"
            careless.goto(site.url + "/careless")
            careless.evaluate("url => openStream(url)", f"{server.url}/ask/stream?q=Rust")
            careless.wait_for_function("() => seen.some(e => e.name === 'done')")
            time.sleep(60)
            assert stream_statuses(server) == [200, 200]
            assert len(fake_ollama.chat_requests()) == 2  # one per tab
        finally:
            demo.close()
            careless.close()
