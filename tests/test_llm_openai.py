"""The OpenAI-compatible backend against the fake OpenAI-compatible server on loopback (real HTTP, SSE)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from grasbot.llm import (
    BACKENDS,
    Generation,
    GenerationOptions,
    LLMConfig,
    LLMModelNotFound,
    LLMResponseError,
    LLMTimeout,
    LLMUnavailable,
    OpenAIBackend,
    backend_class,
    create_backend,
)
from grasbot.llm.openai import sse_events
from tests.fake_openai import FakeOpenAI
from tests.llm_calls import MESSAGES, chat_once, run, stream_once
from tests.service_fixtures import closed_port

KEY = "sk-test-VERY-SECRET-0123456789"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(models=("qwen3:8b", "gpt-4o-mini"), api_key=KEY) as server:
        yield server


def backend(fake: FakeOpenAI, model: str = "qwen3:8b", **kwargs: Any) -> OpenAIBackend:
    kwargs.setdefault("api_key", KEY)
    return OpenAIBackend(fake.base_url, model, **kwargs)


def test_chat_sends_the_protocol_and_reads_usage_and_the_reported_model(fake: FakeOpenAI) -> None:
    fake.script(reply="Réponse sobre [bio].", reported_model="qwen3-8b-q4_k_m.gguf")
    gen = run(chat_once(backend(fake)))
    assert gen.text == "Réponse sobre [bio]."
    assert gen.model == "qwen3-8b-q4_k_m.gguf"  # as the provider reports it
    assert gen.done_reason == "stop"
    request = fake.requests[-1]
    assert request.path == "/v1/chat/completions" and request.headers["Authorization"] == f"Bearer {KEY}"
    assert request.body == {"model": "qwen3:8b", "messages": MESSAGES, "stream": False, "temperature": 0.4, "max_tokens": 1024}
    assert gen.usage() == {"input": gen.input_tokens, "output": gen.output_tokens, "total": gen.input_tokens + gen.output_tokens}
    assert gen.input_tokens and gen.output_tokens == 3
    assert gen.raw_summary()["usage"]["completion_tokens"] == 3


def test_stream_yields_the_whole_reply_then_usage(fake: FakeOpenAI) -> None:
    reply = "Aurèle a construit un collecteur en Rust [collecte-telemetrie-solaire]. Il tourne en production."
    fake.script(reply=reply, reported_model="gpt-4o-mini-2024-07-18")
    pieces, result = run(stream_once(backend(fake, "gpt-4o-mini")))
    assert len(pieces) > 3 and "".join(pieces) == reply and result.text == reply
    body = fake.chat_requests()[-1]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert result.done_reason == "stop" and result.model == "gpt-4o-mini-2024-07-18"
    assert result.output_tokens == len(pieces) and result.usage()["total"] == result.input_tokens + len(pieces)


def test_a_server_that_sends_no_usage_leaves_the_counters_out(fake: FakeOpenAI) -> None:
    fake.script(reply="Sans compteurs.", no_usage=True)
    pieces, result = run(stream_once(backend(fake)))
    assert "".join(pieces) == "Sans compteurs." and result.usage() == {}


def test_options_the_protocol_has(fake: FakeOpenAI) -> None:
    options = GenerationOptions(num_ctx=4096, num_predict=-1, temperature=0.1, think=True, keep_alive="5m", extra={"top_p": 0.9})
    client = backend(fake, options=options)
    run(chat_once(client))
    body = fake.chat_requests()[-1]
    # no max_tokens below 0 (the server's own limit); Ollama's num_ctx, think, keep_alive have no equivalent
    assert body == {"model": "qwen3:8b", "messages": MESSAGES, "stream": False, "temperature": 0.1, "top_p": 0.9}
    assert client.model_parameters() == {"temperature": 0.1, "top_p": 0.9}


def test_think_block_is_stripped(fake: FakeOpenAI) -> None:
    fake.script(reply="La vraie réponse.", think="raisonnement caché")
    gen = run(chat_once(backend(fake)))
    assert gen.text == "La vraie réponse." and "raisonnement" in gen.raw
    pieces, result = run(stream_once(backend(fake)))
    assert "".join(pieces).strip() == "La vraie réponse." and result.text == "La vraie réponse."


@pytest.mark.parametrize("streamed", [False, True])
def test_unknown_model_is_typed(fake: FakeOpenAI, streamed: bool) -> None:
    client = backend(fake, "absent-1b")
    with pytest.raises(LLMModelNotFound) as info:
        run(stream_once(client) if streamed else chat_once(client))
    assert info.value.status == 502 and info.value.upstream_status == 404
    assert "absent-1b" in (info.value.detail or "")


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("status", [400, 429, 500, 503])
def test_error_statuses_are_typed(fake: FakeOpenAI, streamed: bool, status: int) -> None:
    fake.script(fail_status=status, fail_message="CUDA out of memory")
    with pytest.raises(LLMResponseError) as info:
        run(stream_once(backend(fake)) if streamed else chat_once(backend(fake)))
    assert type(info.value) is LLMResponseError and info.value.status == 502
    assert info.value.upstream_status == status
    assert "CUDA" in (info.value.detail or "") and "CUDA" not in info.value.message  # upstream text: logs only


@pytest.mark.parametrize("streamed", [False, True])
def test_a_refused_key_never_shows_in_the_error(fake: FakeOpenAI, streamed: bool) -> None:
    fake.api_key = "sk-the-server-wants-another"
    with pytest.raises(LLMResponseError) as info:
        run(stream_once(backend(fake)) if streamed else chat_once(backend(fake)))
    error = info.value
    assert error.upstream_status == 401 and "Incorrect API key" in (error.detail or "")
    assert KEY not in f"{error} {error.message} {error.detail} {error!r}"
    assert KEY not in repr(backend(fake))


@pytest.mark.parametrize("error_line", [False, True], ids=["data-event", "llama.cpp-error-line"])
def test_error_mid_stream(fake: FakeOpenAI, error_line: bool) -> None:
    fake.script(reply="un début de réponse", error_mid_stream="model runner crashed", error_line=error_line)
    got: list[str] = []

    async def consume() -> None:
        client = backend(fake)
        try:
            async for piece in client.stream(MESSAGES, Generation()):
                got.append(piece)
        finally:
            await client.close()

    with pytest.raises(LLMResponseError) as info:
        run(consume())
    assert got == ["un"] and "crashed" in (info.value.detail or "")


def test_a_stream_cut_before_its_finish_is_not_an_answer(fake: FakeOpenAI) -> None:
    fake.script(reply="une réponse coupée", unfinished=True)
    with pytest.raises(LLMResponseError) as info:
        run(stream_once(backend(fake)))
    assert info.value.code == "llm_bad_response" and "final message" in info.value.message


@pytest.mark.parametrize("streamed", [False, True])
def test_unreachable_server(streamed: bool) -> None:
    client = OpenAIBackend(f"http://127.0.0.1:{closed_port()}/v1", "qwen3:8b", connect_timeout=1.0)
    with pytest.raises(LLMUnavailable) as info:
        run(stream_once(client) if streamed else chat_once(client))
    assert info.value.status == 503


@pytest.mark.parametrize("streamed", [False, True])
def test_slow_server_times_out(fake: FakeOpenAI, streamed: bool) -> None:
    fake.script(delay=5.0)
    with pytest.raises(LLMTimeout) as info:
        run(stream_once(backend(fake, timeout=0.3)) if streamed else chat_once(backend(fake, timeout=0.3)))
    assert info.value.status == 504


def test_slow_stream_times_out_between_pieces(fake: FakeOpenAI) -> None:
    fake.script(reply="un deux trois quatre", chunk_delay=2.0)
    with pytest.raises(LLMTimeout):
        run(stream_once(backend(fake, timeout=0.5)))


def test_dropped_connection_is_typed(fake: FakeOpenAI) -> None:
    fake.script(drop=True)
    with pytest.raises(LLMResponseError):
        run(chat_once(backend(fake)))


def test_empty_answer_is_empty_text(fake: FakeOpenAI) -> None:
    fake.script(empty=True)
    assert run(chat_once(backend(fake))).text == ""
    fake.script(reply="", think="tout le budget passé à réfléchir")
    gen = run(chat_once(backend(fake)))
    assert gen.text == "" and gen.raw


def test_closing_the_stream_early_closes_the_upstream_connection(fake: FakeOpenAI) -> None:
    """What the API does when a visitor leaves: the server sees its client go and stops generating."""
    fake.script(reply="un deux trois quatre cinq six", chunk_delay=0.3)

    async def first_piece_only() -> list[str]:
        client = backend(fake)
        stream = client.stream(MESSAGES, Generation())
        try:
            return [await anext(stream)]
        finally:
            await stream.aclose()
            assert client.in_flight == 0
            await client.close()

    assert run(first_piece_only()) == ["un"]
    assert fake.wait_until(lambda f: f.abandoned_chats == 1 and f.open_connections == 0, timeout=5)


def test_the_connection_is_reused_and_a_lingering_stream_is_not_waited_for(fake: FakeOpenAI) -> None:
    """After `[DONE]` the body's end is read, so the next chat reuses the connection; a server that keeps
    the stream open past `[DONE]` does not hold the answer back."""

    async def streams(count: int) -> float:
        client = backend(fake)
        started = time.monotonic()
        try:
            for _ in range(count):
                assert "".join([piece async for piece in client.stream(MESSAGES, Generation())]) == "Une réponse."
        finally:
            await client.close()
        return time.monotonic() - started

    fake.script(reply="Une réponse.")
    run(streams(3))
    assert fake.connections_made == 1  # one connection served the three chats
    fake.script(reply="Une réponse.", linger=30.0)
    assert run(streams(2)) < 10  # not the 30 s the server lingers after each [DONE]


def test_probe(fake: FakeOpenAI) -> None:
    async def probe(client: OpenAIBackend) -> dict[str, Any]:
        try:
            return await client.probe()
        finally:
            await client.close()

    assert run(probe(backend(fake))) == {"reachable": True, "model_available": True}
    assert fake.requests[-1].path == "/v1/models"
    assert run(probe(backend(fake, "llama3:70b")))["model_available"] is False
    refused = run(probe(backend(fake, api_key="sk-wrong")))
    assert refused == {"reachable": True, "model_available": False, "error": "llm_bad_response", "upstream_status": 401}
    no_v1 = run(probe(OpenAIBackend(fake.url, "qwen3:8b", api_key=KEY)))  # a base URL without /v1
    assert no_v1["reachable"] is True and no_v1["model_available"] is False and no_v1["upstream_status"] == 404
    down = run(probe(OpenAIBackend(f"http://127.0.0.1:{closed_port()}/v1", "qwen3:8b")))
    assert down["reachable"] is False and down["error"] == "llm_unavailable"


def test_create_backend_picks_by_name_with_the_default_url() -> None:
    async def build(config: LLMConfig) -> tuple[str, str]:
        client = create_backend(config)
        await client.close()
        return client.name, client.base_url

    assert run(build(LLMConfig(backend="openai"))) == ("openai", "http://localhost:8080/v1")
    assert run(build(LLMConfig(backend="ollama"))) == ("ollama", "http://localhost:11434")
    assert run(build(LLMConfig(backend="openai", base_url="https://api.example/v1/")))[1] == "https://api.example/v1"
    # each name of LLM_BACKEND leads to the class that carries it (each imported when first asked for)
    assert {name: backend_class(name).name for name in BACKENDS} == {"ollama": "ollama", "openai": "openai"}


# -- Server-Sent Events -----------------------------------------------------------------------------
async def _events(text: str) -> list[tuple[str, str]]:
    async def lines() -> Any:
        for line in text.replace("\r\n", "\n").split("\n"):
            yield line

    return [e async for e in sse_events(lines())]


def test_sse_reading_follows_the_rules() -> None:
    body = ": keep-alive\n\ndata: {\"a\":\ndata: 1}\n\nevent: ping\ndata:x\n\nerror: {\"message\": \"boom\"}\n\ndata: [DONE]"
    assert run(_events(body)) == [("message", '{"a":\n1}'), ("ping", "x"), ("error", '{"message": "boom"}'), ("message", "[DONE]")]
    assert run(_events("data: a\r\n\r\ndata: b\r\n\r\n")) == [("message", "a"), ("message", "b")]


# -- the fake itself speaks the protocol: the official `openai` client reads it ---------------------
def test_the_fake_speaks_openai_as_the_official_client_reads_it(fake: FakeOpenAI) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=fake.base_url, api_key=KEY, max_retries=0)
    assert sorted(m.id for m in client.models.list()) == ["gpt-4o-mini", "qwen3:8b"]
    fake.script(reply="Bonjour à vous.", reported_model="qwen3-8b.gguf")
    reply = client.chat.completions.create(model="qwen3:8b", messages=[{"role": "user", "content": "Salut"}])
    assert reply.choices[0].message.content == "Bonjour à vous." and reply.choices[0].finish_reason == "stop"
    assert reply.model == "qwen3-8b.gguf" and reply.usage.total_tokens == reply.usage.prompt_tokens + 3
    chunks = list(client.chat.completions.create(
        model="qwen3:8b", messages=[{"role": "user", "content": "Salut"}], stream=True, stream_options={"include_usage": True}
    ))  # fmt: skip
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Bonjour à vous."
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 3
    with pytest.raises(openai.NotFoundError) as missing:
        client.chat.completions.create(model="absent", messages=[])
    assert missing.value.code == "model_not_found"
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=fake.base_url, api_key="sk-wrong", max_retries=0).models.list()
    fake.script(reply="un deux", error_mid_stream="boom")
    with pytest.raises(openai.APIError, match="boom"):
        list(client.chat.completions.create(model="qwen3:8b", messages=[], stream=True))


# -- fields a server refuses ---------------------------------------------------------------------------
def _sent(fake: FakeOpenAI) -> list[dict[str, Any]]:
    return [r.body for r in fake.requests if r.method == "POST"]


async def _twice(client: OpenAIBackend, streamed: bool) -> list[Generation]:
    """Two answers from one backend (what it learns from the first, the second keeps)."""
    results = []
    try:
        for _ in range(2):
            if streamed:
                result = Generation()
                async for _piece in client.stream(MESSAGES, result):
                    pass
                results.append(result)
            else:
                results.append(await client.chat(MESSAGES))
    finally:
        await client.close()
    return results


def test_a_refused_stream_options_is_left_out_from_then_on(fake: FakeOpenAI, caplog: pytest.LogCaptureFixture) -> None:
    fake.script(reply="Une réponse.", refuses=("stream_options",))
    with caplog.at_level("WARNING", logger="grasbot.llm.openai"):
        first, second = run(_twice(backend(fake), streamed=True))
    assert first.text == second.text == "Une réponse."
    sent = _sent(fake)
    assert [("stream_options" in b) for b in sent] == [True, False, False]  # refused, sent again, remembered
    assert all(b["max_tokens"] == 1024 and b["stream"] is True for b in sent)  # the rest as before
    assert first.usage() == {}  # no usage asked for: none counted, none made up
    warnings = [r.getMessage() for r in caplog.records if r.name == "grasbot.llm.openai"]
    assert len(warnings) == 1 and "stream_options" in warnings[0] and KEY not in warnings[0]


@pytest.mark.parametrize("streamed", [False, True])
def test_a_refused_max_tokens_is_sent_as_max_completion_tokens(fake: FakeOpenAI, streamed: bool, caplog: pytest.LogCaptureFixture) -> None:
    fake.script(reply="Une réponse.", refuses=("max_tokens",))
    client = backend(fake)
    with caplog.at_level("WARNING", logger="grasbot.llm.openai"):
        first, second = run(_twice(client, streamed))
    assert first.text == second.text == "Une réponse."
    sent = _sent(fake)
    assert [("max_tokens" in b, b.get("max_completion_tokens")) for b in sent] == [(True, None), (False, 1024), (False, 1024)]
    assert client.model_parameters() == {"temperature": 0.4, "max_completion_tokens": 1024}  # what the trace shows
    if streamed:
        assert all(b["stream_options"] == {"include_usage": True} for b in sent) and first.output_tokens == 2
    assert len([r for r in caplog.records if r.name == "grasbot.llm.openai"]) == 1


def test_fields_refused_one_after_the_other_are_each_learnt_once(fake: FakeOpenAI) -> None:
    """A server that knows neither: `stream_options` as Azure refuses it, then `max_completion_tokens`
    (sent for a refused `max_tokens`) the same way: each is retried once, then left out."""
    fake.script(reply="Une réponse.", refuses=("stream_options", "max_tokens", "max_completion_tokens"))
    first, second = run(_twice(backend(fake), streamed=True))
    assert first.text == second.text == "Une réponse."
    fields = [sorted(set(b) - {"model", "messages", "stream", "temperature"}) for b in _sent(fake)]
    assert fields == [
        ["max_tokens", "stream_options"], ["max_tokens"], ["max_completion_tokens"], [], [],
    ]  # fmt: skip


def test_a_400_about_a_value_is_an_error_not_a_refused_field(fake: FakeOpenAI) -> None:
    """"max_tokens is too large" names the field but does not refuse it: the answer is the error it is,
    the request is not sent again and the field is still sent next time."""
    message = "max_tokens is too large: 1024. This model supports at most 512 completion tokens, whereas you provided 1024."
    client = backend(fake)

    async def refused_then_answered() -> tuple[LLMResponseError, Generation]:
        fake.script(fail_status=400, fail_message=message)
        try:
            await client.chat(MESSAGES)
        except LLMResponseError as error:
            failure = error
        else:
            raise AssertionError("a 400 was taken as an answer")
        fake.script(reply="Une réponse.")
        return failure, await chat_once(client)

    failure, answer = run(refused_then_answered())
    assert failure.upstream_status == 400 and answer.text == "Une réponse."
    assert [b["max_tokens"] for b in _sent(fake)] == [1024, 1024]  # not sent again, and still sent next time
