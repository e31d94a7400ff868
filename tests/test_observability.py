"""Langfuse tracing, checked on what the real SDK sends to a collector on loopback (OTLP spans, scores)."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import httpx
import pytest

from grasbot.config import Settings
from grasbot.observability import is_trace_id, retrieval_relevance
from tests.fake_ollama import FakeOllama
from tests.langfuse_collector import LangfuseCollector, Span
from tests.service_fixtures import *  # noqa: F403
from tests.service_fixtures import SAMPLE_VAULT, RunningServer, langfuse_settings, run_server

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
        assert span.attributes["session.id"] == "sess-42"
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
    spans = wait_trace(collector, trace_id)
    assert spans["ask"].json("langfuse.observation.output")["response"] == "Réponse diffusée [rust]."
    assert spans["ollama-chat"].json("langfuse.observation.output") == "Réponse diffusée [rust]."
    assert spans["ask"].attributes["session.id"] == "flux"


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
