"""The API answering through the OpenAI-compatible backend (LLM_BACKEND=openai), against the fake
OpenAI-compatible server: a real uvicorn in-process for the error answers, and `grasbot serve` as a real
process, traced to the Langfuse collector, for the whole path a deployment takes."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from tests.fake_openai import FakeOpenAI
from tests.langfuse_collector import LangfuseCollector
from tests.service_fixtures import *  # noqa: F403
from tests.service_fixtures import SAMPLE_VAULT, grasbot_serve, openai_settings, run_server, sse_events

RUST = "Que sait-il faire en Rust ?"

pytestmark = pytest.mark.skipif(not SAMPLE_VAULT.is_dir(), reason="the bundled vault/ is missing")


def test_ask_and_stream_through_the_openai_backend(fake_openai: FakeOpenAI) -> None:
    reply = "Aurèle a appris Rust en 2020, en réécrivant un outil de géocodage [rust]."  # verified: sources served
    fake_openai.script(reply=reply)
    with run_server(openai_settings(fake_openai), SAMPLE_VAULT) as server:
        client = server.client()
        body = client.get("/ask", params={"q": RUST}).json()
        assert body["response"] == reply and body["sources"][0]["slug"] == "rust"
        sent = fake_openai.chat_requests()[-1]
        assert sent["stream"] is False and sent["messages"][-1]["role"] == "user"
        assert "rust" in sent["messages"][-1]["content"].lower()
        followup = {"q": "et en quel langage ?", "session_id": body["session_id"]}  # the id the server issued
        events = sse_events(client.get("/ask/stream", params=followup).text)
        assert [e for e, _ in events][0] == "sources" and events[-1][0] == "done"
        assert "".join(d["text"] for e, d in events if e == "token") == reply
        streamed = fake_openai.chat_requests()[-1]
        assert streamed["stream"] is True and streamed["stream_options"] == {"include_usage": True}
        assert len(streamed["messages"]) == 4  # system, the remembered turn, the follow-up
        health = client.get("/health").json()
        assert health["status"] == "ok"
        assert health["llm"]["backend"] == "openai" and health["llm"]["url"] == fake_openai.base_url
        assert health["config"]["llm_api_key_set"] is True
        assert fake_openai.api_key not in client.get("/health").text
    assert fake_openai.api_key not in server.logs.text()


def test_llm_failures_are_the_same_answers(fake_openai: FakeOpenAI) -> None:
    with run_server(openai_settings(fake_openai, llm_timeout=0.5), SAMPLE_VAULT) as server:
        client = server.client()
        for script, status, code in (
            ({"fail_status": 500, "fail_message": "out of memory"}, 502, "llm_bad_response"),
            ({"fail_status": 429, "fail_message": "Rate limit reached"}, 502, "llm_bad_response"),
            ({"empty": True}, 502, "llm_empty_answer"),
            ({"delay": 5.0}, 504, "llm_timeout"),
        ):
            fake_openai.script(**script)
            r = client.get("/ask", params={"q": RUST})
            assert (r.status_code, r.json()["error"]) == (status, code), script
            assert r.json()["sources"] and "out of memory" not in r.text
            events = sse_events(client.get("/ask/stream", params={"q": RUST}).text)
            assert events[-2][0] == "failed" and events[-2][1]["status"] == status, script
        fake_openai.script(reply="un début de réponse", error_mid_stream="model runner crashed")
        events = sse_events(client.get("/ask/stream", params={"q": RUST}).text)
        assert [e for e, _ in events] == ["sources", "token", "failed", "error"]
        assert events[-1][1]["status"] == 502 and "crashed" not in str(events)
    with run_server(openai_settings(fake_openai, llm_model="absent-model"), SAMPLE_VAULT) as server:
        r = server.client().get("/ask", params={"q": RUST})
        assert r.status_code == 502 and r.json()["error"] == "llm_model_not_found"
        health = server.client().get("/health").json()
        assert health["llm"]["reachable"] is True and health["llm"]["model_available"] is False
    with run_server(openai_settings(None), SAMPLE_VAULT) as server:  # nothing listens there
        started = time.monotonic()
        r = server.client().get("/ask", params={"q": RUST})
        assert r.status_code == 503 and r.json()["error"] == "llm_unavailable"
        assert time.monotonic() - started < 5
        assert server.client().get("/health").json()["llm"]["reachable"] is False


def test_a_wrong_key_is_a_502_that_never_shows_the_key(fake_openai: FakeOpenAI) -> None:
    settings = openai_settings(fake_openai, llm_api_key="sk-wrong-VERY-SECRET-KEY")
    with run_server(settings, SAMPLE_VAULT) as server:
        client = server.client()
        r = client.get("/ask", params={"q": RUST})
        assert r.status_code == 502 and r.json()["error"] == "llm_bad_response"
        health = client.get("/health")
        assert health.json()["llm"]["upstream_status"] == 401 and health.json()["status"] == "degraded"
        for text in (r.text, health.text, server.logs.text(), repr(settings)):
            assert "VERY-SECRET" not in text


def test_a_visitor_who_leaves_stops_the_generation(fake_openai: FakeOpenAI) -> None:
    fake_openai.script(reply="un deux trois quatre cinq six sept huit", chunk_delay=0.5)
    with run_server(openai_settings(fake_openai), SAMPLE_VAULT) as server:
        probing = fake_openai.open_connections  # the start-up probe's keep-alive connection
        with httpx.Client(base_url=server.url, timeout=10, trust_env=False) as client:
            with client.stream("GET", "/ask/stream", params={"q": RUST}) as response:
                for line in response.iter_lines():
                    if line.startswith("event: token"):
                        break  # the first token came: leave
        assert fake_openai.wait_until(lambda f: f.abandoned_chats == 1 and f.open_connections <= probing, timeout=10)
        assert server.service.llm.in_flight == 0


def test_grasbot_serve_answers_through_openai_and_traces_usage(
    tmp_path: Path, fake_openai: FakeOpenAI, collector: LangfuseCollector
) -> None:
    """The deployment path: `grasbot serve` configured by the environment (LLM_BACKEND, LLM_BASE_URL,
    LLM_API_KEY, LLM_MODEL), answering /ask and /ask/stream; Langfuse gets the usage the server counted
    and the model as the server names it; the key is nowhere in what the service says or logs."""
    fake_openai.models.add("gpt-4o-mini")
    fake_openai.script(reply="Il écrit du Rust [rust].", reported_model="gpt-4o-mini-2024-07-18")
    env = {
        "LLM_BACKEND": "openai",
        "LLM_BASE_URL": fake_openai.base_url,
        "LLM_API_KEY": fake_openai.api_key or "",
        "LLM_MODEL": "gpt-4o-mini",
        "LANGFUSE_PUBLIC_KEY": "pk-lf-openai-test",
        "LANGFUSE_SECRET_KEY": "sk-lf-SECRET-openai-test",
        "LANGFUSE_BASE_URL": collector.url,
        "LANGFUSE_FLUSH_INTERVAL": "0.1",
    }
    with grasbot_serve(tmp_path, env) as (client, _, log_path):
        health = client.get("/health")
        assert health.json()["llm"]["backend"] == "openai" and health.json()["status"] == "ok"
        asked = client.get("/ask", params={"q": RUST})
        assert asked.status_code == 200 and asked.json()["response"] == "Il écrit du Rust [rust]."
        assert asked.json()["model"] == "gpt-4o-mini"
        events = sse_events(client.get("/ask/stream", params={"q": RUST}).text)
        assert events[-1][0] == "done" and events[-1][1]["response"] == "Il écrit du Rust [rust]."
        trace_ids = [asked.json()["trace_id"], events[-1][1]["trace_id"]]
        for trace_id in trace_ids:
            assert collector.wait_for(lambda c, t=trace_id: "openai-chat" in {s.name for s in c.trace(t)}, timeout=15)
    for trace_id, request in zip(trace_ids, fake_openai.chat_requests(), strict=True):
        gen = next(s for s in collector.trace(trace_id) if s.name == "openai-chat")
        assert gen.observation_type == "generation"
        assert gen.attributes["langfuse.observation.model.name"] == "gpt-4o-mini-2024-07-18"
        assert gen.json("langfuse.observation.model.parameters") == {"temperature": 0.4, "max_tokens": 1024}
        usage = gen.json("langfuse.observation.usage_details")
        prompt_tokens = max(sum(len(m["content"]) for m in request["messages"]) // 4, 1)  # what the fake counts
        assert usage == {"input": prompt_tokens, "output": 5, "total": prompt_tokens + 5}
        assert gen.json("langfuse.observation.input") == request["messages"]
    assert all(r.headers.get("Authorization") == f"Bearer {fake_openai.api_key}" for r in fake_openai.requests)
    log = log_path.read_text(encoding="utf-8")
    assert "(openai)" in log and "Traceback" not in log
    assert fake_openai.api_key not in log and fake_openai.api_key not in health.text


def test_config_errors_name_the_variable(tmp_path: Path) -> None:
    """A bad LLM_BACKEND stops `grasbot serve` with a line that names it and what it takes."""
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-m", "grasbot.service.cli", "serve", "--vault", str(SAMPLE_VAULT)],
        env={"PATH": "/usr/bin:/bin", "LLM_BACKEND": "vllm", "LLM_API_KEY": "sk-VERY-SECRET", "LLM_TIMEOUT": "soon"},
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "LLM_BACKEND: expected one of ollama, openai, got 'vllm'" in run.stderr
    assert "LLM_TIMEOUT: expected a number, got 'soon'" in run.stderr
    assert "VERY-SECRET" not in run.stderr


def test_a_server_that_refuses_stream_options_and_max_tokens_still_answers(fake_openai: FakeOpenAI) -> None:
    """Older vLLM / Azure refuse `stream_options`, OpenAI's reasoning models `max_tokens`: the API answers
    anyway, each refusal costs one request once, and the log says it once (grasbot/llm/openai.py)."""
    reply = "Aurèle a appris Rust en 2020, en réécrivant un outil de géocodage [rust]."
    fake_openai.script(reply=reply, refuses=("stream_options", "max_tokens"))
    with run_server(openai_settings(fake_openai), SAMPLE_VAULT) as server:
        client = server.client()
        for _ in range(2):
            events = sse_events(client.get("/ask/stream", params={"q": RUST}).text)
            assert events[-1][0] == "done" and "".join(d["text"] for e, d in events if e == "token") == reply
            r = client.get("/ask", params={"q": RUST})
            assert r.status_code == 200 and r.json()["response"] == reply
        sent = fake_openai.chat_requests()
        assert len(sent) == 6  # stream: refused twice then answered; then three answered at once
        assert all("stream_options" not in b and b["max_completion_tokens"] == 1024 for b in sent[2:])
        logs = server.logs.text()
        assert logs.count("refuses `stream_options`") == 1 and logs.count("refuses `max_tokens`") == 1
