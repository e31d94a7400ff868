"""The FastAPI app (docs/service.md, "Start the API"; docs/architecture.md, "Layers"): `create_app`, the
factory every uvicorn worker, test and benchmark calls, with its lifespan (the `Service` started and stopped,
the start-up lines) and what wraps the routes (errors, the body limit, CORS, the demo page).

`create_app()` is a factory: each worker builds its own app, vault snapshot, LLM client and Langfuse client
(`uvicorn --factory grasbot.service.app:create_app`; `grasbot serve` runs it so).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.staticfiles import StaticFiles
from fastapi_offline import FastAPIOffline

from grasbot import __version__
from grasbot.service import collector
from grasbot.service.body_limit import RequestBodyLimit
from grasbot.service.errors import CatchAll, add_error_handlers
from grasbot.service.observability import follow_uvicorn_logging
from grasbot.service.routes import router
from grasbot.service.service import Service
from grasbot.service.settings import Settings, redact_url

# The service's records keep the logger name they have always had: a logging configuration may route by it.
log = logging.getLogger("grasbot.service.api")

#: The reference chat page (`/demo`, when DEMO_PAGE is on), shipped as package data.
STATIC_DIR = Path(__file__).with_name("static")


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
        try:
            await service.start()
            await _log_start(service, root)
        finally:
            collector.resume()  # paused by `grasbot serve` for the start (grasbot/service/collector.py)
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
    app.add_middleware(CatchAll)
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
    add_error_handlers(app)
    app.include_router(router)
    return app


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
