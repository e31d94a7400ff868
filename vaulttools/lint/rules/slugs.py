"""Identity checks: a note's slug is its file name, no two notes share a slug, no alias is shared."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterator

from grasbot.notes import Note
from vaulttools.lint.diagnostics import Diagnostic
from vaulttools.lint.rules import LintContext, fold, item_span, make, value_span


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def check_note(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
    slug = note.meta.get("slug") if isinstance(note.meta, dict) else None
    if not isinstance(slug, str) or not slug.strip():
        return
    if _nfc(slug.strip()) == _nfc(note.stem):
        return
    yield make(ctx, note, value_span(note, "slug"), "slug-mismatch",
               f"`slug: {slug}` differs from the file name `{note.stem}`: links `[[{slug}]]` will not resolve; "
               f"rename the file to `{slug}.md` or write `slug: {note.stem}`")


def check_vault(ctx: LintContext, paths: list[str]) -> Iterator[Diagnostic]:
    wanted = set(paths)
    notes = ctx.vault.notes
    by_slug: dict[str, list[str]] = {}
    by_alias: dict[str, list[tuple[str, int, str]]] = {}
    for path, note in notes.items():
        meta = note.meta if isinstance(note.meta, dict) else {}
        slug = meta.get("slug")
        if isinstance(slug, str) and slug.strip():
            by_slug.setdefault(_nfc(slug.strip()).casefold(), []).append(path)
        if note.is_private:
            continue  # private notes are never candidates: their aliases compete with nothing
        aliases = meta.get("aliases")
        if isinstance(aliases, list):
            seen: set[str] = set()
            for i, alias in enumerate(aliases):
                if isinstance(alias, str) and alias.strip():
                    key = fold(alias)
                    if key not in seen:  # a repeat inside one note is duplicate-item's finding
                        seen.add(key)
                        by_alias.setdefault(key, []).append((path, i, alias))
    for key in sorted(by_slug):
        group = sorted(by_slug[key])
        if len(group) < 2:
            continue
        for path in group:
            if path not in wanted:
                continue
            note = notes[path]
            others = ", ".join(p for p in group if p != path)
            yield make(ctx, note, value_span(note, "slug"), "slug-duplicate",
                       f"slug `{note.meta.get('slug')}` is also the slug of {others}: each note needs its own "
                       f"slug (its id in sources and URLs); rename one")
    for key in sorted(by_alias):
        group = by_alias[key]
        if len(group) < 2:
            continue
        for path, index, alias in group:
            if path not in wanted:
                continue
            others = [p for p, _, _ in group if p != path]
            shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
            yield make(ctx, notes[path], item_span(notes[path], "aliases", index), "alias-duplicate",
                       f"alias `{alias}` is also an alias of {shown}: a visitor writing it gets all of them "
                       f"equally; keep it only on the note it names best")
