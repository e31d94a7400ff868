"""Telling a running GrasBot API to re-read the vault: `POST /reload-vault`, once or as a background pusher.

`reload_vault()` does one push and returns a `ReloadResult` (never raises for network or HTTP trouble);
`ReloadResult.summary()` is the one line a person reads. `Pusher` is what `vaulttools watch` (and the TUI)
use after every burst of changes: it pushes on a worker thread, coalesces requests (at most one push in
flight and one pending after it), and when the API is down or failing it says so once, retries with
exponential backoff, and pushes as soon as the API answers again.

The token comes from the caller or `GRASBOT_RELOAD_TOKEN`; it is sent as `Authorization: Bearer <token>`
and never printed.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

DEFAULT_API = "http://127.0.0.1:8000"
TOKEN_ENV = "GRASBOT_RELOAD_TOKEN"
#: Connecting is quick or the API is down; answering takes a full re-read of the vault on the server.
DEFAULT_CONNECT_TIMEOUT = 1.0
DEFAULT_TIMEOUT = 15.0

OK = "ok"
API_ERROR = "api-error"
UNREACHABLE = "unreachable"


def resolve_token(token: str | None) -> str | None:
    """The token given, else `GRASBOT_RELOAD_TOKEN`, else None (an empty string counts as unset)."""
    value = token if token is not None else os.environ.get(TOKEN_ENV)
    return value or None


def reload_url(api: str) -> str:
    """`{api}/reload-vault`. Raises ValueError for something that is not an http(s) URL."""
    api = (api or "").strip()
    parts = urlsplit(api)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not an http(s) URL: {api!r} (expected something like {DEFAULT_API})")
    base = api.rstrip("/")
    if base.endswith("/reload-vault"):
        return base
    return base + "/reload-vault"


@dataclass(frozen=True, slots=True)
class ReloadResult:
    """The outcome of one push. `kind` is ``ok`` (2xx), ``api-error`` (the API answered an error, or did
    not answer in time) or ``unreachable`` (no connection). `data` is the JSON body when there is one."""

    kind: str
    url: str
    status: int | None = None
    data: Any = None
    error: str | None = None
    elapsed_ms: float = 0.0

    @property
    def ok(self) -> bool:
        return self.kind == OK

    @property
    def retryable(self) -> bool:
        """Worth retrying later: the API is down, overloaded, or failed on its side (5xx, 429, timeout).
        A 4xx (bad token, wrong URL) will not fix itself: it waits for the next change."""
        if self.kind == UNREACHABLE:
            return True
        if self.kind == API_ERROR:
            return self.status is None or self.status >= 500 or self.status in (408, 429)
        return False

    @property
    def failure(self) -> str | None:
        """What kind of failure, in a few words (None for a success): ``unreachable``, ``no answer`` (a
        timeout, or a bug of ours), or ``HTTP 401``, ``HTTP 500``, ... A `Pusher` speaks again when it
        changes (the API was slow, now it refuses the token)."""
        if self.kind == OK:
            return None
        if self.kind == UNREACHABLE:
            return "unreachable"
        return f"HTTP {self.status}" if self.status is not None else "no answer"

    @property
    def exit_code(self) -> int:
        """0 ok, 1 the API answered an error, 2 unreachable (the `vaulttools reload` contract)."""
        return {OK: 0, API_ERROR: 1}.get(self.kind, 2)

    def summary(self) -> str:
        """One line for a person: what the API did, or why the push failed."""
        if self.kind == OK:
            return f"reload ok: {describe_reload(self.data)} ({self.elapsed_ms:.0f} ms)"
        if self.kind == UNREACHABLE:
            return f"reload failed: API unreachable at {_origin(self.url)} ({self.error})"
        if self.status is None:  # the error says it all: "no answer within 15 s"
            return f"reload failed: {self.error}"
        return f"reload failed: HTTP {self.status}: {self.error}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "kind": self.kind,
            "url": self.url,
            "status": self.status,
            "result": self.data if self.ok else None,
            "error": self.error,
            "elapsed_ms": round(self.elapsed_ms, 1),
            "summary": self.summary(),
        }


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, (list, tuple, dict)):
        return len(value)
    return None


def describe_reload(data: Any) -> str:
    """Summarise the API's answer to `/reload-vault` in a few words. Tolerant of the exact shape: it
    reads a note count (`notes`, `vault_size`, `count`) and what changed (`added`, `changed`/`modified`/
    `updated`, `removed`/`deleted`, as counts or lists, at the top level or under `changes`/`diff`)."""
    if not isinstance(data, Mapping):
        return "vault reloaded"
    notes = None
    for key in ("notes", "vault_size", "count", "total"):
        notes = _count(data.get(key))
        if notes is not None:
            break
    if notes is None and isinstance(data.get("counts"), Mapping):
        counts = data["counts"]
        notes = _count(counts.get("notes")) or _count(counts.get("total"))
    changes: Mapping[str, Any] = data
    for key in ("changes", "changed", "diff"):
        if isinstance(data.get(key), Mapping):
            changes = data[key]
            break
    parts = []
    for label, keys in (
        ("added", ("added", "created", "new")),
        ("changed", ("changed", "modified", "updated")),
        ("removed", ("removed", "deleted")),
    ):
        for key in keys:
            n = _count(changes.get(key))
            if n is not None:
                parts.append(f"{n} {label}")
                break
    text = f"{notes} note{'s' * (notes != 1)}" if notes is not None else "vault reloaded"
    version = data.get("vault_version")
    if isinstance(version, int) and not isinstance(version, bool):
        text = f"version {version}, {text}"
    if parts:
        text += f" ({', '.join(parts)})"
    return text


def _error_text(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, Mapping):
        # GrasBot answers {"error": code, "message": text}; FastAPI's default is {"detail": ...}
        code = body.get("error") if isinstance(body.get("error"), str) else None
        for key in ("message", "detail", "error"):
            value = body.get(key)
            if isinstance(value, Mapping) and isinstance(value.get("message"), str):
                value = value["message"]
            if isinstance(value, str) and value:
                text = value[:200]
                return f"{text} ({code})" if code and code != value else text
    reason = response.reason_phrase or "error"
    text = response.text.strip().splitlines()[0][:120] if response.text.strip() else ""
    return f"{reason}: {text}" if text and text != reason else reason


def _network_error_text(exc: httpx.HTTPError) -> str:
    cause: BaseException | None = exc
    while cause is not None:  # "[Errno 111] Connection refused" is clearer than httpx's wrapper text
        if isinstance(cause, OSError) and cause.strerror:
            return cause.strerror.lower()
        cause = cause.__cause__ or cause.__context__
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:160]


def make_client(
    *, connect_timeout: float = DEFAULT_CONNECT_TIMEOUT, timeout: float = DEFAULT_TIMEOUT
) -> httpx.Client:
    """An httpx client with the push timeouts; proxies from the environment are ignored (the API is
    usually on loopback, and a corporate proxy must not swallow the push)."""
    return httpx.Client(timeout=httpx.Timeout(timeout, connect=connect_timeout), trust_env=False)


def reload_vault(
    api: str = DEFAULT_API,
    token: str | None = None,
    *,
    client: httpx.Client | None = None,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    timeout: float = DEFAULT_TIMEOUT,
) -> ReloadResult:
    """POST `{api}/reload-vault` once. Never raises for network or HTTP trouble (see `ReloadResult`);
    raises ValueError for an `api` that is not an http(s) URL. `token` None reads `GRASBOT_RELOAD_TOKEN`."""
    url = reload_url(api)
    token = resolve_token(token)
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    own = client is None
    http = client or make_client(connect_timeout=connect_timeout, timeout=timeout)
    started = time.perf_counter()
    try:
        response = http.post(url, headers=headers)
    except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
        return ReloadResult(UNREACHABLE, url, error=_network_error_text(exc), elapsed_ms=_ms(started))
    except httpx.TimeoutException:
        return ReloadResult(
            API_ERROR, url, error=f"no answer within {timeout:g} s", elapsed_ms=_ms(started)
        )
    except httpx.HTTPError as exc:  # reset connection, protocol error...: the API is not usable now
        return ReloadResult(UNREACHABLE, url, error=_network_error_text(exc), elapsed_ms=_ms(started))
    finally:
        if own:
            http.close()
    elapsed = _ms(started)
    if response.is_success:
        try:
            data = response.json()
        except ValueError:
            data = None
        return ReloadResult(OK, url, status=response.status_code, data=data, elapsed_ms=elapsed)
    return ReloadResult(API_ERROR, url, status=response.status_code, error=_error_text(response), elapsed_ms=elapsed)


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000.0


# -- background pushes --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PushEvent:
    """What a `Pusher` reports after each push.

    `kind`:
      - ``ok``: pushed, the API answered 2xx;
      - ``recovered``: pushed after one or more failures (the API is back);
      - ``down``: the first failure after a success (or at start), and again whenever the kind of failure
        changes during the outage (`ReloadResult.failure`: the API stopped answering in time, then refused
        the token): said once per outage and kind, `retry_in` set when it will retry by itself
        (unreachable, 5xx, 429, timeout), None for a 4xx (bad token, wrong URL), which waits for the next
        change;
      - ``retry``: a further failure of the same kind (quiet: `vaulttools watch` prints nothing).
    `failures` counts consecutive failures including this one (0 on success).
    """

    kind: str
    result: ReloadResult
    failures: int = 0
    retry_in: float | None = None

    @property
    def should_print(self) -> bool:
        return self.kind != "retry"


class Pusher:
    """Pushes `POST /reload-vault` in the background after each `request()`.

    - coalescing: while a push is in flight, any number of `request()` calls make exactly one more push
      after it; a burst of changes is one push;
    - failures: `on_event` gets one ``down`` event, then the pusher retries with exponential backoff
      (`backoff` seconds doubling up to `max_backoff`) without further noise unless the kind of failure
      changes (another ``down``), and reports ``recovered`` with the result of the first push that works;
    - `on_event` runs on the pusher's thread; exceptions it raises are swallowed.
    """

    def __init__(
        self,
        api: str = DEFAULT_API,
        token: str | None = None,
        *,
        on_event: Callable[[PushEvent], Any] | None = None,
        backoff: float = 0.5,
        max_backoff: float = 5.0,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.api = api
        self.url = reload_url(api)  # ValueError now, at start, rather than on the first push
        self._token = resolve_token(token)
        self._on_event = on_event
        self._backoff = backoff
        self._max_backoff = max_backoff
        self._timeout = timeout
        self._client = make_client(connect_timeout=connect_timeout, timeout=timeout)
        self._cond = threading.Condition()
        self._pending = False
        self._in_flight = False
        self._not_before = 0.0  # monotonic time before which no retry happens
        self._failures = 0
        self._failure: str | None = None  # the kind of the last failure (`ReloadResult.failure`)
        self._stopped = False
        self.pushes = 0  # attempts made
        self.succeeded = 0
        self.failed = 0
        self.last_result: ReloadResult | None = None
        self._thread = threading.Thread(target=self._run, name="reload-pusher", daemon=True)
        self._thread.start()

    @property
    def failing(self) -> bool:
        """True while the last push failed (the API is down or answering errors)."""
        return self._failures > 0

    def request(self) -> None:
        """Ask for a push as soon as possible (after the current one, if any). Never blocks."""
        with self._cond:
            self._pending = True
            self._cond.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Block until nothing is pending or in flight (True), or `timeout` seconds pass (False). A pusher
        waiting to retry is not idle."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending or self._in_flight:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.05))
            return True

    def close(self, timeout: float = 1.0) -> None:
        """Stop: a push in flight may finish within `timeout`; pending ones are dropped."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        if not self._thread.is_alive():
            self._client.close()

    def __enter__(self) -> Pusher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped:
                    if self._pending:
                        left = self._not_before - time.monotonic()
                        if left <= 0:
                            break
                        self._cond.wait(left)
                    else:
                        self._cond.wait()
                if self._stopped:
                    return
                self._pending = False
                self._in_flight = True
            try:
                result = reload_vault(self.url, self._token, client=self._client, timeout=self._timeout)
            except Exception as exc:  # a bug of ours must not stop the pushes
                result = ReloadResult(API_ERROR, self.url, error=f"{type(exc).__name__}: {exc}")
            event = self._account(result)
            if self._on_event is not None:
                try:
                    self._on_event(event)
                except Exception:
                    pass
            with self._cond:
                self._in_flight = False
                self._cond.notify_all()

    def _account(self, result: ReloadResult) -> PushEvent:
        with self._cond:
            self.pushes += 1
            self.last_result = result
            if result.ok:
                self.succeeded += 1
                kind = "recovered" if self._failures else "ok"
                self._failures = 0
                self._failure = None
                self._not_before = 0.0
                return PushEvent(kind, result)
            self.failed += 1
            self._failures += 1
            retry_in = None
            if result.retryable:
                retry_in = min(self._backoff * 2 ** (self._failures - 1), self._max_backoff)
                self._not_before = time.monotonic() + retry_in
                self._pending = True  # the vault still has to be pushed once the API is back
            # quiet while it fails the same way; a new way (timeouts, then a refused token) is news
            changed = result.failure != self._failure
            self._failure = result.failure
            kind = "down" if self._failures == 1 or changed else "retry"
            return PushEvent(kind, result, failures=self._failures, retry_in=retry_in)
