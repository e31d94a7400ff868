"""A fake OpenAI-compatible server for tests: a real HTTP/1.1 server on 127.0.0.1 speaking the protocol of
OpenAI's chat completions, as llama.cpp's llama-server, vLLM, LM Studio and LiteLLM serve it.

- `POST /v1/chat/completions`, not streamed: one `chat.completion` object (`id`, `object`, `created`,
  `model`, `system_fingerprint`, `choices[0].message`, `finish_reason`, `usage` {prompt_tokens,
  completion_tokens, total_tokens}); streamed (`"stream": true`): `text/event-stream`, chunked, one
  `data: {chat.completion.chunk}` event per piece (`choices[0].delta.content`), a chunk with the
  `finish_reason`, then, when the request has `stream_options: {"include_usage": true}`, a chunk with no
  choice and the `usage`, then `data: [DONE]`;
- `GET /v1/models`: `{"object": "list", "data": [{"id", "object": "model", "created", "owned_by"}]}`;
- errors as `{"error": {"message", "type", "param", "code"}}` with their status: 401 `invalid_api_key`
  when the server has a key and the request's `Authorization: Bearer` differs, 404 `model_not_found` for an
  unknown model, any status on demand; mid-stream, a `data: {"error": {...}}` event after the first piece,
  or (`error_line=True`) the `error: {...}` line some llama.cpp versions write instead;
- fields it does not take (`refuses`): a request carrying one gets a 400 as the real servers send it:
  `max_tokens` as OpenAI's reasoning models refuse it (`unsupported_parameter`, "Use
  'max_completion_tokens' instead"), any other field (`stream_options`...) as Azure OpenAI's older API
  versions do ("Unrecognized request argument supplied: stream_options", no `param`, no `code`).

The model the server reports is `reported_model` when scripted (a provider's dated snapshot name), else
the one asked for. It shares the fake Ollama's controls (tests/fake_ollama.py): `script(...)`, the
recorded requests, `open_connections`, `abandoned_chats`, `chats_in_progress`, `wait_until`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from tests.fake_ollama import FakeLLMServer, LLMHandler, Recorded, Script, word_pieces


@dataclass(frozen=True)
class OpenAIScript(Script):
    """`Script`'s fields (`unfinished`: the stream stops before its finish_reason and [DONE]), and:"""

    reported_model: str | None = None  # the model name the server reports in its replies
    error_line: bool = False  # a mid-stream error as llama.cpp's `error: {...}` line, not a `data:` event
    no_usage: bool = False  # the server ignores `stream_options.include_usage`
    fail_code: str | None = None  # the `code` of a scripted error
    linger: float = 0.0  # seconds the server keeps the stream open after `data: [DONE]`
    refuses: tuple[str, ...] = ()  # request fields answered with a 400 (`stream_options`, `max_tokens`...)


class FakeOpenAI(FakeLLMServer):
    """`base_url` (`url` + `/v1`) is what LLM_BASE_URL takes. With `api_key`, every request must carry it."""

    script_type = OpenAIScript
    chat_path = "/v1/chat/completions"

    def __init__(self, models: tuple[str, ...] = ("qwen3:8b",), api_key: str | None = None) -> None:
        super().__init__(models)
        self.api_key = api_key
        self._ids = 0

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def next_id(self) -> str:
        with self._lock:
            self._ids += 1
            return f"chatcmpl-fake{self._ids:06d}"


