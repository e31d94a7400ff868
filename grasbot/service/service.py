"""The `Service` (docs/architecture.md, "The way of a question"): the state behind the routes (settings,
the current vault snapshot, the LLM backend, conversation memory, admission limits, tracing) and the answer
to one question, streamed or not (`Service.answer`), and the status `/health` gives (`Service.health`).

Its parts live beside it: the snapshot in grasbot/service/vault_snapshot.py, reload coordination in
grasbot/service/reload.py, the verification of an answer in grasbot/service/verification.py, what a
response shows of notes in grasbot/service/views.py. When the LLM fails (502/503/504) the error body still
carries the retrieved `sources` (docs/service.md, "The API").
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import logging
import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grasbot import __version__
from grasbot.answer.filtering import FilterStage, filters_of
from grasbot.answer.pipeline import Retrieval, RetrievalLimits, RetrievalPipeline
from grasbot.answer.profile import Profile, ProfileError, load_profile
from grasbot.answer.prompt import build_prompt
from grasbot.answer.verify_policy import evidence_band
from grasbot.llm import Generation, GenerationOptions, LLMBackend, LLMEmptyAnswer, LLMError, create_backend
from grasbot.search import semantic
from grasbot.search.filters import FilterConfig
from grasbot.search.index import Hit, SearchConfig, SearchResult
from grasbot.service.errors import ApiError
from grasbot.service.limits import Limits, LimitsConfig, LocalLimits, RedisLimits
from grasbot.service.memory import ConversationMemory, LocalMemory, Turn
from grasbot.service.observability import SHUTDOWN_SECONDS, Observability, retrieval_relevance
from grasbot.service.prompts import PromptSource, SystemPrompt
from grasbot.service.reload import VaultReloads
from grasbot.service.sessions import SessionIds
from grasbot.service.settings import Settings, redact_url
from grasbot.service.shared import FileAnnouncer, RedisAnnouncer, RedisMemory, connect
from grasbot.service.state import private_dir, reload_stamp_path, session_key
from grasbot.service.tasks import cancel_and_wait
from grasbot.service.vault_snapshot import VaultSnapshot, load_snapshot
from grasbot.service.views import scrub, source_view

# The service's records keep the logger name they have always had: a logging configuration may route by it.
log = logging.getLogger("grasbot.service.api")


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
        # Workers of one deployment serve the same vault folder: a reload in one is announced, and the
        # others catch up before their next answer (grasbot/service/reload.py).
        self.state_dir = private_dir(settings.state_dir)
        self.stamp_path = reload_stamp_path(vault_dir, self.state_dir)
        # Replicas on several machines share GRASBOT_SESSION_KEY (docs/deploy.md); the workers of one
        # machine share the key of the state folder.
        self.sessions = SessionIds(settings.session_key.encode() if settings.session_key else session_key(self.state_dir))
        # With Redis (several machines or containers, docs/deploy.md), memory, reload announcements and
        # admission limits are shared through it; without, they live in this process and the stamp file.
        # A generation slot is a lease that comes back by itself when its holder vanished; it must outlast
        # the longest an answer holds it: LLM_TIMEOUT per generation, and GRASBOT_VERIFY_POLICY=retry may
        # generate twice. A shorter lease would hand a slow answer's slot to another while it still runs.
        generations = 2 if settings.verify_policy == "retry" else 1
        limits = LimitsConfig(
            rate=settings.rate_limit, period=60.0, burst=settings.rate_burst,
            max_generations=settings.max_generations, lease_seconds=generations * settings.llm_timeout + 30,
        )  # fmt: skip
        self.redis: Any | None = None
        announcer: FileAnnouncer | RedisAnnouncer
        self.memory: LocalMemory | RedisMemory
        self.limits: Limits
        if settings.redis_url:
            self.redis = connect(settings.redis_url)
            announcer = RedisAnnouncer(self.redis, url=settings.redis_url)
            self.memory = RedisMemory(
                self.redis,
                max_turns=settings.memory_max_turns,
                max_chars=settings.memory_max_chars,
                ttl_seconds=settings.memory_ttl_seconds,
            )
            self.limits = RedisLimits(self.redis, limits)
        else:
            announcer = FileAnnouncer(self.stamp_path)
            self.memory = LocalMemory(
                ConversationMemory(
                    max_turns=settings.memory_max_turns,
                    max_chars=settings.memory_max_chars,
                    ttl_seconds=settings.memory_ttl_seconds,
                    max_sessions=settings.memory_max_sessions,
                )
            )
            self.limits = LocalLimits(limits)
        # (the announced version is read before the vault: a reload announced while this worker loads is followed)
        self.reloads = VaultReloads(self, announcer)
        self.privacy = settings.privacy()
        # GRASBOT_SEMANTIC: every search of this process re-ranks (grasbot/search/semantic.py); a model that
        # cannot be loaded stops the start (`grasbot serve` says so in one line before any worker starts)
        ranker = semantic.configure(settings.semantic, store=settings.semantic_cache or semantic.default_store())
        # With it, a search may embed the notes it meets for the first time (0.3 s each): searches then run
        # in one thread of their own (one at a time, as on the event loop, since an index is not shared
        # between threads), so that /health, streams and LLM calls go on meanwhile.
        self._retrieval_thread = ThreadPoolExecutor(1, thread_name_prefix="grasbot-retrieval") if ranker is not None else None
        self.snapshot = self.read_vault(self.reloads.first_version)
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
        self._subject_cache: tuple[VaultSnapshot, frozenset[str]] | None = None

    async def start(self) -> None:
        self.reloads.listen()
        config = dataclasses.replace(self.settings.llm_config(), options=self.options)  # with the profile's
        self.llm = create_backend(config)  # LLM_BACKEND: Ollama or OpenAI-compatible

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run `coro` in a task of its own, held until it ends (never garbage-collected while pending)."""
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def stop(self) -> None:
        await self.reloads.stop()
        if self._retrieval_thread is not None:
            self._retrieval_thread.shutdown(wait=False, cancel_futures=True)
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

    # -- reload (grasbot/service/reload.py) ---------------------------------------------------------
    def read_vault(self, version: int) -> VaultSnapshot:
        """The vault read and indexed as `version` (in a worker thread; OSError for a bad root)."""
        return load_snapshot(self.vault_dir, self.search_config, version, self.privacy)

    async def reload_profile(self) -> None:
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
                if self._retrieval_thread is None:
                    retrieval = self._retrieve(snap, question, history)
                else:  # the re-ranking may embed notes (seconds): off the event loop, one search at a time
                    run = functools.partial(contextvars.copy_context().run, self._retrieve, snap, question, history)
                    retrieval = await asyncio.get_running_loop().run_in_executor(self._retrieval_thread, run)
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
            # (the verifier is loaded by the first answer to verify, not by the start: docs/architecture.md)
            from grasbot.answer.verify import context_passages
            from grasbot.service.verification import verified_answer

            passages = context_passages(prompt.notes, snap.hidden)
            text, verification, grounded, faithfulness = await verified_answer(
                trace, self.llm, s.verify_policy, passages, self._subjects(snap), messages, generation.text
            )
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

    def _subjects(self, snap: VaultSnapshot) -> frozenset[str]:
        """The names the vault is about (`grasbot.answer.verify.subject_names`), once per snapshot."""
        cached = self._subject_cache
        if cached is None or cached[0] is not snap:
            from grasbot.answer.verify import subject_names

            cached = (snap, subject_names(snap.public.values()))
            self._subject_cache = cached
        return cached[1]

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
                meta[key] = scrub(value, snap.hidden)
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
            "announcements": self.reloads.announcer.status(),
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


def _score_grounded(trace: Any, grounded: bool) -> None:
    """The trace's `grounded` tag and score: the final verdict, after verification when there is an answer."""
    trace.add_tags(["grounded" if grounded else "ungrounded"])
    trace.score("grounded", 1.0 if grounded else 0.0, "BOOLEAN")
