"""Langfuse tracing of every question (docs/service.md, "Langfuse"), and a silent no-op without keys.

One question is one trace `ask` (input query; output response, sources_count, grounded; metadata top_k,
min_score; session_id and user_id; tags `grounded`|`ungrounded`, `model:<name>`, `vault-miss`) with a span
`retrieval`, a span `prompt-build` and a generation `<backend>-chat` (`ollama-chat`, `openai-chat`; linked to
its Langfuse prompt's name and version when the system prompt came from Langfuse Prompts,
grasbot/service/prompts.py; its `usage_details` are the server's token counts and its `model` the name the
server reports), and two trace scores: `grounded` (0/1) and `retrieval_relevance` = min(max_score / 15, 1).
Visitors' thumbs go in as the score `user_feedback`.

Uses the SDK's current API (v4+): `start_as_current_observation`, `propagate_attributes`, `create_score`.
Everything here runs inside one asyncio task per question, so the OpenTelemetry context that these
context managers attach is detached in the same task. The client gets its own TracerProvider: the service
never touches the process-wide OpenTelemetry configuration.

Only what the caller passes is sent: the API passes public notes only (private ones never reach a prompt),
and no secret is ever put in an attribute. The secret key travels only in the exporter's auth header.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from grasbot.service.settings import Settings

log = logging.getLogger("grasbot.service.observability")

#: Relevance is the best retrieval score over this, capped at 1 (the seed's calibration).
RELEVANCE_SCALE = 15.0

#: The longest the server's stop waits for Langfuse to take what is buffered; what is left is dropped.
#: (Unbounded, the SDK sends batch after batch, each waiting up to LANGFUSE_TIMEOUT and retried: minutes
#: when Langfuse is slow or a black hole.)
SHUTDOWN_SECONDS = 5.0

_TRACE_ID = re.compile(r"[0-9a-f]{32}")  # fullmatch: `$` would accept a final newline


def is_trace_id(value: str) -> bool:
    """Langfuse / W3C trace ids are 32 lowercase hex characters."""
    return _TRACE_ID.fullmatch(value) is not None


def follow_uvicorn_logging() -> None:
    """Under plain `uvicorn --factory grasbot.service.app:create_app`, send GrasBot's log lines where uvicorn's go.

    Without it the `grasbot` loggers have no handler and no level: their INFO lines are lost and warnings
    reach stderr bare, through Python's last-resort handler. Only when nothing else set them up: `grasbot
    serve` configures them itself (`grasbot.service.cli.log_config`), a `--log-config` file may, and an application
    that gave the root logger a handler gets the records by propagation. Records keep their privacy rules:
    GrasBot never logs note content, at any level.
    """
    server = logging.getLogger("uvicorn")
    if logging.getLogger().handlers or not server.handlers:
        return
    level = logging.getLogger("uvicorn.error").getEffectiveLevel()
    # The Langfuse SDK's and its exporter's lines too (never below WARNING: debug lines may show what is sent).
    sdk_loggers = ("langfuse", "opentelemetry")
    for name, floor in (("grasbot", logging.NOTSET), *((n, logging.WARNING) for n in sdk_loggers)):
        ours = logging.getLogger(name)
        if ours.handlers:
            continue
        for handler in server.handlers:
            ours.addHandler(handler)
        if ours.level == logging.NOTSET or name in sdk_loggers:
            ours.setLevel(max(level, floor))
        ours.propagate = False  # one line per record, whatever is added to the root later


def retrieval_relevance(max_score: float) -> float:
    return max(0.0, min(max_score / RELEVANCE_SCALE, 1.0))


class _NoopObservation:
    """Stands for a span when tracing is off: accepts every update and does nothing."""

    trace_id = ""
    id = ""

    def update(self, **_: Any) -> _NoopObservation:
        return self


_NOOP = _NoopObservation()


class AskTrace:
    """The trace of one question. Methods are safe to call whether tracing is on or off."""

    def __init__(self, client: Any | None, root: Any | None, stack: ExitStack) -> None:
        self._client = client
        self._root = root
        self._stack = stack
        self.trace_id: str = root.trace_id if root is not None else uuid.uuid4().hex
        self.enabled = root is not None

    @contextmanager
    def observation(self, name: str, *, as_type: str = "span", **fields: Any) -> Iterator[Any]:
        """A child observation (`span` or `generation`) current for the duration of the block."""
        if self._client is None:
            yield _NOOP
            return
        with self._client.start_as_current_observation(name=name, as_type=as_type, **fields) as obs:
            yield obs

    def add_tags(self, tags: list[str]) -> None:
        """Tags known only after retrieval; they go on the root and on every later observation."""
        if self._client is None:
            return
        from langfuse import propagate_attributes

        self._stack.enter_context(propagate_attributes(tags=tags))

    def update(self, **fields: Any) -> None:
        if self._root is not None:
            self._root.update(**fields)

    def score(self, name: str, value: float, data_type: str) -> None:
        if self._root is not None:
            self._root.score_trace(name=name, value=value, data_type=data_type)


class Observability:
    """The service's Langfuse client, or nothing when the three Langfuse variables are not all set."""

    def __init__(self, settings: Settings) -> None:
        self.enabled = settings.langfuse_enabled
        self._client: Any | None = None
        self._provider: Any | None = None
        if not self.enabled:
            missing = [
                name
                for name, value in (
                    ("LANGFUSE_PUBLIC_KEY", settings.langfuse_public_key),
                    ("LANGFUSE_SECRET_KEY", settings.langfuse_secret_key),
                    ("LANGFUSE_BASE_URL", settings.langfuse_base_url),
                )
                if not value
            ]
            log.info("Langfuse disabled, missing: %s", ", ".join(missing))
            return
        try:
            sdk_logger = logging.getLogger("langfuse")
            configured = sdk_logger.level  # importing the SDK sets its logger to WARNING: keep ours
            from langfuse import Langfuse

            if configured != logging.NOTSET:
                sdk_logger.setLevel(configured)
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider

            # shutdown_on_exit=False: the provider is shut down by `shutdown()` below, within its time
            # bound; OpenTelemetry's own exit hook would flush again, without a bound, at interpreter exit.
            self._provider = TracerProvider(
                resource=Resource.create({"service.name": "grasbot"}), shutdown_on_exit=False
            )
            self._client = Langfuse(
                public_key=settings.langfuse_public_key,
                secret_key=settings.langfuse_secret_key,
                base_url=settings.langfuse_base_url,
                flush_interval=settings.langfuse_flush_interval,
                timeout=settings.langfuse_timeout,
                tracer_provider=self._provider,
            )
            log.info("Langfuse enabled, sending traces to %s", settings.public_view()["langfuse_base_url"])
        except Exception as error:  # noqa: BLE001 - tracing must never stop the service
            log.warning("Langfuse disabled: the client could not start (%s)", type(error).__name__)
            self.enabled = False
            self._client = None

    @property
    def client(self) -> Any | None:
        """The SDK's client (None when tracing is off): Langfuse Prompts use it (grasbot/service/prompts.py)."""
        return self._client

    @contextmanager
    def trace_ask(
        self,
        *,
        query: str,
        session_id: str | None,
        user_id: str | None,
        model: str,
        metadata: dict[str, Any],
    ) -> Iterator[AskTrace]:
        """The root `ask` observation with session, user, model tag and metadata propagated to children."""
        if self._client is None:
            with ExitStack() as stack:
                yield AskTrace(None, None, stack)
            return
        from langfuse import propagate_attributes

        with self._client.start_as_current_observation(
            name="ask", as_type="span", input={"query": query}, metadata=metadata
        ) as root:
            with propagate_attributes(
                trace_name="ask",
                session_id=session_id,
                user_id=user_id,
                tags=[f"model:{model}"],
                metadata={k: v for k, v in metadata.items() if v is not None},
            ):
                with ExitStack() as stack:
                    yield AskTrace(self._client, root, stack)

    def feedback(self, trace_id: str, value: int, comment: str | None) -> bool:
        """Record the visitor's thumb as the trace score `user_feedback`. False when tracing is off."""
        if self._client is None:
            return False
        self._client.create_score(
            name="user_feedback", value=float(value), trace_id=trace_id, data_type="BOOLEAN", comment=comment
        )
        return True

    def flush(self) -> None:
        if self._client is not None:
            try:
                self._client.flush()
            except Exception as error:  # noqa: BLE001
                log.warning("Langfuse flush failed (%s)", type(error).__name__)

    def pending(self) -> tuple[int | None, int | None]:
        """(spans, scores) buffered and not yet delivered; None where the SDK does not tell."""
        return _pending_spans(self._provider), _pending_scores(self._client)

    def shutdown(self, timeout: float = SHUTDOWN_SECONDS, abandon: threading.Event | None = None) -> None:
        """Send what is buffered and stop the background exporters (called when the server stops).

        Bounded: after `timeout` seconds, or as soon as `abandon` is set (a second stop signal), what
        Langfuse has not taken is dropped, with one log line saying how much. The SDK's shutdown goes on in
        a daemon thread, which never holds the process back.
        """
        client, provider = self._client, self._provider
        if client is None:
            return
        self._client = None
        spans, scores = _pending_spans(provider), _pending_scores(client)
        if spans or scores:
            log.info(
                "sending buffered traces to Langfuse (%s spans, %s scores), at most %.0f s",
                _count(spans), _count(scores), timeout,
            )  # fmt: skip
        done = threading.Event()

        def run() -> None:
            try:
                client.shutdown()
                if provider is not None:
                    provider.shutdown()
            except Exception as error:  # noqa: BLE001
                log.warning("Langfuse shutdown failed (%s)", type(error).__name__)
            finally:
                done.set()

        threading.Thread(target=run, name="grasbot-langfuse-shutdown", daemon=True).start()
        deadline = time.monotonic() + timeout
        while not done.wait(0.05):
            forced = abandon is not None and abandon.is_set()
            if forced or time.monotonic() >= deadline:
                spans, scores = _pending_spans(provider), _pending_scores(client)
                log.warning(
                    "Langfuse did not take the buffered data %s: dropped %s spans and %s scores",
                    "before a second stop signal" if forced else f"within {timeout:.0f} s",
                    _count(spans), _count(scores),
                )  # fmt: skip
                return


def _count(value: int | None) -> str:
    return "an unknown number of" if value is None else str(value)


def _pending_spans(provider: Any | None) -> int | None:
    """Spans waiting in the batch processors of `provider` (the one being exported is not counted)."""
    if provider is None:
        return 0
    try:
        processors = provider._active_span_processor._span_processors  # noqa: SLF001
        return sum(len(p._batch_processor._queue) for p in processors if hasattr(p, "_batch_processor"))  # noqa: SLF001
    except Exception:  # noqa: BLE001 - another SDK version: say it is unknown
        return None


def _pending_scores(client: Any | None) -> int | None:
    """Scores queued or being sent by the Langfuse client, not yet acknowledged."""
    if client is None:
        return 0
    try:
        return int(client._resources._score_queue.unfinished_tasks)  # noqa: SLF001
    except Exception:  # noqa: BLE001
        return None
