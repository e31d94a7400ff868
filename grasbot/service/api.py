"""The HTTP API (docs/service.md, "The API"): `GET /ask`, `GET /ask/stream`, `GET /health`, `POST /reload-vault`, `POST /feedback`.

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
import hmac
import json
import logging
import os
import re
import secrets
import signal
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
from fastapi.responses import JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, Field
from sse_starlette import EventSourceResponse, ServerSentEvent
from sse_starlette.sse import AppStatus
from starlette.exceptions import HTTPException as StarletteHTTPException

from grasbot import __version__
from grasbot.service.settings import Settings, redact_url
from grasbot.llm import Generation, GenerationOptions, LLMBackend, LLMEmptyAnswer, LLMError, create_backend
from grasbot.service.body_limit import RequestBodyLimit
from grasbot.service.limits import Limits, LimitsConfig, LocalLimits, RedisLimits
from grasbot.service.memory import ConversationMemory, LocalMemory, Turn
from grasbot.service.shared import FileAnnouncer, RedisAnnouncer, RedisMemory, connect
from grasbot.service.sessions import SessionIds
from grasbot.service.state import private_dir, reload_stamp_path, session_key, stamp_version
from grasbot.model import HIDING_PROBLEMS, Note, PrivacyPolicy, visible_to_visitors
from grasbot.service.observability import (
    SHUTDOWN_SECONDS,
    Observability,
    follow_uvicorn_logging,
    is_trace_id,
    retrieval_relevance,
)
from grasbot.answer.pipeline import Retrieval, RetrievalLimits, RetrievalPipeline
from grasbot.answer.profile import Profile, ProfileError, load_profile
from grasbot.service.prompts import PromptSource, SystemPrompt
from grasbot.answer.prompt import Prompt, build_prompt, hidden_links, is_servable, redact_hidden_links
from grasbot.answer.verify import context_passages, subject_names, verify
from grasbot.answer.verify_policy import NOT_IN_NOTES, drop_flagged, evidence_band, needs_fallback, retry_instructions
from grasbot.answer.filtering import FilterStage, filters_of
from grasbot.answer.plaintext import markdown_to_text
from grasbot.search.filters import FilterConfig
from grasbot.search.index import Hit, SearchConfig, SearchIndex, SearchResult
from grasbot.text import loose_name_key
from grasbot import snapshot as engine_snapshot
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
    """The question as the service answers it (`clean_question`); ApiError when it is empty or too long
    (the routes', and `vaulttools eval --answers`' for a dataset's questions)."""
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
    unlisted_problems: int = 0  # problems of files that may be private: counted, never named
    loaded_at: float = field(default_factory=time.time)

    @property
    def size(self) -> int:
        return len(self.public)


def _problem_view(path: str, line: int, column: int, code: str, message: str) -> dict[str, Any]:
    return {"path": path, "line": line, "column": column, "code": code, "message": message[:300]}


def listed_problems(vault: Vault) -> tuple[list[dict[str, Any]], int]:
    """The problems `/reload-vault` may name (those of servable notes), and how many others there are.

    Fail closed: a problem is listed, path and message, only for a note a visitor may see. A hidden note's
    problems are not even counted (its path would name it). A file that could not be read at all (binary,
    unreadable, not a regular file, a folder problem) may be a private note whose visibility nobody could
    read: it is counted, never named; `vaulttools lint`, run by the author, names it.
    """
    listed: list[dict[str, Any]] = []
    unlisted = 0
    for path in sorted(vault.notes):
        note = vault.notes[path]
        if not visible_to_visitors(note):
            if any(p.code in HIDING_PROBLEMS for p in note.problems):  # hidden as unreadable: counted, as below
                unlisted += len(note.problems)
            continue
        if not is_servable(note):
            unlisted += len(note.problems)
            continue
        listed.extend(_problem_view(p.path, p.line, p.column, p.code, p.message) for p in note.problems)
    unlisted += len(getattr(vault, "problems", None) or [])
    return listed, unlisted


def load_snapshot(
    root: Path, config: SearchConfig, version: int, privacy: PrivacyPolicy | None = None
) -> VaultSnapshot:
    """Read the vault at `root` and index it. Runs in a worker thread; raises OSError for a bad root.
    `privacy`: private folders and tags from the settings, beside the vault's own `[privacy]`.

    Through the persistent snapshot (grasbot/snapshot.py): a start or a reload re-reads only the notes whose
    bytes changed, every note's digest checked (`verify`: a note made private is seen even if its file kept
    its size and mtime). The refreshed snapshot is written back in a thread of its own; a vault folder the
    service cannot write to (mounted read-only, without VAULTTOOLS_CACHE_DIR) only costs the fast start."""
    loaded = engine_snapshot.load(root, config, verify=True, privacy=privacy)
    vault, index = loaded.vault, loaded.index
    threading.Thread(target=engine_snapshot.save, args=(loaded,), name="grasbot-snapshot-writer").start()
    public: dict[str, Note] = {}
    digests: dict[str, str] = {}
    by_type: dict[str, int] = {}
    for path in sorted(vault.notes):
        note = vault.notes[path]
        if not is_servable(note):
            continue
        note_id = note.id or note.slug or note.stem
        public[note_id] = note
        digests[note_id] = note.digest
        kind = note.type or "autre"
        by_type[kind] = by_type.get(kind, 0) + 1
    problems, unlisted = listed_problems(vault)
    return VaultSnapshot(
        version=version,
        root=root,
        vault=vault,
        index=index,
        public=public,
        digests=digests,
        by_type=dict(sorted(by_type.items())),
        hidden=hidden_links(vault),  # links redacted by resolution (grasbot.answer.prompt.HiddenLinks)
        problems=problems,
        unlisted_problems=unlisted,
    )


#: Longest a question waits for its worker to catch up with a reload announced by another worker
#: (503 `vault_reloading` after: never an answer from the vault as it was before the reload).
FOLLOW_WAIT_SECONDS = 10.0

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
        "title": redact_hidden_links(hit.note.title, hidden, hit.note.path),  # (a title may hold a link, as a body does)
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
    folded = loose_name_key(value)
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
    #: the generated answer's faithfulness, as the trace's `faithfulness` score has it (None: no answer, or
    #: no factual sentence); `vaulttools eval --answers` records it in its dataset runs
    faithfulness: float | None = None

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
        # file (in the private state folder, grasbot/service/state.py), and the other workers catch up
        # before their next answer. The stamp is read before the vault, so a reload announced while this
        # worker loads is followed. Versions come from the stamp, so `vault_version` means the same on
        # every worker.
        self.state_dir = private_dir(settings.state_dir)
        self.stamp_path = reload_stamp_path(vault_dir, self.state_dir)
        # Replicas on several machines share GRASBOT_SESSION_KEY (docs/deploy.md); the workers of one
        # machine share the key of the state folder.
        self.sessions = SessionIds(settings.session_key.encode() if settings.session_key else session_key(self.state_dir))
        # With Redis (several machines or containers, docs/deploy.md), memory, reload announcements and
        # admission limits are shared through it; without, they live in this process and the stamp file.
        limits = LimitsConfig(
            rate=settings.rate_limit, period=60.0, burst=settings.rate_burst,
            max_generations=settings.max_generations, lease_seconds=settings.llm_timeout + 30,
        )  # fmt: skip
        self.redis: Any | None = None
        self.announcer: FileAnnouncer | RedisAnnouncer
        self.memory: LocalMemory | RedisMemory
        self.limits: Limits
        if settings.redis_url:
            self.redis = connect(settings.redis_url)
            self.announcer = RedisAnnouncer(self.redis, url=settings.redis_url)
            self.memory = RedisMemory(
                self.redis,
                max_turns=settings.memory_max_turns,
                max_chars=settings.memory_max_chars,
                ttl_seconds=settings.memory_ttl_seconds,
            )
            self.limits = RedisLimits(self.redis, limits)
        else:
            self.announcer = FileAnnouncer(self.stamp_path)
            self.memory = LocalMemory(
                ConversationMemory(
                    max_turns=settings.memory_max_turns,
                    max_chars=settings.memory_max_chars,
                    ttl_seconds=settings.memory_ttl_seconds,
                    max_sessions=settings.memory_max_sessions,
                )
            )
            self.limits = LocalLimits(limits)
        # The version is read before the vault: a reload announced while this worker loads is followed.
        # (None: Redis cannot say now; the first question then compares again and reloads if needed.)
        self._stamp_seen = self.announcer.current_sync() or ""
        self.privacy = PrivacyPolicy(settings.private_folders, settings.private_tags)
        self.snapshot = load_snapshot(
            vault_dir, self.search_config, stamp_version(self._stamp_seen) or 1, self.privacy
        )
        self._listener: asyncio.Task[None] | None = None
        # The answering profile (grasbot/answer/profile.py): a bad one stops the start with its error
        self.profile: Profile = load_profile(vault_dir, settings.profile)
        self.profile_error: str | None = None  # a bad profile on reload: the old one still answers
        # (the settings' options, before the profile's temperature and max tokens: a reload starts from them)
        self.base_options = settings.llm_config().options
        self.options = profile_options(self.base_options, self.profile)
        self.observability = Observability(settings)
        self.prompts = PromptSource(
            settings.prompt_name, settings.prompt_label, settings.prompt_cache_seconds, self.observability.client
        )
        self.llm: LLMBackend | None = None
        # Generations run in tasks of their own (so a visitor who leaves can cancel them once, cleanly);
        # they are held here until they end, and cancelled when the server stops.
        self._tasks: set[asyncio.Task[Any]] = set()
        self._reload_lock = asyncio.Lock()
        self._following: asyncio.Task[bool] | None = None
        self._subject_cache: tuple[VaultSnapshot, frozenset[str]] | None = None

    async def start(self) -> None:
        # Every replica hears every announced reload at once (Redis pub/sub) and reloads in the background;
        # `catch_up` before each answer is what guarantees it (a message can be missed).
        self._listener = self.announcer.listen(self._announced)
        config = dataclasses.replace(self.settings.llm_config(), options=self.options)  # with the profile's
        self.llm = create_backend(config)  # LLM_BACKEND: Ollama or OpenAI-compatible

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run `coro` in a task of its own, held until it ends (never garbage-collected while pending)."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def stop(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with suppress(asyncio.CancelledError):
                await self._listener
        if self._following is not None and not self._following.done():
            self._following.cancel()
            with suppress(asyncio.CancelledError):
                await self._following
        for task in list(self._tasks):
            await cancel_and_wait(task)
        if self.llm is not None:
            await self.llm.close()
        if self.redis is not None:
            with suppress(Exception):
                await self.redis.aclose()
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
        while await self._announced_stamp() != self._stamp_seen:
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

    async def _announced_stamp(self) -> str:
        """What the announcer says now; what this worker has seen when it cannot say (Redis down: each
        replica then serves what it has, and `/health` says degraded)."""
        stamp = await self.announcer.current()
        return self._stamp_seen if stamp is None else stamp

    async def _announced(self, version: int) -> None:
        """A reload announced by any replica (Redis pub/sub): follow it now, in the background."""
        if str(version) != self._stamp_seen and (self._following is None or self._following.done()):
            self._following = self.spawn(self._follow())

    async def _follow(self) -> bool:
        """Reload because another worker announced a reload; False if the vault could not be read."""
        async with self._reload_lock:
            stamp = await self._announced_stamp()  # before reading the vault: what it announces is on disk
            if stamp == self._stamp_seen:
                return True  # done meanwhile (by this worker's own reload)
            try:
                await self._reload_locked(announce=False, stamp=stamp)
            except ApiError:
                return False  # already logged; the next question tries again
            return True

    async def reload(self, announce: bool = True) -> dict[str, Any]:
        async with self._reload_lock:
            return await self._reload_locked(announce=announce, stamp=await self._announced_stamp())

    async def _reload_locked(self, announce: bool, stamp: str) -> dict[str, Any]:
        old = self.snapshot
        started = time.perf_counter()
        try:
            new = await asyncio.to_thread(
                load_snapshot, self.vault_dir, self.search_config, old.version + 1, self.privacy
            )
        except (OSError, ValueError) as error:
            log.error("reload failed, still serving vault version %d: %s", old.version, type(error).__name__)
            raise ApiError(
                500,
                "reload_failed",
                f"the vault could not be read ({type(error).__name__}); still serving the previous version",
            ) from None
        if announce:
            # (never on the event loop: grasbot/service/shared.py)
            written, version = await self.announcer.announce(old.version + 1)
            # (if it could not be announced, what is announced now is what this worker has seen)
            stamp = written if written is not None else await self._announced_stamp()
        else:
            version = stamp_version(stamp) or 0
            if version <= old.version:
                # This replica is ahead of what is announced: it reloaded while the announcement could not
                # go out (Redis down), or Redis lost its counter. Its own next version is announced, so that
                # every replica converges on one number: memory's floor (the oldest version whose answers
                # may be kept) compares versions tagged by different replicas, and a replica whose numbers
                # ran ahead would have answers from before a removing reload pass that floor.
                written, version = await self.announcer.announce(old.version + 1)
                stamp = written if written is not None else stamp
        # Versions only go up in a worker: conversation memory tells answers from before a reload by them.
        new = dataclasses.replace(new, version=max(version, old.version + 1))
        await self._reload_profile()
        # The atomic swap: requests in flight keep their reference to `old`.
        self.snapshot = new
        self._stamp_seen = stamp
        elapsed = (time.perf_counter() - started) * 1000
        changes = _changes(old, new)
        if changes["removed"]:
            await self._forget_answers_from_before(new)
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
            "unlisted_problems": new.unlisted_problems,
            "elapsed_ms": round(elapsed, 1),
            "profile": self.profile_view(),
        }

    async def _reload_profile(self) -> None:
        """Read the answering profile again with the vault. A bad one is refused: the old one keeps
        answering, and the error is logged, returned by the reload and shown in /health until fixed."""
        try:
            profile = await asyncio.to_thread(load_profile, self.vault_dir, self.settings.profile)
        except ProfileError as error:
            self.profile_error = str(error)
            log.error("profile not reloaded, still answering with %s@%s: %s", self.profile.name, self.profile.version, error)
            return
        if profile != self.profile:
            log.info("answering profile: %s@%s (was %s@%s)", profile.name, profile.version, self.profile.name, self.profile.version)
        self.profile, self.profile_error = profile, None
        self.options = profile_options(self.base_options, profile)
        if self.llm is not None:
            self.llm.options = self.options  # read by every request the client builds from now on

    def profile_view(self) -> dict[str, Any]:
        """The active profile for /health and /reload-vault: name, version, origin, and a refused one's error."""
        view = self.profile.describe()
        if self.profile_error is not None:
            view["error"] = self.profile_error
        return view

    async def _forget_answers_from_before(self, new: VaultSnapshot) -> None:
        """A note left the public set (made private, deleted): a remembered answer may quote it, and would
        go back to the model, the trace and the visitor with the next question of its session. Every turn
        answered from an older snapshot is forgotten, including those of generations still under way,
        which end after this reload (grasbot/service/memory.py)."""
        await self.memory.forget_answers_before(new.version)

    # -- admission ----------------------------------------------------------------------------------
    async def admit(self, visitor: str) -> str | None:
        """May `visitor` (an address) start an answer now? The rate limit, then a generation slot
        (grasbot/service/limits.py): the slot's token, to give back with `release`, or ApiError 429 with
        `Retry-After`. A refusal comes before any retrieval or generation, so a flood costs nothing."""
        rate = await self.limits.admit(visitor)
        if not rate.allowed:
            raise ApiError(
                429, "rate_limited", "too many questions from this address; try again later",
                retry_after=int(rate.retry_after_header),
            )  # fmt: skip
        slot, token = await self.limits.acquire()
        if not slot.allowed:
            raise ApiError(
                429, "busy", "every answer slot is taken; try again in a moment",
                retry_after=int(slot.retry_after_header),
            )  # fmt: skip
        return token

    async def release(self, token: str | None) -> None:
        """Give a generation slot back, even from a request being cancelled (a visitor who left)."""
        await asyncio.shield(self.limits.release(token))

    # -- answering ----------------------------------------------------------------------------------
    def _retrieve(self, snap: VaultSnapshot, question: str, history: list[Turn]) -> Retrieval:
        """The one retrieval pipeline (grasbot/answer/pipeline.py), with this service's limits."""
        s = self.settings
        limits = RetrievalLimits(s.search_top_k, s.search_secondary_keep_ratio, s.search_secondary_max_chars)
        # the question's filters: « § 13 de la classe 10 », then « et le § 14 ? » (docs/pdf-import.md)
        stages = (FilterStage(snap.index, self.filter_config),)
        return RetrievalPipeline(snap.index, limits, hidden=snap.hidden, stages=stages).retrieve(question, history)

    def _base_body(
        self, snap: VaultSnapshot, sources: list[dict[str, Any]], grounded: bool, trace_id: str, session_id: str,
        filters: dict[str, Any],
    ) -> dict[str, Any]:
        return {
            "sources": sources,
            "grounded": grounded,
            "filters": filters,
            "model": self.settings.llm_model,
            "vault_size": snap.size,
            "trace_id": trace_id,
            "session_id": session_id,
        }

    async def answer(
        self,
        question: str,
        session_id: str | None,
        user_id: str | None,
        emit: Callable[[str, dict[str, Any]], Awaitable[None]] | None = None,
    ) -> Answer:
        """Answer `question`. With `emit`, stream: `sources` first, then `token`s; the caller sends the end.

        `session_id` is what the visitor sent: continued when this deployment issued it, else replaced by
        a new id (a new, empty conversation); the answer carries the id to send next time.
        """
        begun = time.perf_counter()
        snap = self.snapshot  # read once: this request uses this snapshot to the end
        profile = self.profile  # likewise: a reload does not change the prompt of an answer under way
        s = self.settings
        if self.llm is None:
            raise RuntimeError("the service is not started")
        session_id = self.sessions.continue_or_start(session_id)
        history = await self.memory.history(session_id)
        # `None` means the engine's calibrated grounding rule; Langfuse drops None values, so say it.
        min_score = s.search_min_score if s.search_min_score is not None else "engine-default"
        system = await self._system_prompt(profile)
        metadata = {"top_k": s.search_top_k, "min_score": min_score, "profile": f"{profile.name}@{profile.version}", "prompt": system.ref}
        with self.observability.trace_ask(
            query=question, session_id=session_id, user_id=user_id, model=s.llm_model, metadata=metadata
        ) as trace:
            with trace.observation("retrieval", input={"query": question, "top_k": s.search_top_k}) as span:
                started = time.perf_counter()
                retrieval = self._retrieve(snap, question, history)
                result, followup, hits = retrieval.result, retrieval.followup, list(retrieval.hits)
                elapsed = (time.perf_counter() - started) * 1000
                if trace.enabled:
                    span.update(
                        output=[source_view(h, snap.hidden) for h in hits],
                        metadata=self._retrieval_metadata(snap, result, hits, elapsed, followup),
                    )
            band = evidence_band(float((result.stats or {}).get("evidence", 0.0)), bool(result.grounded), bool(hits))
            grounded = band == "strong"  # the retrieval's verdict; the verified answer has the last word
            given = [source_view(h, snap.hidden) for h in hits] if band != "none" else []
            sources = given if grounded else []
            trace.add_tags([] if hits else ["vault-miss"])
            trace.score("retrieval_relevance", retrieval_relevance(hits[0].score if hits else 0.0), "NUMERIC")
            base = self._base_body(snap, given, grounded, trace.trace_id, session_id, filters_of(retrieval) if band != "none" else {})
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
                    context=retrieval.context,
                    profile=profile,
                    system=system.text,
                    tentative=band == "middle",
                )
                if trace.enabled:
                    span.update(
                        output={"system": prompt.system, "user": prompt.user},
                        metadata={
                            "grounded": prompt.grounded,
                            "evidence_band": band,
                            "relevant_notes": [c.hit.id for c in prompt.notes],
                            **prompt.size,
                            "history_turns": len(prompt.history),
                            "profile": profile.describe(),
                            "prompt": system.describe(),
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
                f"{self.llm.name}-chat",  # ollama-chat, openai-chat
                as_type="generation",
                input=messages,
                model=s.llm_model,
                model_parameters=self.llm.model_parameters(),
                **({"prompt": system.client} if system.client is not None else {}),
            ) as gen:
                llm_started = time.perf_counter()
                try:
                    if emit is None:
                        generation = await self.llm.chat(messages)
                    else:
                        async for piece in self.llm.stream(messages, generation):
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
                            model=generation.model,  # as the server reports it
                            usage_details=generation.usage() or None,
                            metadata={self.llm.name: generation.raw_summary(), "error": error.code},
                        )
                        trace.update(
                            output={"error": error.code, "sources_count": len(sources), "grounded": grounded},
                            level="ERROR",
                            status_message=error.code,
                        )
                    failed = Answer(error.status, {"error": error.code, "message": error.message, **base}, "", timings)
                else:
                    failed = None
                    timings["llm"] = (time.perf_counter() - llm_started) * 1000
                    if trace.enabled:
                        gen.update(
                            output=generation.raw,
                            model=generation.model,  # as the server reports it (a dated snapshot, a .gguf file)
                            usage_details=generation.usage() or None,
                            metadata={"done_reason": generation.done_reason, "elapsed_ms": round(generation.elapsed_ms, 1)},
                        )
            if failed is not None:
                _score_grounded(trace, grounded)  # no answer to verify: the retrieval's verdict
                timings["total"] = (time.perf_counter() - begun) * 1000
                return failed
            verify_started = time.perf_counter()
            text, verification, grounded, faithfulness = await self._verified_answer(trace, snap, prompt, messages, generation.text)
            timings["verify"] = (time.perf_counter() - verify_started) * 1000
            sources = given if grounded else []
            _score_grounded(trace, grounded)
            if emit is not None:
                await emit("verification", verification)
            trace.update(output={"response": text, "sources_count": len(sources), "grounded": grounded})
        # Tagged with the snapshot it was answered from: refused if a reload removed a note since.
        await self.memory.remember(session_id, question, text, answered_from=snap.version)
        timings["total"] = (time.perf_counter() - begun) * 1000
        body = {"response": text, **base, "sources": sources, "grounded": grounded, "verification": verification}
        return Answer(200, body, text, timings, faithfulness)

    # -- verification -------------------------------------------------------------------------------
    def _subjects(self, snap: VaultSnapshot) -> frozenset[str]:
        """The names the vault is about (`grasbot.answer.verify.subject_names`), once per snapshot."""
        cached = self._subject_cache
        if cached is None or cached[0] is not snap:
            cached = (snap, subject_names(snap.public.values()))
            self._subject_cache = cached
        return cached[1]

    async def _verified_answer(
        self, trace: Any, snap: VaultSnapshot, prompt: Prompt, messages: list[dict[str, str]], draft: str
    ) -> tuple[str, dict[str, Any], bool, float | None]:
        """Verify `draft` against exactly the passages the model was given, apply `GRASBOT_VERIFY_POLICY`,
        and trace it (span `verification`, score `faithfulness`, tag `unsupported-claims`). Returns the
        answer to give, its verification (the JSON of `vaulttools verify`, plus `policy` and `removed`),
        the final `grounded` (docs/service.md, the decision table) and the draft's faithfulness."""
        policy = self.settings.verify_policy
        passages = context_passages(prompt.notes, snap.hidden)
        subjects = self._subjects(snap)
        with trace.observation("verification", input={"policy": policy, "passages": [p.id for p in passages]}) as span:
            first = verify(draft, passages, subjects)
            checked, text = first, draft  # `checked` is always the verification of `text`
            retried = False
            if policy == "retry" and first.flagged() and self.llm is not None:
                retried = True
                again = [*messages, {"role": "assistant", "content": draft}, {"role": "user", "content": retry_instructions(first.flagged())}]
                try:
                    second = await self.llm.chat(again)
                except LLMError as error:
                    log.warning("verification retry failed (%s): the first answer is kept, dropped", error.code)
                else:
                    if second.text:
                        text, checked = second.text, verify(second.text, passages, subjects)
            removed = [s.as_dict() for s in checked.flagged()] if policy != "flag" else []
            if removed:
                text = NOT_IN_NOTES if needs_fallback(checked) else (drop_flagged(text, checked) or NOT_IN_NOTES)
                checked = verify(text, passages, subjects)  # the offsets and labels of what is given
            grounded = checked.grounded
            body = {**checked.as_dict(), "policy": policy, "removed": removed}
            if retried:
                body["retried"] = True
            faithfulness = first.faithfulness
            if trace.enabled:
                span.update(
                    output=body,
                    metadata={"status_before_policy": first.status, "summary_before_policy": first.summary, "faithfulness": faithfulness},
                )
        if faithfulness is not None:
            trace.score("faithfulness", round(faithfulness, 4), "NUMERIC")
        if first.flagged():
            trace.add_tags(["unsupported-claims"])
        return text, body, grounded, faithfulness

    async def _system_prompt(self, profile: Profile) -> SystemPrompt:
        """This answer's system prompt: from Langfuse Prompts when configured (off the event loop: the
        SDK's first fetch is a blocking call), else the profile's (grasbot/service/prompts.py)."""
        if not self.prompts.enabled:
            return self.prompts.system_prompt(profile)
        return await asyncio.to_thread(self.prompts.system_prompt, profile)

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
    async def health(self, vault_error: str | None = None, details: bool = False) -> dict[str, Any]:
        """The status. `details` (a caller with the reload token) adds where things are on this machine:
        the vault's folder, the state folder and the worker's pid, which an anonymous caller never sees."""
        snap = self.snapshot
        llm = await self.llm.probe() if self.llm is not None else {"reachable": False, "model_available": False}
        if self.llm is not None:
            # Every generation holds one connection of a bounded pool: when all are taken, new questions
            # wait (and end in 504), so the service is not plainly ok even if Ollama answers.
            llm["in_flight"] = self.llm.in_flight
            llm["max_connections"] = self.llm.max_connections
            llm["saturated"] = self.llm.in_flight >= self.llm.max_connections
        shared = {
            "backend": "redis" if self.redis is not None else "local",
            "memory": self.memory.status(),
            "announcements": self.announcer.status(),
            "limits": self.limits.status(),
        }
        shared_ok = all(v == "ok" for k, v in shared.items() if k != "backend")
        healthy = (
            llm["reachable"] and llm["model_available"] and not llm.get("saturated") and vault_error is None and shared_ok
        )
        config = self.settings.public_view()
        body: dict[str, Any] = {
            "status": "ok" if healthy else "degraded",
            "version": __version__,
            "vault_size": snap.size,
            "vault": {
                "notes": snap.size,
                "by_type": snap.by_type,
                "problems": len(snap.problems),
                "vault_version": snap.version,
                "loaded_at": snap.loaded_at,
                **({"error": vault_error} if vault_error else {}),
            },
            "llm": {
                "backend": self.settings.llm_backend,
                "url": redact_url(self.settings.llm_url),
                "model": self.settings.llm_model,
                **llm,
            },
            "config": {k: v for k, v in config.items() if k not in _HEALTH_DETAILS},
            "observability": {"langfuse_enabled": self.observability.enabled},
            "profile": self.profile_view(),
            "prompt": self.prompts.status(),
            "shared": shared,
        }
        if details:
            body["worker_pid"] = os.getpid()
            body["vault"]["dir"] = str(snap.root)
            body["config"] = {**config, "state_dir": str(self.state_dir)}
        return body


