"""Langfuse tracing, checked on what the real SDK sends to a collector on loopback (OTLP spans, scores)."""

from __future__ import annotations

import base64
import contextlib
from collections.abc import Iterator

import httpx
import pytest

from grasbot.service.settings import Settings
from grasbot.service.observability import is_trace_id, retrieval_relevance
from tests.fake_ollama import FakeOllama
from tests.langfuse_collector import LangfuseCollector, Span
from tests.service_fixtures import *  # noqa: F403
from tests.service_fixtures import SAMPLE_VAULT, RunningServer, langfuse_settings, run_server, state_dir_for_tests, wait_for_health

RUST = "Que sait-il faire en Rust ?"
OFF_TOPIC = "Quel temps fait-il demain ?"
NAMES = {"ask", "retrieval", "prompt-build", "ollama-chat"}


@pytest.fixture
def traced(fake_ollama: FakeOllama, collector: LangfuseCollector) -> Iterator[tuple[RunningServer, Settings]]:
    if not SAMPLE_VAULT.is_dir():
        pytest.skip("the bundled vault/ is missing")
    settings = langfuse_settings(fake_ollama, collector)
    with run_server(settings, SAMPLE_VAULT) as server:
        yield server, settings


def wait_trace(collector: LangfuseCollector, trace_id: str, scores: int = 2) -> dict[str, Span]:
    ok = collector.wait_for(
        lambda c: NAMES <= {s.name for s in c.trace(trace_id)} and len(c.scores_for(trace_id)) >= scores, timeout=15
    )
    assert ok, f"trace {trace_id} incomplete: {[s.name for s in collector.trace(trace_id)]}, {collector.scores}"
    return {s.name: s for s in collector.trace(trace_id)}


def test_ask_is_one_trace_with_spans_tags_and_scores(
    traced: tuple[RunningServer, Settings], fake_ollama: FakeOllama, collector: LangfuseCollector
) -> None:
    server, settings = traced
    fake_ollama.script(reply="Il écrit du Rust [rust].")
    body = server.client().get("/ask", params={"q": RUST, "session_id": "sess-42", "user_id": "user-7"}).json()
    spans = wait_trace(collector, body["trace_id"])
    root, retrieval, prompt, gen = spans["ask"], spans["retrieval"], spans["prompt-build"], spans["ollama-chat"]

    # One tree: the three observations are children of the root `ask`.
    assert root.parent_span_id is None
    assert {retrieval.parent_span_id, prompt.parent_span_id, gen.parent_span_id} == {root.span_id}
    assert root.attributes["langfuse.trace.name"] == "ask"
    assert root.json("langfuse.observation.input") == {"query": RUST}
    assert root.json("langfuse.observation.output") == {"response": "Il écrit du Rust [rust].", "sources_count": len(body["sources"]), "grounded": True}
    assert root.json("langfuse.trace.metadata.top_k") == 5
    for span in spans.values():
        assert span.attributes["session.id"] == body["session_id"]  # the id the server issued, not "sess-42"
        assert body["session_id"] != "sess-42"
        assert span.attributes["user.id"] == "user-7"
        assert span.scope_attributes.get("public_key") == settings.langfuse_public_key
    assert set(root.attributes["langfuse.trace.tags"]) == {"grounded", "model:qwen3:8b"}

    # retrieval: top-K with scores and reasons, and the debugging metadata of the seed.
    assert retrieval.observation_type == "span"
    output = retrieval.json("langfuse.observation.output")
    assert [o["slug"] for o in output] == [s["slug"] for s in body["sources"]]
    assert output[0]["reasons"] == body["sources"][0]["reasons"]
    assert retrieval.json("langfuse.observation.metadata.vault_size") == body["vault_size"]
    assert retrieval.json("langfuse.observation.metadata.query_tokens")
    assert retrieval.json("langfuse.observation.metadata.elapsed_ms") >= 0

    # prompt-build: the prompt as sent, its sizes, the truncated notes.
    sent = fake_ollama.chat_requests()[-1]["messages"]
    assert prompt.json("langfuse.observation.output") == {"system": sent[0]["content"], "user": sent[-1]["content"]}
    assert prompt.json("langfuse.observation.metadata.user_chars") == len(sent[-1]["content"])
    truncation = prompt.json("langfuse.observation.metadata.truncation")
    assert truncation["secondary_max_chars"] == 1500 and truncation["secondary_keep_ratio"] == 0.8
    assert isinstance(truncation["truncated_notes"], list)

    # ollama-chat: a generation with model, parameters and usage from Ollama's counters.
    assert gen.observation_type == "generation"
    assert gen.attributes["langfuse.observation.model.name"] == "qwen3:8b"
    assert gen.json("langfuse.observation.model.parameters") == {
        "num_ctx": 8192, "num_predict": 1024, "temperature": 0.4, "think": False, "keep_alive": "30m"
    }  # fmt: skip
    usage = gen.json("langfuse.observation.usage_details")
    assert usage["input"] > 0 and usage["output"] > 0 and usage["total"] == usage["input"] + usage["output"]
    assert gen.json("langfuse.observation.input") == sent

    scores = collector.scores_for(body["trace_id"])
    assert scores["grounded"]["value"] == 1.0 and scores["grounded"]["dataType"] == "BOOLEAN"
    assert scores["retrieval_relevance"]["dataType"] == "NUMERIC"
    assert scores["retrieval_relevance"]["value"] == pytest.approx(min(body["sources"][0]["score"] / 15, 1), abs=0.01)


