"""Generation through Ollama's `/api/chat` with the official `ollama` client, streamed or not.

Every failure comes out as one of the typed `LLMError`s below, so the API can answer 502/503/504 without
knowing about httpx or the client's exceptions. Messages of these errors are ours and short: they never
carry the prompt (the API puts them in response bodies and logs).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx
import ollama
import pydantic

Message = Mapping[str, str]  # {"role": "system"|"user"|"assistant", "content": str}


# -- errors -----------------------------------------------------------------------------------------
class LLMError(Exception):
    """The LLM could not produce an answer. `status` is the HTTP status the API answers with."""

    status = 502
    code = "llm_error"

    def __init__(self, message: str, *, detail: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail  # upstream text, for logs only, already shortened


class LLMUnavailable(LLMError):
    """Ollama cannot be reached (refused, unknown host, connect timeout)."""

    status = 503
    code = "llm_unavailable"


class LLMTimeout(LLMError):
    """Ollama did not finish within the configured time."""

    status = 504
    code = "llm_timeout"


class LLMResponseError(LLMError):
    """Ollama answered with an error (HTTP status or an `{"error": ...}` line) or something unreadable."""

    status = 502
    code = "llm_bad_response"

    def __init__(self, message: str, *, upstream_status: int | None = None, detail: str | None = None) -> None:
        super().__init__(message, detail=detail)
        self.upstream_status = upstream_status


class LLMModelNotFound(LLMResponseError):
    code = "llm_model_not_found"


class LLMEmptyAnswer(LLMResponseError):
    """The model finished without any visible text (e.g. it spent its budget inside a <think> block)."""

    code = "llm_empty_answer"


def _short(text: object, limit: int = 200) -> str:
    return str(text).replace("\n", " ")[:limit]


def map_error(error: BaseException) -> LLMError:
    """The typed error for anything the client or the transport raised."""
    if isinstance(error, LLMError):
        return error
    if isinstance(error, (TimeoutError, asyncio.TimeoutError)):
        return LLMTimeout("the language model did not answer in time")
    if isinstance(error, httpx.ConnectTimeout):
        return LLMUnavailable("the language model server cannot be reached (connection timed out)")
    if isinstance(error, (httpx.ConnectError, ConnectionError)):
        return LLMUnavailable("the language model server cannot be reached")
    if isinstance(error, httpx.TimeoutException):
        return LLMTimeout("the language model did not answer in time")
    if isinstance(error, ollama.ResponseError):
        status = error.status_code if error.status_code and error.status_code > 0 else None
        # (Ollama's own answer names the model; any other 404 is a wrong URL, not a missing model)
        if "model" in str(error.error).lower() and (status == 404 or "not found" in str(error.error).lower()):
            return LLMModelNotFound(
                "the configured model is not available on the language model server",
                upstream_status=status,
                detail=_short(error.error),
            )
        return LLMResponseError(
            "the language model server returned an error", upstream_status=status, detail=_short(error.error)
        )
    if isinstance(error, (json.JSONDecodeError, pydantic.ValidationError)):
        return LLMResponseError("the language model server sent an unreadable reply", detail=_short(error))
    if isinstance(error, httpx.HTTPError):
        return LLMResponseError("the connection to the language model server broke", detail=_short(error))
    return LLMResponseError("unexpected error while generating", detail=_short(type(error).__name__))


# -- options ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class GenerationOptions:
    """What is sent with every chat: Ollama `options`, the top-level `think` flag and `keep_alive`."""

    num_ctx: int = 8192
    num_predict: int = 1024
    temperature: float = 0.4
    think: bool = False
    keep_alive: str = "30m"
    extra: Mapping[str, Any] = field(default_factory=dict)  # any other Ollama option, passed as is

    def ollama_options(self) -> dict[str, Any]:
        return {"num_ctx": self.num_ctx, "num_predict": self.num_predict, "temperature": self.temperature, **self.extra}

    def model_parameters(self) -> dict[str, Any]:
        """As Langfuse shows them (the seed's `model_parameters`)."""
        return {**self.ollama_options(), "think": self.think, "keep_alive": self.keep_alive}


# -- <think> removal --------------------------------------------------------------------------------
class ThinkFilter:
    """Removes `<think>...</think>` blocks from text that arrives in pieces.

    Qwen3 may still emit a reasoning block even with `think: false`. A piece that ends with the start of a
    tag (`<thi`) is held back until the next piece tells whether it is a tag. A block never closed (the
    model ran out of tokens while thinking) is dropped entirely; a stray `</think>` is dropped.
    """

    OPEN = "<think>"
    CLOSE = "</think>"

    def __init__(self) -> None:
        self._buffer = ""
        self._inside = False
        self._started = False  # some visible text was emitted

    def feed(self, piece: str) -> str:
        self._buffer += piece
        out: list[str] = []
        while self._buffer:
            if self._inside:
                end = self._buffer.find(self.CLOSE)
                if end < 0:
                    self._buffer = self._buffer[-(len(self.CLOSE) - 1) :]
                    break
                self._buffer = self._buffer[end + len(self.CLOSE) :]
                self._inside = False
                continue
            start = self._buffer.find(self.OPEN)
            stray = self._buffer.find(self.CLOSE)
            if stray >= 0 and (start < 0 or stray < start):
                out.append(self._buffer[:stray])
                self._buffer = self._buffer[stray + len(self.CLOSE) :]
                continue
            if start >= 0:
                out.append(self._buffer[:start])
                self._buffer = self._buffer[start + len(self.OPEN) :]
                self._inside = True
                continue
            keep = _partial_tag_suffix(self._buffer)
            out.append(self._buffer[: len(self._buffer) - keep])
            self._buffer = self._buffer[len(self._buffer) - keep :]
            break
        return self._visible("".join(out))

    def finish(self) -> str:
        rest = "" if self._inside else self._buffer
        self._buffer = ""
        self._inside = False
        return self._visible(rest)

    def _visible(self, text: str) -> str:
        # The whitespace a model leaves after its think block is not part of the answer.
        if not self._started:
            text = text.lstrip()
            if text:
                self._started = True
        return text


def _partial_tag_suffix(text: str) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of `<think>` or `</think>`."""
    best = 0
    for tag in (ThinkFilter.OPEN, ThinkFilter.CLOSE):
        for n in range(min(len(tag) - 1, len(text)), 0, -1):
            if text.endswith(tag[:n]):
                best = max(best, n)
                break
    return best


def strip_think(text: str) -> str:
    """`text` without its `<think>` blocks and surrounding blank space."""
    f = ThinkFilter()
    return (f.feed(text) + f.finish()).strip()


# -- results ----------------------------------------------------------------------------------------
@dataclass(slots=True)
class Generation:
    """One finished chat. `text` is what the visitor sees; `raw` is what the model sent."""

    text: str = ""
    raw: str = ""
    model: str = ""
    done_reason: str | None = None
    prompt_eval_count: int | None = None
    eval_count: int | None = None
    total_duration_ns: int | None = None
    load_duration_ns: int | None = None
    elapsed_ms: float = 0.0

    def usage(self) -> dict[str, int]:
        """Langfuse `usage_details` from Ollama's counters (absent counters are left out)."""
        usage: dict[str, int] = {}
        if self.prompt_eval_count is not None:
            usage["input"] = self.prompt_eval_count
        if self.eval_count is not None:
            usage["output"] = self.eval_count
        if usage:
            usage["total"] = sum(usage.values())
        return usage

    def raw_summary(self) -> dict[str, Any]:
        """The final Ollama counters, for the trace when the answer is empty (no prompt content)."""
        return {
            "model": self.model,
            "done_reason": self.done_reason,
            "prompt_eval_count": self.prompt_eval_count,
            "eval_count": self.eval_count,
            "total_duration": self.total_duration_ns,
            "load_duration": self.load_duration_ns,
            "raw_chars": len(self.raw),
        }


def _absorb_final(gen: Generation, part: Any) -> None:
    gen.model = getattr(part, "model", None) or gen.model
    gen.done_reason = getattr(part, "done_reason", None) or gen.done_reason
    gen.prompt_eval_count = getattr(part, "prompt_eval_count", None)
    gen.eval_count = getattr(part, "eval_count", None)
    gen.total_duration_ns = getattr(part, "total_duration", None)
    gen.load_duration_ns = getattr(part, "load_duration", None)


def split_credentials(url: str) -> tuple[str, httpx.BasicAuth | None]:
    """`url` without its `user:password@` part, and that part as basic auth: credentials written in
    OLLAMA_URL (an Ollama behind an authenticating proxy) are sent, never logged with the URL."""
    parts = urlsplit(url)
    if parts.username is None:
        return url, None
    host = parts.netloc.rsplit("@", 1)[1]
    clean = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return clean, httpx.BasicAuth(unquote(parts.username), unquote(parts.password or ""))


# -- client -----------------------------------------------------------------------------------------
class LLMClient:
    """An Ollama chat client bound to one model and one set of options.

    `timeout` bounds a whole generation (streamed or not); `connect_timeout` bounds reaching the server,
    so an unreachable Ollama is reported quickly. Create it inside the event loop that uses it.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        options: GenerationOptions | None = None,
        *,
        timeout: float = 60.0,
        connect_timeout: float = 1.5,
        max_connections: int = 200,
    ) -> None:
        base_url, auth = split_credentials(base_url)
        self.base_url = base_url
        self.model = model
        self.options = options or GenerationOptions()
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_connections = max_connections
        self.in_flight = 0  # chats under way (each holds one pooled connection)
        self._client = ollama.AsyncClient(
            host=base_url,
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
            trust_env=False,  # a proxy variable must not reroute a loopback Ollama
            auth=auth,
        )
        self._probe = httpx.AsyncClient(
            base_url=base_url, timeout=httpx.Timeout(1.0, connect=min(connect_timeout, 1.0)), trust_env=False, auth=auth
        )

    async def aclose(self) -> None:
        await self._client.close()
        await self._probe.aclose()

    def _request(self, messages: Sequence[Message], stream: bool) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "stream": stream,
            "think": self.options.think,
            "options": self.options.ollama_options(),
            "keep_alive": self.options.keep_alive,
        }

    async def chat(self, messages: Sequence[Message]) -> Generation:
        """One non-streamed chat. Raises an `LLMError`; an empty visible answer raises `LLMEmptyAnswer`."""
        started = time.perf_counter()
        self.in_flight += 1
        try:
            async with asyncio.timeout(self.timeout):
                response = await self._client.chat(**self._request(messages, stream=False))
        except BaseException as error:  # noqa: BLE001 - mapped below; cancellation passes through
            if isinstance(error, asyncio.CancelledError):
                raise
            raise map_error(error) from None
        finally:
            self.in_flight -= 1
        if not response.done:
            raise LLMResponseError("the language model server sent an unfinished reply (no final message)")
        gen = Generation(model=self.model)
        gen.raw = (response.message.content if response.message else "") or ""
        gen.text = strip_think(gen.raw)
        _absorb_final(gen, response)
        gen.elapsed_ms = (time.perf_counter() - started) * 1000
        return gen

    async def stream_chat(self, messages: Sequence[Message], result: Generation) -> AsyncIterator[str]:
        """Yield the visible text as it comes; `result` is filled in as the stream goes and when it ends.

        The whole stream is bounded by `timeout`; an `{"error": ...}` line mid-stream raises
        `LLMResponseError`. The caller closes the iterator to stop early.
        """
        started = time.perf_counter()
        result.model = self.model
        think = ThinkFilter()
        raw: list[str] = []
        visible: list[str] = []
        deadline = asyncio.get_running_loop().time() + self.timeout
        finished = False
        self.in_flight += 1
        try:
            async with asyncio.timeout_at(deadline):
                stream = await self._client.chat(**self._request(messages, stream=True))
            try:
                while True:
                    async with asyncio.timeout_at(deadline):
                        try:
                            part = await anext(stream)
                        except StopAsyncIteration:
                            break
                    piece = (part.message.content if part.message else "") or ""
                    raw.append(piece)
                    text = think.feed(piece)
                    if text:
                        visible.append(text)
                        yield text
                    if part.done:
                        finished = True
                        _absorb_final(result, part)
            finally:
                await stream.aclose()
            if not finished:  # the stream ended cleanly but early: what came is not the whole answer
                raise LLMResponseError("the language model's stream ended before its final message")
            tail = think.finish()
            if tail:
                visible.append(tail)
                yield tail
        except BaseException as error:  # noqa: BLE001
            if isinstance(error, (asyncio.CancelledError, GeneratorExit)):
                raise
            raise map_error(error) from None
        finally:
            self.in_flight -= 1
            result.raw = "".join(raw)
            result.text = "".join(visible).strip()
            result.elapsed_ms = (time.perf_counter() - started) * 1000

    async def probe(self) -> dict[str, Any]:
        """Whether Ollama answers `/api/tags` quickly and lists the model. Never raises."""
        try:
            response = await self._probe.get("/api/tags")
            response.raise_for_status()
            models = [m for m in response.json().get("models", []) if isinstance(m, dict)]
            names = {m.get("name") for m in models} | {m.get("model") for m in models}
            available = self.model in names or (":" not in self.model and f"{self.model}:latest" in names)
            return {"reachable": True, "model_available": available}
        except Exception as error:  # noqa: BLE001 - health must never fail
            return {"reachable": False, "model_available": False, "error": map_error(error).code}
