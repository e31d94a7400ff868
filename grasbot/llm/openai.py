"""The OpenAI-compatible backend: `POST {base}/chat/completions`, streamed as Server-Sent Events or not.

One protocol served by llama.cpp's `llama-server`, vLLM, LM Studio, LiteLLM, Mistral's API, OpenAI and
Ollama's own `/v1`. `base` is the URL up to and including the version (`http://localhost:8080/v1`).

- Request: `model`, `messages`, `stream`, `temperature`, `max_tokens` (from LLM_NUM_PREDICT, left out when
  it is below 0) and any extra option as a top-level field; streamed requests add
  `stream_options: {"include_usage": true}`, so the last chunk carries the token counts.
- Fields a server refuses: some reject a field they do not know or no longer take with a 400 (older vLLM,
  some LiteLLM routes and Azure OpenAI API versions: `stream_options`; OpenAI's reasoning models:
  `max_tokens`, "Use 'max_completion_tokens' instead"). When a 400 (or 422) says one of those fields is
  unsupported, unknown or not permitted, the request is sent again without it (`max_tokens` as
  `max_completion_tokens` when the server names that, else left out), and the backend keeps sending it so
  for the rest of its life (the process, in the service); one warning says so. Any other 400 (a value too
  large, a bad message) stays the error it is (docs/service.md, "An OpenAI-compatible server").
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
import logging
import re
from collections.abc import AsyncIterator, Sequence
from contextlib import suppress
from typing import Any

import httpx

from grasbot.llm.base import Chunk, LLMBackend, LLMModelNotFound, LLMResponseError, Message, short

log = logging.getLogger("grasbot.llm.openai")

_BAD_REPLY = "the language model server sent an unreadable reply"
#: The optional fields a server may refuse, and what is sent instead (None: nothing).
_FALLBACKS: dict[str, str | None] = {"stream_options": None, "max_tokens": "max_completion_tokens", "max_completion_tokens": None}
#: How servers say a field is not theirs: OpenAI's `unsupported_parameter` ("Unsupported parameter: ..."),
#: Azure's "Unrecognized request argument supplied", vLLM's and Mistral's pydantic "Extra inputs are not
#: permitted" (`extra_forbidden`), LiteLLM's `UnsupportedParamsError` ("does not support parameters").
_REFUSAL = re.compile(
    r"unsupported|not supported|does not support|unrecogni[sz]ed|unknown (?:field|param|argument)|extra inputs|extra_forbidden|not permitted",
    re.IGNORECASE,
)
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


def refused_field(status: int, body: Any, sent: dict[str, Any]) -> str | None:
    """The field of `sent` (a request body) that an error answer says the server does not take, if any.

    Only a 400 or 422 whose error calls a field unsupported, unknown or not permitted, and names one of the
    optional fields (`_FALLBACKS`) in its `param` or its message: a 400 about a value ("max_tokens is too
    large") is not a refusal of the field."""
    if status not in (400, 422):
        return None
    message, code = _error_of(body)
    error = body.get("error", body) if isinstance(body, dict) else None
    param = error.get("param") if isinstance(error, dict) else None
    if code != "unsupported_parameter" and not _REFUSAL.search(message):
        return None
    for name in _FALLBACKS:
        if name in sent and (param == name or re.search(rf"(?<![A-Za-z0-9_]){name}(?![A-Za-z0-9_])", message)):
            return name
    return None


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
        # What this server takes, learnt from its refusals (`refused_field`): the field of the token limit
        # (None: none is sent) and whether streamed requests ask for the usage.
        self._limit_field: str | None = "max_tokens"
        self._stream_usage = True
        self._client: httpx.AsyncClient | None = None  # made by the first chat (`_chat_client`)
        # its own small pool: /health must answer even when every chat connection is taken
        probe = {**self._http_options(1.0), "limits": httpx.Limits()}
        self._probe = httpx.AsyncClient(base_url=self.base_url, **probe)

    def _chat_client(self) -> httpx.AsyncClient:
        """The client of the chats, made on first use: the start only probes, and each httpx client
        loads the CA bundle when it is made (~25 ms)."""
        if self._client is None:
            self._client = httpx.AsyncClient(base_url=self.base_url, **self._http_options(self.timeout))
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
        await self._probe.aclose()

    def model_parameters(self) -> dict[str, Any]:
        o = self.options
        limit = {self._limit_field: o.num_predict} if o.num_predict > 0 and self._limit_field else {}
        return {"temperature": o.temperature, **limit, **o.extra}

    def _request(self, messages: Sequence[Message], stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "stream": stream,
            **self.model_parameters(),
        }
        if stream and self._stream_usage:
            body["stream_options"] = {"include_usage": True}
        return body

    def _learn(self, status: int, error: Any, sent: dict[str, Any]) -> bool:
        """Whether the error answer to `sent` refuses one of its optional fields; if so, it is no longer
        sent (or sent under its newer name), and the request is to be sent again. Each field is dropped
        once, so a request is retried at most once per field."""
        name = refused_field(status, error, sent)
        if name is None:
            return False
        if name == "stream_options":
            if self._stream_usage:  # (a concurrent request may have learnt it first: one warning)
                self._stream_usage = False
                log.warning(
                    "the LLM server at %s refuses `stream_options`: streamed answers are asked without it "
                    "(their token counts only if the server sends them anyway)", self.base_url,
                )  # fmt: skip
        elif self._limit_field == name:
            message, _ = _error_of(error)
            newer = _FALLBACKS[name]
            self._limit_field = newer if newer is not None and newer in message else None
            instead = f"as `{self._limit_field}`" if self._limit_field else "left out (the server's own limit applies)"
            log.warning("the LLM server at %s refuses `%s`: the answers' token limit is sent %s", self.base_url, name, instead)
        return True

    async def _complete(self, messages: Sequence[Message]) -> Chunk:
        while True:
            body = self._request(messages, stream=False)
            response = await self._chat_client().post("/chat/completions", json=body)
            if response.status_code < 400:
                return parse_chunk(response.json(), streamed=False)
            error = _body(response)
            if not self._learn(response.status_code, error, body):
                raise status_error(response.status_code, error)

    async def _parts(self, messages: Sequence[Message]) -> AsyncIterator[Chunk]:
        while True:
            body = self._request(messages, stream=True)
            async with self._chat_client().stream("POST", "/chat/completions", json=body) as response:
                if response.status_code >= 400:
                    await response.aread()
                    error = _body(response)
                    if self._learn(response.status_code, error, body):
                        continue
                    raise status_error(response.status_code, error)
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
                return  # (a stream that ends before [DONE]: `stream` says it is not an answer)

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
