"""The service's settings: read once from the environment and an optional `.env` file.

The real environment wins over `.env` (a deployment can override a developer's file). Every variable is
optional; a value that does not parse raises `ConfigError` naming the variable, never a traceback from deep
inside the service. Secrets (`GRASBOT_RELOAD_TOKEN`, `LANGFUSE_SECRET_KEY`) are kept out of `repr()` and out
of `Settings.public_view()`, which is what `/health` shows.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from dotenv import dotenv_values

#: Every variable the service reads, with its meaning; docs/service.md lists the same.
ENV_VARIABLES: dict[str, str] = {
    "OLLAMA_URL": "Ollama server (default http://localhost:11434)",
    "LLM_MODEL": "model name (default qwen3:8b)",
    "VAULT_DIR": "the vault folder (default ./vault)",
    "SEARCH_TOP_K": "notes retrieved per question (default 5)",
    "SEARCH_MIN_SCORE": "grounded threshold (default: the engine's calibrated value)",
    "SEARCH_SECONDARY_MAX_CHARS": "secondary notes are cut to this many characters (default 1500)",
    "SEARCH_SECONDARY_KEEP_RATIO": "a secondary note scoring at least ratio x the first stays whole (default 0.8)",
    "GRASBOT_RELOAD_TOKEN": "when set, POST /reload-vault needs `Authorization: Bearer <token>` (set but blank: error)",
    "LANGFUSE_PUBLIC_KEY": "Langfuse public key (tracing is off unless the three Langfuse variables are set)",
    "LANGFUSE_SECRET_KEY": "Langfuse secret key",
    "LANGFUSE_BASE_URL": "Langfuse server URL (LANGFUSE_HOST is accepted as a fallback)",
    "LANGFUSE_FLUSH_INTERVAL": "seconds between two exports of buffered spans (default: the SDK's, 5)",
    "LANGFUSE_TIMEOUT": "seconds the SDK waits for Langfuse per request, retries included (default: the SDK's, 5)",
    "ASK_MAX_CHARS": "longest accepted question, in characters (default 2000)",
    "LLM_TIMEOUT": "seconds before a generation is abandoned with 504 (default 60)",
    "LLM_CONNECT_TIMEOUT": "seconds to wait for a connection to Ollama before answering 503 (default 1.5)",
    "LLM_NUM_CTX": "Ollama option num_ctx (default 8192)",
    "LLM_NUM_PREDICT": "Ollama option num_predict (default 1024)",
    "LLM_TEMPERATURE": "Ollama option temperature (default 0.4)",
    "LLM_THINK": "top-level `think` flag sent to Ollama (default false)",
    "LLM_KEEP_ALIVE": "how long Ollama keeps the model loaded (default 30m)",
    "CORS_ORIGINS": "comma-separated origins allowed by CORS (default: none, CORS off); `*` allows any",
    "MEMORY_MAX_TURNS": "conversation turns remembered per session_id (default 4)",
    "MEMORY_MAX_CHARS": "characters of history kept per session (default 6000)",
    "MEMORY_TTL_SECONDS": "a remembered turn older than this is forgotten (default 1800)",
    "MEMORY_MAX_SESSIONS": "sessions remembered at once; the least recent is dropped first (default 10000)",
    # -- the service's own guards (request bodies, private state, an open reload)
    "MAX_BODY_BYTES": "longest request body accepted, in bytes (default 16384); 413 `body_too_large` above",
    "GRASBOT_STATE_DIR": "private folder (0700) for the reload stamp and lock and the session key (default: the user's state folder)",
    "GRASBOT_ALLOW_OPEN_RELOAD": "let `grasbot serve` bind a non-loopback address with no GRASBOT_RELOAD_TOKEN (default false)",
    "GRASBOT_REDIS_URL": "Redis (or Valkey) shared by every replica: memory, reload announcements, limits (default: unset, in-process)",
    "GRASBOT_RATE_LIMIT": "questions per minute per visitor address, 429 above (default 30; 0: no limit)",
    "GRASBOT_RATE_BURST": "questions a visitor may send at once above the steady rate (default 10)",
    "GRASBOT_MAX_GENERATIONS": "answers generated at once, over every replica with Redis; 429 above (default 8; 0: no cap)",
    "STREAM_RETRY_MS": "the `retry:` /ask/stream sends first: how long a browser waits before reconnecting (default 86400000, a day)",
    "STREAM_PING_SECONDS": "seconds between two keep-alive comments on an /ask/stream (default 15)",
    "DEMO_PAGE": "serve the reference chat page at /demo (default false)",
}


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message names the variable."""


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


