"""The one protocol every LLM backend follows: `chat`, `stream`, `probe`, `close`, and typed errors.

A backend turns chat messages into a `Generation` (streamed or not), says whether its server answers and
lists the model (`probe`), and closes its connections (`close`). The rules every backend shares live here,
once: a whole generation is bounded by `timeout` (streamed or not), `<think>` blocks never reach the
visitor, a reply without the server's end-of-answer mark is not an answer, generations under way are
counted (`in_flight`, shown in `/health`), and every failure comes out as one of the `LLMError`s below, so
the API answers 502/503/504 without knowing which backend or transport is in use. A backend supplies the
wire protocol only: `_complete` (one reply), `_parts` (the reply in pieces) and `_list_models`.

Messages of the errors are ours and short: they never carry the prompt or a credential (the API puts them
in response bodies and logs). Where a new backend goes: docs/service.md, "LLM backends".
"""

from __future__ import annotations

import asyncio
import json
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx
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
    """The LLM server cannot be reached (refused, unknown host, connect timeout)."""

    status = 503
    code = "llm_unavailable"


class LLMTimeout(LLMError):
    """The LLM server did not finish within the configured time."""

    status = 504
    code = "llm_timeout"


class LLMResponseError(LLMError):
    """The LLM server answered with an error (an HTTP status, an error in the stream) or something unreadable."""

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


def short(text: object, limit: int = 200) -> str:
    """`text` on one line, cut to `limit` characters: upstream texts kept for logs stay small."""
    return str(text).replace("\n", " ")[:limit]


def map_transport_error(error: BaseException) -> LLMError:
    """The typed error for what the transport (httpx, asyncio's timeouts, JSON decoding) raised."""
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
    if isinstance(error, httpx.HTTPStatusError):
        return LLMResponseError(
            "the language model server returned an error",
            upstream_status=error.response.status_code,
            detail=short(error.response.text),
        )
    if isinstance(error, (json.JSONDecodeError, pydantic.ValidationError, UnicodeDecodeError)):
        return LLMResponseError("the language model server sent an unreadable reply", detail=short(error))
    if isinstance(error, httpx.HTTPError):
        return LLMResponseError("the connection to the language model server broke", detail=short(error))
    return LLMResponseError("unexpected error while generating", detail=short(type(error).__name__))


# -- options ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class GenerationOptions:
    """What is asked of every chat. Each backend sends what its protocol has (see its `model_parameters`):
    Ollama all of them; an OpenAI-compatible server `temperature` and `num_predict` as `max_tokens`."""

    num_ctx: int = 8192
    num_predict: int = 1024  # the most tokens an answer may have; below 0, the server's own limit
    temperature: float = 0.4
    think: bool = False
    keep_alive: str = "30m"
    extra: Mapping[str, Any] = field(default_factory=dict)  # any other option of the backend, passed as is


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
@dataclass(frozen=True, slots=True)
class Chunk:
    """One piece of a reply as a backend reads it off the wire; `None` fields say nothing new."""

    text: str = ""
    final: bool = False  # the server's end-of-answer mark (Ollama's `done`, OpenAI's finish_reason or [DONE])
    model: str | None = None  # the model as the server reports it
    done_reason: str | None = None  # why the model stopped: "stop", "length"...
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    details: Mapping[str, Any] | None = None  # the backend's own final counters, for the trace


@dataclass(slots=True)
class Generation:
    """One finished chat. `text` is what the visitor sees; `raw` is what the model sent."""

    text: str = ""
    raw: str = ""
    model: str = ""  # as the server reports it (the configured name until it says otherwise)
    done_reason: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    details: dict[str, Any] = field(default_factory=dict)
    elapsed_ms: float = 0.0

    def absorb(self, chunk: Chunk) -> None:
        """Take what `chunk` says about the reply as a whole (model, reason, counters)."""
        self.model = chunk.model or self.model
        self.done_reason = chunk.done_reason or self.done_reason
        if chunk.input_tokens is not None:
            self.input_tokens = chunk.input_tokens
        if chunk.output_tokens is not None:
            self.output_tokens = chunk.output_tokens
        if chunk.total_tokens is not None:
            self.total_tokens = chunk.total_tokens
        if chunk.details:
            self.details.update(chunk.details)

    def usage(self) -> dict[str, int]:
        """Langfuse `usage_details` from the server's counters (absent counters are left out)."""
        usage: dict[str, int] = {}
        if self.input_tokens is not None:
            usage["input"] = self.input_tokens
        if self.output_tokens is not None:
            usage["output"] = self.output_tokens
        if self.total_tokens is not None:
            usage["total"] = self.total_tokens
        elif usage:
            usage["total"] = sum(usage.values())
        return usage

    def raw_summary(self) -> dict[str, Any]:
        """The server's final counters, for the trace when the answer is empty (no prompt content)."""
        return {"model": self.model, "done_reason": self.done_reason, **self.details, "raw_chars": len(self.raw)}


def split_credentials(url: str) -> tuple[str, httpx.BasicAuth | None]:
    """`url` without its `user:password@` part, and that part as basic auth: credentials written in the
    server's URL (a server behind an authenticating proxy) are sent, never logged with the URL."""
    parts = urlsplit(url)
    if parts.username is None:
        return url, None
    host = parts.netloc.rsplit("@", 1)[1]
    clean = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return clean, httpx.BasicAuth(unquote(parts.username), unquote(parts.password or ""))


