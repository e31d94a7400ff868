"""Answers for `vaulttools eval --answers` (docs/service.md, "Evaluation datasets in Langfuse").

Each question is answered by the service itself: `grasbot.service.service.Service.answer`, the code behind
`GET /ask`, on the vault given and with the service's settings (the environment and `.env`: `LLM_BACKEND`,
`LLM_BASE_URL`/`OLLAMA_URL`, `LLM_MODEL`, `GRASBOT_PROFILE`, `GRASBOT_VERIFY_POLICY`, the private folders and
tags...). So an answer goes the way of a visitor's question (docs/architecture.md, "The way of a question"):
the one retrieval pipeline over the public notes only, the active answering profile's prompt (or its
Langfuse Prompts version, as the service takes it), generation through the configured LLM backend, then the
answer verifier against exactly the passages the model was given and the verify policy. What is read back
is what the service decided: the verification's status, the final `grounded`, and the draft's
`faithfulness` (`Answer.faithfulness`, the value the service scores its trace with). Nothing is computed
again here.

Two things differ from a server, on purpose: the service's state folder is a temporary one (an eval writes
no session key or reload stamp of the user's), and Redis is never used (an eval's answers never enter a
deployment's shared conversation memory). Each question is a new conversation, traced (when Langfuse is
configured) with the user id and the tag `vaulttools-eval`.

The service and its clients live on an event loop in a thread of their own, and `answer()` hands each
question over and waits for it: `Langfuse.run_experiment` runs a dataset run's tasks on an event loop of
its own, and the LLM client's connections belong to the loop they were opened on. The hand-over keeps the
caller's context (`asyncio.run_coroutine_threadsafe` schedules with a copy of it), and with it the
OpenTelemetry span of the dataset run's item: the service's `ask` trace is then that item's trace.
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from vaulttools.commands._common import CliError
from vaulttools.evaluation import summarise

if TYPE_CHECKING:
    from grasbot.service.service import Answer, Service
    from grasbot.service.settings import Settings
    from vaulttools.evaluation import Question

#: The statuses an answer can have, in the order they are shown: the verification's (grasbot/answer/verify.py),
#: then `failed` (no answer: the LLM was down or erred; `error` says why).
STATUSES = ("verified", "partial", "unsupported", "abstained", "failed")
#: The user id of the eval's traces (a visitor's traces carry the front-end's id).
USER_ID = "vaulttools-eval"
#: The tag of the eval's traces: `--export-dataset --from-traces` leaves them out (an eval's answers are no
#: visitor's questions).
EVAL_TAG = "vaulttools-eval"
#: At most this long to stop the service (its Langfuse flush is bounded to 5 s).
STOP_SECONDS = 30.0
#: Beyond the LLM's own time bounds, the most an answer may take (retrieval and verification are milliseconds).
ANSWER_SLACK_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class AnswerResult:
    """The service's answer to one question."""

    question: Question
    status: str  # one of STATUSES
    response: str = ""
    grounded: bool | None = None  # the verified decision; None when the answer failed
    faithfulness: float | None = None  # share of the draft's factual sentences supported; None without one
    sources: tuple[str, ...] = ()  # the notes the answer is given with (none when not grounded)
    trace_id: str = ""
    error: str | None = None  # why it failed: the API's error code and message
    elapsed_ms: float = 0.0

    @property
    def failed(self) -> bool:
        return self.status == "failed"

    def as_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "response": self.response,
            "grounded": self.grounded,
            "faithfulness": self.faithfulness,
            "sources": list(self.sources),
            "trace_id": self.trace_id,
            "error": self.error,
            "ms": round(self.elapsed_ms, 1),
        }


def result_of(question: Question, answer: Answer, elapsed_ms: float) -> AnswerResult:
    """An `Answer` of the service (its JSON body, as `GET /ask` returns it) as an eval result."""
    body = answer.body
    if answer.status != 200:
        reason = f"{body.get('error', f'HTTP {answer.status}')}: {body.get('message', '')}".rstrip(": ")
        return AnswerResult(question, "failed", trace_id=str(body.get("trace_id", "")), error=reason, elapsed_ms=elapsed_ms)
    verification = body.get("verification") or {}
    return AnswerResult(
        question,
        str(verification.get("status", "unsupported")),
        response=answer.text,
        grounded=bool(body.get("grounded")),
        faithfulness=answer.faithfulness,
        sources=tuple(str(s.get("slug")) for s in body.get("sources", []) if isinstance(s, dict)),
        trace_id=str(body.get("trace_id", "")),
        elapsed_ms=elapsed_ms,
    )


def answer_metrics(results: Sequence[AnswerResult]) -> dict[str, Any]:
    """Over `results`: the mean faithfulness (answers with a factual sentence), the share of the answers
    given that are grounded, and how many answers have each status."""
    answered = [r for r in results if not r.failed]
    faithful = [r.faithfulness for r in answered if r.faithfulness is not None]
    return {
        "items": len(results),
        "answered": len(answered),
        "failed": len(results) - len(answered),
        "faithfulness": round(statistics.fmean(faithful), 4) if faithful else None,
        "grounded": round(sum(1 for r in answered if r.grounded) / len(answered), 4) if answered else None,
        "statuses": {status: sum(1 for r in results if r.status == status) for status in STATUSES},
    }


