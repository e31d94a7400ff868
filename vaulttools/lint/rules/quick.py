"""A quick test that a note has no note-local finding, so that the usual clean note skips the note checks.

The note checks (`frontmatter`, `vocabulary`, `slugs.check_note`) are a dozen generators per note (a tenth of
the 10k benchmark vault's lint: benchmarks/README.md, "Figures behind the code"), where most notes have no
note-local finding. `is_clean` reads the same fields once, in straight-line code, and answers True only when
none of those checks can report anything: it is conservative (anything unusual — a typed item in a list, a
date written as text, a suppression, a problem — answers False, and the checks run). It never decides a
finding: when it says False the real checks run; when it says True they would have found nothing.

`tests/test_lint_quick.py` guards it three ways: on every note of the lint fixtures, the bundled vault, the
real corpora and a synthetic vault (with and without their taxonomy), a "clean" is checked against the
checks themselves; so it is on made-up notes that put each field, one at a time, on every side of every
condition of the note checks (listed values and near misses, counts at and past their bounds, text where a
number is expected, today and tomorrow, NFC and NFD slugs...) and, with hypothesis, on random mixes of them.
A condition added to a note check must be added here too (and a case to those tests). A new note check
turns the quick test off until it is added here: `applies` compares `checks()` with the three functions this
module was written for.
"""

from __future__ import annotations

import datetime as _dt
import unicodedata
from typing import Any

from grasbot import LIST_FIELDS, STR_FIELDS, Note, nested_visibility, other_visibility_keys
from vaulttools.lint.rules import LintContext

__all__ = ["applies", "is_clean"]

_EMPTY_VALUES: tuple[Any, ...] = (None, "", [])


def applies(note_checks: tuple[Any, ...]) -> bool:
    """Whether `is_clean` covers exactly these note checks (the families it was written for; `books` only
    looks at notes with a `book` field, which `is_clean` never calls clean)."""
    from vaulttools.lint.rules import books, frontmatter, slugs, vocabulary

    return note_checks == (frontmatter.check_note, vocabulary.check_note, slugs.check_note, books.check_note)


class _Memo:
    """What `is_clean` derives from the taxonomy once per run: allowed sets and per-tag verdicts."""

    __slots__ = ("taxonomy", "visibility", "types", "domains", "tags", "tag_ok", "counts", "priority", "required")

    def __init__(self, ctx: LintContext) -> None:
        from vaulttools.lint.rules.frontmatter import DEFAULT_VISIBILITY
        from vaulttools.lint.rules.vocabulary import DEFAULT_TYPES

        taxonomy = ctx.taxonomy
        self.taxonomy = taxonomy
        vocabularies = taxonomy.vocabularies if taxonomy is not None else {}
        visibility = vocabularies.get("visibility")
        self.visibility = frozenset(visibility.values if visibility and visibility.values else DEFAULT_VISIBILITY)
        types = vocabularies.get("type")
        self.types = frozenset(DEFAULT_TYPES) | frozenset(types.values if types is not None else ())
        domains = vocabularies.get("domains")
        tags = vocabularies.get("tags")
        # None: no vocabulary to check against (no taxonomy, or no list): every value passes
        self.domains = frozenset(domains.values) if taxonomy is not None and domains and domains.values else None
        self.tags = frozenset(tags.values) if taxonomy is not None and tags and tags.values else None
        self.tag_ok: dict[str, bool] = {}
        self.counts = [(name, bounds) for name in ("domains", "aliases", "answers")
                       if taxonomy is not None and (bounds := taxonomy.counts.get(name)) is not None]
        self.priority = taxonomy.ranges.get("priority") if taxonomy is not None else None
        self.required = tuple(taxonomy.required) if taxonomy is not None and taxonomy.required else ()


