"""LLM backends behind one protocol. Used by the answer and service layers only, never by the engine.

`LLMBackend` (grasbot/llm/base.py) is the protocol: `chat`, `stream`, `probe`, `close`, typed errors.
`BACKENDS` names the implementations, the values LLM_BACKEND accepts; `create_backend` builds the one an
`LLMConfig` asks for. A new backend is a module here with an `LLMBackend` subclass, added to `BACKENDS`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
from grasbot.llm.ollama import OllamaBackend
from grasbot.llm.openai import OpenAIBackend

#: Every backend by the name LLM_BACKEND gives it.
BACKENDS: dict[str, type[LLMBackend]] = {b.name: b for b in (OllamaBackend, OpenAIBackend)}


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


def create_backend(config: LLMConfig) -> LLMBackend:
    """The backend `config` names, ready to use (create it inside the event loop that uses it)."""
    cls = BACKENDS[config.backend]
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
    "create_backend",
    "strip_think",
]
