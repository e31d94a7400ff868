"""Server-issued conversation ids.

A visitor never chooses the id that keys its conversation memory: a client-chosen id (`tab-1`) would let a
second visitor who sends the same one read the first one's turns in its prompt. The server issues
`<nonce>.<signature>`: 32 hex characters of randomness and the first 32 hex characters of their
HMAC-SHA256 under a key kept in the service's private state folder (shared by the workers of one
deployment, so any of them accepts an id another issued). An id is continued only when its signature is
right; anything else (absent, unknown, forged, an old client-chosen id) starts a new, empty conversation
with a new id. The front-end's contract: send back the `session_id` of the last answer (docs/service.md).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

_SHAPE = re.compile(r"[0-9a-f]{32}\.[0-9a-f]{32}")


class SessionIds:
    """Issues and checks session ids signed with `key`."""

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("a session key needs at least 16 bytes")
        self._key = key

    def _sign(self, nonce: str) -> str:
        return hmac.new(self._key, nonce.encode("ascii"), hashlib.sha256).hexdigest()[:32]

    def issue(self) -> str:
        """A new, unguessable id (65 characters: letters, digits and one dot)."""
        nonce = secrets.token_hex(16)
        return f"{nonce}.{self._sign(nonce)}"

    def is_issued(self, value: str | None) -> bool:
        """True when `value` is an id this deployment issued (compared in constant time)."""
        if not value or not _SHAPE.fullmatch(value):
            return False
        nonce, signature = value.split(".")
        return hmac.compare_digest(signature, self._sign(nonce))

    def continue_or_start(self, given: str | None) -> str:
        """`given` when it is an issued id (the conversation goes on), else a new id (a new conversation)."""
        return given if given is not None and self.is_issued(given) else self.issue()
