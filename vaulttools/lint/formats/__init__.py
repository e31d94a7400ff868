"""Report formats: `text` (people), `json` (other tools, docs/architecture.md), `github` (workflow annotations), `sarif`
(code scanning). Each module exposes `render(result, paths) -> str`.

`text` (uncoloured), `json` and `github` are also built from *parts*: one string per note with findings
(`note_part`), put together with what the report says besides the findings (`Totals`) by `assemble`. The
lint cache keeps the parts of the last report, so a second run prints 35k findings without rebuilding them.
`render` goes through the same two functions: a report from parts is the same bytes as a fresh one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import groupby
from pathlib import Path
from typing import TYPE_CHECKING

from vaulttools.lint.formats.totals import Totals

if TYPE_CHECKING:
    from vaulttools.lint.diagnostics import Diagnostic
    from vaulttools.lint.engine import LintResult

__all__ = ["FORMATS", "PART_FORMATS", "Totals", "render", "render_bytes", "display_path", "path_prefix", "note_part", "assemble", "assemble_bytes"]

FORMATS: tuple[str, ...] = ("text", "json", "github", "sarif")
#: Formats that `note_part`/`assemble` build (sarif is one JSON document with rule metadata: rendered whole).
PART_FORMATS: tuple[str, ...] = ("text", "json", "github")


def display_path(result: LintResult, path: str, cwd: Path | None = None) -> str:
    """A note's path as CI tools want it: relative to the current folder (the repository root in CI) when
    the vault is inside it, else the absolute path. POSIX separators."""
    return path_prefix(result.root, cwd) + path


def path_prefix(root: Path | str, cwd: Path | None = None) -> str:
    """What `display_path` puts before every vault-relative path of one report (the folder arithmetic done once)."""
    root = Path(root).resolve()
    base = (cwd or Path.cwd()).resolve()
    try:
        prefix = root.relative_to(base).as_posix()
        return "" if prefix == "." else prefix + "/"
    except ValueError:
        return root.as_posix().rstrip("/") + "/"


def _shower(result: LintResult, cwd: Path | None) -> Callable[[str], str]:
    prefix = path_prefix(result.root, cwd)
    return lambda path: prefix + path


def _module(fmt: str):
    if fmt == "json":
        from vaulttools.lint.formats import json as module
    elif fmt == "github":
        from vaulttools.lint.formats import github as module
    elif fmt == "text":
        from vaulttools.lint.formats import text as module
    else:
        raise ValueError(f"no parts for format {fmt!r} (parts: {', '.join(PART_FORMATS)})")
    return module


def note_part(fmt: str, diagnostics: Sequence[Diagnostic], prefix: str) -> str:
    """The report lines of one note's findings (all of the same path, in report order) in format `fmt`."""
    return _module(fmt).note_part(diagnostics, prefix)


def assemble(fmt: str, totals: Totals, parts: Iterable[str]) -> str:
    """The whole report from the notes' parts (in path order; empty parts are allowed) and the totals."""
    return _module(fmt).assemble(totals, parts)


def assemble_bytes(fmt: str, totals: Totals, parts: Iterable[bytes]) -> bytes:
    """`assemble` on parts already encoded in UTF-8: the report's UTF-8 bytes, without decoding 17 MB of parts
    only to encode them again for the output."""
    parts = [p for p in parts if p]
    head, sep, tail = _module(fmt).frame(totals, bool(parts))
    return b"".join((head.encode("utf-8"), sep.encode("utf-8").join(parts), tail.encode("utf-8")))


def render(result: LintResult, fmt: str, *, color: bool = False, cwd: Path | None = None) -> str:
    """The report of `result` in format `fmt` (one of FORMATS), as a string ending with a newline."""
    if fmt == "text" and color:
        from vaulttools.lint.formats.text import render as text_render

        return text_render(result, _shower(result, cwd), color=True)
    if fmt == "json":  # the paths are vault-relative: no prefix, and the rows need no grouping by note
        from vaulttools.lint.formats.json import render as json_render

        return json_render(result)
    if fmt in PART_FORMATS:
        module = _module(fmt)
        prefix = path_prefix(result.root, cwd)
        parts = [module.note_part(list(group), prefix) for _, group in groupby(result.diagnostics, key=_path)]
        return module.assemble(Totals.of(result), parts)
    if fmt == "sarif":
        from vaulttools.lint.formats.sarif import render as fn

        return fn(result, _shower(result, cwd))
    raise ValueError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")


def render_bytes(result: LintResult, fmt: str, *, cwd: Path | None = None) -> bytes:
    """`render(result, fmt).encode("utf-8")` (uncoloured), built as bytes where that is cheaper (json)."""
    if fmt == "json":
        from vaulttools.lint.formats.json import render_bytes as json_render_bytes

        return json_render_bytes(result)
    return render(result, fmt, cwd=cwd).encode("utf-8")


def _path(d: Diagnostic) -> str:
    return d.path