def profile_options(options: GenerationOptions, profile: Profile) -> GenerationOptions:
    """`options` with the profile's temperature and max tokens where it sets them (the settings' otherwise)."""
    changes: dict[str, Any] = {}
    if profile.temperature is not None:
        changes["temperature"] = profile.temperature
    if profile.max_tokens is not None:
        changes["num_predict"] = profile.max_tokens
    return dataclasses.replace(options, **changes) if changes else options


#: Settings that say where things are on this machine: only in the `/health` of a caller with the token.
_HEALTH_DETAILS = frozenset({"vault_dir", "state_dir"})


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


def has_reload_token(request: Request, token: str) -> bool:
    """True when `request` carries `Authorization: Bearer <token>` (compared in constant time)."""
    scheme, _, given = request.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


def _log_profile(service: Service) -> None:
    """The start-up line naming the answering profile and where the system prompt comes from."""
    p, prompts = service.profile, service.prompts
    source = f"Langfuse prompt {prompts.name!r} ({prompts.label})" if prompts.enabled else "the profile"
    log.info("answering profile %s@%s (%s), system prompt from %s", p.name, p.version, p.describe()["origin"], source)


async def _log_start(service: Service, root: Path) -> None:
    """The start-up lines: "ready" only when the LLM answers with the model; otherwise what is down and
    what still works. And, loudly, a reload that anyone may trigger."""
    s = service.settings
    if s.reload_token is None:
        log.warning(
            "POST /reload-vault is open: GRASBOT_RELOAD_TOKEN is not set, so anyone who can reach this server "
            "can make it re-read the vault; set GRASBOT_RELOAD_TOKEN (docs/service.md)"
        )
    if s.redis_url is not None and s.session_key is None:
        log.warning(
            "GRASBOT_REDIS_URL is set but GRASBOT_SESSION_KEY is not: a follow-up answered by another replica "
            "keeps its conversation only if every replica shares this GRASBOT_STATE_DIR (docs/deploy.md)"
        )
    _log_profile(service)
    probe = await service.llm.probe() if service.llm is not None else {"reachable": False}
    where = f"{redact_url(s.llm_url)} ({s.llm_backend})"
    server = "Ollama" if s.llm_backend == "ollama" else "The LLM server"
    langfuse = "on" if service.observability.enabled else "off"
    if probe.get("reachable") and probe.get("model_available"):
        log.info(
            "GrasBot ready: vault %s (%d public notes), model %s at %s, langfuse %s",
            root, service.snapshot.size, s.llm_model, where, langfuse,
        )  # fmt: skip
        return
    if probe.get("upstream_status") is not None and probe["upstream_status"] != 404:
        # it answers, but refuses (a wrong LLM_API_KEY: 401) or fails: not a missing model
        down = f"{server} at {where} answers HTTP {probe['upstream_status']} (a wrong LLM_API_KEY or LLM_BASE_URL?)"
        effect = "502 `llm_bad_response`"
    elif probe.get("reachable"):
        hint = f" (`ollama pull {s.llm_model}`)" if s.llm_backend == "ollama" else " (its /models lists what it serves)"
        down = f"{server} at {where} does not have the model {s.llm_model}{hint}"
        effect = "502 `llm_model_not_found`"
    else:
        down = f"{server} cannot be reached at {where} ({probe.get('error', 'llm_unavailable')})"
        effect = "503 `llm_unavailable`"
    log.warning(
        "GrasBot started, but the LLM is down: %s. Questions get %s (with their sources) until it is up; "
        "/health, /reload-vault and /feedback work. Vault %s (%d public notes), langfuse %s",
        down, effect, root, service.snapshot.size, langfuse,
    )  # fmt: skip


