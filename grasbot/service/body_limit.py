"""A cap on every request body: 413 `body_too_large`, before the body is read whole.

No route takes more than a small JSON body (`POST /feedback`), yet without a cap a client could post
hundreds of megabytes that the server would buffer. This ASGI middleware refuses:

- a declared `Content-Length` over the cap at once, before the route runs (no retrieval, no generation);
- a body sent without a length (chunked) as soon as the bytes received pass the cap: it answers 413 then
  and there, and from then on the route reads only "the client has gone" (`http.disconnect`), so a route
  that was reading the body, or waiting for a generation, stops; anything it still sends is dropped.

The answer is the service's JSON error shape, with `Connection: close` so the server does not read the
rest of the upload. (Starlette's own `RequestBodyLimitMiddleware`, which FastAPI's `max_body_size`
uses, lets a route that reads no body run to its end before swapping its answer for a plain-text 413.)
"""

from __future__ import annotations

import json
from typing import Any

Scope = dict[str, Any]
Message = dict[str, Any]


def too_large_body(max_bytes: int) -> bytes:
    return json.dumps(
        {
            "error": "body_too_large",
            "message": f"the request body is longer than {max_bytes} bytes",
            "max_bytes": max_bytes,
        }
    ).encode()


class RequestBodyLimit:
    """Wraps an ASGI app; `max_bytes` is the longest body accepted."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._refuse(send)
            return
        received = 0
        started = False  # the route's answer has begun
        refused = False  # we answered 413: the route's answer is dropped

        async def limited_receive() -> Message:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    refused = True
                    if not started:
                        await self._refuse(send)
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if refused:
                return
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        await self.app(scope, limited_receive, guarded_send)

    async def _refuse(self, send: Any) -> None:
        body = too_large_body(self.max_bytes)
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body, "more_body": False})


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # h11 refuses a malformed length before the app sees it
    return None