@dataclass(frozen=True, slots=True, repr=False)
class Settings:
    """Everything the service can be configured with. Immutable: build a new one with `replace()`."""

    ollama_url: str = "http://localhost:11434"
    llm_model: str = "qwen3:8b"
    vault_dir: Path = Path("vault")
    search_top_k: int = 5
    search_min_score: float | None = None
    search_secondary_max_chars: int = 1500
    search_secondary_keep_ratio: float = 0.8
    reload_token: str | None = field(default=None, repr=False)
    langfuse_public_key: str | None = None
    langfuse_secret_key: str | None = field(default=None, repr=False)
    langfuse_base_url: str | None = None
    langfuse_flush_interval: float | None = None
    langfuse_timeout: int | None = None
    ask_max_chars: int = 2000
    llm_timeout: float = 60.0
    llm_connect_timeout: float = 1.5
    llm_num_ctx: int = 8192
    llm_num_predict: int = 1024
    llm_temperature: float = 0.4
    llm_think: bool = False
    llm_keep_alive: str = "30m"
    cors_origins: tuple[str, ...] = ()
    memory_max_turns: int = 4
    memory_max_chars: int = 6000
    memory_ttl_seconds: float = 1800.0
    memory_max_sessions: int = 10_000
    # -- the service's own guards (request bodies, private state, an open reload) --------------------
    #: MAX_BODY_BYTES: a request whose body is longer gets 413 before the body is read whole (a feedback
    #: body is a few hundred bytes; a 2,000-character comment fits unless written in escaped emoji).
    max_body_bytes: int = 16_384
    #: GRASBOT_STATE_DIR: the private folder (mode 0700, files 0600) where the workers of one deployment
    #: share the reload stamp, its lock and the key that signs session ids. None: the user's state
    #: folder (`platformdirs.user_state_dir("grasbot")`), never a shared temp folder.
    state_dir: Path | None = None
    #: GRASBOT_ALLOW_OPEN_RELOAD: `grasbot serve` refuses a non-loopback `--host` while POST /reload-vault
    #: needs no token, unless this (or `--allow-open-reload`) says it is meant.
    allow_open_reload: bool = False
    # -- several replicas and admission (docs/deploy.md) ----------------------------------------------
    #: GRASBOT_REDIS_URL: conversation memory, reload announcements and limits shared by every replica
    #: through this Redis (or Valkey); unset: in this process (and the stamp file between workers).
    redis_url: str | None = field(default=None, repr=False)
    #: GRASBOT_RATE_LIMIT: questions per minute per visitor (their address); 0: no limit.
    rate_limit: int = 30
    #: GRASBOT_RATE_BURST: questions a visitor may send at once above the steady rate.
    rate_burst: int = 10
    #: GRASBOT_MAX_GENERATIONS: answers generated at once (over every replica with Redis); 0: no cap.
    max_generations: int = 8
    stream_retry_ms: int = 86_400_000
    stream_ping_seconds: float = 15.0
    demo_page: bool = False

    def __post_init__(self) -> None:
        # A blank token would make `Authorization: Bearer ` pass: never accept one, however it was built.
        if self.reload_token is not None and not self.reload_token.strip():
            raise ConfigError(_BLANK_TOKEN)

    # -- loading ------------------------------------------------------------------------------------
    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, env_file: str | Path | None = ".env"
    ) -> Settings:
        """Settings from `environ` (default: `os.environ`) over the variables of `env_file`, if it exists.

        Pass `env_file=None` to ignore any `.env` file (tests do, so a developer's file cannot leak in).
        """
        values: dict[str, str] = {}
        if env_file is not None and Path(env_file).is_file():
            values.update({k: v for k, v in dotenv_values(env_file).items() if v is not None})
        values.update(os.environ if environ is None else environ)
        return cls.from_mapping(values)

    @classmethod
    def from_mapping(cls, env: Mapping[str, str]) -> Settings:
        def get(name: str) -> str | None:
            value = env.get(name)
            if value is None:
                return None
            value = value.strip()
            return value if value else None

        kwargs: dict[str, Any] = {}
        if (v := get("OLLAMA_URL")) is not None:
            kwargs["ollama_url"] = _url("OLLAMA_URL", v)
        if (v := get("LLM_MODEL")) is not None:
            kwargs["llm_model"] = v
        if (v := get("VAULT_DIR")) is not None:
            kwargs["vault_dir"] = Path(v).expanduser()
        if (v := get("SEARCH_TOP_K")) is not None:
            kwargs["search_top_k"] = _int("SEARCH_TOP_K", v, 1, 100)
        if (v := get("SEARCH_MIN_SCORE")) is not None:
            kwargs["search_min_score"] = _float("SEARCH_MIN_SCORE", v, 0.0, None)
        if (v := get("SEARCH_SECONDARY_MAX_CHARS")) is not None:
            kwargs["search_secondary_max_chars"] = _int("SEARCH_SECONDARY_MAX_CHARS", v, 100, None)
        if (v := get("SEARCH_SECONDARY_KEEP_RATIO")) is not None:
            kwargs["search_secondary_keep_ratio"] = _float("SEARCH_SECONDARY_KEEP_RATIO", v, 0.0, 1.0)
        kwargs["reload_token"] = _reload_token(env.get("GRASBOT_RELOAD_TOKEN"))
        kwargs["langfuse_public_key"] = get("LANGFUSE_PUBLIC_KEY")
        kwargs["langfuse_secret_key"] = get("LANGFUSE_SECRET_KEY")
        base = get("LANGFUSE_BASE_URL") or get("LANGFUSE_HOST")
        kwargs["langfuse_base_url"] = _url("LANGFUSE_BASE_URL", base) if base else None
        if (v := get("LANGFUSE_FLUSH_INTERVAL")) is not None:
            kwargs["langfuse_flush_interval"] = _float("LANGFUSE_FLUSH_INTERVAL", v, 0.01, None)
        if (v := get("LANGFUSE_TIMEOUT")) is not None:
            kwargs["langfuse_timeout"] = _int("LANGFUSE_TIMEOUT", v, 1, 600)
        if (v := get("ASK_MAX_CHARS")) is not None:
            kwargs["ask_max_chars"] = _int("ASK_MAX_CHARS", v, 1, 1_000_000)
        if (v := get("LLM_TIMEOUT")) is not None:
            kwargs["llm_timeout"] = _float("LLM_TIMEOUT", v, 0.01, None)
        if (v := get("LLM_CONNECT_TIMEOUT")) is not None:
            kwargs["llm_connect_timeout"] = _float("LLM_CONNECT_TIMEOUT", v, 0.01, None)
        if (v := get("LLM_NUM_CTX")) is not None:
            kwargs["llm_num_ctx"] = _int("LLM_NUM_CTX", v, 256, None)
        if (v := get("LLM_NUM_PREDICT")) is not None:
            kwargs["llm_num_predict"] = _int("LLM_NUM_PREDICT", v, -2, None)
        if (v := get("LLM_TEMPERATURE")) is not None:
            kwargs["llm_temperature"] = _float("LLM_TEMPERATURE", v, 0.0, 2.0)
        if (v := env.get("LLM_THINK")) is not None:
            kwargs["llm_think"] = _bool("LLM_THINK", v)
        if (v := get("LLM_KEEP_ALIVE")) is not None:
            kwargs["llm_keep_alive"] = v
        if (v := get("CORS_ORIGINS")) is not None:
            kwargs["cors_origins"] = tuple(o.strip() for o in v.split(",") if o.strip())
        if (v := get("MEMORY_MAX_TURNS")) is not None:
            kwargs["memory_max_turns"] = _int("MEMORY_MAX_TURNS", v, 0, 50)
        if (v := get("MEMORY_MAX_CHARS")) is not None:
            kwargs["memory_max_chars"] = _int("MEMORY_MAX_CHARS", v, 0, None)
        if (v := get("MEMORY_TTL_SECONDS")) is not None:
            kwargs["memory_ttl_seconds"] = _float("MEMORY_TTL_SECONDS", v, 0.0, None)
        if (v := get("MEMORY_MAX_SESSIONS")) is not None:
            kwargs["memory_max_sessions"] = _int("MEMORY_MAX_SESSIONS", v, 1, None)
        # -- the service's own guards
        if (v := get("MAX_BODY_BYTES")) is not None:
            kwargs["max_body_bytes"] = _int("MAX_BODY_BYTES", v, 256, None)
        if (v := get("GRASBOT_STATE_DIR")) is not None:
            kwargs["state_dir"] = Path(v).expanduser()
        if (v := env.get("GRASBOT_ALLOW_OPEN_RELOAD")) is not None:
            kwargs["allow_open_reload"] = _bool("GRASBOT_ALLOW_OPEN_RELOAD", v)
        # -- several replicas and admission
        if (v := get("GRASBOT_REDIS_URL")) is not None:
            if urlsplit(v).scheme not in ("redis", "rediss", "unix"):
                raise ConfigError(f"GRASBOT_REDIS_URL must be a redis://, rediss:// or unix:// URL, not {redact_url(v)!r}")
            kwargs["redis_url"] = v
        if (v := get("GRASBOT_RATE_LIMIT")) is not None:
            kwargs["rate_limit"] = _int("GRASBOT_RATE_LIMIT", v, 0, 1_000_000)
        if (v := get("GRASBOT_RATE_BURST")) is not None:
            kwargs["rate_burst"] = _int("GRASBOT_RATE_BURST", v, 1, 1_000_000)
        if (v := get("GRASBOT_MAX_GENERATIONS")) is not None:
            kwargs["max_generations"] = _int("GRASBOT_MAX_GENERATIONS", v, 0, 100_000)
        if (v := get("STREAM_RETRY_MS")) is not None:
            kwargs["stream_retry_ms"] = _int("STREAM_RETRY_MS", v, 0, None)
        if (v := get("STREAM_PING_SECONDS")) is not None:
            kwargs["stream_ping_seconds"] = _float("STREAM_PING_SECONDS", v, 0.01, None)
        if (v := env.get("DEMO_PAGE")) is not None:
            kwargs["demo_page"] = _bool("DEMO_PAGE", v)
        return cls(**kwargs)

    def with_overrides(self, **changes: Any) -> Settings:
        return replace(self, **changes)

    def __repr__(self) -> str:
        # The public view: a settings object printed in a log or a traceback shows no secret.
        return "Settings(" + ", ".join(f"{k}={v!r}" for k, v in self.public_view().items()) + ")"

    # -- derived ------------------------------------------------------------------------------------
    @property
    def langfuse_enabled(self) -> bool:
        """Tracing is on only when the three Langfuse variables are set (the seed's rule)."""
        return bool(self.langfuse_public_key and self.langfuse_secret_key and self.langfuse_base_url)

    def public_view(self) -> dict[str, Any]:
        """The active configuration without any secret, for `/health` and logs."""
        hidden = {"reload_token", "langfuse_secret_key", "langfuse_public_key", "redis_url"}
        view: dict[str, Any] = {}
        for f in fields(self):
            if f.name in hidden:
                continue
            value = getattr(self, f.name)
            if isinstance(value, Path):
                value = str(value)
            elif isinstance(value, tuple):
                value = list(value)
            elif f.name in ("ollama_url", "langfuse_base_url") and value:
                value = redact_url(value)
            view[f.name] = value
        view["reload_token_set"] = self.reload_token is not None
        view["langfuse_enabled"] = self.langfuse_enabled
        return view


