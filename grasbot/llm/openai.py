"""The OpenAI-compatible backend: `POST {base}/chat/completions`, streamed as Server-Sent Events or not.

One protocol served by llama.cpp's `llama-server`, vLLM, LM Studio, LiteLLM, Mistral's API, OpenAI and
Ollama's own `/v1`. `base` is the URL up to and including the version (`http://localhost:8080/v1`).

- Request: `model`, `messages`, `stream`, `temperature`, `max_tokens` (from LLM_NUM_PREDICT, left out when
  it is below 0) and any extra option as a top-level field; streamed requests add
  `stream_options: {"include_usage": true}`, so the last chunk carries the token counts.
- Reply: `choices[0].message.content` with `finish_reason`, `model` (the name the provider reports, e.g.
  a dated snapshot or a .gguf file) and `usage` {prompt_tokens, completion_tokens, total_tokens}; streamed,
  `data: {json}` events with `choices[0].delta.content`, a chunk with `finish_reason`, a chunk with
  `usage` and no choice, then `data: [DONE]`. The answer is complete once a `finish_reason` or `[DONE]`
  came; a stream that ends before is an error (a server that crashed mid-answer).
- Errors: an HTTP status with `{"error": {"message", "type", "code"}}` (OpenAI, llama.cpp, LiteLLM) or
  `{"object": "error", "message": ...}` (vLLM, Mistral); mid-stream, `data: {"error": {...}}`, or the
  `error: {...}` line some llama.cpp versions write instead of a `data:` line.

httpx is used directly rather than the `openai` client: it is already the project's HTTP client, and the
rules the service depends on stay ours and the same for both backends: one pool sized and counted for
`/health`, a short connect timeout and no retries (an unreachable server is a 503 within 2 s, where the
`openai` client retries twice with back-off), no proxy variables, and errors read from every shape the
compatible servers send, the llama.cpp `error:` line included, which a spec-strict SSE reader drops.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from contextlib import suppress
from typing import Any

import httpx

from grasbot.llm.base import Chunk, LLMBackend, LLMModelNotFound, LLMResponseError, Message, short

_BAD_REPLY = "the language model server sent an unreadable reply"
_DRAIN_SECONDS = 0.5  # the longest the end of a stream is read after its [DONE]


def _error_of(body: Any) -> tuple[str, str | None]:
    """The message and code of an error body in any of the shapes compatible servers use."""
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            code = error.get("code")
            return str(error.get("message") or error.get("type") or ""), str(code) if code is not None else None
        if isinstance(error, str):
            return error, None
    return str(body or ""), None


def status_error(status: int, body: Any) -> LLMResponseError:
    """The typed error for an HTTP error status and its (decoded, or raw text) body."""
    message, code = _error_of(body)
    # A missing model: OpenAI says `model_not_found`; vLLM, Ollama and others a 404 naming the model. Any
    # other 404 is a wrong URL (a base without /v1), not a missing model.
    if code == "model_not_found" or (status == 404 and "model" in message.lower()):
        return LLMModelNotFound(
            "the configured model is not available on the language model server",
            upstream_status=status,
            detail=short(message),
        )
    return LLMResponseError("the language model server returned an error", upstream_status=status, detail=short(message))


def _count(usage: dict[str, Any], key: str) -> int | None:
    value = usage.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_chunk(payload: Any, *, streamed: bool) -> Chunk:
    """A chunk from one decoded reply (`chat.completion`) or streamed event (`chat.completion.chunk`)."""
    if not isinstance(payload, dict):
        raise LLMResponseError(_BAD_REPLY, detail=short(type(payload).__name__))
    if "error" in payload and payload["error"]:
        message, _ = _error_of(payload)
        raise LLMResponseError("the language model server returned an error", detail=short(message))
    choices = payload.get("choices") or []
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    message = choice.get("delta" if streamed else "message") or {}
    text = message.get("content") if isinstance(message, dict) else None  # (reasoning_content is not the answer)
    if text is not None and not isinstance(text, str):
        raise LLMResponseError(_BAD_REPLY, detail="content is not text")
    reason = choice.get("finish_reason")
    usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else None
    model = payload.get("model")
    return Chunk(
        text=text or "",
        # Not streamed, the reply is whole once it has a choice; streamed, once the server says why it stopped.
        final=bool(choice) if not streamed else reason is not None,
        model=model if isinstance(model, str) and model else None,
        done_reason=reason if isinstance(reason, str) else None,
        input_tokens=_count(usage, "prompt_tokens") if usage else None,
        output_tokens=_count(usage, "completion_tokens") if usage else None,
        total_tokens=_count(usage, "total_tokens") if usage else None,
        details={"usage": usage} if usage else None,
    )


async def sse_events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str, str]]:
    """(event, data) pairs from the lines of a Server-Sent Events body (WHATWG rules: `data:` lines joined
    by newlines, `event:` names the event, `:` lines are comments, a blank line ends the event).

    llama.cpp writes a failure as `error: {...}`, a field the SSE rules ignore: it comes out as the event
    `error` so the failure is not mistaken for a stream that just stopped.
    """
    event, data = "", []
    async for line in lines:
        if not line:
            if data:
                yield event or "message", "\n".join(data)
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
        elif name == "error":
            event, data = "error", [value]
    if data:  # the body ended without the blank line after its last event
        yield event or "message", "\n".join(data)


class OpenAIBackend(LLMBackend):
    """An OpenAI-compatible server. Sends temperature and max_tokens; Ollama's num_ctx, think and
    keep_alive have no equivalent in this protocol (the server's own settings decide)."""

    name = "openai"
    default_url = "http://localhost:8080/v1"  # llama.cpp's llama-server

    def __init__(self, base_url: str, model: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(base_url, model, *args, **kwargs)
        self._client = httpx.AsyncClient(base_url=self.base_url, **self._http_options(self.timeout))
        # its own small pool: /health must answer even when every chat connection is taken
        probe = {**self._http_options(1.0), "limits": httpx.Limits()}
        self._probe = httpx.AsyncClient(base_url=self.base_url, **probe)

    async def close(self) -> None:
        await self._client.aclose()
        await self._probe.aclose()

    def model_parameters(self) -> dict[str, Any]:
        o = self.options
        limit = {"max_tokens": o.num_predict} if o.num_predict > 0 else {}
        return {"temperature": o.temperature, **limit, **o.extra}

    def _request(self, messages: Sequence[Message], stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "stream": stream,
            **self.model_parameters(),
        }
        if stream:
            body["stream_options"] = {"include_usage": True}
        return body

    async def _complete(self, messages: Sequence[Message]) -> Chunk:
        response = await self._client.post("/chat/completions", json=self._request(messages, stream=False))
        if response.status_code >= 400:
            raise status_error(response.status_code, _body(response))
        return parse_chunk(response.json(), streamed=False)

    async def _parts(self, messages: Sequence[Message]) -> AsyncIterator[Chunk]:
        body = self._request(messages, stream=True)
        async with self._client.stream("POST", "/chat/completions", json=body) as response:
            if response.status_code >= 400:
                await response.aread()
                raise status_error(response.status_code, _body(response))
            if response.headers.get("content-type", "").startswith("application/json"):
                # a server that ignores `stream` and answers in one piece
                await response.aread()
                yield parse_chunk(response.json(), streamed=False)
                return
            events = sse_events(response.aiter_lines())
            async for event, data in events:
                if data.strip() == "[DONE]":
                    yield Chunk(final=True)
                    # Read the end of the body, so the connection goes back to the pool (closing it early
                    # costs a new connection per question); a server that keeps the stream open past
                    # [DONE] is not waited for.
                    with suppress(TimeoutError):
                        async with asyncio.timeout(_DRAIN_SECONDS):
                            async for _ in events:
                                pass
                    return
                payload = json.loads(data)
                if event == "error":
                    message, _ = _error_of(payload)
                    raise LLMResponseError("the language model server returned an error", detail=short(message))
                yield parse_chunk(payload, streamed=True)

    async def _list_models(self) -> set[str]:
        response = await self._probe.get("/models")
        if response.status_code >= 400:
            raise status_error(response.status_code, _body(response))
        listing = response.json()
        data = listing.get("data") if isinstance(listing, dict) else None
        if not isinstance(data, list):
            raise LLMResponseError(_BAD_REPLY, detail="no model list")
        return {m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)}


def _body(response: httpx.Response) -> Any:
    """An error response's body, decoded if it is JSON, else its text."""
    try:
        return response.json()
    except ValueError:
        return response.text