def test_ungrounded_question_is_tagged_and_scored(
    traced: tuple[RunningServer, Settings], collector: LangfuseCollector
) -> None:
    server, _ = traced
    body = server.client().get("/ask", params={"q": OFF_TOPIC}).json()
    spans = wait_trace(collector, body["trace_id"])
    assert "ungrounded" in spans["ask"].attributes["langfuse.trace.tags"]
    assert collector.scores_for(body["trace_id"])["grounded"]["value"] == 0.0
    assert spans["prompt-build"].json("langfuse.observation.metadata.grounded") is False


def test_vault_miss_tag(traced: tuple[RunningServer, Settings], collector: LangfuseCollector) -> None:
    server, _ = traced
    body = server.client().get("/ask", params={"q": "zzzz qqqq"}).json()
    spans = wait_trace(collector, body["trace_id"])
    assert {"ungrounded", "vault-miss"} <= set(spans["ask"].attributes["langfuse.trace.tags"])
    assert collector.scores_for(body["trace_id"])["retrieval_relevance"]["value"] == 0.0


def test_empty_answer_marks_the_generation_as_error(
    traced: tuple[RunningServer, Settings], fake_ollama: FakeOllama, collector: LangfuseCollector
) -> None:
    server, _ = traced
    fake_ollama.script(empty=True)
    r = server.client().get("/ask", params={"q": RUST})
    assert r.status_code == 502
    spans = wait_trace(collector, r.json()["trace_id"])
    gen = spans["ollama-chat"]
    assert gen.attributes["langfuse.observation.level"] == "ERROR"
    assert gen.status_code == 2  # OTel STATUS_CODE_ERROR
    ollama = gen.json("langfuse.observation.metadata.ollama")
    assert ollama["done_reason"] == "stop" and ollama["eval_count"] == 0


def test_streamed_answer_is_traced_too(
    traced: tuple[RunningServer, Settings], fake_ollama: FakeOllama, collector: LangfuseCollector
) -> None:
    server, _ = traced
    fake_ollama.script(reply="Réponse diffusée [rust].")
    text = server.client().get("/ask/stream", params={"q": RUST, "session_id": "flux"}).text
    trace_id = text.split('"trace_id": "', 1)[1][:32]
    session_id = text.split('"session_id": "', 1)[1].split('"', 1)[0]
    spans = wait_trace(collector, trace_id)
    assert spans["ask"].json("langfuse.observation.output")["response"] == "Réponse diffusée [rust]."
    assert spans["ollama-chat"].json("langfuse.observation.output") == "Réponse diffusée [rust]."
    assert spans["ask"].attributes["session.id"] == session_id != "flux"


def test_feedback_is_a_user_feedback_score(traced: tuple[RunningServer, Settings], collector: LangfuseCollector) -> None:
    server, _ = traced
    client = server.client()
    trace_id = client.get("/ask", params={"q": RUST}).json()["trace_id"]
    r = client.post("/feedback", json={"trace_id": trace_id, "value": 0, "comment": "hors sujet\x00"})
    assert r.status_code == 200 and r.json() == {"recorded": True, "trace_id": trace_id}
    assert collector.wait_for(lambda c: "user_feedback" in c.scores_for(trace_id), timeout=15)
    score = collector.scores_for(trace_id)["user_feedback"]
    assert score["value"] == 0.0 and score["dataType"] == "BOOLEAN" and score["comment"] == "hors sujet"