def _error(message: str, kind: str, code: str | int | None = None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _refusal(field: str) -> dict[str, Any]:
    """The 400 body a real server sends for a request field it does not take."""
    if field == "max_tokens":  # OpenAI, o1/o3/gpt-5 models
        message = "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
        return _error(message, "invalid_request_error", "unsupported_parameter", field)
    return _error(f"Unrecognized request argument supplied: {field}", "invalid_request_error")  # Azure OpenAI


class _Handler(LLMHandler):
    owner: FakeOpenAI
    server_version = "FakeOpenAI/1.0"

    def _authorized(self) -> bool:
        """Whether the request carries the server's key; if not, the 401 is sent."""
        key = self.owner.api_key
        if key is None or self.headers.get("Authorization") == f"Bearer {key}":
            return True
        given = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        # (the key given is echoed whole, as a careless proxy might: the client must keep it out of its logs)
        self._json(401, _error(f"Incorrect API key provided: {given}.", "invalid_request_error", "invalid_api_key"))
        return False

    def do_GET(self) -> None:  # noqa: N802
        self.owner._record(Recorded("GET", self.path, dict(self.headers), None))
        if self.path != "/v1/models":
            self._json(404, _error(f"Unknown request URL: GET {self.path}.", "invalid_request_error", "unknown_url"))
            return
        if not self._authorized():
            return
        data = [{"id": m, "object": "model", "created": 1_700_000_000, "owned_by": "fake"} for m in sorted(self.owner.models)]
        self._json(200, {"object": "list", "data": data})

    def do_POST(self) -> None:  # noqa: N802
        body = self._read_body()
        self.owner._record(Recorded("POST", self.path, dict(self.headers), body))
        if self.path != self.owner.chat_path:
            self._json(404, _error(f"Unknown request URL: POST {self.path}.", "invalid_request_error", "unknown_url"))
            return
        if not self._authorized():
            return
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self._json(400, _error("'messages' is a required property", "invalid_request_error"))
            return
        self.owner._count("chats_in_progress", 1)
        try:
            self._chat(body, self.owner.current())  # type: ignore[arg-type]
        finally:
            self.owner._count("chats_in_progress", -1)

    def _chat(self, body: dict[str, Any], script: OpenAIScript) -> None:
        if not self._wait(script.delay):
            return
        if script.drop:
            self.close_connection = True
            self.connection.close()
            return
        refused = [name for name in script.refuses if name in body]
        if refused:
            self._json(400, _refusal(refused[0]))
            return
        model = body.get("model")
        if model not in self.owner.models:
            message = f"The model `{model}` does not exist or you do not have access to it."
            self._json(404, _error(message, "invalid_request_error", "model_not_found"))
            return
        if script.fail_status is not None:
            kind = "server_error" if script.fail_status >= 500 else "invalid_request_error"
            self._json(script.fail_status, _error(script.fail_message, kind, script.fail_code))
            return
        text = "" if script.empty else self.owner.next_reply(script, body)
        if script.think is not None:
            text = f"<think>{script.think}</think>\n\n{text}"
        pieces = word_pieces(text)
        prompt_chars = sum(len(m.get("content", "")) for m in body["messages"] if isinstance(m, dict))
        usage = {"prompt_tokens": max(prompt_chars // 4, 1), "completion_tokens": len(pieces)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        head = {
            "id": self.owner.next_id(),
            "created": int(time.time()),
            "model": script.reported_model or model,
            "system_fingerprint": "fp_fake",
        }
        if body.get("stream") is not True:
            choice = {"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": None, "finish_reason": script.done_reason}
            self._json(200, {**head, "object": "chat.completion", "choices": [choice], "usage": usage})
            return
        self._stream(body, script, head, pieces, usage)

    def _event(self, payload: dict[str, Any] | str, field: str = "data") -> None:
        data = payload if isinstance(payload, str) else json.dumps(payload)
        self._write_chunk(f"{field}: {data}\n\n".encode())

    def _stream(self, body: dict[str, Any], script: OpenAIScript, head: dict[str, Any], pieces: list[str], usage: dict[str, int]) -> None:
        include_usage = bool((body.get("stream_options") or {}).get("include_usage")) and not script.no_usage
        extra = {"usage": None} if include_usage else {}  # (OpenAI sends `usage: null` on every other chunk)

        def chunk(delta: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}
            return {**head, "object": "chat.completion.chunk", "choices": [choice], **extra}

        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            self._event(chunk({"role": "assistant", "content": ""}))
            for i, piece in enumerate(pieces):
                if i and not self._wait(script.chunk_delay):
                    self.close_connection = True
                    return
                self._event(chunk({"content": piece}))
                if script.error_mid_stream is not None:
                    error = _error(script.error_mid_stream, "server_error", 500)
                    self._event(error["error"] if script.error_line else error, "error" if script.error_line else "data")
                    self.wfile.write(b"0\r\n\r\n")
                    return
            if not script.unfinished:
                self._event(chunk({}, script.done_reason))
                if include_usage:
                    self._event({**head, "object": "chat.completion.chunk", "choices": [], "usage": usage})
                self._event("[DONE]")
                if script.linger and not self._wait(script.linger):
                    return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.owner._count("abandoned_chats", 1)
            self.close_connection = True


FakeOpenAI.handler = _Handler
