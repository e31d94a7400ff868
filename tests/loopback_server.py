"""The one way tests run a stand-in HTTP server (fake Ollama, Langfuse collector): a threaded
`http.server` on 127.0.0.1 with a free port, started and stopped explicitly or as a context manager."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self


class _Server(ThreadingHTTPServer):
    request_queue_size = 1024  # the default backlog of 5 drops connections when 100 requests arrive at once
    daemon_threads = True


class LoopbackServer:
    """Subclasses set `handler` to a BaseHTTPRequestHandler subclass; each request's handler reaches the
    server object as `self.owner`."""

    handler: ClassVar[type[BaseHTTPRequestHandler]]

    def __init__(self) -> None:
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> Self:
        handler: Any = type("Handler", (self.handler,), {"owner": self})
        self._server = _Server(("127.0.0.1", 0), handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
