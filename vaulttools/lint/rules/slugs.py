"""The identity rules: a note's slug is its file name (a note rule), no two notes share a slug, no alias is shared
(vault rules, fed by one pass over every note's identity row: `vault_pass`)."""

from __future__ import annotations

import unicodedata
import weakref
from collections.abc import Collection, Iterator
from typing import TYPE_CHECKING

from grasbot import Note, Span
from grasbot import fold
from vaulttools.lint import positions
from vaulttools.lint.diagnostics import Diagnostic, new_diagnostic
from vaulttools.lint.positions import Column
from vaulttools.lint.rule import ERROR, WARNING, QuickPredicate, Rule
from vaulttools.lint.rules import LintContext, item_span, make, value_span
from vaulttools.lint.view import IdentityRowsView

if TYPE_CHECKING:
    from vaulttools.lint.view import NotesView


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


SLUG_MISMATCH = Rule(
    "slug-mismatch", "slugs", ERROR,
    "`slug` differs from the file name without `.md`.",
    "Links are written `[[slug]]` but resolve by file name: a slug that differs breaks them, and the "
    "note's id and URL disagree.",
    "slug: pushswap   # in push-swap.md", None,
)


@SLUG_MISMATCH.check
def _slug_mismatch(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
    slug = note.meta.get("slug") if isinstance(note.meta, dict) else None
    if not isinstance(slug, str) or not slug.strip():
        return
    if _nfc(slug.strip()) == _nfc(note.stem):
        return
    if _nfc(slug.strip()).lower() == _nfc(note.stem).lower():  # links still resolve (case-insensitive)
        yield make(ctx, note, value_span(note, "slug"), SLUG_MISMATCH,
                   f"`slug: {slug}` differs from the file name `{note.stem}` in case only: links resolve, but "
                   f"the note's id and URLs use the slug; write `slug: {note.stem}` or rename the file")
        return
    yield make(ctx, note, value_span(note, "slug"), SLUG_MISMATCH,
               f"`slug: {slug}` differs from the file name `{note.stem}`: links `[[{slug}]]` will not resolve; "
               f"rename the file to `{slug}.md` or write `slug: {note.stem}`")


@SLUG_MISMATCH.quick
def _slug_mismatch_quick(ctx: LintContext) -> QuickPredicate:
    def quiet(note: Note, meta: dict) -> bool:
        slug = meta.get("slug")
        if slug is None or not slug.strip():
            return True
        stem = note.stem
        return slug.strip() == stem or _nfc(slug.strip()) == _nfc(stem)

    return quiet


SLUG_DUPLICATE = Rule(
    "slug-duplicate", "slugs", ERROR,
    "Several notes have the same `slug`.",
    "The slug is the note's id in sources and URLs: two notes with one id cannot both be cited.",
    "slug: libft   # in 10-Projets/libft.md and in 50-Technique/libft.md", None, scope="vault",
)
ALIAS_DUPLICATE = Rule(
    "alias-duplicate", "slugs", WARNING,
    "The same alias (case- and accent-folded) appears on several notes.",
    "An alias is a +10 signal: shared, it makes retrieval ambiguous between those notes.",
    "aliases: [algo]   # in push-swap.md and in impression-3d.md", None, scope="vault",
)


_ONLY_STR = frozenset({str})


def alias_strings(aliases) -> tuple:
    """Aliases as the engine reads them (`- 42` is the alias "42"); other items keep their place as None."""
    if isinstance(aliases, str):
        return (aliases,) if aliases.strip() else ()  # a lone string is one alias (field-type flags it)
    if not isinstance(aliases, (list, tuple)):
        return ()
    if set(map(type, aliases)) <= _ONLY_STR:
        return tuple(aliases)  # the usual list of strings: `str(a)` is `a` itself
    return tuple(
        str(a) if isinstance(a, (str, int, float)) and not isinstance(a, bool) else None for a in aliases
    )


def alias_keys(aliases: tuple) -> tuple:
    """The folded form of each alias (None for non-aliases and blanks): how retrieval compares them."""
    if None not in aliases and all(map(str.strip, aliases)):  # the usual case: no blank, no non-alias
        keys = tuple(map(_KEYS.get, aliases))  # each alias looked up at C speed (56k on the 10k benchmark vault)
        return keys if None not in keys else tuple(map(_key, aliases))
    return tuple(_key(a) if a is not None and a.strip() else None for a in aliases)


#: alias -> `_key(alias)`, a bounded memo (the same aliases come back on every note that shares them).
_KEYS: dict[str, str] = {}


def _key(alias: str) -> str:
    found = _KEYS.get(alias)
    if found is None:
        key = fold(alias)
        found = alias if key == alias else key  # the same object when equal: stored once in the lint cache
        if len(_KEYS) >= 200_000:
            _KEYS.clear()
        _KEYS[alias] = found
    return found


#: vault -> path -> (note, identity row): a TUI re-checking one note of a 10k-note vault must not re-read the
#: slugs and re-fold the aliases of all the others on every save. Keyed by the note object, which the vault
#: replaces when its file changes (a content digest would hash every note of a one-shot run for nothing).
_ROWS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def identity_rows(vault: NotesView) -> list[tuple]:
    """(path, slug or None, aliases, folded aliases, is_private) of every note; a cached vault gives them
    from its store without building notes."""
    if isinstance(vault, IdentityRowsView):  # the declared hook (vaulttools/lint/view.py)
        return vault.identity_rows()
    try:
        memo = _ROWS.setdefault(vault, {})
    except TypeError:  # not weak-referenceable: no memo
        memo = {}
    out = []
    # (`is_private` from a vault's `hidden_paths()`, computed once per state of the vault, when it has one)
    hidden_paths = getattr(vault, "hidden_paths", None)
    hidden = hidden_paths() if hidden_paths is not None else None
    for path, note in vault.notes.items():
        hit = memo.get(path)
        if hit is not None and hit[0] is note:
            out.append(hit[1])
            continue
        meta = note.meta if isinstance(note.meta, dict) else {}
        slug = meta.get("slug")
        aliases = alias_strings(meta.get("aliases"))
        private = path in hidden if hidden is not None else note.is_private
        row = (path, slug if isinstance(slug, str) else None, aliases, alias_keys(aliases), private)
        memo[path] = (note, row)
        out.append(row)
    if len(memo) > len(out):  # notes removed since the last call
        for path in [p for p in memo if p not in vault.notes]:
            del memo[path]
    return out


def vault_pass(ctx: LintContext, paths: list[str], rules: Collection[Rule]) -> Iterator[Diagnostic]:
    """One pass over every note's identity row for the rules on (`rules`): the notes holding each slug for
    slug-duplicate, each folded alias for alias-duplicate; each rule then decides and reports."""
    wanted = set(paths)
    slugs_on, aliases_on = SLUG_DUPLICATE in rules, ALIAS_DUPLICATE in rules
    rows = identity_rows(ctx.vault)
    # only the slugs and aliases the reported notes use matter: a watcher linting one note stays cheap
    want_slugs: set[str] | None = None
    want_aliases: set[str] | None = None
    if len(wanted) < len(rows) // 2:
        want_slugs, want_aliases = set(), set()
        for path, slug, aliases, keys, private in rows:
            if path in wanted:
                if slug and slug.strip():
                    want_slugs.add(_nfc(slug.strip()).casefold())
                if not private:
                    want_aliases.update(k for k in keys if k)
    by_slug: dict[str, list[str]] = {}
    # folded alias -> the notes that have it, in vault order; and the public notes to report on, each with
    # the folded alias of each item (None for the items that are no alias, repeat one, or are not wanted)
    holders: dict[str, list[str]] = {}
    reported: list[tuple[str, tuple, tuple]] = []
    for path, slug, aliases, keys, private in rows:
        if slugs_on and slug and slug.strip():
            key = _nfc(slug.strip()).casefold()
            if want_slugs is None or key in want_slugs:
                by_slug.setdefault(key, []).append(path)
        if private or not aliases_on:
            continue  # private notes are never candidates: their aliases compete with nothing
        if want_aliases is not None:
            if want_aliases.isdisjoint(keys):
                continue  # the usual case when a few notes are checked: none of this note's aliases is wanted
            keys = tuple(k if k in want_aliases else None for k in keys)
        if None in keys or len(set(keys)) != len(keys):
            seen: set[str] = set()
            counted: list[str | None] = []
            for key in keys:
                if key is None or key in seen:
                    counted.append(None)  # a repeat inside one note is duplicate-item's finding
                else:
                    seen.add(key)
                    counted.append(key)
            keys = tuple(counted)
        for key in keys:
            if key is not None:
                group = holders.get(key)
                if group is None:
                    holders[key] = [path]
                else:
                    group.append(path)
        if path in wanted:
            reported.append((path, aliases, keys))
    if slugs_on:
        yield from SLUG_DUPLICATE.run(ctx, by_slug, wanted)  # type: ignore[misc]
    if aliases_on:
        yield from ALIAS_DUPLICATE.run(ctx, holders, reported)  # type: ignore[misc]


@SLUG_DUPLICATE.check
def _slug_duplicates(ctx: LintContext, by_slug: dict[str, list[str]], wanted: set[str]) -> Iterator[Diagnostic]:
    """From the pass: the notes holding each (NFC, case-folded) slug; reports on the `wanted` notes."""
    notes = ctx.vault.notes
    for key in sorted([k for k, group in by_slug.items() if len(group) > 1]):  # most slugs are unique
        group = sorted(by_slug[key])
        for path in group:
            if path not in wanted:
                continue
            note = notes[path]
            others = ", ".join(p for p in group if p != path)
            yield make(ctx, note, value_span(note, "slug"), SLUG_DUPLICATE,
                       f"slug `{note.meta.get('slug')}` is also the slug of {others}: each note needs its own "
                       f"slug (its id in sources and URLs); rename one")


@ALIAS_DUPLICATE.check
def _alias_findings(
    ctx: LintContext, holders: dict[str, list[str]], reported: list[tuple[str, tuple, tuple]]
) -> list[Diagnostic]:
    """The alias-duplicate findings of the `reported` notes (path, aliases, folded aliases), note by note, from
    the notes holding each folded alias.

    31k findings on the 10k benchmark vault: per finding, only its span and its message are looked up, and the
    finding is built as the tuple it is. They come out in report order, note by note and item by item, so that
    the engine's final sort mostly finds runs already in order."""
    notes = ctx.vault.notes
    severity, name = ctx.severity(ALIAS_DUPLICATE), ALIAS_DUPLICATE.name
    # the notes named by every holder but the first three: one message per spelling of the alias (a spelling
    # has one folded form, so the spelling alone is the key)
    by_others: dict[str, str] = {}
    found: list[Diagnostic] = []
    append = found.append
    new = new_diagnostic
    for path, aliases, keys in reported:
        spans: Column | list[Span] | None = _UNSEEN  # the note's alias positions, looked up at its first finding
        for index, key in enumerate(keys):
            if key is None:
                continue
            group = holders[key]
            if len(group) < 2:
                continue  # most aliases are unique
            alias = aliases[index]
            if path in group[:3]:  # one of the three named: it names the others
                message = _alias_message(alias, ", ".join([p for p in group[:4] if p != path][:3]) + _more(group))
            else:
                message = by_others.get(alias)
                if message is None:
                    message = by_others[alias] = _alias_message(alias, ", ".join(group[:3]) + _more(group))
            if spans is _UNSEEN:
                spans = alias_layout(notes[path])
            if spans.__class__ is Column and index < len(spans.items):  # the usual block list
                line, column, end_line, end_column = spans.span(index)
            elif spans.__class__ is list and index < len(spans):
                line, column, end_line, end_column = spans[index]
            else:
                line, column, end_line, end_column = item_span(notes[path], "aliases", index)
            append(new((path, line, column, end_line, end_column, name, severity, message, None)))
    return found


def _more(group: list[str]) -> str:
    """What an alias-duplicate message says of the holders it does not name: all but the three it names and
    the note itself."""
    more = len(group) - 4
    return f" and {more} more" if more > 0 else ""


def _alias_message(alias: str, shown: str) -> str:
    return (f"alias `{alias}` is also an alias of {shown}: a visitor writing it gets all of them equally; "
            f"keep it only on the note it names best")


_UNSEEN: list[Span] = []


def alias_layout(note: Note) -> Column | list[Span] | None:
    """The positions of the note's `aliases` items, as `item_span` gives them (None: ask `item_span`)."""
    meta = note.meta
    if not isinstance(meta, dict) or "aliases" not in meta:
        return None
    return positions.item_layout(note, "aliases")
