"""LLM backends behind one protocol. Used by the answer and service layers only, never by the engine.

`LLMBackend` (grasbot/llm/base.py) is the protocol: `chat`, `stream`, `probe`, `close`, typed errors.
`BACKENDS` names the implementations, the values LLM_BACKEND accepts; `create_backend` builds the one an
`LLMConfig` asks for. A new backend is a module here with an `LLMBackend` subclass, added to `BACKENDS`
and `_EXPORTS`.

Each backend's module is imported when that backend is first used (PEP 562, as `grasbot`'s own names): a
service configured for one backend never loads the other's code or client library (docs/architecture.md,
"Fast starts").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from grasbot.lazy import lazy_exports
from grasbot.llm.base import (
    Chunk,
    Generation,
    GenerationOptions,
    LLMBackend,
    LLMEmptyAnswer,
    LLMError,
    LLMModelNotFound,
    LLMResponseError,
    LLMTimeout,
    LLMUnavailable,
    Message,
    ThinkFilter,
    strip_think,
)

#: Every backend: the name LLM_BACKEND gives it -> its class (`backend_class` imports it).
BACKENDS: dict[str, str] = {"ollama": "OllamaBackend", "openai": "OpenAIBackend"}

# public name -> the module that defines it, imported on first use
_EXPORTS: dict[str, str] = {"OllamaBackend": "grasbot.llm.ollama", "OpenAIBackend": "grasbot.llm.openai"}


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """What a backend is built from (the service's settings give it: `Settings.llm_config()`)."""

    backend: str = "ollama"
    base_url: str | None = None  # None: the backend's `default_url`
    model: str = "qwen3:8b"
    api_key: str | None = field(default=None, repr=False)
    options: GenerationOptions = field(default_factory=GenerationOptions)
    timeout: float = 60.0
    connect_timeout: float = 1.5


def backend_class(name: str) -> type[LLMBackend]:
    """The class of the backend LLM_BACKEND `name` selects (KeyError for an unknown name); its module,
    and only its, is imported now."""
    cls: type[LLMBackend] = __getattr__(BACKENDS[name])
    return cls


def create_backend(config: LLMConfig) -> LLMBackend:
    """The backend `config` names, ready to use (create it inside the event loop that uses it)."""
    cls = backend_class(config.backend)
    return cls(
        config.base_url or cls.default_url,
        config.model,
        config.options,
        api_key=config.api_key,
        timeout=config.timeout,
        connect_timeout=config.connect_timeout,
    )


__all__ = [
    "BACKENDS",
    "Chunk",
    "Generation",
    "GenerationOptions",
    "LLMBackend",
    "LLMConfig",
    "LLMEmptyAnswer",
    "LLMError",
    "LLMModelNotFound",
    "LLMResponseError",
    "LLMTimeout",
    "LLMUnavailable",
    "Message",
    "OllamaBackend",
    "OpenAIBackend",
    "ThinkFilter",
    "backend_class",
    "create_backend",
    "strip_think",
]


__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)


if TYPE_CHECKING:  # for type checkers and editors: the same names, imported eagerly
    from grasbot.llm.ollama import OllamaBackend
    from grasbot.llm.openai import OpenAIBackend