def _memo(ctx: LintContext) -> _Memo:
    memo = ctx._quick  # type: ignore[attr-defined]
    if memo is None or memo.taxonomy is not ctx.taxonomy:
        memo = ctx._quick = _Memo(ctx)  # type: ignore[attr-defined]
    return memo


def _tag_ok(memo: _Memo, ctx: LintContext, tag: str) -> bool:
    """tag-format says nothing about `tag` (as `vocabulary._tag_format` decides, once per distinct tag)."""
    found = memo.tag_ok.get(tag)
    if found is None:
        from vaulttools.lint.rules.vocabulary import allowed_match, normal_tag

        target = allowed_match(ctx, "tags", tag) or normal_tag(tag)
        found = memo.tag_ok[tag] = not target or target == tag
    return found


from vaulttools.lint.rules.frontmatter import IGNORE_KEY as _IGNORE_KEY  # noqa: E402  (after LintContext)
from vaulttools.lint.rules.frontmatter import fold_vocab  # noqa: E402


def is_clean(note: Note, ctx: LintContext) -> bool:
    """True only if the note checks would report nothing on `note` (see the module's docstring)."""
    if note.problems or not note.has_frontmatter:
        return False
    meta = note.meta
    if meta.__class__ is not dict:
        return False
    memo = _memo(ctx)
    if _IGNORE_KEY in meta:
        return False  # unknown-rule looks at it
    if "book" in meta:
        return False  # a note imported from a PDF: the books checks look at it
    # field-missing
    for name in memo.required:
        if meta.get(name) in _EMPTY_VALUES:
            return False
    # field-type, duplicate-item, tag-format, unknown-domain/-tag, the counts: lists of plain strings only
    for name in LIST_FIELDS:
        value = meta.get(name)
        if value is None:
            continue
        if value.__class__ is not list:
            return False
        for item in value:
            if item.__class__ is not str:
                return False
        if len(value) > 1:
            if name in ("tags", "domains"):
                distinct = set(map(fold_vocab, value))
            else:
                distinct = {item.strip() for item in value}
            if len(distinct) != len(value):
                return False
    tags = meta.get("tags")
    if tags:
        for tag in tags:
            if not _tag_ok(memo, ctx, tag):
                return False
        allowed = memo.tags
        if allowed is not None:
            for tag in tags:
                if tag not in allowed and tag.strip():
                    return False
    domains = meta.get("domains")
    if domains and memo.domains is not None:
        allowed = memo.domains
        for domain in domains:
            if domain not in allowed and domain.strip():
                return False
    for name in STR_FIELDS:
        value = meta.get(name)
        if value is not None and value.__class__ is not str:
            return False
    priority = meta.get("priority")
    if priority is not None:
        if priority.__class__ is not int:
            return False
        if memo.priority is not None and not memo.priority.allows(priority):
            return False
    if "visibility" in meta and meta["visibility"] not in memo.visibility:
        return False  # also `visibility:` with no value
    if other_visibility_keys(meta):  # `Visibility:`, `visibilty:`, beside the field or without it
        return False
    if "publish" in meta or "private" in meta or nested_visibility(meta):  # see frontmatter._other_privacy_fields
        return False
    updated = meta.get("updated")
    if updated is not None:
        if updated.__class__ is _dt.date:
            if updated > ctx.today:
                return False
        else:
            return False  # a datetime or a text date: let updated-date decide
    if memo.taxonomy is not None:
        kind = meta.get("type")
        if kind is not None and kind.strip() and kind not in memo.types:
            return False
        for name, bounds in memo.counts:
            value = meta.get(name)
            count = 0 if value is None else len(value) if all(map(str.strip, value)) else sum(
                1 for item in value if item.strip())
            if not bounds.allows(count):
                return False
    # slug-mismatch
    slug = meta.get("slug")
    if slug is not None and slug.strip():
        stem = note.stem
        if slug.strip() != stem and unicodedata.normalize("NFC", slug.strip()) != unicodedata.normalize("NFC", stem):
            return False
    return True