def test_health_says_enabled_and_secrets_stay_out_of_payloads(
    traced: tuple[RunningServer, Settings], collector: LangfuseCollector
) -> None:
    server, settings = traced
    client = server.client()
    assert client.get("/health").json()["observability"] == {"langfuse_enabled": True}
    trace_id = client.get("/ask", params={"q": RUST}).json()["trace_id"]
    wait_trace(collector, trace_id)
    secret = settings.langfuse_secret_key
    assert secret and secret not in collector.all_payload_text()
    assert secret not in server.logs.text()
    # The secret travels only as the exporters' basic auth, which is how the server authenticates them.
    auth = {r.headers.get("Authorization") or r.headers.get("authorization") for r in collector.received}
    assert auth == {"Basic " + base64.b64encode(f"{settings.langfuse_public_key}:{secret}".encode()).decode()}


def test_spans_are_flushed_on_shutdown(fake_ollama: FakeOllama, collector: LangfuseCollector) -> None:
    # A flush interval far longer than the test: only the shutdown flush can deliver the trace.
    settings = langfuse_settings(fake_ollama, collector, langfuse_flush_interval=3600.0)
    with run_server(settings, SAMPLE_VAULT) as server:
        trace_id = server.client().get("/ask", params={"q": RUST}).json()["trace_id"]
        assert collector.trace(trace_id) == []
    assert NAMES <= {s.name for s in collector.trace(trace_id)}


def test_without_keys_nothing_is_sent(fake_ollama: FakeOllama, collector: LangfuseCollector) -> None:
    settings = langfuse_settings(fake_ollama, collector).with_overrides(langfuse_secret_key=None)
    with run_server(settings, SAMPLE_VAULT) as server:
        client = server.client()
        body = client.get("/ask", params={"q": RUST}).json()
        assert len(body["trace_id"]) == 32  # still given, so the front-end code path is the same
        assert client.get("/health").json()["observability"] == {"langfuse_enabled": False}
        assert client.post("/feedback", json={"trace_id": body["trace_id"], "value": 1}).json()["recorded"] is False
    assert collector.received == []
    assert "Authentication error" not in server.logs.text()  # no SDK warning: the SDK is not even started


def test_unreachable_langfuse_does_not_break_answers(fake_ollama: FakeOllama) -> None:
    with LangfuseCollector() as gone:
        url = gone.url
    settings = Settings.from_env(environ={}, env_file=None).with_overrides(
        ollama_url=fake_ollama.url,
        langfuse_public_key="pk-lf-unreachable-" + fake_ollama.url[-5:],
        langfuse_secret_key="sk-lf-unreachable",
        langfuse_base_url=url,
        langfuse_flush_interval=0.05,
        langfuse_timeout=1,
    )
    with run_server(settings, SAMPLE_VAULT) as server:
        with httpx.Client(base_url=server.url, timeout=10, trust_env=False) as client:
            for _ in range(3):
                assert client.get("/ask", params={"q": RUST}).status_code == 200


def test_relevance_formula() -> None:
    assert retrieval_relevance(0) == 0.0
    assert retrieval_relevance(7.5) == 0.5
    assert retrieval_relevance(40) == 1.0


def test_trace_id_format() -> None:
    assert is_trace_id("0123456789abcdef" * 2)
    for bad in ("0123456789abcdef" * 2 + "\n", "0123456789ABCDEF" * 2, "0" * 31, "0" * 33, ""):
        assert not is_trace_id(bad), repr(bad)  # a `$`-anchored pattern accepted the final newline


class BlackHole:
    """A TCP server that accepts every connection and never answers: a Langfuse that hangs."""

    def __init__(self) -> None:
        import socket
        import threading

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(256)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


@contextlib.contextmanager
def served_with_black_hole_langfuse(tmp_path, fake: FakeOllama, asks: int, langfuse_url: str | None = None):  # noqa: ANN001, ANN201, E501
    """`grasbot serve` traced to a black hole (or `langfuse_url`), after `asks` questions: yields (process,
    log path); the process is killed if still running at the end, and the black hole closed."""
    hole = BlackHole()
    try:
        proc, log_path = _serve_traced_to(tmp_path, fake, hole, asks, langfuse_url)
        try:
            yield proc, log_path
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=5)
    finally:
        hole.close()


