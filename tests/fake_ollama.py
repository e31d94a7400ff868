"""A fake Ollama server for tests: a real HTTP/1.1 server on 127.0.0.1 speaking Ollama's protocol.

A real Ollama and its weights cannot be installed here. This server answers what the `ollama` client asks:

- `POST /api/chat`, streamed (chunked NDJSON, one `message.content` piece per line, then a final line with
  `done: true`, `done_reason`, `total_duration`, `load_duration`, `prompt_eval_count`,
  `prompt_eval_duration`, `eval_count`, `eval_duration`) or not (one JSON object with the same fields);
- `GET /api/tags` and `GET /api/version`;
- errors as `{"error": "..."}`: 404 `model 'x' not found` for an unknown model, any status on demand, and an
  `{"error": ...}` line in the middle of a stream.

It also tells how its clients behave: `open_connections` counts the TCP connections open right now (a
client that leaks them shows here), and a chat whose client closes the connection before the reply ends is
noticed during the scripted delays (the handler watches the socket while it waits) and counted in
`abandoned_chats`; `chats_in_progress` counts the chats still being answered.

Each test scripts it (`fake.script(reply=..., delay=..., fail_status=..., empty=True, ...)`); `reply` may be a
function of the request body, so an answer can depend on the prompt. Every request is recorded
(`fake.requests`, `fake.chat_prompts()`) so tests can check what the service sent.
"""

from __future__ import annotations

import json
import re
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler

from tests.loopback_server import LoopbackServer
from typing import Any, Self

Reply = str | Callable[[dict[str, Any]], str]


@dataclass(frozen=True)
class Script:
    """How the fake answers the next chats."""

    reply: Reply = "Réponse de test."
    delay: float = 0.0  # seconds before the response starts
    chunk_delay: float = 0.0  # seconds between two streamed pieces
    fail_status: int | None = None  # answer this status with {"error": fail_message}
    fail_message: str = "something went wrong"
    error_mid_stream: str | None = None  # streamed: send this {"error": ...} line after the first piece
    empty: bool = False  # the model answers nothing
    think: str | None = None  # a <think> block the model emits before its answer
    drop: bool = False  # close the connection without answering
    unfinished: bool = False  # end the reply cleanly but without its final `"done": true` message
    done_reason: str = "stop"


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    at: float = field(default_factory=time.monotonic)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def word_pieces(text: str) -> list[str]:
    """Word-sized pieces, as a model streams them (spaces kept, so joining gives the text back)."""
    return re.findall(r"\s*\S+|\s+", text) or ([text] if text else [])


class FakeLLMServer(LoopbackServer):
    """What every fake LLM server shares (this one and tests/fake_openai.py): the script, the recorded
    requests and the connection counters. Start with `start()` (or as a context manager); `url` is its
    base URL."""

    script_type: type[Script] = Script
    chat_path = "/api/chat"

    def __init__(self, models: tuple[str, ...] = ("qwen3:8b",)) -> None:
        super().__init__()
        self.models = set(models)
        self.requests: list[Recorded] = []
        self._script = self.script_type()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.open_connections = 0  # TCP connections open now
        self.connections_made = 0  # TCP connections accepted since the start (a client that reuses none shows here)
        self.chats_in_progress = 0  # chats being answered now
        self.abandoned_chats = 0  # chats whose client closed the connection before the end of the reply

    # -- control ------------------------------------------------------------------------------------
    def script(self, **changes: Any) -> Self:
        """Set how the next chats are answered (fields of `Script`); unspecified fields reset to default."""
        with self._lock:
            self._script = replace(self.script_type(), **changes)
        return self

    def current(self) -> Script:
        with self._lock:
            return self._script

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self._script = self.script_type()

    def chat_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.requests if r.path == self.chat_path and isinstance(r.body, dict)]

    def chat_prompts(self) -> list[str]:
        """Every message content of every chat received, one string per chat."""
        return ["\n".join(m.get("content", "") for m in body.get("messages", [])) for body in self.chat_requests()]

    def stop(self) -> None:
        self._stop.set()  # wakes handlers sleeping in a scripted delay
        super().stop()

    def _record(self, rec: Recorded) -> None:
        with self._lock:
            self.requests.append(rec)

    def _sleep(self, seconds: float) -> bool:
        """Sleep unless the server stops; False when it stopped."""
        return not self._stop.wait(seconds) if seconds > 0 else not self._stop.is_set()

    def _count(self, name: str, delta: int) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + delta)

    def wait_until(self, predicate: Callable[[Self], bool], timeout: float = 10.0) -> bool:
        """Poll `predicate(self)` until it holds; False after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not predicate(self):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True


class FakeOllama(FakeLLMServer):
    """Ollama's protocol (the module's docstring)."""

    def __init__(self, models: tuple[str, ...] = ("qwen3:8b",), version: str = "0.9.0") -> None:
        super().__init__(models)
        self.version = version


class LLMHandler(BaseHTTPRequestHandler):
    """The HTTP side every fake LLM server shares: connection counting, waits that notice a client that
    left, JSON bodies in and out, chunked writes."""

    owner: FakeLLMServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in separate writes: no 40 ms delayed-ACK stall

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output quiet
        return

    def setup(self) -> None:
        super().setup()
        self.owner._count("open_connections", 1)
        self.owner._count("connections_made", 1)

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass
        finally:
            self.owner._count("open_connections", -1)

    def handle(self) -> None:
        try:
            super().handle()
        except (ConnectionResetError, BrokenPipeError):
            pass  # the client went away; nothing to report

    def _client_closed(self) -> bool:
        """Whether the client has closed (or reset) its side of the connection."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except (ConnectionResetError, OSError):
            return True

    def _wait(self, seconds: float) -> bool:
        """Wait like a model thinking; False when the server stops or the client has gone (recorded)."""
        deadline = time.monotonic() + seconds
        while True:
            if self._client_closed():
                self.owner._count("abandoned_chats", 1)
                self.close_connection = True
                return False
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return not self.owner._stop.is_set()
            if self.owner._stop.wait(min(remaining, 0.02)):
                return False

    # -- helpers ------------------------------------------------------------------------------------
    def _json(self, status: int, payload: Any) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _write_chunk(self, data: bytes) -> None:
        """One chunk of a `Transfer-Encoding: chunked` body, flushed at once."""
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _chunk(self, payload: dict[str, Any]) -> None:
        self._write_chunk((json.dumps(payload) + "\n").encode())

    def _read_body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except json.JSONDecodeError:
            return raw.decode("utf-8", "replace")


