"""The HTTP API (DESIGN §8): `GET /ask`, `GET /ask/stream`, `GET /health`, `POST /reload-vault`, `POST /feedback`.

`create_app()` is a factory: tests, benchmarks and every uvicorn worker build their own app. The vault and
its search index live in one immutable `VaultSnapshot`; a request reads the current snapshot once and uses it
to the end, and a reload builds a complete new snapshot off the event loop and swaps it in one assignment, so
an answer always comes from one complete index, old or new, never a mix.

Sources' `url`: `/portfolio/<slug>` for `type: projet`, `/competences/<slug>` for `type: competence`, and
`null` for every other type (parcours, technique, moc...), which have no page of their own on the site.

Error bodies are JSON `{"error": code, "message": text, ...}` and carry no note content; when the LLM fails
(502/503/504) they still carry the retrieved `sources`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import hmac
import json
import logging
import os
import re
import signal
import tempfile
import threading
import time
import traceback
import unicodedata
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from grasbot import __version__
from grasbot.service.settings import Settings, redact_url
from grasbot.llm.ollama import Generation, GenerationOptions, LLMClient, LLMEmptyAnswer, LLMError
from grasbot.service.memory import ConversationMemory, Turn
from grasbot.model import Note, visible_to_visitors
from grasbot.service.observability import (
    SHUTDOWN_SECONDS,
    Observability,
    follow_uvicorn_logging,
    is_trace_id,
    retrieval_relevance,
)
from grasbot.answer.prompt import build_prompt, fold_name, hidden_names, is_servable, redact_hidden_links, servable_hits
from grasbot.answer.plaintext import markdown_to_text
from grasbot.search.filters import FilterConfig, search_with_filters
from grasbot.search.index import Hit, SearchConfig, SearchIndex, SearchResult
from grasbot.vault import Vault

log = logging.getLogger("grasbot.service.api")

SOURCE_URLS: dict[str, str] = {"projet": "/portfolio/{slug}", "competence": "/competences/{slug}"}
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}")  # always fullmatch: `$` would let a final "\n" in
# Characters removed from questions besides Cc controls: format characters (zero-width, bidi overrides),
# surrogates and private-use code points have no place in a question and can hide text from a reader.
_DROPPED_CATEGORIES = {"Cc", "Cf", "Cs", "Co"}


# -- errors -----------------------------------------------------------------------------------------
class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.extra = extra


def _error(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": code, "message": message, **extra}, status_code=status)


# -- input ------------------------------------------------------------------------------------------
def clean_question(raw: str) -> str:
    """The question with control and format characters removed and white space collapsed (NFC)."""
    text = unicodedata.normalize("NFC", raw)
    text = "".join(
        " " if ch in "\t\n\r\x0b\x0c\x85\u2028\u2029" else ch
        for ch in text
        if ch in "\t\n\r\x0b\x0c\x85\u2028\u2029" or unicodedata.category(ch) not in _DROPPED_CATEGORIES
    )
    return " ".join(text.split())


def _check_question(raw: str | None, max_chars: int) -> str:
    question = clean_question(raw or "")
    if not question:
        raise ApiError(400, "empty_question", "the question `q` is empty")
    if len(question) > max_chars:
        raise ApiError(
            413, "question_too_long", f"the question is longer than {max_chars} characters", max_chars=max_chars
        )
    return question


def _check_id(name: str, value: str | None) -> str | None:
    if value is None or value == "":
        return None
    if not _ID.fullmatch(value):
        raise ApiError(
            422, f"invalid_{name}", f"`{name}` must be 1 to 200 characters among letters, digits and . _ : @ -"
        )
    return value


# -- the vault snapshot -----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class VaultSnapshot:
    """A loaded vault and its index, never modified after it is built."""

    version: int
    root: Path
    vault: Vault
    index: SearchIndex
    public: dict[str, Note]  # id -> note, for every note a visitor may see
    digests: dict[str, str]  # id -> content digest, public notes only
    by_type: dict[str, int]
    hidden: frozenset[str]  # names of notes that must never be mentioned
    problems: list[dict[str, Any]]
    loaded_at: float = field(default_factory=time.time)

    @property
    def size(self) -> int:
        return len(self.public)


def _problem_view(path: str, line: int, column: int, code: str, message: str, note: Note | None) -> dict[str, Any]:
    # A note that may be private (its frontmatter did not parse and names a non-public visibility) is
    # reported by place and kind only, never with the parser's message, which can quote the file.
    if note is not None and not is_servable(note):
        message = f"frontmatter could not be read ({code}); `vaulttools lint` shows the details"
    return {"path": path, "line": line, "column": column, "code": code, "message": message[:300]}


def load_snapshot(root: Path, config: SearchConfig, version: int) -> VaultSnapshot:
    """Read the vault at `root` and index it. Runs in a worker thread; raises OSError for a bad root."""
    vault = Vault.load(root)
    index = SearchIndex.build(vault, config)
    public: dict[str, Note] = {}
    digests: dict[str, str] = {}
    by_type: dict[str, int] = {}
    problems: list[dict[str, Any]] = []
    for path in sorted(vault.notes):
        note = vault.notes[path]
        if not visible_to_visitors(note):
            continue  # a hidden note is not mentioned at all, not even its problems: its path names it
        for p in note.problems:
            problems.append(_problem_view(p.path, p.line, p.column, p.code, p.message, note))
        if not is_servable(note):
            continue
        note_id = note.id or note.slug or note.stem
        public[note_id] = note
        digests[note_id] = note.digest
        kind = note.type or "autre"
        by_type[kind] = by_type.get(kind, 0) + 1
    for p in getattr(vault, "problems", []) or []:
        problems.append(_problem_view(p.path, p.line, p.column, p.code, p.message, None))
    return VaultSnapshot(
        version=version,
        root=root,
        vault=vault,
        index=index,
        public=public,
        digests=digests,
        by_type=dict(sorted(by_type.items())),
        hidden=hidden_names(vault.notes.values()),
        problems=problems,
    )


#: Longest a question waits for its worker to catch up with a reload announced by another worker
#: (503 `vault_reloading` after: never an answer from the vault as it was before the reload).
FOLLOW_WAIT_SECONDS = 10.0

try:  # POSIX: announcing a reload takes a lock, so two workers reloading at once never share a version
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


def reload_stamp_path(vault_dir: Path) -> Path:
    """Where the workers serving `vault_dir` announce reloads to each other."""
    digest = hashlib.sha256(str(Path(vault_dir).resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"grasbot-reload-{digest}"


def _read_stamp(path: Path) -> str:
    try:
        return path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def stamp_version(stamp: str) -> int | None:
    """The vault version a stamp announces (`"<version> <time_ns>-<pid>"`), None for none."""
    head = stamp.split(" ", 1)[0]
    return int(head) if head.isdigit() and len(head) < 19 else None


def _write_stamp(path: Path, at_least: int) -> tuple[str | None, int]:
    """Announce a reload: the stamp written (None if it could not be) and the vault version it carries,
    one more than the last announced (and at least `at_least`), so every worker numbers versions alike."""
    lock_path = path.with_name(f"{path.name}.lock")
    version = at_least
    try:
        with open(lock_path, "a", encoding="ascii") as lock:
            if fcntl is not None:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            version = max((stamp_version(_read_stamp(path)) or 0) + 1, at_least)
            stamp = f"{version} {time.time_ns()}-{os.getpid()}"
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            tmp.write_text(stamp, encoding="ascii")
            os.replace(tmp, path)  # atomic: a sibling never reads half a stamp
            return stamp, version
    except OSError as error:
        log.warning("could not announce the reload to other workers (%s)", type(error).__name__)
        return None, version


def _changes(old: VaultSnapshot, new: VaultSnapshot) -> dict[str, list[str]]:
    before, after = set(old.digests), set(new.digests)
    return {
        "added": sorted(after - before),
        "removed": sorted(before - after),
        "modified": sorted(i for i in before & after if old.digests[i] != new.digests[i]),
    }


# -- views of results -------------------------------------------------------------------------------
def source_url(note_type: str | None, slug: str) -> str | None:
    pattern = SOURCE_URLS.get((note_type or "").lower())
    return pattern.format(slug=slug) if pattern else None


def source_view(hit: Hit, hidden: frozenset[str] = frozenset()) -> dict[str, Any]:
    view = {
        "slug": hit.id,
        "title": redact_hidden_links(hit.note.title, hidden),  # (a title may hold a link, as a body does)
        "type": hit.note.type,
        "score": round(float(hit.score), 2),
        "reasons": list(hit.reasons),
        "url": source_url(hit.note.type, hit.id),
    }
    view.update(page_fields(hit.note))
    return view


def page_fields(note: Note) -> dict[str, Any]:
    """`pages`, `pdf_pages` and `page_link` (``book.pdf#page=46``, its first page) of a note imported from a
    PDF (docs/pdf-import.md); nothing for other notes."""
    meta = note.meta if isinstance(note.meta, dict) else {}
    pages, pdf_pages, source = meta.get("pages"), meta.get("pdf_pages"), meta.get("source")
    if not isinstance(pages, list) or not isinstance(pdf_pages, list):
        return {}
    out: dict[str, Any] = {
        "pages": [str(p) for p in pages if isinstance(p, (str, int)) and not isinstance(p, bool)],
        "pdf_pages": [p for p in pdf_pages if isinstance(p, int) and not isinstance(p, bool)],
    }
    if isinstance(source, str) and source.startswith("pdf/") and out["pdf_pages"]:
        out["page_link"] = f"{source[4:]}#page={out['pdf_pages'][0]}"
    return out


def _mentions(value: str, hidden: frozenset[str]) -> bool:
    folded = fold_name(value)
    return folded in hidden or any(part in hidden for part in re.split(r"[:/|#]", folded))


def _scrub(value: Any, hidden: frozenset[str], depth: int = 0) -> Any:
    """A JSON-safe copy of engine stats with any mention of a hidden note removed."""
    if depth > 5:
        return None
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    if isinstance(value, str):
        return None if _mentions(value, hidden) else value[:200]
    if isinstance(value, dict):
        return {
            str(k): _scrub(v, hidden, depth + 1)
            for k, v in list(value.items())[:50]
            if not _mentions(str(k), hidden)
        }
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else list(value)
        cleaned = [_scrub(v, hidden, depth + 1) for v in items[:50]]
        return [v for v in cleaned if v is not None]
    if isinstance(value, Hit):
        return None if _mentions(value.id, hidden) else {"slug": value.id, "score": round(value.score, 2)}
    return None


# -- the app ----------------------------------------------------------------------------------------
@dataclass(slots=True)
class Answer:
    """What one question produced, streamed or not."""

    status: int
    body: dict[str, Any]
    text: str = ""
    timings: dict[str, float] = field(default_factory=dict)  # ms: retrieval, prompt, llm, total

    def server_timing(self) -> str:
        """The `Server-Timing` header: lets a client (and the benchmark) split LLM time from the rest."""
        return ", ".join(f"{name};dur={ms:.3f}" for name, ms in self.timings.items())


class Service:
    """The state behind the routes: settings, current snapshot, LLM client, memory, tracing."""

    def __init__(self, settings: Settings, vault_dir: Path) -> None:
        self.settings = settings
        self.vault_dir = vault_dir
        self.search_config = SearchConfig(top_k=settings.search_top_k, min_score=settings.search_min_score)
        self.filter_config = FilterConfig.parse(settings.filter_fields)
        # Workers of one deployment serve the same vault folder: a reload in one is announced in a stamp
        # file (in the temp dir, named after the vault's path, holding only a version, a time and a pid),
        # and the other workers catch up before their next answer. The stamp is read before the vault, so
        # a reload announced while this worker loads is followed. Versions come from the stamp, so
        # `vault_version` means the same on every worker.
        self.stamp_path = reload_stamp_path(vault_dir)
        self._stamp_seen = _read_stamp(self.stamp_path)
        self.snapshot = load_snapshot(vault_dir, self.search_config, stamp_version(self._stamp_seen) or 1)
        self.memory = ConversationMemory(
            max_turns=settings.memory_max_turns,
            max_chars=settings.memory_max_chars,
            ttl_seconds=settings.memory_ttl_seconds,
            max_sessions=settings.memory_max_sessions,
        )
        self.options = GenerationOptions(
            num_ctx=settings.llm_num_ctx,
            num_predict=settings.llm_num_predict,
            temperature=settings.llm_temperature,
            think=settings.llm_think,
            keep_alive=settings.llm_keep_alive,
        )
        self.observability = Observability(settings)
        self.llm: LLMClient | None = None
        # Generations run in tasks of their own (so a visitor who leaves can cancel them once, cleanly);
        # they are held here until they end, and cancelled when the server stops.
        self._tasks: set[asyncio.Task[Any]] = set()
        self._reload_lock = asyncio.Lock()
        self._following: asyncio.Task[bool] | None = None

    async def start(self) -> None:
        s = self.settings
        self.llm = LLMClient(
            s.ollama_url, s.llm_model, self.options, timeout=s.llm_timeout, connect_timeout=s.llm_connect_timeout
        )

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run `coro` in a task of its own, held until it ends (never garbage-collected while pending)."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def stop(self) -> None:
        if self._following is not None and not self._following.done():
            self._following.cancel()
            with suppress(asyncio.CancelledError):
                await self._following
        for task in list(self._tasks):
            await cancel_and_wait(task)
        if self.llm is not None:
            await self.llm.aclose()
        # Shutdown flushes the buffered spans and scores; it blocks, so it runs off the event loop. It is
        # bounded (SHUTDOWN_SECONDS), and a second stop signal meanwhile ends it at once.
        abandon = threading.Event()
        with _signals_set(abandon):
            await asyncio.to_thread(self.observability.shutdown, SHUTDOWN_SECONDS, abandon)

    # -- reload -------------------------------------------------------------------------------------
    async def catch_up(self) -> None:
        """Make sure this worker serves the vault of the last reload announced by any worker.

        Called before every answer: once `POST /reload-vault` has answered (on any worker), no worker
        answers from the previous vault, which may hold a note made private since. A question that finds a
        newer stamp waits for the reload (one per worker, shared by the questions that wait); if it fails
        or takes over FOLLOW_WAIT_SECONDS, the question gets a 503 rather than an answer from the old vault.
        Reading the stamp is one small file read.
        """
        deadline = time.monotonic() + FOLLOW_WAIT_SECONDS
        while _read_stamp(self.stamp_path) != self._stamp_seen:
            if self._following is None or self._following.done():
                self._following = self.spawn(self._follow())
            following = self._following
            # `asyncio.wait` never cancels the reload: a question that gives up leaves it to finish.
            done, _ = await asyncio.wait({following}, timeout=max(deadline - time.monotonic(), 0))
            if not done:
                raise ApiError(503, "vault_reloading", "the vault is being reloaded; try again in a moment")
            if following.cancelled() or not following.result():
                raise ApiError(
                    503, "vault_unavailable", "the vault changed and could not be reloaded; try again later"
                )

    async def _follow(self) -> bool:
        """Reload because another worker announced a reload; False if the vault could not be read."""
        async with self._reload_lock:
            stamp = _read_stamp(self.stamp_path)  # before reading the vault: what it announces is on disk
            if stamp == self._stamp_seen:
                return True  # done meanwhile (by this worker's own reload)
            try:
                await self._reload_locked(announce=False, stamp=stamp)
            except ApiError:
                return False  # already logged; the next question tries again
            return True

    async def reload(self, announce: bool = True) -> dict[str, Any]:
        async with self._reload_lock:
            return await self._reload_locked(announce=announce, stamp=_read_stamp(self.stamp_path))

    async def _reload_locked(self, announce: bool, stamp: str) -> dict[str, Any]:
        old = self.snapshot
        started = time.perf_counter()
        try:
            new = await asyncio.to_thread(load_snapshot, self.vault_dir, self.search_config, old.version + 1)
        except (OSError, ValueError) as error:
            log.error("reload failed, still serving vault version %d: %s", old.version, type(error).__name__)
            raise ApiError(
                500,
                "reload_failed",
                f"the vault could not be read ({type(error).__name__}); still serving the previous version",
            ) from None
        if announce:
            written, version = _write_stamp(self.stamp_path, old.version + 1)
            # (if the stamp could not be written, what is in the file now is what this worker has seen)
            stamp = written if written is not None else _read_stamp(self.stamp_path)
        else:
            version = stamp_version(stamp) or old.version + 1
        new = dataclasses.replace(new, version=version)
        # The atomic swap: requests in flight keep their reference to `old`.
        self.snapshot = new
        self._stamp_seen = stamp
        elapsed = (time.perf_counter() - started) * 1000
        changes = _changes(old, new)
        if changes["removed"] and self.memory.enabled:
            # a note that left the public set (made private, deleted) may be quoted in remembered answers,
            # which go back to the model with the next question: those conversations start afresh
            self.memory.clear()
        log.info(
            "vault reloaded: version %d, %d notes (+%d -%d ~%d), %d problems, %.0f ms",
            new.version, new.size, len(changes["added"]), len(changes["removed"]),
            len(changes["modified"]), len(new.problems), elapsed,
        )  # fmt: skip
        return {
            "status": "reloaded",
            "vault_version": new.version,
            "notes": new.size,
            "by_type": new.by_type,
            **changes,
            "problems": new.problems,
            "elapsed_ms": round(elapsed, 1),
        }

    # -- answering ----------------------------------------------------------------------------------
    def _search(self, snap: VaultSnapshot, question: str, history: list[Turn]) -> tuple[SearchResult, bool, dict[str, Any]]:
        # « § 13 de la classe 10 », and « et le § 14 ? » after it: restricted to the matching notes
        filtered = search_with_filters(
            snap.index, question, self.settings.search_top_k, self.filter_config, [t.question for t in history]
        )
        if filtered is not None:
            return filtered.result, False, filtered.as_dict()
        result, followup = self._plain_search(snap, question, history)
        return result, followup, {}

    def _plain_search(self, snap: VaultSnapshot, question: str, history: list[Turn]) -> tuple[SearchResult, bool]:
        result = snap.index.search(question, self.settings.search_top_k)
        if result.grounded or not history:
            return result, False
        # A follow-up ("et en quel langage ?") names nothing: retry with the previous question for context.
        followup = snap.index.search(f"{history[-1].question} {question}", self.settings.search_top_k)
        return (followup, True) if followup.grounded else (result, False)

    def _base_body(
        self, snap: VaultSnapshot, sources: list[dict[str, Any]], grounded: bool, trace_id: str, filters: dict[str, Any]
    ) -> dict[str, Any]:
        return {
            "sources": sources,
            "grounded": grounded,
            "filters": filters,
            "model": self.settings.llm_model,
            "vault_size": snap.size,
            "trace_id": trace_id,
        }

    async def answer(
        self,
        question: str,
        session_id: str | None,
        user_id: str | None,
        emit: Callable[[str, dict[str, Any]], Awaitable[None]] | None = None,
    ) -> Answer:
        """Answer `question`. With `emit`, stream: `sources` first, then `token`s; the caller sends the end."""
        begun = time.perf_counter()
        snap = self.snapshot  # read once: this request uses this snapshot to the end
        s = self.settings
        if self.llm is None:
            raise RuntimeError("the service is not started")
        history = self.memory.history(session_id)
        # `None` means the engine's calibrated grounding rule; Langfuse drops None values, so say it.
        min_score = s.search_min_score if s.search_min_score is not None else "engine-default"
        metadata = {"top_k": s.search_top_k, "min_score": min_score}
        with self.observability.trace_ask(
            query=question, session_id=session_id, user_id=user_id, model=s.llm_model, metadata=metadata
        ) as trace:
            with trace.observation("retrieval", input={"query": question, "top_k": s.search_top_k}) as span:
                started = time.perf_counter()
                result, followup, filters = self._search(snap, question, history)
                hits = servable_hits(result.hits)
                elapsed = (time.perf_counter() - started) * 1000
                if trace.enabled:
                    span.update(
                        output=[source_view(h, snap.hidden) for h in hits],
                        metadata=self._retrieval_metadata(snap, result, hits, elapsed, followup),
                    )
            grounded = bool(result.grounded and hits)
            sources = [source_view(h, snap.hidden) for h in hits] if grounded else []
            trace.add_tags(["grounded" if grounded else "ungrounded"] + ([] if hits else ["vault-miss"]))
            trace.score("grounded", 1.0 if grounded else 0.0, "BOOLEAN")
            trace.score("retrieval_relevance", retrieval_relevance(hits[0].score if hits else 0.0), "NUMERIC")
            base = self._base_body(snap, sources, grounded, trace.trace_id, filters if grounded else {})
            if emit is not None:
                await emit("sources", base)

            timings = {"retrieval": elapsed}
            prompt_started = time.perf_counter()
            with trace.observation("prompt-build", input={"query": question, "scored_count": len(hits)}) as span:
                prompt = build_prompt(
                    question,
                    result,
                    history,
                    keep_ratio=s.search_secondary_keep_ratio,
                    max_chars=s.search_secondary_max_chars,
                    hidden=snap.hidden,
                    label_fields=tuple(spec.name for spec in self.filter_config.fields),
                )
                if trace.enabled:
                    span.update(
                        output={"system": prompt.system, "user": prompt.user},
                        metadata={
                            "grounded": prompt.grounded,
                            "relevant_notes": [c.hit.id for c in prompt.notes],
                            **prompt.size,
                            "history_turns": len(prompt.history),
                            "min_score_threshold": min_score,
                            "truncation": {
                                "secondary_max_chars": s.search_secondary_max_chars,
                                "secondary_keep_ratio": s.search_secondary_keep_ratio,
                                "truncated_notes": [t.as_dict() for t in prompt.truncated],
                            },
                        },
                    )
            messages = prompt.messages()
            timings["prompt"] = (time.perf_counter() - prompt_started) * 1000
            generation = Generation(model=s.llm_model)
            with trace.observation(
                "ollama-chat",
                as_type="generation",
                input=messages,
                model=s.llm_model,
                model_parameters=self.options.model_parameters(),
            ) as gen:
                llm_started = time.perf_counter()
                try:
                    if emit is None:
                        generation = await self.llm.chat(messages)
                    else:
                        async for piece in self.llm.stream_chat(messages, generation):
                            await emit("token", {"text": piece})
                    if not generation.text:
                        raise LLMEmptyAnswer("the language model returned an empty answer")
                except LLMError as error:
                    timings["llm"] = (time.perf_counter() - llm_started) * 1000
                    log.warning(
                        "LLM failure %s (upstream status %s) after %.0f ms",
                        error.code, getattr(error, "upstream_status", None), timings["llm"],
                    )  # fmt: skip
                    if trace.enabled:
                        gen.update(
                            output=generation.raw or None,
                            level="ERROR",
                            status_message=error.code,
                            usage_details=generation.usage() or None,
                            metadata={"ollama": generation.raw_summary(), "error": error.code},
                        )
                        trace.update(
                            output={"error": error.code, "sources_count": len(sources), "grounded": grounded},
                            level="ERROR",
                            status_message=error.code,
                        )
                    timings["total"] = (time.perf_counter() - begun) * 1000
                    return Answer(error.status, {"error": error.code, "message": error.message, **base}, "", timings)
                timings["llm"] = (time.perf_counter() - llm_started) * 1000
                if trace.enabled:
                    gen.update(
                        output=generation.raw,
                        usage_details=generation.usage() or None,
                        metadata={"done_reason": generation.done_reason, "elapsed_ms": round(generation.elapsed_ms, 1)},
                    )
            trace.update(output={"response": generation.text, "sources_count": len(sources), "grounded": grounded})
        self.memory.remember(session_id, question, generation.text)
        timings["total"] = (time.perf_counter() - begun) * 1000
        return Answer(200, {"response": generation.text, **base}, generation.text, timings)

    def _retrieval_metadata(
        self, snap: VaultSnapshot, result: SearchResult, hits: list[Hit], elapsed: float, followup: bool
    ) -> dict[str, Any]:
        stats = result.stats or {}
        meta: dict[str, Any] = {
            "query_tokens": list(result.tokens),
            "vault_size": snap.size,
            "elapsed_ms": round(float(stats.get("elapsed_ms", elapsed)), 2),
            "followup": followup,
            "direct_hits": sum(1 for h in hits if h.direct),
        }
        for key, value in sorted(stats.items()):
            if key not in meta:
                meta[key] = _scrub(value, snap.hidden)
        return meta

    # -- health -------------------------------------------------------------------------------------
    async def health(self, vault_error: str | None = None) -> dict[str, Any]:
        snap = self.snapshot
        llm = await self.llm.probe() if self.llm is not None else {"reachable": False, "model_available": False}
        if self.llm is not None:
            # Every generation holds one connection of a bounded pool: when all are taken, new questions
            # wait (and end in 504), so the service is not plainly ok even if Ollama answers.
            llm["in_flight"] = self.llm.in_flight
            llm["max_connections"] = self.llm.max_connections
            llm["saturated"] = self.llm.in_flight >= self.llm.max_connections
        healthy = llm["reachable"] and llm["model_available"] and not llm.get("saturated") and vault_error is None
        return {
            "status": "ok" if healthy else "degraded",
            "version": __version__,
            "worker_pid": os.getpid(),
            "vault_size": snap.size,
            "vault": {
                "dir": str(snap.root),
                "notes": snap.size,
                "by_type": snap.by_type,
                "problems": len(snap.problems),
                "vault_version": snap.version,
                "loaded_at": snap.loaded_at,
                **({"error": vault_error} if vault_error else {}),
            },
            "llm": {"url": redact_url(self.settings.ollama_url), "model": self.settings.llm_model, **llm},
            "config": self.settings.public_view(),
            "observability": {"langfuse_enabled": self.observability.enabled},
        }


@contextmanager
def _signals_set(event: threading.Event) -> Any:
    """While inside, SIGINT and SIGTERM set `event` (in the main thread only; elsewhere, nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, Any] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        with suppress(ValueError, OSError):
            previous[sig] = signal.signal(sig, lambda *_: event.set())
    try:
        yield
    finally:
        for sig, handler in previous.items():
            with suppress(ValueError, OSError, TypeError):
                signal.signal(sig, handler)


#: How long a request that ends early waits for its cancelled generation to close its Ollama connection.
CANCEL_WAIT_SECONDS = 2.0


async def cancel_and_wait(task: asyncio.Task[Any], timeout: float = CANCEL_WAIT_SECONDS) -> None:
    """Cancel `task` once and give it up to `timeout` seconds to clean up (close its upstream connection).

    The task is cancelled exactly once: the caller may itself be under cancellation (Starlette cancels a
    streaming response when the client leaves, and anyio re-delivers that cancellation on every await),
    and awaiting the task directly would forward each of those cancellations into it and interrupt the
    HTTP client's own clean-up, which then leaves the connection to Ollama open and counted in the pool
    for good. `asyncio.wait` never cancels what it waits for, and the shielded scope keeps anyio's
    re-deliveries out of this wait.
    """
    if task.done():
        return
    task.cancel()
    with anyio.CancelScope(shield=True):
        await asyncio.wait({task}, timeout=timeout)


async def _wait_for_disconnect(request: Request) -> None:
    """Return when the client of `request` (a request without a body to read) has gone."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


class _ClosingStreamingResponse(StreamingResponse):
    """A StreamingResponse that always closes its body iterator, however the response ends.

    Starlette stops iterating when the client leaves but leaves the generator suspended, to be closed
    whenever it is garbage-collected; closing it here runs its clean-up (cancel the generation, close the
    upstream stream) at once.
    """

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            closer = getattr(self.body_iterator, "aclose", None)
            if closer is not None:
                with anyio.CancelScope(shield=True):
                    await closer()


class FeedbackIn(BaseModel):
    trace_id: str = Field(min_length=32, max_length=32, description="the `trace_id` of an answer")
    value: Literal[0, 1] = Field(description="1 for a useful answer, 0 for a bad one")
    comment: str | None = Field(default=None, max_length=2000)


class _CatchAll:
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
                await _error(500, "internal_error", "internal error")(scope, receive, send)


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def create_app(settings: Settings | None = None, vault_dir: str | Path | None = None) -> FastAPI:
    """A new GrasBot app. `settings` default to the environment (+ `.env`); `vault_dir` overrides VAULT_DIR.

    The vault is read here, so a missing or unreadable vault fails at start-up, not at the first question.
    """
    follow_uvicorn_logging()  # before anything logs; a no-op under `grasbot serve` and in tests
    settings = settings or Settings.from_env()
    root = Path(vault_dir) if vault_dir is not None else settings.vault_dir
    service = Service(settings, root)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await service.start()
        log.info(
            "GrasBot ready: vault %s (%d public notes), model %s at %s, langfuse %s",
            root, service.snapshot.size, settings.llm_model, redact_url(settings.ollama_url),
            "on" if service.observability.enabled else "off",
        )  # fmt: skip
        try:
            yield
        finally:
            await service.stop()

    app = FastAPI(
        title="GrasBot",
        version=__version__,
        description="Sourced answers about the public notes of an Obsidian vault.",
        lifespan=lifespan,
    )
    app.state.service = service
    app.add_middleware(_CatchAll)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
        )

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        return _error(exc.status, exc.code, exc.message, **exc.extra)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        # The details name the field and the rule, never echo the submitted value.
        detail = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", "")} for e in exc.errors()]
        return _error(422, "invalid_request", "the request does not match the API", detail=detail)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and exc.__cause__ is not None:
            # FastAPI's answer to a body it could not decode (not UTF-8, nested too deep...): a malformed
            # body like any other, so the same 422 `invalid_request`; the decoder's text is not echoed.
            utf8 = isinstance(exc.__cause__, UnicodeDecodeError)
            msg = "the body is not valid UTF-8" if utf8 else "the body could not be parsed as JSON"
            detail = [{"loc": ["body"], "msg": msg}]
            return _error(422, "invalid_request", "the request does not match the API", detail=detail)
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        response = _error(exc.status_code, code, str(exc.detail))
        if exc.headers:
            response.headers.update(exc.headers)
        return response

    @app.get("/ask", summary="Answer a question from the public notes")
    async def ask(
        request: Request,
        q: str = Query("", description="the visitor's question"),
        session_id: str | None = Query(None, description="anonymous conversation id (memory of the last turns)"),
        user_id: str | None = Query(None, description="anonymous visitor id (tracing only)"),
        format: Literal["markdown", "text"] = Query("markdown", description="`text`: the answer without Markdown marks"),
    ) -> JSONResponse:
        question = _check_question(q, settings.ask_max_chars)
        sid, uid = _check_id("session_id", session_id), _check_id("user_id", user_id)
        await service.catch_up()  # never an answer from a vault another worker has reloaded since
        # The generation runs in its own task, cancelled if the visitor leaves before the answer.
        task = service.spawn(service.answer(question, sid, uid))
        watcher = asyncio.ensure_future(_wait_for_disconnect(request))
        try:
            await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watcher.cancel()
            await cancel_and_wait(task)
        if task.cancelled() or not task.done():  # the client is gone: nobody reads this response
            return Response(status_code=499)
        result = task.result()
        body = result.body
        if format == "text" and isinstance(body.get("response"), str):
            body = {**body, "response": markdown_to_text(body["response"])}
        return JSONResponse(body, status_code=result.status, headers={"Server-Timing": result.server_timing()})

    @app.get("/ask/stream", summary="Answer as Server-Sent Events: sources, token..., done | error")
    async def ask_stream(
        q: str = Query("", description="the visitor's question"),
        session_id: str | None = Query(None),
        user_id: str | None = Query(None),
    ) -> StreamingResponse:
        question = _check_question(q, settings.ask_max_chars)
        sid, uid = _check_id("session_id", session_id), _check_id("user_id", user_id)
        await service.catch_up()  # never an answer from a vault another worker has reloaded since
        queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()

        async def emit(event: str, data: dict[str, Any]) -> None:
            await queue.put((event, data))

        async def produce() -> None:
            # The whole answer runs in this one task, so the tracing context never crosses tasks.
            try:
                result = await service.answer(question, sid, uid, emit)
                if result.status == 200:
                    await queue.put(("done", result.body))
                else:
                    await queue.put(("error", {"status": result.status, **result.body}))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - the stream must end with an event, never hang
                log.error("internal error %s while streaming", type(exc).__name__)
                await queue.put(("error", {"status": 500, "error": "internal_error", "message": "internal error"}))

        async def events() -> AsyncIterator[bytes]:
            task = service.spawn(produce())
            getter: asyncio.Future[tuple[str, dict[str, Any]]] | None = None
            try:
                while True:
                    getter = asyncio.ensure_future(queue.get())
                    done, _ = await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
                    if getter not in done:
                        getter.cancel()
                        if queue.empty():  # the producer ended without a final event
                            yield _sse("error", {"status": 500, "error": "internal_error", "message": "internal error"})
                            return
                        continue
                    event, data = getter.result()
                    yield _sse(event, data)
                    if event in ("done", "error"):
                        return
            finally:
                # The client left (or the stream ended): stop the generation, which closes its stream to
                # Ollama, and leave no task behind.
                if getter is not None and not getter.done():
                    getter.cancel()
                await cancel_and_wait(task)

        return _ClosingStreamingResponse(
            events(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    @app.get("/health", summary="Status, configuration (no secrets), vault counts, LLM reachability")
    async def health() -> JSONResponse:
        vault_error = None
        try:
            await service.catch_up()
        except ApiError as error:
            vault_error = error.code
        return JSONResponse(await service.health(vault_error))

    @app.post("/reload-vault", summary="Re-read the vault and swap the index atomically")
    async def reload_vault(request: Request) -> JSONResponse:
        token = settings.reload_token
        if token is not None:
            header = request.headers.get("authorization", "")
            scheme, _, given = header.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
                response = _error(401, "unauthorized", "POST /reload-vault needs `Authorization: Bearer <token>`")
                response.headers["WWW-Authenticate"] = "Bearer"
                return response
        return JSONResponse(await service.reload())

    @app.post("/feedback", summary="Record a visitor's thumb up (1) or down (0) as the Langfuse score user_feedback")
    async def feedback(body: FeedbackIn) -> JSONResponse:
        trace_id = body.trace_id.lower()
        if not is_trace_id(trace_id):
            raise ApiError(422, "invalid_trace_id", "`trace_id` must be the 32 hexadecimal characters of an answer")
        comment = clean_question(body.comment) if body.comment else None
        recorded = service.observability.feedback(trace_id, body.value, comment or None)
        return JSONResponse({"recorded": recorded, "trace_id": trace_id})

    return app