def _serve_traced_to(tmp_path, fake: FakeOllama, hole: BlackHole, asks: int, langfuse_url: str | None):  # noqa: ANN001, ANN202
    import os
    import socket
    import subprocess
    import sys

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGFUSE_", "GRASBOT_"))}
    env.update(
        GRASBOT_STATE_DIR=str(state_dir_for_tests()),
        GRASBOT_RATE_LIMIT="0",  # a dozen questions in a row from 127.0.0.1
        OLLAMA_URL=fake.url,
        LANGFUSE_PUBLIC_KEY="pk-lf-test",
        LANGFUSE_SECRET_KEY="sk-lf-SECRET-black-hole",
        LANGFUSE_BASE_URL=langfuse_url or hole.url,
        LANGFUSE_TIMEOUT="60",  # every request to Langfuse hangs a minute
        LANGFUSE_FLUSH_INTERVAL="0.2",
    )
    log_path = tmp_path / "serve.log"
    cmd = [sys.executable, "-m", "grasbot.service.cli", "serve", "--vault", str(SAMPLE_VAULT), "--port", str(port)]
    out = log_path.open("w", encoding="utf-8")
    proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, text=True)
    out.close()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10, trust_env=False) as client:
            wait_for_health(client, proc, log_path)
            for i in range(asks):
                assert client.get("/ask", params={"q": f"{RUST} {i}"}).status_code == 200
    except BaseException:
        proc.kill()
        proc.wait(timeout=5)
        raise
    return proc, log_path


def test_stop_with_a_hanging_langfuse_is_bounded(tmp_path, fake_ollama: FakeOllama) -> None:  # noqa: ANN001
    """With Langfuse accepting connections and never answering, SIGTERM still stops the server within
    seconds (it used to take minutes: batch after batch, each waiting LANGFUSE_TIMEOUT); what is dropped is
    said in one line, formatted like every other (the SDK's lines too)."""
    import re
    import time

    with served_with_black_hole_langfuse(tmp_path, fake_ollama, asks=40) as (proc, log_path):
        time.sleep(0.5)  # the exporters are now stuck on the black hole
        stopped = time.monotonic()
        proc.terminate()
        proc.wait(timeout=20)
        elapsed = time.monotonic() - stopped
    text = log_path.read_text(encoding="utf-8")
    assert elapsed < 10, f"stopping took {elapsed:.1f} s\n{text}"
    dropped = re.findall(r"(?m)^WARNING: +Langfuse did not take the buffered data within 5 s: dropped (\d+) spans and (\d+) scores$", text)
    assert len(dropped) == 1, text
    assert int(dropped[0][0]) + int(dropped[0][1]) > 0, text
    assert "Traceback" not in text and "sk-lf-SECRET" not in text
    for line in text.splitlines():  # uvicorn's format for every line, the Langfuse SDK's included
        assert re.match(r"(INFO|WARNING|ERROR|CRITICAL|DEBUG): ", line), line


def test_a_second_signal_ends_the_langfuse_flush_at_once(tmp_path, fake_ollama: FakeOllama) -> None:  # noqa: ANN001
    import signal
    import time

    with served_with_black_hole_langfuse(tmp_path, fake_ollama, asks=5) as (proc, log_path):
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 10
        while "sending buffered traces to Langfuse" not in log_path.read_text(encoding="utf-8"):
            assert time.monotonic() < deadline and proc.poll() is None, log_path.read_text(encoding="utf-8")
            time.sleep(0.05)
        forced = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
        elapsed = time.monotonic() - forced
    text = log_path.read_text(encoding="utf-8")
    assert elapsed < 2, f"the second signal took {elapsed:.1f} s to stop the server\n{text}"
    assert "Langfuse did not take the buffered data before a second stop signal: dropped" in text, text


def test_langfuse_sdk_lines_are_formatted_like_ours(tmp_path, fake_ollama: FakeOllama) -> None:  # noqa: ANN001
    """The Langfuse SDK's own lines (and its OpenTelemetry exporter's) go through uvicorn's handler, with
    the `LEVEL:` prefix, instead of reaching stderr bare."""
    import re
    import socket
    import time

    with socket.socket() as s:  # nothing listens there: every export fails, and the SDK says so
        s.bind(("127.0.0.1", 0))
        refused = f"http://127.0.0.1:{s.getsockname()[1]}"
    with served_with_black_hole_langfuse(tmp_path, fake_ollama, asks=1, langfuse_url=refused) as (proc, log_path):
        deadline = time.monotonic() + 15
        while "Failed to send" not in log_path.read_text(encoding="utf-8"):
            assert time.monotonic() < deadline and proc.poll() is None, log_path.read_text(encoding="utf-8")
            time.sleep(0.1)
        proc.terminate()
        proc.wait(timeout=20)
    text = log_path.read_text(encoding="utf-8")
    assert re.search(r"(?m)^ERROR: +API error: Failed to send \d+ scores to Langfuse", text), text
    for line in text.splitlines():
        assert re.match(r"(INFO|WARNING|ERROR|CRITICAL): ", line), line
    assert "sk-lf-SECRET" not in text