# -- the protocol -----------------------------------------------------------------------------------
class LLMBackend(ABC):
    """A chat client bound to one server, one model and one set of options.

    `timeout` bounds a whole generation (streamed or not); `connect_timeout` bounds reaching the server,
    so an unreachable server is reported quickly. `api_key`, when given, is sent as `Authorization: Bearer`
    and never appears in a message, a repr or a log. Create it inside the event loop that uses it.
    """

    #: The value of LLM_BACKEND that selects it; also names its Langfuse generation (`<name>-chat`).
    name: ClassVar[str]
    #: The server's URL when LLM_BASE_URL is not set.
    default_url: ClassVar[str]

    def __init__(
        self,
        base_url: str,
        model: str,
        options: GenerationOptions | None = None,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        connect_timeout: float = 1.5,
        max_connections: int = 200,
    ) -> None:
        base_url, self._auth = split_credentials(base_url)
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.options = options or GenerationOptions()
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_connections = max_connections
        self.in_flight = 0  # chats under way (each holds one pooled connection)
        self._api_key = api_key or None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r})"

    # -- what a backend supplies --------------------------------------------------------------------
    @abstractmethod
    def model_parameters(self) -> dict[str, Any]:
        """The generation parameters as sent, for the Langfuse generation."""

    @abstractmethod
    async def _complete(self, messages: Sequence[Message]) -> Chunk:
        """One non-streamed reply, as a single chunk (`final` when the server marked it complete)."""

    @abstractmethod
    def _parts(self, messages: Sequence[Message]) -> AsyncIterator[Chunk]:
        """The reply as it comes (an async generator; closing it closes the upstream stream)."""

    @abstractmethod
    async def _list_models(self) -> set[str]:
        """The names of the models the server offers (a quick request: `probe` bounds it)."""

    @abstractmethod
    async def close(self) -> None:
        """Close every connection to the server."""

    def _map_error(self, error: BaseException) -> LLMError:
        """The typed error for what the backend's client raised (backends add their client's errors)."""
        return map_transport_error(error)

    # -- shared -------------------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def _http_options(self, timeout: float) -> dict[str, Any]:
        """What every httpx client of a backend is built with."""
        return {
            "timeout": httpx.Timeout(timeout, connect=min(self.connect_timeout, timeout)),
            "limits": httpx.Limits(max_connections=self.max_connections, max_keepalive_connections=self.max_connections),
            "trust_env": False,  # a proxy variable must not reroute a loopback server
            "auth": self._auth,
            "headers": self._headers(),
        }

    def _fail(self, error: BaseException) -> LLMError:
        mapped = self._map_error(error)
        if self._api_key and mapped.detail and self._api_key in mapped.detail:
            mapped.detail = mapped.detail.replace(self._api_key, "***")  # a server that echoes the key
        return mapped

    async def chat(self, messages: Sequence[Message]) -> Generation:
        """One non-streamed chat. Raises an `LLMError`; an empty visible answer is `text == ""`."""
        started = time.perf_counter()
        self.in_flight += 1
        try:
            async with asyncio.timeout(self.timeout):
                reply = await self._complete(messages)
        except Exception as error:  # noqa: BLE001 - every failure becomes a typed error (cancellation passes)
            raise self._fail(error) from None
        finally:
            self.in_flight -= 1
        if not reply.final:
            raise LLMResponseError("the language model server sent an unfinished reply (no final message)")
        gen = Generation(model=self.model)
        gen.absorb(reply)
        gen.raw = reply.text
        gen.text = strip_think(gen.raw)
        gen.elapsed_ms = (time.perf_counter() - started) * 1000
        return gen

    async def stream(self, messages: Sequence[Message], result: Generation) -> AsyncIterator[str]:
        """Yield the visible text as it comes; `result` is filled in as the stream goes and when it ends.

        The whole stream is bounded by `timeout`; an error the server sends mid-stream raises
        `LLMResponseError`, and so does a stream that ends before the server's end-of-answer mark. The
        caller closes the iterator to stop early, which closes the stream to the server.
        """
        started = time.perf_counter()
        result.model = self.model
        think = ThinkFilter()
        raw: list[str] = []
        visible: list[str] = []
        deadline = asyncio.get_running_loop().time() + self.timeout
        finished = False
        self.in_flight += 1
        parts = self._parts(messages)
        try:
            try:
                while True:
                    async with asyncio.timeout_at(deadline):
                        try:
                            chunk = await anext(parts)
                        except StopAsyncIteration:
                            break
                    result.absorb(chunk)
                    finished = finished or chunk.final
                    if chunk.text:
                        raw.append(chunk.text)
                        text = think.feed(chunk.text)
                        if text:
                            visible.append(text)
                            yield text
            finally:
                await parts.aclose()  # type: ignore[attr-defined]
            if not finished:  # the stream ended cleanly but early: what came is not the whole answer
                raise LLMResponseError("the language model's stream ended before its final message")
            tail = think.finish()
            if tail:
                visible.append(tail)
                yield tail
        except Exception as error:  # noqa: BLE001 - cancellation and GeneratorExit pass through
            raise self._fail(error) from None
        finally:
            self.in_flight -= 1
            result.raw = "".join(raw)
            result.text = "".join(visible).strip()
            result.elapsed_ms = (time.perf_counter() - started) * 1000

    async def probe(self) -> dict[str, Any]:
        """Whether the server answers quickly and lists the model. Never raises.

        A server that answers with an error status is reachable (a wrong key, a wrong path): `error` and
        `upstream_status` say what it answered.
        """
        try:
            names = await self._list_models()
        except Exception as error:  # noqa: BLE001 - health must never fail
            mapped = self._fail(error)
            status = getattr(mapped, "upstream_status", None)
            if status is not None:
                return {"reachable": True, "model_available": False, "error": mapped.code, "upstream_status": status}
            return {"reachable": False, "model_available": False, "error": mapped.code}
        return {"reachable": True, "model_available": self._model_listed(names)}

    def _model_listed(self, names: set[str]) -> bool:
        return self.model in names
