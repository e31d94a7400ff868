"""The routes (docs/service.md, "The API"): `GET /ask`, `GET /ask/stream`, `GET /health`,
`POST /reload-vault`, `POST /feedback`, as one `router` that grasbot/service/app.py includes.

Each route reads its `Service` from the app (`app.state.service`), checks what the request brings
(grasbot/service/inputs.py) before any work, and leaves the answer to the service; a route only says how it
is sent (JSON, or the event stream of grasbot/service/streaming.py).
"""

from __future__ import annotations

import asyncio
from typing import Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response

from grasbot.answer.plaintext import markdown_to_text
from grasbot.service.errors import ApiError, error_response
from grasbot.service.inputs import (
    FeedbackIn,
    check_id,
    check_question,
    clean_question,
    has_reload_token,
    origin_refusal,
    visitor_of,
)
from grasbot.service.observability import is_trace_id
from grasbot.service.service import Service
from grasbot.service.streaming import (
    STREAM_RESPONSES,
    accepts_event_stream,
    answer_events,
    event_stream_response,
    reconnection_refusal,
    rejection_stream,
)
from grasbot.service.tasks import cancel_and_wait

router = APIRouter()


def service_of(request: Request) -> Service:
    """The `Service` of the app that received `request` (set by `create_app`)."""
    service: Service = request.app.state.service
    return service


async def _wait_for_disconnect(request: Request) -> None:
    """Return when the client of `request` (a request without a body to read) has gone."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


@router.get("/ask", summary="Answer a question from the public notes")
async def ask(
    request: Request,
    q: str = Query("", description="the visitor's question"),
    session_id: str | None = Query(None, description="anonymous conversation id (memory of the last turns)"),
    user_id: str | None = Query(None, description="anonymous visitor id (tracing only)"),
    format: Literal["markdown", "text"] = Query("markdown", description="`text`: the answer without Markdown marks"),
) -> Response:
    service = service_of(request)
    settings = service.settings
    refusal = origin_refusal(request, settings.cors_origins)
    if refusal is not None:
        return refusal
    question = check_question(q, settings.ask_max_chars)
    sid, uid = check_id("session_id", session_id), check_id("user_id", user_id)
    await service.reloads.catch_up()  # never an answer from a vault another worker has reloaded since
    slot = await service.admit(visitor_of(request))
    # The generation runs in its own task, cancelled if the visitor leaves before the answer.
    task = service.spawn(service.answer(question, sid, uid))
    watcher = asyncio.ensure_future(_wait_for_disconnect(request))
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        await cancel_and_wait(task)
        await service.release(slot)
    if task.cancelled() or not task.done():  # the client is gone: nobody reads this response
        return Response(status_code=499)
    result = task.result()
    body = result.body
    if format == "text" and isinstance(body.get("response"), str):
        body = {**body, "response": markdown_to_text(body["response"])}
    return JSONResponse(body, status_code=result.status, headers={"Server-Timing": result.server_timing()})


@router.get(
    "/ask/stream",
    summary="Answer as Server-Sent Events: sources, token..., verification, done | failed",
    response_class=Response,  # (the OpenAPI page then shows text/event-stream only)
    responses=STREAM_RESPONSES,
)
async def ask_stream(
    request: Request,
    q: str = Query("", description="the visitor's question"),
    session_id: str | None = Query(None),
    user_id: str | None = Query(None),
) -> Response:
    service = service_of(request)
    settings = service.settings
    refusal = origin_refusal(request, settings.cors_origins)
    if refusal is not None:
        return refusal
    if request.headers.get("last-event-id") is not None:
        return reconnection_refusal()
    as_event_source = accepts_event_stream(request)
    try:
        question = check_question(q, settings.ask_max_chars)
        sid, uid = check_id("session_id", session_id), check_id("user_id", user_id)
        await service.reloads.catch_up()  # never an answer from a vault another worker has reloaded since
        slot = await service.admit(visitor_of(request))  # 429 before any work (grasbot/service/limits.py)
    except ApiError as error:
        if not as_event_source:
            raise
        return rejection_stream(error, settings)
    events = answer_events(service, question, sid, uid, legacy_error=not as_event_source, slot=slot)
    return event_stream_response(events, settings)


@router.get("/health", summary="Status, configuration (no secrets), vault counts, LLM reachability")
async def health(request: Request) -> JSONResponse:
    service = service_of(request)
    token = service.settings.reload_token
    vault_error = None
    try:
        await service.reloads.catch_up()
    except ApiError as error:
        vault_error = error.code
    # Where the vault and the process are (folder, pid) only for a caller with the reload token.
    details = token is not None and has_reload_token(request, token)
    return JSONResponse(await service.health(vault_error, details=details))


@router.post("/reload-vault", summary="Re-read the vault and swap the index atomically")
async def reload_vault(request: Request) -> JSONResponse:
    service = service_of(request)
    token = service.settings.reload_token
    if token is not None and not has_reload_token(request, token):
        response = error_response(401, "unauthorized", "POST /reload-vault needs `Authorization: Bearer <token>`")
        response.headers["WWW-Authenticate"] = "Bearer"
        return response
    return JSONResponse(await service.reloads.reload())


@router.post("/feedback", summary="Record a visitor's thumb up (1) or down (0) as the Langfuse score user_feedback")
async def feedback(request: Request, body: FeedbackIn) -> JSONResponse:
    trace_id = body.trace_id.lower()
    if not is_trace_id(trace_id):
        raise ApiError(422, "invalid_trace_id", "`trace_id` must be the 32 hexadecimal characters of an answer")
    comment = clean_question(body.comment) if body.comment else None
    recorded = service_of(request).observability.feedback(trace_id, body.value, comment or None)
    return JSONResponse({"recorded": recorded, "trace_id": trace_id})
