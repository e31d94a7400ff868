"""`vaulttools lint`: taxonomy-driven rules, broken links, CI report formats and lossless fixes.

Public API (stable; the watcher, the TUI and users' scripts call these):

- `lint_vault(vault, taxonomy, config, index=None, *, cache=None, progress=None) -> LintResult`
- `lint_notes(vault, taxonomy, paths, config=None, index=None) -> list[Diagnostic]`
- `apply_fixes(vault, diagnostics, taxonomy, config, *, write=True) -> list[FileFix]`
- `load_config(vault_root) -> LintConfig`
- `render(result, fmt) -> str` with `fmt` in `FORMATS` ("text", "json", "github", "sarif")
- `Diagnostic`, `Severity`, `Fix`, `Edit`, `RULES` (the rule units: name, severity, docs, check; `vaulttools.lint.rule`)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vaulttools.lint.config import ConfigError, LintConfig, load_config
    from vaulttools.lint.diagnostics import Diagnostic, Edit, Fix, Severity
    from vaulttools.lint.engine import ENGINE_VERSION, LintResult, apply_fixes, lint_notes, lint_vault
    from vaulttools.lint.fixes import FileFix
    from vaulttools.lint.formats import FORMATS, render
    from vaulttools.lint.registry import RULE_NAMES, RULES, Rule

# Imported on first use (PEP 562): a cached `vaulttools lint` needs neither the rules nor the fixer.
_LAZY = {
    "ConfigError": "config", "LintConfig": "config", "load_config": "config",
    "Diagnostic": "diagnostics", "Edit": "diagnostics", "Fix": "diagnostics", "Severity": "diagnostics",
    "ENGINE_VERSION": "engine", "LintResult": "engine", "apply_fixes": "engine", "lint_notes": "engine",
    "lint_vault": "engine",
    "FileFix": "fixes",
    "FORMATS": "formats", "render": "formats",
    "RULE_NAMES": "registry", "RULES": "registry", "Rule": "registry",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "ENGINE_VERSION",
    "FORMATS",
    "RULES",
    "RULE_NAMES",
    "ConfigError",
    "Diagnostic",
    "Edit",
    "FileFix",
    "Fix",
    "LintConfig",
    "LintResult",
    "Rule",
    "Severity",
    "apply_fixes",
    "lint_notes",
    "lint_vault",
    "load_config",
    "render",
]
