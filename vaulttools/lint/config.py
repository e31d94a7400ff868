"""Lint configuration: which rules run, at which severity, on which notes.

Where it is read from (the first found wins, nothing is merged):

1. ``VAULT/vaulttools.toml``, table ``[lint]``;
2. the nearest ``pyproject.toml`` at or above the vault that has a ``[tool.vaulttools.lint]`` table.

Keys (all optional)::

    [tool.vaulttools.lint]
    select = ["broken-link", "unknown-domain"]   # only these rules (default: all)
    ignore = ["answer-not-retrieved"]            # never these
    exclude = ["archive/**", "drafts"]           # notes not linted (globs on the vault-relative path or a
                                                 # file/folder name); they still exist for links
    answer-top-k = 3                             # rank a note must reach for its own answers
    answer-check-limit = 2000                    # above this many questions in the vault, answer-not-retrieved
                                                 # runs only when selected explicitly (one search per question)
    baseline = "lint-baseline.json"              # the default `--baseline` (relative to this file's folder;
                                                 # see vaulttools.lint.baseline)
    [tool.vaulttools.lint.severity]
    alias-duplicate = "error"                    # "error", "warning" or "off"

Command-line `--select`/`--ignore` replace the file's `select`/add to its `ignore`. A note turns rules off
for itself with the frontmatter key ``vaulttools-ignore: [rule, ...]`` (or ``all``).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from vaulttools.lint.diagnostics import Severity

__all__ = ["LintConfig", "ConfigError", "load_config", "parse_rule_list"]

_KEYS = ("select", "ignore", "exclude", "severity", "answer-top-k", "answer-check-limit", "baseline")


class ConfigError(ValueError):
    """The configuration file is wrong; the message names the file and the key."""


@dataclass(frozen=True)
class LintConfig:
    select: frozenset[str] | None = None  # None: every rule
    ignore: frozenset[str] = frozenset()
    exclude: tuple[str, ...] = ()
    severity: dict[str, Severity] = field(default_factory=dict)
    answer_top_k: int = 3
    answer_check_limit: int = 2000
    source: Path | None = None  # the file it was read from, for messages
    baseline: Path | None = None  # the default baseline file (not part of `digest`: it filters the report only)

    def enabled(self, rule: str) -> bool:
        if rule in self.ignore:
            return False
        return self.select is None or rule in self.select

    def excluded(self, path: str) -> bool:
        """Is the vault-relative `path` excluded from linting by an `exclude` pattern?"""
        if not self.exclude:
            return False
        parts = path.split("/")
        for pattern in self.exclude:
            if fnmatch.fnmatchcase(path, pattern) or any(fnmatch.fnmatchcase(p, pattern) for p in parts):
                return True
            if pattern.endswith("/**") and (path + "/").startswith(pattern[:-2]):
                return True
        return False

    def with_options(self, select: list[str] | None = None, ignore: list[str] | None = None) -> LintConfig:
        """This configuration with the command line's `--select` (replaces) and `--ignore` (adds)."""
        out = self
        if select:
            out = replace(out, select=frozenset(select))
        if ignore:
            out = replace(out, ignore=out.ignore | frozenset(ignore))
        return out

    def digest(self) -> str:
        """A fingerprint of everything that changes findings (for the cache)."""
        data = {
            "select": sorted(self.select) if self.select is not None else None,
            "ignore": sorted(self.ignore),
            "exclude": list(self.exclude),
            "severity": {k: v.value for k, v in sorted(self.severity.items())},
            "answer_top_k": self.answer_top_k,
            "answer_check_limit": self.answer_check_limit,
        }
        return hashlib.blake2b(json.dumps(data, sort_keys=True).encode(), digest_size=12).hexdigest()


def parse_rule_list(value: str | list[str] | None, where: str) -> list[str]:
    """`"a,b"` or `["a", "b"]` -> names, each checked against the registry."""
    if value is None:
        return []
    # (here: the registry imports every rule, which a cached run that names no rule never needs)
    from vaulttools.lint.registry import RULE_NAMES

    items = value.split(",") if isinstance(value, str) else value
    names = []
    for item in items:
        if not isinstance(item, str):
            raise ConfigError(f"{where}: rule names must be strings, got {item!r}")
        name = item.strip()
        if not name:
            continue
        if name not in RULE_NAMES:
            from vaulttools.lint.rules import did_you_mean

            guess = did_you_mean(name, RULE_NAMES)
            hint = f" (did you mean {guess}?)" if guess else ""
            raise ConfigError(f"{where}: unknown rule `{name}`{hint}; see docs/rules.md")
        names.append(name)
    return names


def _from_table(table: Any, source: Path, prefix: str) -> LintConfig:
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: `{prefix}` must be a table")
    for key in table:
        if key not in _KEYS:
            raise ConfigError(f"{source}: unknown key `{prefix}.{key}` (known: {', '.join(_KEYS)})")
    select = parse_rule_list(table.get("select"), f"{source}: {prefix}.select") if "select" in table else None
    ignore = parse_rule_list(table.get("ignore"), f"{source}: {prefix}.ignore")
    exclude = table.get("exclude", [])
    if isinstance(exclude, str):
        exclude = [exclude]
    if not isinstance(exclude, list) or not all(isinstance(p, str) for p in exclude):
        raise ConfigError(f"{source}: `{prefix}.exclude` must be a list of glob patterns")
    severity: dict[str, Severity] = {}
    off: list[str] = []
    raw_severity = table.get("severity", {})
    if not isinstance(raw_severity, dict):
        raise ConfigError(f"{source}: `{prefix}.severity` must be a table of rule = \"error\" | \"warning\" | \"off\"")
    for rule, level in raw_severity.items():
        parse_rule_list([rule], f"{source}: {prefix}.severity")
        if level == "off":
            off.append(rule)
        elif level in ("error", "warning"):
            severity[rule] = Severity(level)
        else:
            raise ConfigError(f"{source}: `{prefix}.severity.{rule}` must be \"error\", \"warning\" or \"off\", not {level!r}")
    top_k = table.get("answer-top-k", 3)
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ConfigError(f"{source}: `{prefix}.answer-top-k` must be a whole number ≥ 1")
    limit = table.get("answer-check-limit", 2000)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ConfigError(f"{source}: `{prefix}.answer-check-limit` must be a whole number ≥ 0")
    baseline = table.get("baseline")
    if baseline is not None and (not isinstance(baseline, str) or not baseline.strip()):
        raise ConfigError(f"{source}: `{prefix}.baseline` must be the path of a baseline file (a string)")
    return LintConfig(
        baseline=(source.parent / baseline).resolve() if baseline else None,
        answer_check_limit=limit,
        select=frozenset(select) if select is not None else None,
        ignore=frozenset(ignore) | frozenset(off),
        exclude=tuple(exclude),
        severity=severity,
        answer_top_k=top_k,
        source=source,
    )


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None


def load_config(vault: str | Path) -> LintConfig:
    """The configuration that applies to the vault at `vault` (defaults when there is none)."""
    root = Path(vault).resolve()
    local = root / "vaulttools.toml"
    if local.is_file():
        data = _read_toml(local)
        return _from_table(data.get("lint", {}), local, "lint")
    for folder in (root, *root.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            data = _read_toml(candidate)
            tool = data.get("tool", {}).get("vaulttools")
            if isinstance(tool, dict) and "lint" in tool:
                return _from_table(tool["lint"], candidate, "tool.vaulttools.lint")
    return LintConfig()
