"""Report formats, in a registry: `text` (people), `json` (other tools, docs/architecture.md), `github` (workflow annotations),
`sarif` (code scanning). Each is a `Format` naming the module that renders it; that module exposes
`render(result, shown) -> str` (`shown` turns a vault path into the path the report shows). `FORMATS` (and so
the `--format` choices of `vaulttools lint`) come from the registry: a new format is one module and one
`register(Format(...))` line below.

`text` (uncoloured), `json` and `github` are also built from *parts*: one string per note with findings
(`note_part`), put together with what the report says besides the findings (`Totals`) by `assemble`. The
lint cache keeps the parts of the last report, so a second run prints 35k findings without rebuilding them.
`render` goes through the same two functions: a report from parts is the same bytes as a fresh one.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import groupby
from pathlib import Path
from typing import TYPE_CHECKING

from vaulttools.lint.formats.totals import Totals

if TYPE_CHECKING:
    from vaulttools.lint.diagnostics import Diagnostic
    from vaulttools.lint.engine import LintResult

__all__ = [
    "FORMATS", "PART_FORMATS", "Format", "Totals", "assemble", "assemble_bytes", "display_path", "formats",
    "get_format", "note_part", "path_prefix", "register", "render", "render_bytes",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Format:
    """One report format."""

    name: str  # what `--format` takes
    module: str  # the module that renders it, imported on first use
    help: str  # one line for `--help` and the docs
    #: built from one part per note (`note_part`, `frame`, `assemble`), which the lint cache keeps
    parts: bool = False
    #: rendered by its module's own `render` even though it has parts (json: faster, and its paths are
    #: vault-relative, so the parts need no prefix)
    direct: bool = False


_REGISTRY: dict[str, Format] = {}


def register(fmt: Format) -> None:
    """Add a format (a name may be registered once)."""
    if fmt.name in _REGISTRY:
        raise ValueError(f"format {fmt.name!r} is already registered")
    _REGISTRY[fmt.name] = fmt
    global FORMATS, PART_FORMATS
    FORMATS = tuple(_REGISTRY)
    PART_FORMATS = tuple(name for name, f in _REGISTRY.items() if f.parts)


def formats() -> tuple[Format, ...]:
    """Every registered format, in registration order (the first is the default)."""
    return tuple(_REGISTRY.values())


def get_format(name: str) -> Format:
    found = _REGISTRY.get(name)
    if found is None:
        raise ValueError(f"unknown format {name!r} (known: {', '.join(FORMATS)})")
    return found


FORMATS: tuple[str, ...] = ()
#: Formats that `note_part`/`assemble` build (sarif is one JSON document with rule metadata: rendered whole).
PART_FORMATS: tuple[str, ...] = ()

register(Format("text", "vaulttools.lint.formats.text", "path:line:col: severity rule message, for people", parts=True))
register(Format("json", "vaulttools.lint.formats.json", "the stable JSON document, for other tools", parts=True, direct=True))
register(Format("github", "vaulttools.lint.formats.github", "GitHub Actions workflow annotations", parts=True))
register(Format("sarif", "vaulttools.lint.formats.sarif", "SARIF 2.1.0, for code scanning"))


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
    return importlib.import_module(get_format(fmt).module)


def _part_module(fmt: str):
    if not get_format(fmt).parts:
        raise ValueError(f"no parts for format {fmt!r} (parts: {', '.join(PART_FORMATS)})")
    return _module(fmt)


def note_part(fmt: str, diagnostics: Sequence[Diagnostic], prefix: str) -> str:
    """The report lines of one note's findings (all of the same path, in report order) in format `fmt`."""
    return _part_module(fmt).note_part(diagnostics, prefix)


def assemble(fmt: str, totals: Totals, parts: Iterable[str]) -> str:
    """The whole report from the notes' parts (in path order; empty parts are allowed) and the totals."""
    return _part_module(fmt).assemble(totals, parts)


def assemble_bytes(fmt: str, totals: Totals, parts: Iterable[bytes]) -> bytes:
    """`assemble` on parts already encoded in UTF-8: the report's UTF-8 bytes, without decoding 17 MB of parts
    only to encode them again for the output."""
    parts = [p for p in parts if p]
    head, sep, tail = _part_module(fmt).frame(totals, bool(parts))
    return b"".join((head.encode("utf-8"), sep.encode("utf-8").join(parts), tail.encode("utf-8")))


def render(result: LintResult, fmt: str, *, color: bool = False, cwd: Path | None = None) -> str:
    """The report of `result` in format `fmt` (one of FORMATS), as a string ending with a newline."""
    spec = get_format(fmt)
    module = _module(fmt)
    if color and spec.name == "text":
        return module.render(result, _shower(result, cwd), color=True)
    if spec.parts and not spec.direct:
        # through the parts, as the lint cache builds it: a report from parts is the same bytes as a fresh one
        prefix = path_prefix(result.root, cwd)
        parts = [module.note_part(list(group), prefix) for _, group in groupby(result.diagnostics, key=_path)]
        return module.assemble(Totals.of(result), parts)
    return module.render(result, _shower(result, cwd))


def render_bytes(result: LintResult, fmt: str, *, cwd: Path | None = None) -> bytes:
    """`render(result, fmt).encode("utf-8")` (uncoloured), built as bytes where the format can (json)."""
    module = _module(fmt)
    if hasattr(module, "render_bytes"):
        return module.render_bytes(result)
    return render(result, fmt, cwd=cwd).encode("utf-8")


def _path(d: Diagnostic) -> str:
    return d.path
