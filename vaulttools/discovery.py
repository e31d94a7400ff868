"""Which vault a command works on, and which of its notes a `vaulttools lint PATH…` run reports on.

The rule, the same for every command (README, "The commands"):

1. ``--vault PATH`` wins;
2. else the command's own PATH (lint: the first of its notes or folders; ask, eval, new: a first positional
   that is an existing folder; watch, tui: their PATH): the nearest folder at or above it (a note: its
   folder) that holds ``.obsidian/`` or ``vaulttools.toml``; else the nearest that holds ``TAXONOMIE.md``
   and is PATH itself or holds the current folder; else PATH itself (a note's folder);
3. else ``$VAULT_DIR``;
4. else ``./vault`` when it exists (this repository's sample vault);
5. else the vault the current folder is in, found as in 2., else ``./vault`` (which then does not exist:
   the error says what to pass).

Why ``TAXONOMIE.md`` counts for less: it may sit *beside* a vault (this repository keeps it beside
``vault/``, which holds ``.obsidian/``; `vaulttools.taxonomy.find_taxonomy` looks there), and a stray one in
an upper folder (``/tmp/TAXONOMIE.md``) must not turn that whole folder into the vault. So it marks a vault
only where the user is: the folder they named, or a folder they are working in (never, from below, the
file system's root, the home folder or the temporary folder). A folder Obsidian opened
(``.obsidian/``) or one configured for vaulttools is a vault for sure, wherever it is. In the real GrasBot
vault, which has only its ``TAXONOMIE.md``, ``vaulttools lint 20-Competences/rust.md`` works from inside it.
A vault whose taxonomy sits beside it and that holds neither ``.obsidian/`` nor ``vaulttools.toml`` is
named with ``--vault`` when linted from the folder above it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["STRONG_MARKERS", "WEAK_MARKERS", "DiscoveryError", "find_vault_above", "resolve_vault", "Selection",
           "select_paths"]

#: A folder holding one of these is a vault.
STRONG_MARKERS: tuple[str, ...] = (".obsidian", "vaulttools.toml")
#: A folder holding this is a vault when no folder above holds a strong marker.
WEAK_MARKERS: tuple[str, ...] = ("TAXONOMIE.md",)


class DiscoveryError(ValueError):
    """A path given on the command line does not exist, or is not inside the vault."""


def _chain(start: Path) -> list[Path]:
    start = start.resolve()
    return [start, *start.parents]


def find_vault_above(start: Path, cwd: Path | None = None) -> Path | None:
    """The nearest folder at or above `start` (a folder) that holds a strong marker, else the nearest that
    holds a weak marker and is `start` itself or holds `cwd` (default: the current folder); None if neither.

    Returned as `start` was written when the vault is `start` itself (a relative `vault` stays `vault`, so
    that messages and reports keep the user's spelling), else as an absolute path."""
    chain = _chain(start)
    here = (cwd or Path.cwd()).resolve()
    for folder in chain:
        if any((folder / marker).exists() for marker in STRONG_MARKERS):
            return start if folder == chain[0] else folder
    never = _not_vaults()
    for folder in chain:
        if folder != chain[0] and (not here.is_relative_to(folder) or folder in never):
            continue
        if any((folder / marker).exists() for marker in WEAK_MARKERS):
            return start if folder == chain[0] else folder
    return None


def _not_vaults() -> set[Path]:
    """Folders a stray TAXONOMIE.md does not make a vault of when looked for from below: the file system's
    root, the home folder and the temporary folder (everyone's work happens below them)."""
    import tempfile

    out = {Path("/").resolve()}
    for folder in (Path.home, lambda: Path(tempfile.gettempdir())):
        try:
            out.add(folder().resolve())
        except (OSError, RuntimeError, KeyError):
            pass
    return out


def resolve_vault(vault_option: str | None, path: str | None, env: dict[str, str] | os._Environ | None = None,
                  cwd: Path | None = None) -> Path:
    """The vault folder by the module's rule (it may not exist: the caller checks and says so).

    `vault_option` is ``--vault``; `path` the command's PATH (a note or a folder), if any."""
    environ = os.environ if env is None else env
    if vault_option:
        return Path(vault_option).expanduser()
    if path:
        given = Path(path).expanduser()
        if given.exists():
            folder = given if given.is_dir() else given.parent
            found = find_vault_above(folder, cwd)
            return found if found is not None else folder
        return given  # missing: the caller names it
    if environ.get("VAULT_DIR"):
        return Path(environ["VAULT_DIR"]).expanduser()
    here = cwd or Path.cwd()
    default = Path("vault") if cwd is None else here / "vault"
    if default.is_dir():
        return default
    found = find_vault_above(here, here)
    return found if found is not None else default


@dataclass(frozen=True, slots=True)
class Selection:
    """The notes of a `vaulttools lint PATH…` run: every note (`everything`), or those under `folders` and `files`
    (vault-relative POSIX paths; "" is the vault itself)."""

    everything: bool
    folders: tuple[str, ...] = ()
    files: frozenset[str] = frozenset()

    def __contains__(self, path: object) -> bool:
        if self.everything:
            return True
        if not isinstance(path, str):
            return False
        return path in self.files or any(path.startswith(prefix + "/") for prefix in self.folders)

    def keep(self, paths: Iterable[str]) -> list[str]:
        return [p for p in paths if p in self]


def select_paths(root: Path, paths: Sequence[str]) -> Selection:
    """The `Selection` for command-line `paths` inside the vault at `root`; DiscoveryError naming a path that
    does not exist or lies outside the vault."""
    if not paths:
        return Selection(True)
    base = root.resolve()
    folders: list[str] = []
    files: set[str] = set()
    for given in paths:
        path = Path(given).expanduser()
        if not path.exists():
            raise DiscoveryError(f"{given}: no such file or folder")
        try:
            rel = path.resolve().relative_to(base).as_posix()
        except ValueError:
            raise DiscoveryError(f"{given}: not inside the vault {root} (pass --vault to choose the vault)") from None
        if path.is_dir():
            if rel in ("", "."):
                return Selection(True)
            folders.append(rel)
        else:
            files.add(rel)
    return Selection(False, tuple(sorted(folders)), frozenset(files))
