"""Names a package exports, each imported from its module on first use (PEP 562).

`grasbot` and `grasbot.llm` both keep their public names this way (docs/architecture.md, "The public
API" and "Fast starts"): `import grasbot` loads no engine module, and a service configured for one LLM
backend never loads the other's code or client library. This module imports nothing but `importlib`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(namespace: dict[str, Any], exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of the package whose `globals()` is `namespace`, for `exports`
    (public name -> the module that defines it). A name is imported on its first look-up, then kept in
    `namespace`, so later look-ups are plain attribute reads."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
