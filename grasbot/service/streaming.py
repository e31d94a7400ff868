"""The event stream of `GET /ask/stream` (docs/service.md, "The stream"): the events of one answer
(`answer_events`: the opening, `sources`, `token`s, `verification`, then `done` or `failed`), their ids,
the answer to a reconnection (204), and a rejection sent as one `failed` event to an EventSource.

Framing, keep-alive comments and the client's disconnection are sse-starlette's; what is GrasBot's is here:
an `id:` on every event, a long `retry:` first, 204 to a reconnection, rejections as an event. A stream cut
by its client (sse-starlette cancels the generator) stops the generation, which closes its stream to the
model. (FastAPI's own SSE runs only a generator endpoint, whose status is sent before its first line runs,
so the 204, the 403 and the rejection stream could not be chosen before it; and its ping interval is fixed.)
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import AsyncIterator
from typing import Any

from fastapi import Request
from fastapi.responses import Response
from sse_starlette import EventSourceResponse, ServerSentEvent
from sse_starlette.sse import AppStatus

from grasbot.service.errors import ApiError
from grasbot.service.service import Service
from grasbot.service.settings import Settings
from grasbot.service.tasks import cancel_and_wait

# The service's records keep the logger name they have always had: a logging configuration may route by it.
log = logging.getLogger("grasbot.service.api")

#: The comment line sent every STREAM_PING_SECONDS while a stream is open (waiting for the model, between
#: tokens), so that a proxy or a browser never takes a silent connection for a dead one.
KEEPALIVE_COMMENT = "keep-alive"

#: Statuses that happen before a stream starts, as the OpenAPI page shows them.
STREAM_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "the answer as Server-Sent Events (for an EventSource, also a rejection as one `failed` event)",
        "content": {"text/event-stream": {}},
    },
    204: {"description": "a reconnection (the request carries `Last-Event-ID`): the answer is not produced again"},
    403: {"description": "`origin_not_allowed`: a page of an origin that CORS_ORIGINS does not list"},
}

# sse-starlette ends every open stream as soon as uvicorn is told to stop; GrasBot's streams end by
# themselves (LLM_TIMEOUT bounds them), so let uvicorn's graceful shutdown finish them as it finishes
# every other response, as before the library was used.
AppStatus.disable_automatic_graceful_drain()


class EventIds:
    """The `id:` of each event of one stream: `<stream>.<n>`, a random stream part and n from 0.

    A browser sends the last id it saw as `Last-Event-ID` when it reconnects, which is how the server tells
    a reconnection from a new question; the random part makes two streams' ids differ.
    """

    def __init__(self) -> None:
        self.stream = secrets.token_hex(8)
        self.count = 0

    def next(self) -> str:
        value = f"{self.stream}.{self.count}"
        self.count += 1
        return value


def sse_event(ids: EventIds, event: str, data: dict[str, Any]) -> ServerSentEvent:
    """One event: its name, the next id, the data as one line of JSON."""
    return ServerSentEvent(json.dumps(data, ensure_ascii=False), event=event, id=ids.next(), sep="\n")


def stream_opening(ids: EventIds, settings: Settings) -> ServerSentEvent:
    """The first block of every stream: `retry:` and an `id:`, no data (a browser dispatches nothing).

    The long retry is how long a browser whose page did not close its EventSource waits before it comes
    back (the default, a day, instead of the browser's ~3 s); the id makes even a connection lost before
    the first event come back with `Last-Event-ID`, which gets a 204.
    """
    return ServerSentEvent(id=ids.next(), retry=settings.stream_retry_ms, sep="\n")


def event_stream_response(events: AsyncIterator[ServerSentEvent], settings: Settings) -> EventSourceResponse:
    """The response that sends `events`, with a keep-alive comment every STREAM_PING_SECONDS."""
    return EventSourceResponse(
        events,
        ping=settings.stream_ping_seconds,
        ping_message_factory=lambda: ServerSentEvent(comment=KEEPALIVE_COMMENT, sep="\n"),
        sep="\n",
    )


def accepts_event_stream(request: Request) -> bool:
    """Whether the client names `text/event-stream` in `Accept`, as every EventSource does."""
    accept = request.headers.get("accept", "")
    return any(part.split(";", 1)[0].strip().lower() == "text/event-stream" for part in accept.split(","))


def reconnection_refusal() -> Response:
    """The answer to a request that carries `Last-Event-ID`: a browser reconnecting to a stream it has
    already had (finished or cut). 204 makes an EventSource stop for good; nothing is retrieved or
    generated again. (A cut answer is not resumed: the generation stops when its client leaves.)"""
    return Response(status_code=204, headers={"Cache-Control": "no-store"})


def rejection_stream(error: ApiError, settings: Settings) -> EventSourceResponse:
    """A rejection before the answer (400, 413, 422, 503) as a stream of one `failed` event, for a client
    that accepts `text/event-stream`: an EventSource reads no body of a response whose status is not 200,
    so the page would only see its own `error`, with no reason. The status is in the event's data."""
    ids = EventIds()

    async def events() -> AsyncIterator[ServerSentEvent]:
        yield stream_opening(ids, settings)
        yield sse_event(ids, "failed", {"status": error.status, "error": error.code, "message": error.message, **error.extra})

    return event_stream_response(events(), settings)


_INTERNAL_ERROR = {"status": 500, "error": "internal_error", "message": "internal error"}


async def answer_events(
    service: Service,
    question: str,
    session_id: str | None,
    user_id: str | None,
    legacy_error: bool,
    slot: str | None = None,
) -> AsyncIterator[ServerSentEvent]:
    """The events of one answer: the opening, `sources`, `token`s, then `done` or `failed`.

    `legacy_error`: send the deprecated `error` right after `failed` (clients that do not accept
    `text/event-stream`: scripts written when the failure event had that name; never an EventSource, where
    an event named `error` reaches the page's `onerror` and cannot be told from a lost connection).
    `slot`: the generation slot admitted for this answer, given back when the stream ends (a stream that
    never starts leaves it to expire: slots are leases, grasbot/service/limits.py).
    """
    ids = EventIds()
    queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()

    async def emit(event: str, data: dict[str, Any]) -> None:
        await queue.put((event, data))

    async def produce() -> None:
        # The whole answer runs in this one task, so the tracing context never crosses tasks.
        try:
            result = await service.answer(question, session_id, user_id, emit)
            if result.status == 200:
                await queue.put(("done", result.body))
            else:
                await queue.put(("failed", {"status": result.status, **result.body}))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the stream must end with an event, never hang
            log.error("internal error %s while streaming", type(exc).__name__)
            await queue.put(("failed", dict(_INTERNAL_ERROR)))

    task: asyncio.Task[None] | None = None
    getter: asyncio.Future[tuple[str, dict[str, Any]]] | None = None
    try:
        task = service.spawn(produce())
        yield stream_opening(ids, service.settings)
        while True:
            getter = asyncio.ensure_future(queue.get())
            done, _ = await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
            if getter not in done:
                getter.cancel()
                if queue.empty():  # the producer ended without a final event
                    event, data = "failed", dict(_INTERNAL_ERROR)
                else:
                    continue
            else:
                event, data = getter.result()
            yield sse_event(ids, event, data)
            if event == "failed" and legacy_error:
                yield sse_event(ids, "error", data)
            if event in ("done", "failed"):
                return
    finally:
        # The client left (sse-starlette cancels this generator) or the stream ended: stop the
        # generation, which closes its stream to the model, and leave no task behind.
        if getter is not None and not getter.done():
            getter.cancel()
        if task is not None:
            await cancel_and_wait(task)
        await service.release(slot)
