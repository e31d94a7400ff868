"""Which optional part of the install a command needs, and the one-line message when it is missing.

The core install (`pip install grasbot-vaulttools`) has the engine, `lint`, `new`, `ask`, `eval` and
`reload`; `import pdf` needs the `pdf` extra (pypdfium2), `watch` the `watch` extra (watchdog), `tui` the `tui` extra (Textual, watchdog), `grasbot
serve` the `serve` extra (FastAPI, uvicorn, the ollama client, Langfuse): README, "Install"."""

from __future__ import annotations

import importlib.util

__all__ = ["EXTRAS", "missing_extra"]

#: extra -> the modules it provides that its commands import.
EXTRAS: dict[str, tuple[str, ...]] = {
    "watch": ("watchdog",),
    "pdf": ("pypdfium2",),
    "tui": ("textual", "watchdog", "platformdirs"),
    "serve": ("fastapi", "starlette", "pydantic", "uvicorn", "h11", "anyio", "ollama", "langfuse", "opentelemetry",
              "dotenv", "fastapi_offline", "sse_starlette", "platformdirs"),
}


def missing_extra(extra: str, command: str) -> str | None:
    """None when every module of `extra` can be imported; else the message saying what to install."""
    missing = [name for name in EXTRAS[extra] if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    return (f"`{command}` needs the `{extra}` extra, which is not installed (missing: {', '.join(missing)}): "
            f"pip install 'grasbot-vaulttools[{extra}]' (or, from a clone, pip install -e '.[{extra}]'; "
            f"`make run` installs everything)")
