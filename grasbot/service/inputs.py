"""What a request brings, checked before any work (docs/service.md, "The API" and "Security notes"): the
question (`clean_question`, `check_question`), the anonymous ids, the feedback body, the page's origin
(`origin_refusal`), the reload token and the visitor's address the limits count by.
"""

from __future__ import annotations

import hmac
import re
import unicodedata
from typing import Literal

from fastapi import Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from grasbot.service.errors import ApiError, error_response

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}")  # always fullmatch: `$` would let a final "\n" in
# Characters removed from questions besides Cc controls: format characters (zero-width, bidi overrides),
# surrogates and private-use code points have no place in a question and can hide text from a reader.
_DROPPED_CATEGORIES = {"Cc", "Cf", "Cs", "Co"}


def visitor_of(request: Request) -> str:
    """The key a visitor is limited by: their address (behind a proxy, uvicorn puts the forwarded one here
    for the proxies it trusts, `--forwarded-allow-ips`; docs/deploy.md)."""
    return request.client.host if request.client is not None else "unknown"


def clean_question(raw: str) -> str:
    """The question with control and format characters removed and white space collapsed (NFC)."""
    text = unicodedata.normalize("NFC", raw)
    text = "".join(
        " " if ch in "\t\n\r\x0b\x0c\x85\u2028\u2029" else ch
        for ch in text
        if ch in "\t\n\r\x0b\x0c\x85\u2028\u2029" or unicodedata.category(ch) not in _DROPPED_CATEGORIES
    )
    return " ".join(text.split())


def check_question(raw: str | None, max_chars: int) -> str:
    """The cleaned question; ApiError 400 `empty_question` or 413 `question_too_long`."""
    question = clean_question(raw or "")
    if not question:
        raise ApiError(400, "empty_question", "the question `q` is empty")
    if len(question) > max_chars:
        raise ApiError(
            413, "question_too_long", f"the question is longer than {max_chars} characters", max_chars=max_chars
        )
    return question


def check_id(name: str, value: str | None) -> str | None:
    """`session_id` or `user_id` as sent (None when empty); ApiError 422 `invalid_<name>` when malformed."""
    if value is None or value == "":
        return None
    if not _ID.fullmatch(value):
        raise ApiError(
            422, f"invalid_{name}", f"`{name}` must be 1 to 200 characters among letters, digits and . _ : @ -"
        )
    return value


class FeedbackIn(BaseModel):
    trace_id: str = Field(min_length=32, max_length=32, description="the `trace_id` of an answer")
    value: Literal[0, 1] = Field(description="1 for a useful answer, 0 for a bad one")
    comment: str | None = Field(default=None, max_length=2000)


def has_reload_token(request: Request, token: str) -> bool:
    """True when `request` carries `Authorization: Bearer <token>` (compared in constant time)."""
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def origin_refusal(request: Request, allowed: tuple[str, ...]) -> JSONResponse | None:
    """A 403 for a question sent by a page of another origin that `allowed` (CORS_ORIGINS) does not list;
    None when the request may go on. Checked before any retrieval or generation.

    A cross-origin browser request names its page's origin in `Origin`. One that does not is either not
    from a browser, same-origin, or a no-cors embed (`<img>`, `<script>`, `<iframe>` pointing at the API);
    the last says `Sec-Fetch-Site: cross-site` (or `same-site`) and is refused too, except a top-level
    navigation (`Sec-Fetch-Dest: document`: a link the visitor followed).
    """
    if "*" in allowed:
        return None
    origin = request.headers.get("origin")
    message = "this API does not answer pages of this origin (CORS_ORIGINS)"
    if origin is None:
        site, dest = request.headers.get("sec-fetch-site"), request.headers.get("sec-fetch-dest")
        if site in ("cross-site", "same-site") and dest != "document":
            return error_response(403, "origin_not_allowed", message)
        return None
    if origin in allowed or origin == f"{request.url.scheme}://{request.url.netloc}":
        return None
    response = error_response(403, "origin_not_allowed", message)
    # Readable by the refused page: an EventSource that cannot read a response (a CORS failure) retries
    # it every few seconds for ever, one that reads a 403 stops. The body says nothing but the refusal.
    response.headers["Access-Control-Allow-Origin"] = origin
    response.headers["Vary"] = "Origin"
    return response
