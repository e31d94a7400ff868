"""What the lint rules read of a vault, declared as protocols (docs/architecture.md, "The way of a lint run").

The rules run on the real `grasbot.Vault` and on three stand-ins that answer the same questions more
cheaply: the lint cache's `_CachedVault` (a few changed notes against the stored state of the others), the
live vault's `_LintView` (the vault, with identity rows kept up to date note by note) and its `_OneNote` (one
note's identity row). `tests/test_lint_view.py` checks that each one implements what it stands in for.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from grasbot import Note, Problem, Resolution

__all__ = ["IdentityRowsView", "LintVault", "NotesView"]


@runtime_checkable
class NotesView(Protocol):
    """The notes by vault path: all the identity rows (`rules.slugs.identity_rows`) need."""

    @property
    def notes(self) -> Mapping[str, Note]: ...


@runtime_checkable
class LintVault(NotesView, Protocol):
    """What every rule may read of a vault (`LintContext.vault`)."""

    root: Path

    @property
    def files(self) -> Collection[str]:
        """The vault paths of the attachments (files no reader reads)."""
        ...

    @property
    def problems(self) -> Sequence[Problem]:
        """Problems that belong to no note (an unreadable folder, a link loop)."""
        ...

    def link_problems(self, path: str, into: Collection[str] = ()) -> list[Resolution]:
        """The resolutions of the note's links that are not plain OK, and the OK ones into `into`."""
        ...


@runtime_checkable
class IdentityRowsView(Protocol):
    """A vault that keeps every note's identity row (path, slug, aliases, folded aliases, is_private) itself,
    so that the duplicate and private-link rules need not compute them from every note."""

    def identity_rows(self) -> list[tuple]: ...