def _score_grounded(trace: Any, grounded: bool) -> None:
    """The trace's `grounded` tag and score: the final verdict, after verification when there is an answer."""
    trace.add_tags(["grounded" if grounded else "ungrounded"])
    trace.score("grounded", 1.0 if grounded else 0.0, "BOOLEAN")


# -- the event stream (GET /ask/stream; docs/service.md, "The stream") -------------------------------
# Framing, keep-alive comments and the client's disconnection are sse-starlette's; what is GrasBot's is
# below: an `id:` on every event, a long `retry:` first, 204 to a reconnection, rejections as an event.
# (FastAPI's own SSE runs only a generator endpoint, whose status is sent before its first line runs, so
# the 204, the 403 and the rejection stream could not be chosen before it; and its ping interval is fixed.)

#: The reference chat page (`/demo`, when DEMO_PAGE is on), shipped as package data.
STATIC_DIR = Path(__file__).with_name("static")

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
            return _error(403, "origin_not_allowed", message)
        return None
    if origin in allowed or origin == f"{request.url.scheme}://{request.url.netloc}":
        return None
    response = _error(403, "origin_not_allowed", message)
    # Readable by the refused page: an EventSource that cannot read a response (a CORS failure) retries
    # it every few seconds for ever, one that reads a 403 stops. The body says nothing but the refusal.
    response.headers["Access-Control-Allow-Origin"] = origin
    response.headers["Vary"] = "Origin"
    return response


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
        await _log_start(service, root)
        try:
            yield
        finally:
            await service.stop()

    # FastAPIOffline: the same FastAPI app, with the Swagger UI and ReDoc assets of /docs and /redoc served
    # from the package (under /static-offline-docs) instead of a CDN, so the pages work offline.
    app = FastAPIOffline(
        title="GrasBot",
        version=__version__,
        description="Sourced answers about the public notes of an Obsidian vault.",
        lifespan=lifespan,
    )
    app.state.service = service
    app.add_middleware(_CatchAll)
    # Every request body capped (413 before it is read whole); added before CORS, so CORS wraps it and
    # a 413 carries the CORS headers a browser needs to read it.
    app.add_middleware(RequestBodyLimit, max_bytes=settings.max_body_bytes)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
            expose_headers=["Server-Timing"],  # a page may split the LLM's time from the rest, as the benchmark does
        )
    if settings.demo_page:
        app.mount("/demo", StaticFiles(directory=STATIC_DIR, html=True), name="demo")

    @app.exception_handler(ApiError)
    async def _api_error(_: Request, exc: ApiError) -> JSONResponse:
        response = _error(exc.status, exc.code, exc.message, **exc.extra)
        if "retry_after" in exc.extra:
            response.headers["Retry-After"] = str(exc.extra["retry_after"])
        return response

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
    ) -> Response:
        refusal = origin_refusal(request, settings.cors_origins)
        if refusal is not None:
            return refusal
        question = check_question(q, settings.ask_max_chars)
        sid, uid = _check_id("session_id", session_id), _check_id("user_id", user_id)
        await service.catch_up()  # never an answer from a vault another worker has reloaded since
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

    @app.get(
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
        refusal = origin_refusal(request, settings.cors_origins)
        if refusal is not None:
            return refusal
        if request.headers.get("last-event-id") is not None:
            return reconnection_refusal()
        as_event_source = accepts_event_stream(request)
        try:
            question = check_question(q, settings.ask_max_chars)
            sid, uid = _check_id("session_id", session_id), _check_id("user_id", user_id)
            await service.catch_up()  # never an answer from a vault another worker has reloaded since
            slot = await service.admit(visitor_of(request))  # 429 before any work (grasbot/service/limits.py)
        except ApiError as error:
            if not as_event_source:
                raise
            return rejection_stream(error, settings)
        events = answer_events(service, question, sid, uid, legacy_error=not as_event_source, slot=slot)
        return event_stream_response(events, settings)

    @app.get("/health", summary="Status, configuration (no secrets), vault counts, LLM reachability")
    async def health(request: Request) -> JSONResponse:
        vault_error = None
        try:
            await service.catch_up()
        except ApiError as error:
            vault_error = error.code
        # Where the vault and the process are (folder, pid) only for a caller with the reload token.
        details = settings.reload_token is not None and has_reload_token(request, settings.reload_token)
        return JSONResponse(await service.health(vault_error, details=details))

    @app.post("/reload-vault", summary="Re-read the vault and swap the index atomically")
    async def reload_vault(request: Request) -> JSONResponse:
        token = settings.reload_token
        if token is not None and not has_reload_token(request, token):
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
