"""The Ollama backend (the official `ollama` client) against the fake Ollama on loopback."""

from __future__ import annotations

from typing import Any

import pytest

from grasbot.llm import (
    Generation,
    GenerationOptions,
    LLMEmptyAnswer,
    LLMModelNotFound,
    LLMResponseError,
    LLMTimeout,
    LLMUnavailable,
    OllamaBackend,
    ThinkFilter,
    strip_think,
)
from tests.fake_ollama import FakeOllama
from tests.llm_calls import MESSAGES, chat_once, run, stream_once
from tests.service_fixtures import *  # noqa: F403



def test_chat_sends_the_documented_defaults(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(reply="Réponse sobre [bio].")
    gen = run(chat_once(OllamaBackend(fake_ollama.url, "qwen3:8b")))
    assert gen.text == "Réponse sobre [bio]."
    body = fake_ollama.chat_requests()[-1]
    assert body["model"] == "qwen3:8b"
    assert body["stream"] is False
    assert body["think"] is False  # top level, not inside options
    assert body["keep_alive"] == "30m"
    assert body["options"] == {"num_ctx": 8192, "num_predict": 1024, "temperature": 0.4}
    assert body["messages"] == MESSAGES
    assert gen.input_tokens and gen.output_tokens
    assert gen.usage() == {"input": gen.input_tokens, "output": gen.output_tokens, "total": gen.input_tokens + gen.output_tokens}
    assert gen.details["prompt_eval_count"] == gen.input_tokens and gen.details["total_duration"] > 0


def test_options_are_overridable(fake_ollama: FakeOllama) -> None:
    options = GenerationOptions(num_ctx=4096, num_predict=256, temperature=0.1, think=True, keep_alive="5m", extra={"top_p": 0.9})
    run(chat_once(OllamaBackend(fake_ollama.url, "qwen3:8b", options)))
    body = fake_ollama.chat_requests()[-1]
    assert body["options"] == {"num_ctx": 4096, "num_predict": 256, "temperature": 0.1, "top_p": 0.9}
    assert body["think"] is True and body["keep_alive"] == "5m"


def test_think_block_is_stripped(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(reply="La vraie réponse.", think="raisonnement caché")
    gen = run(chat_once(OllamaBackend(fake_ollama.url, "qwen3:8b")))
    assert gen.text == "La vraie réponse."
    assert "raisonnement" in gen.raw and "raisonnement" not in gen.text
    pieces, result = run(stream_once(OllamaBackend(fake_ollama.url, "qwen3:8b")))
    assert "".join(pieces).strip() == "La vraie réponse."
    assert "think" not in "".join(pieces)
    assert result.text == "La vraie réponse."


def test_stream_yields_the_whole_reply_and_counters(fake_ollama: FakeOllama) -> None:
    reply = "Aurèle a construit un collecteur en Rust [collecte-telemetrie-solaire]. Il tourne en production."
    fake_ollama.script(reply=reply)
    pieces, result = run(stream_once(OllamaBackend(fake_ollama.url, "qwen3:8b")))
    assert len(pieces) > 3
    assert "".join(pieces) == reply
    assert result.text == reply
    assert result.done_reason == "stop"
    assert result.output_tokens == len(pieces)
    assert fake_ollama.chat_requests()[-1]["stream"] is True


@pytest.mark.parametrize("streamed", [False, True])
def test_unknown_model_is_typed(fake_ollama: FakeOllama, streamed: bool) -> None:
    client = OllamaBackend(fake_ollama.url, "absent:1b")
    with pytest.raises(LLMModelNotFound) as info:
        run(stream_once(client) if streamed else chat_once(client))
    assert info.value.status == 502
    assert info.value.upstream_status == 404
    assert "absent:1b" in (info.value.detail or "")


@pytest.mark.parametrize("streamed", [False, True])
def test_http_error_is_typed(fake_ollama: FakeOllama, streamed: bool) -> None:
    fake_ollama.script(fail_status=500, fail_message="CUDA out of memory")
    client = OllamaBackend(fake_ollama.url, "qwen3:8b")
    with pytest.raises(LLMResponseError) as info:
        run(stream_once(client) if streamed else chat_once(client))
    assert info.value.upstream_status == 500
    assert "CUDA" not in info.value.message  # upstream text stays in `detail`, for logs


def test_error_line_mid_stream(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(reply="un début de réponse", error_mid_stream="model runner crashed")
    got: list[str] = []

    async def consume() -> None:
        client = OllamaBackend(fake_ollama.url, "qwen3:8b")
        try:
            async for piece in client.stream(MESSAGES, Generation()):
                got.append(piece)
        finally:
            await client.close()

    with pytest.raises(LLMResponseError) as info:
        run(consume())
    assert got == ["un"]
    assert "crashed" in (info.value.detail or "")


@pytest.mark.parametrize("streamed", [False, True])
def test_a_reply_without_its_final_message_is_not_an_answer(fake_ollama: FakeOllama, streamed: bool) -> None:
    fake_ollama.script(reply="une réponse coupée", unfinished=True)
    with pytest.raises(LLMResponseError) as info:
        run(stream_once(OllamaBackend(fake_ollama.url, "qwen3:8b")) if streamed else chat_once(OllamaBackend(fake_ollama.url, "qwen3:8b")))
    assert info.value.code == "llm_bad_response" and "final message" in info.value.message


def test_a_404_that_is_not_ollama_is_not_a_missing_model() -> None:
    import ollama

    from grasbot.llm.ollama import map_error

    error = map_error(ollama.ResponseError("404 page not found", 404))
    assert type(error) is LLMResponseError and error.upstream_status == 404
    assert isinstance(map_error(ollama.ResponseError("model 'x' not found", 404)), LLMModelNotFound)


@pytest.mark.parametrize("streamed", [False, True])
def test_unreachable_server(streamed: bool) -> None:
    client = OllamaBackend(f"http://127.0.0.1:{closed_port()}", "qwen3:8b", connect_timeout=1.0)
    with pytest.raises(LLMUnavailable) as info:
        run(stream_once(client) if streamed else chat_once(client))
    assert info.value.status == 503


@pytest.mark.parametrize("streamed", [False, True])
def test_slow_server_times_out(fake_ollama: FakeOllama, streamed: bool) -> None:
    fake_ollama.script(delay=5.0)
    client = OllamaBackend(fake_ollama.url, "qwen3:8b", timeout=0.3)
    with pytest.raises(LLMTimeout) as info:
        run(stream_once(client) if streamed else chat_once(client))
    assert info.value.status == 504


def test_slow_stream_times_out_between_pieces(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(reply="un deux trois quatre", chunk_delay=2.0)
    with pytest.raises(LLMTimeout):
        run(stream_once(OllamaBackend(fake_ollama.url, "qwen3:8b", timeout=0.5)))


def test_dropped_connection_is_typed(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(drop=True)
    with pytest.raises(LLMResponseError):
        run(chat_once(OllamaBackend(fake_ollama.url, "qwen3:8b")))


def test_empty_answer_is_reported_as_empty_text(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(empty=True)
    gen = run(chat_once(OllamaBackend(fake_ollama.url, "qwen3:8b")))
    assert gen.text == ""
    # An answer that is only a think block is empty too.
    fake_ollama.script(reply="", think="tout le budget passé à réfléchir")
    gen = run(chat_once(OllamaBackend(fake_ollama.url, "qwen3:8b")))
    assert gen.text == "" and gen.raw
    assert LLMEmptyAnswer("x").status == 502


def test_probe(fake_ollama: FakeOllama) -> None:
    async def probe(url: str, model: str) -> dict[str, Any]:
        client = OllamaBackend(url, model)
        try:
            return await client.probe()
        finally:
            await client.close()

    assert run(probe(fake_ollama.url, "qwen3:8b")) == {"reachable": True, "model_available": True}
    assert run(probe(fake_ollama.url, "llama3:70b"))["model_available"] is False
    down = run(probe(f"http://127.0.0.1:{closed_port()}", "qwen3:8b"))
    assert down["reachable"] is False and down["error"] == "llm_unavailable"


# -- the <think> filter -----------------------------------------------------------------------------
CASES = [
    ("<think>a</think>Bonjour", "Bonjour"),
    ("<think>\nlong\nraisonnement\n</think>\n\nRéponse [x].", "Réponse [x]."),
    ("Avant <think>milieu</think> après", "Avant  après"),
    ("Pas de bloc, juste < et > et </b>.", "Pas de bloc, juste < et > et </b>."),
    ("</think>Réponse après une fermeture orpheline", "Réponse après une fermeture orpheline"),
    ("Réponse <think>jamais fermé", "Réponse"),
    ("Texte qui finit par <thi", "Texte qui finit par <thi"),
    ("a<think>x</think>b<think>y</think>c", "abc"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_strip_think(text: str, expected: str) -> None:
    assert strip_think(text) == expected


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_think_filter_is_independent_of_how_the_text_is_cut(text: str, expected: str) -> None:
    for cut in range(len(text) + 1):
        f = ThinkFilter()
        out = f.feed(text[:cut]) + f.feed(text[cut:]) + f.finish()
        assert out.strip() == expected, (cut, out)
    f = ThinkFilter()
    out = "".join(f.feed(ch) for ch in text) + f.finish()
    assert out.strip() == expected


# -- the fake itself speaks Ollama's protocol -------------------------------------------------------
def test_fake_ollama_protocol(fake_ollama: FakeOllama) -> None:
    import json

    import httpx
    import ollama

    with ollama.Client(host=fake_ollama.url) as client:
        assert [m.model for m in client.list().models] == ["qwen3:8b"]
    with httpx.Client(base_url=fake_ollama.url, timeout=5, trust_env=False) as http:
        assert http.get("/api/version").json()["version"]
        r = http.post("/api/chat", json={"model": "inconnu:1b", "messages": []})
        assert r.status_code == 404 and r.json() == {"error": "model 'inconnu:1b' not found"}
        fake_ollama.script(reply="Bonjour à vous.")
        body = http.post("/api/chat", json={"model": "qwen3:8b", "messages": [{"role": "user", "content": "Salut"}], "stream": False}).json()
        assert body["message"] == {"role": "assistant", "content": "Bonjour à vous."}
        assert body["done"] is True and body["done_reason"] == "stop"
        for key in ("model", "created_at", "total_duration", "load_duration", "prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration"):
            assert key in body, key
        with http.stream("POST", "/api/chat", json={"model": "qwen3:8b", "messages": []}) as r:
            assert r.headers["content-type"] == "application/x-ndjson"
            assert r.headers["transfer-encoding"] == "chunked"
            lines = [json.loads(line) for line in r.iter_lines() if line]
        assert "".join(line["message"]["content"] for line in lines) == "Bonjour à vous."
        assert [line["done"] for line in lines] == [False] * (len(lines) - 1) + [True]
        assert lines[-1]["eval_count"] == len(lines) - 1
        fake_ollama.script(reply="un deux", error_mid_stream="boom")
        with http.stream("POST", "/api/chat", json={"model": "qwen3:8b", "messages": []}) as r:
            lines = [json.loads(line) for line in r.iter_lines() if line]
        assert lines[-1] == {"error": "boom"} and lines[0]["message"]["content"] == "un"
    recorded = fake_ollama.chat_requests()
    assert recorded[1]["messages"] == [{"role": "user", "content": "Salut"}]
