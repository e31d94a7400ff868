"""The API's error answers (docs/service.md, "The API"): `ApiError`, the JSON error body, the handlers that
turn FastAPI's and Starlette's own errors into it, and the catch-all that keeps an unexpected exception's text
out of the log.

Error bodies are JSON `{"error": code, "message": text, ...}` and carry no note content (docs/service.md,
"What private means").
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

# The service's records keep the logger name they have always had: a logging configuration may route by it.
log = logging.getLogger("grasbot.service.api")


class ApiError(Exception):
    """An answer other than 200, raised anywhere under a route: `status`, the `code` of the body's `error`,
    its `message` and any extra fields (`retry_after` also becomes the `Retry-After` header)."""

    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra


def error_response(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    """The JSON error body `{"error": code, "message": message, **extra}` with its status."""
    return JSONResponse({"error": code, "message": message, **extra}, status_code=status)


def add_error_handlers(app: FastAPI) -> None:
    """Answer `ApiError`, a request that does not match the API and Starlette's HTTP errors (404, 405, an
    undecodable body) with the JSON error body."""

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        response = error_response(exc.status, exc.code, exc.message, **exc.extra)
        if "retry_after" in exc.extra:
            response.headers["Retry-After"] = str(exc.extra["retry_after"])
        return response

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        # The details name the field and the rule, never echo the submitted value.
        detail = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", "")} for e in exc.errors()]
        return error_response(422, "invalid_request", "the request does not match the API", detail=detail)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and exc.__cause__ is not None:
            # FastAPI's answer to a body it could not decode (not UTF-8, nested too deep...): a malformed
            # body like any other, so the same 422 `invalid_request`; the decoder's text is not echoed.
            utf8 = isinstance(exc.__cause__, UnicodeDecodeError)
            msg = "the body is not valid UTF-8" if utf8 else "the body could not be parsed as JSON"
            detail = [{"loc": ["body"], "msg": msg}]
            return error_response(422, "invalid_request", "the request does not match the API", detail=detail)
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        response = error_response(exc.status_code, code, str(exc.detail))
        if exc.headers:
            response.headers.update(exc.headers)
        return response


class CatchAll:
    """Turns an unexpected exception into a 500 JSON body and a log line without its message.

    Starlette's own handler re-raises, and the server then logs the exception's text, which may quote data
    (a question, a note): here the log gets the exception's type and where it happened, nothing more.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Any) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:  # noqa: BLE001
            where = "".join(traceback.format_tb(exc.__traceback__)[-3:]).strip()
            log.error("internal error %s at\n%s", type(exc).__name__, where)
            if not started:
                await error_response(500, "internal_error", "internal error")(scope, receive, send)
