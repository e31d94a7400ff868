"""Report formats: `text` (people), `json` (other tools, DESIGN §10), `github` (workflow annotations), `sarif`
(code scanning). Each module exposes `render(result, paths) -> str`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from vaulttools.lint.engine import LintResult

__all__ = ["FORMATS", "render", "display_path"]

FORMATS: tuple[str, ...] = ("text", "json", "github", "sarif")


def display_path(result: LintResult, path: str, cwd: Path | None = None) -> str:
    """A note's path as CI tools want it: relative to the current folder (the repository root in CI) when
    the vault is inside it, else the absolute path. POSIX separators."""
    return _shower(result, cwd)(path)


def _shower(result: LintResult, cwd: Path | None) -> Callable[[str], str]:
    """`display_path` for every path of one report, with the folder arithmetic done once."""
    root = Path(result.root).resolve()
    base = (cwd or Path.cwd()).resolve()
    try:
        prefix = root.relative_to(base).as_posix()
        prefix = "" if prefix == "." else prefix + "/"
    except ValueError:
        prefix = root.as_posix().rstrip("/") + "/"
    return lambda path: prefix + path


def render(result: LintResult, fmt: str, *, color: bool = False, cwd: Path | None = None) -> str:
    """The report of `result` in format `fmt` (one of FORMATS), as a string ending with a newline."""
    if fmt == "json":
        from vaulttools.lint.formats.json import render as fn
    elif fmt == "github":
        from vaulttools.lint.formats.github import render as fn
    elif fmt == "sarif":
        from vaulttools.lint.formats.sarif import render as fn
    elif fmt == "text":
        from vaulttools.lint.formats.text import render as text_render

        return text_render(result, _shower(result, cwd), color=color)
    else:
        raise ValueError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    return fn(result, _shower(result, cwd))

