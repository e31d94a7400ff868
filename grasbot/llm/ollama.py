"""The Ollama backend: `POST /api/chat` with the official `ollama` client, streamed or not.

Ollama streams NDJSON lines, each a `message.content` piece, the last one with `done: true`, the reason
and Ollama's counters (`prompt_eval_count`, `eval_count`, durations in ns); an error comes as an HTTP
status or an `{"error": ...}` line, which the client raises as `ollama.ResponseError`. The rules every
backend shares (timeouts, `<think>` removal, typed errors) are in `grasbot.llm.base`.

The `ollama` client library (and its client) is loaded by the first chat, not at the start: `/health`
and the start-up probe list the models with httpx alone, and importing the library takes ~0.1 s of a
start that must be ready within a second (benchmarks/README.md, "Snapshot and replicas").
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

import httpx

from grasbot.llm.base import (
    Chunk,
    LLMBackend,
    LLMError,
    LLMModelNotFound,
    LLMResponseError,
    Message,
    map_transport_error,
    short,
)

if TYPE_CHECKING:
    import ollama

#: Ollama's final counters kept in the trace, under Ollama's own names.
_COUNTERS = ("prompt_eval_count", "eval_count", "total_duration", "load_duration")


def map_error(error: BaseException) -> LLMError:
    """The typed error for anything the `ollama` client or the transport raised."""
    # (only the chat client raises the library's errors: while it is not loaded, no error is one of them)
    client = sys.modules.get("ollama")
    if client is not None and isinstance(error, client.ResponseError):
        status = error.status_code if error.status_code and error.status_code > 0 else None
        # (Ollama's own answer names the model; any other 404 is a wrong URL, not a missing model)
        if "model" in str(error.error).lower() and (status == 404 or "not found" in str(error.error).lower()):
            return LLMModelNotFound(
                "the configured model is not available on the language model server",
                upstream_status=status,
                detail=short(error.error),
            )
        return LLMResponseError(
            "the language model server returned an error", upstream_status=status, detail=short(error.error)
        )
    return map_transport_error(error)


def _chunk(part: Any) -> Chunk:
    """A chunk from one of the client's `ChatResponse` objects (a streamed line or the whole reply)."""
    done = bool(getattr(part, "done", False))
    message = getattr(part, "message", None)
    text = (message.content if message is not None else "") or ""
    if not done:
        return Chunk(text=text)
    counters = {name: getattr(part, name, None) for name in _COUNTERS}
    return Chunk(
        text=text,
        final=True,
        model=getattr(part, "model", None),
        done_reason=getattr(part, "done_reason", None),
        input_tokens=counters["prompt_eval_count"],
        output_tokens=counters["eval_count"],
        details=counters,
    )


class OllamaBackend(LLMBackend):
    """Ollama's native API. Sends `options` (num_ctx, num_predict, temperature and any extra option), the
    top-level `think` flag and `keep_alive`."""

    name = "ollama"
    default_url = "http://localhost:11434"

    def __init__(self, base_url: str, model: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(base_url, model, *args, **kwargs)
        self._client: ollama.AsyncClient | None = None  # made by the first chat (`_chat_client`)
        probe = {**self._http_options(self.timeout), **self._probe_options()}
        self._probe = httpx.AsyncClient(base_url=self.base_url, **probe)

    def _chat_client(self) -> ollama.AsyncClient:
        """The client of the chats, made (and the `ollama` library imported) on first use."""
        if self._client is None:
            import ollama

            self._client = ollama.AsyncClient(host=self.base_url, **self._http_options(self.timeout))
        return self._client

    def _probe_options(self) -> dict[str, Any]:
        # its own small pool: /health must answer even when every chat connection is taken
        return {"timeout": httpx.Timeout(1.0, connect=min(self.connect_timeout, 1.0)), "limits": httpx.Limits()}

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
        await self._probe.aclose()

    def _map_error(self, error: BaseException) -> LLMError:
        return map_error(error)

    def ollama_options(self) -> dict[str, Any]:
        o = self.options
        return {"num_ctx": o.num_ctx, "num_predict": o.num_predict, "temperature": o.temperature, **o.extra}

    def model_parameters(self) -> dict[str, Any]:
        return {**self.ollama_options(), "think": self.options.think, "keep_alive": self.options.keep_alive}

    def _request(self, messages: Sequence[Message], stream: bool) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "stream": stream,
            "think": self.options.think,
            "options": self.ollama_options(),
            "keep_alive": self.options.keep_alive,
        }

    async def _complete(self, messages: Sequence[Message]) -> Chunk:
        return _chunk(await self._chat_client().chat(**self._request(messages, stream=False)))

    async def _parts(self, messages: Sequence[Message]) -> AsyncIterator[Chunk]:
        stream = await self._chat_client().chat(**self._request(messages, stream=True))
        try:
            async for part in stream:
                yield _chunk(part)
        finally:
            await stream.aclose()

    async def _list_models(self) -> set[str]:
        response = await self._probe.get("/api/tags")
        response.raise_for_status()
        models = [m for m in response.json().get("models", []) if isinstance(m, dict)]
        return {m.get("name") for m in models} | {m.get("model") for m in models}

    def _model_listed(self, names: set[str]) -> bool:
        # Ollama lists `qwen3:latest` for a model pulled as `qwen3`
        return self.model in names or (":" not in self.model and f"{self.model}:latest" in names)