class _Handler(LLMHandler):
    owner: FakeOllama
    server_version = "FakeOllama/1.0"

    # -- routes -------------------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802
        self.owner._record(Recorded("GET", self.path, dict(self.headers), None))
        if self.path == "/api/version":
            self._json(200, {"version": self.owner.version})
        elif self.path == "/api/tags":
            models = [
                {
                    "name": m,
                    "model": m,
                    "modified_at": _now(),
                    "size": 5_000_000_000,
                    "digest": "0" * 64,
                    "details": {"format": "gguf", "family": "qwen3", "parameter_size": "8.2B", "quantization_level": "Q4_K_M"},
                }
                for m in sorted(self.owner.models)
            ]
            self._json(200, {"models": models})
        elif self.path in ("/", ""):
            body = b"Ollama is running"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self._json(404, {"error": "404 page not found"})

    def do_POST(self) -> None:  # noqa: N802
        body = self._read_body()
        self.owner._record(Recorded("POST", self.path, dict(self.headers), body))
        if self.path != "/api/chat":
            self._json(404, {"error": "404 page not found"})
            return
        script = self.owner.current()
        if not isinstance(body, dict):
            self._json(400, {"error": "invalid request body"})
            return
        model = body.get("model")
        self.owner._count("chats_in_progress", 1)
        try:
            self._chat(body, script, model)
        finally:
            self.owner._count("chats_in_progress", -1)

    def _chat(self, body: dict[str, Any], script: Script, model: Any) -> None:
        if not self._wait(script.delay):
            return
        if script.drop:
            self.close_connection = True
            self.connection.close()
            return
        if model not in self.owner.models:
            self._json(404, {"error": f"model '{model}' not found"})
            return
        if script.fail_status is not None:
            self._json(script.fail_status, {"error": script.fail_message})
            return
        text = "" if script.empty else (script.reply(body) if callable(script.reply) else script.reply)
        if script.think is not None:
            text = f"<think>{script.think}</think>\n\n{text}"
        prompt_chars = sum(len(m.get("content", "")) for m in body.get("messages", []))
        final = {
            "model": model,
            "created_at": _now(),
            "done": True,
            "done_reason": script.done_reason,
            "total_duration": 1_200_000_000,
            "load_duration": 30_000_000,
            "prompt_eval_count": max(prompt_chars // 4, 1),
            "prompt_eval_duration": 300_000_000,
            "eval_count": len(word_pieces(text)),
            "eval_duration": 800_000_000,
        }
        if script.unfinished:
            final = {**final, "done": False}
            final.pop("done_reason")
        if body.get("stream", True) is False:
            self._json(200, {**final, "message": {"role": "assistant", "content": text}})
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for i, piece in enumerate(word_pieces(text)):
                if i and not self._wait(script.chunk_delay):
                    self.close_connection = True
                    return
                self._chunk({"model": model, "created_at": _now(), "message": {"role": "assistant", "content": piece}, "done": False})
                if script.error_mid_stream is not None:
                    self._chunk({"error": script.error_mid_stream})
                    self.wfile.write(b"0\r\n\r\n")
                    return
            if not script.unfinished:
                self._chunk({**final, "message": {"role": "assistant", "content": ""}})
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.owner._count("abandoned_chats", 1)
            self.close_connection = True
            return


FakeOllama.handler = _Handler
