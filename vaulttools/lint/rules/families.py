"""The rule families, in the order they run: what `lint_notes` and `lint_vault` call.

Apart from `vaulttools.lint.rules` (the context and helpers every family imports), so that the package
imports no family and no family's import comes back to it (docs/architecture.md: no import cycle).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from grasbot import Note
from vaulttools.lint.diagnostics import Diagnostic
from vaulttools.lint.rules import LintContext, books, frontmatter, links, retrieval, slugs, vocabulary

__all__ = ["NOTE_CHECKS", "VAULT_CHECKS", "NoteCheck", "VaultCheck", "checks"]

NoteCheck = Callable[[Note, LintContext], Iterator[Diagnostic]]
VaultCheck = Callable[[LintContext, list[str]], Iterator[Diagnostic]]

#: Checks of one note and the taxonomy (their findings are cached by the note's digest).
NOTE_CHECKS: tuple[NoteCheck, ...] = (frontmatter.check_note, vocabulary.check_note, slugs.check_note, books.check_note)
#: Checks that need the whole vault (links, duplicates, retrieval), reporting on the paths given.
VAULT_CHECKS: tuple[VaultCheck, ...] = (slugs.check_vault, links.check_vault, retrieval.check_vault, books.check_vault)


def checks() -> tuple[tuple[NoteCheck, ...], tuple[VaultCheck, ...]]:
    """(note checks, vault checks)."""
    return NOTE_CHECKS, VAULT_CHECKS