@dataclass(slots=True)
class AnswerReport:
    """The answers of a question set, in its order."""

    items: list[AnswerResult] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return summarise(self.items, answer_metrics, "ms_per_answer", 1)

    @property
    def failures(self) -> list[AnswerResult]:
        return [r for r in self.items if r.failed]


def service_settings() -> Settings:
    """The service's settings, as `grasbot serve` reads them (the environment, then `.env`); CliError when
    the service's packages are missing or a variable is wrong (its message names the variable)."""
    try:
        from grasbot.service.settings import ConfigError, Settings
    except ImportError:
        raise CliError("a Langfuse dataset run or --answers reads the service's settings: pip install 'grasbot-vaulttools[serve]'") from None
    try:
        return Settings.from_env()
    except ConfigError as error:
        raise CliError(f"the service's settings: {error}") from None


class ServiceAnswerer:
    """The service over the vault at `root`, answering one question at a time (see the module docstring).

    ``with ServiceAnswerer(root, settings) as answerer: answerer.answer(question)``
    """

    def __init__(self, root: Path, settings: Settings) -> None:
        self.root = root
        self.settings = settings
        self.service: Service | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._state: tempfile.TemporaryDirectory[str] | None = None
        self._log: logging.Handler | None = None

    def __enter__(self) -> ServiceAnswerer:
        # the service's warnings (an LLM failure and its time, a Langfuse prompt that is missing), said as
        # this command's lines rather than bare
        self._log = logging.StreamHandler()
        self._log.setFormatter(logging.Formatter("vaulttools eval: service: %(message)s"))
        self._log.setLevel(logging.WARNING)
        logging.getLogger("grasbot").addHandler(self._log)
        self._state = tempfile.TemporaryDirectory(prefix="vaulttools-eval-")
        settings = self.settings.with_overrides(state_dir=Path(self._state.name), redis_url=None)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="vaulttools-eval-service", daemon=True)
        self._thread.start()
        try:
            self.service = self._call(self._start(settings))
        except BaseException:
            self._close()
            raise
        return self

    async def _start(self, settings: Settings) -> Service:
        from grasbot.answer.profile import ProfileError
        from grasbot.service.service import Service

        try:
            service = Service(settings, self.root)
        except ProfileError as error:  # the profile's file and line, as `grasbot serve` says it
            raise CliError(str(error)) from None
        except OSError as error:  # a vault that vanished or cannot be read since the retrieval read it
            raise CliError(f"{self.root}: {error.strerror or error}") from None
        await service.start()
        return service

    def _call(self, coro: Any, timeout: float | None = None) -> Any:
        """Run `coro` on the service's loop and wait for it; cancelled there if the wait ends otherwise
        (a timeout, Ctrl-C)."""
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout)
        except BaseException:
            future.cancel()
            raise

    def answer(self, question: Question) -> AnswerResult:
        """The service's answer to `question`, as a new conversation. Never raises for one bad item: an
        LLM that is down or errs (the API's 502/503/504), or anything else that goes wrong, is a `failed`
        result saying why, and the next question is answered."""
        assert self.service is not None, "use ServiceAnswerer as a context manager"
        started = time.perf_counter()
        # the service bounds a generation (LLM_TIMEOUT, twice with the retry policy): this only guards the
        # eval against a service that would not end an answer at all
        bound = 2 * (self.settings.llm_timeout + self.settings.llm_connect_timeout) + ANSWER_SLACK_SECONDS
        from langfuse import propagate_attributes

        from grasbot.service.errors import ApiError
        from grasbot.service.inputs import check_question

        try:
            asked = check_question(question.q, self.settings.ask_max_chars)  # cleaned as the routes clean it
            with propagate_attributes(tags=[EVAL_TAG]):  # carried to the service's trace with the context
                answer = self._call(self.service.answer(asked, None, USER_ID), bound)
        except ApiError as error:
            return AnswerResult(question, "failed", error=f"{error.code}: {error.message}")
        except TimeoutError:
            return AnswerResult(question, "failed", error=f"timeout: no answer within {bound:.0f} s",
                                elapsed_ms=(time.perf_counter() - started) * 1000.0)  # fmt: skip
        except Exception as error:  # noqa: BLE001 - one item fails, the run goes on
            return AnswerResult(question, "failed", error=f"internal error: {type(error).__name__}",
                                elapsed_ms=(time.perf_counter() - started) * 1000.0)  # fmt: skip
        return result_of(question, answer, (time.perf_counter() - started) * 1000.0)

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        try:
            if self.service is not None:
                self._call(self.service.stop(), STOP_SECONDS)  # the LLM client closed, Langfuse flushed
        finally:
            self._close()

    def _close(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread is not None:
                self._thread.join(STOP_SECONDS)
            if not self._loop.is_running():
                self._loop.close()
        if self._state is not None:
            self._state.cleanup()
        if self._log is not None:
            logging.getLogger("grasbot").removeHandler(self._log)