_BLANK_TOKEN = (
    "GRASBOT_RELOAD_TOKEN: is set but empty (a failed `$(...)`?); give it a token, or unset it to leave "
    "POST /reload-vault without authentication"
)


def _reload_token(value: str | None) -> str | None:
    """Absent: no authentication (documented). Set but blank: refused, never read as "no token"."""
    if value is None:
        return None
    if not value.strip():
        raise ConfigError(_BLANK_TOKEN)
    return value.strip()


def redact_url(url: str) -> str:
    """`url` without any user:password part (an Ollama behind a proxy may carry credentials)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit((parts.scheme, "***@" + host, parts.path, parts.query, parts.fragment))


def _url(name: str, value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"{name}: expected an http(s) URL such as http://localhost:11434, got {value!r}")
    return value.rstrip("/")


def _int(name: str, value: str, low: int | None, high: int | None) -> int:
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(f"{name}: expected an integer, got {value!r}") from None
    _check_range(name, number, low, high)
    return number


def _float(name: str, value: str, low: float | None, high: float | None) -> float:
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(f"{name}: expected a number, got {value!r}") from None
    if not math.isfinite(number):  # NaN, inf: `LLM_TIMEOUT=inf` would remove the guard against a hung model
        raise ConfigError(f"{name}: expected a finite number, got {value!r}")
    _check_range(name, number, low, high)
    return number


def _check_range(name: str, number: float, low: float | None, high: float | None) -> None:
    if low is not None and number < low:
        raise ConfigError(f"{name}: must be at least {low}, got {number}")
    if high is not None and number > high:
        raise ConfigError(f"{name}: must be at most {high}, got {number}")


def _bool(name: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ConfigError(f"{name}: expected true or false, got {value!r}")
