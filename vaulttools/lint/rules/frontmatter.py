"""The frontmatter rules, on one note: it parses, fields have the right type, the required ones are there,
`visibility` and `updated` hold sensible values, list items are not repeated, suppressions name real rules.

Each rule is one unit (`vaulttools.lint.rule.Rule`): its docs, its check (`@RULE.check`, run in the order
declared here) and its quick-clean predicate (`@RULE.quick`) side by side.
"""

from __future__ import annotations

import datetime as _dt
import unicodedata
from collections.abc import Iterator
from typing import Any

from grasbot import LIST_FIELDS, STR_FIELDS, Note, nested_visibility, other_visibility_keys, says_public, says_true
from grasbot import fold
from vaulttools.lint.diagnostics import Diagnostic, Edit, Fix
from vaulttools.lint.rule import ERROR, WARNING, QuickPredicate, Rule
from vaulttools.lint.rules import (
    LintContext,
    did_you_mean,
    frontmatter_start,
    item_span,
    is_block_scalar,
    key_span,
    make,
    raw_items,
    value_span,
)

#: Problem codes of `grasbot.model.Problem` that make a file unreadable as a note. `no-frontmatter` and
#: `empty` are not defects of a plain Obsidian note: field-missing covers them where a taxonomy asks for fields.
INVALID_CODES = frozenset({
    "yaml-error", "not-utf8", "not-mapping", "binary", "unreadable", "unclosed-frontmatter", "misplaced-frontmatter",
    "frontmatter-too-large", "cr-line-endings",
})

#: The frontmatter key holding per-note suppressions (documented in docs/rules.md).
IGNORE_KEY = "vaulttools-ignore"

DEFAULT_VISIBILITY = ("public", "private")


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (_dt.date, _dt.datetime)):
        return "a date"
    return "empty" if value is None else type(value).__name__


def _fold_item(name: str, value: str) -> str:
    """The form under which two items of `name` count as the same (retrieval compares folded words)."""
    if name in ("tags", "domains"):
        # compared to the taxonomy folded: `IA` and `ia` are one domain, the second copy is redundant
        return fold(value.lstrip("#").replace("_", "-")).replace(" ", "-")
    # aliases and answers: spelling variants (`GrasBot`/`grasbot`, `école`/`ecole`) are deliberate
    # (TAXONOMIE.md asks for them), so only exact repeats count
    return value.strip()


FRONTMATTER_INVALID = Rule(
    "frontmatter-invalid", "frontmatter", ERROR,
    "The file cannot be read as a note: YAML error, no closing `---`, not a mapping, a key written twice, "
    "YAML aliases that expand to more than 10,000 values (an alias bomb), lines ending in a lone CR, not "
    "UTF-8, UTF-16, binary; or it holds more than 20,000 links.",
    "A note whose frontmatter does not parse loses every signal (aliases, answers, domains): retrieval "
    "skips or degrades it. A key written twice keeps only its last value (Obsidian refuses such properties); "
    "a `visibility` written twice or in a frontmatter that does not parse (a CR-only file included) hides the "
    "note unless every `visibility` line says `public`. A binary or unreadable file, and a note with more "
    "links than are read, are never shown to visitors.",
    "---\ntitle: Push swap\naliases: [push swap\n---", None,
)


@FRONTMATTER_INVALID.check
def _invalid(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
    for problem in note.problems:
        if problem.code in INVALID_CODES:
            if problem.code == "not-utf8":
                where = "in the frontmatter" if fields_unreadable(note) else "in the body"
                message = f"{problem.message} {where}: save the file as UTF-8 (the bad bytes read as �)"
            elif problem.code in ("binary", "unreadable"):
                message = f"{problem.message}; the note cannot be read"
            else:
                message = f"{problem.message}; fix the frontmatter so the note's fields are read"
            yield make(ctx, note, _point(problem.line, problem.column), FRONTMATTER_INVALID, message)
        elif problem.code in ("duplicate-key", "too-many-links"):  # the fields are read: the other rules run
            yield make(ctx, note, _point(problem.line, problem.column), FRONTMATTER_INVALID, problem.message)


@FRONTMATTER_INVALID.quick
def _invalid_quick(ctx: LintContext) -> None:
    return None  # the quick gate lets through only notes read without a problem


def has_fields(note: Note) -> bool:
    """Whether the note has a frontmatter mapping for the field rules to read."""
    return note.has_frontmatter and isinstance(note.meta, dict)


def fields_unreadable(note: Note) -> bool:
    """Whether a problem keeps the note's fields from being read: a broken frontmatter, or bytes that are
    not UTF-8 inside it (in the body they leave the fields as written, and the field rules run)."""
    for problem in note.problems:
        if problem.code in INVALID_CODES:
            if problem.code != "not-utf8" or not note.has_frontmatter or problem.line < note.body_line:
                return True
    return False


def _point(line: int, column: int) -> Any:
    from grasbot import Span

    return Span(line, column, line, column + 1)


FIELD_MISSING = Rule(
    "field-missing", "frontmatter", ERROR,
    "A field the taxonomy requires is absent.",
    "Retrieval scores notes on their frontmatter; a note without its `slug` or `domains` is hard to find.",
    "---\ntitle: Push swap\ntype: projet\n---   # in push-swap.md, no slug",
    "Only a missing `slug`: insert `slug: <file name>` after `title`.",
    "---\ntitle: Push swap\nslug: push-swap\ntype: projet\n---", needs_taxonomy=True,
)


@FIELD_MISSING.check
def _missing(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
    taxonomy = ctx.taxonomy
    if taxonomy is None or not taxonomy.required:
        return
    if fields_unreadable(note):
        return  # unreadable: every field would look missing
    for name in taxonomy.required:
        value = note.meta.get(name)
        if value not in (None, "", []):
            continue
        fix = None
        # (NFC: a name from macOS comes decomposed, and a slug ends up in URLs and sources)
        stem = unicodedata.normalize("NFC", note.stem)
        if name == "slug" and note.key_positions and name not in note.meta:
            after = "title" if "title" in note.meta else None
            fix = Fix(f"insert `slug: {stem}`", (Edit("insert-key", "slug", new=stem, after=after),))
        where = key_span(note, name) if name in note.meta else frontmatter_start(note)
        hint = f"add `slug: {stem}` (the file name)" if name == "slug" else f"add `{name}:`"
        yield make(ctx, note, where, FIELD_MISSING,
                   f"required field `{name}` is missing (TAXONOMIE.md requires it): {hint}", fix)


@FIELD_MISSING.quick
def _missing_quick(ctx: LintContext) -> QuickPredicate | None:
    required = tuple(ctx.taxonomy.required) if ctx.taxonomy is not None and ctx.taxonomy.required else ()
    if not required:
        return None

    def quiet(note: Note, meta: dict) -> bool:
        for name in required:
            if meta.get(name) in _EMPTY_VALUES:
                return False
        return True

    return quiet


_EMPTY_VALUES: tuple[Any, ...] = (None, "", [])


FIELD_TYPE = Rule(
    "field-type", "frontmatter", ERROR,
    "A known field has the wrong type: a string where a list is expected, text where a number is expected, "
    "a list where a string is expected.",
    "The engine reads a wrong-typed field as empty: `aliases: push swap` is one alias at best, and "
    "`priority: high` gives no boost.",
    "aliases: push swap\npriority: \"5\"",
    "Wrap a lone scalar in a list (keeping its quotes); turn a quoted whole number into a number.",
    "aliases: [push swap]\npriority: 5",
)


@FIELD_TYPE.check
def _types(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
    if not has_fields(note):
        return
    meta = note.meta
    for name in LIST_FIELDS:
        value = meta.get(name)
        if value is None:
            continue  # absent, or an empty property as Obsidian writes it: an empty list
        if value.__class__ is list and all(item.__class__ is str for item in value):
            continue  # the usual list of strings
        if isinstance(value, str):
            if not value.strip():
                continue
            # (a block scalar, `|` or `>`, is rewritten by hand: the fix edits values on their key's line only)
            fix = None if is_block_scalar(note, name) else Fix(f"wrap the value of `{name}` in a list", (Edit("to-list", name, old=value),))
            # what the fix writes, quoted as it will be (`#x` or `a, b` must be quoted inside [ ])
            from vaulttools.lint.fixes import render_scalar  # (here: the fixes module is for --fix runs)

            listed = f"{name}: [{render_scalar(value.strip(), '', True)}]"
            split = " (one item: for several, one `- item` per line)" if "," in value else " or one `- item` per line"
            yield make(ctx, note, item_span(note, name, 0), FIELD_TYPE,
                       f"`{name}` is a string but must be a list: write `{listed}`{split}", fix)
        elif not isinstance(value, list):
            yield make(ctx, note, value_span(note, name), FIELD_TYPE,
                       f"`{name}` is {_kind(value)} but must be a list of strings: one `- item` per line")
        else:
            for i, item in enumerate(value):
                if isinstance(item, str) or (isinstance(item, (int, float)) and not isinstance(item, bool)):
                    continue
                yield make(ctx, note, item_span(note, name, i), FIELD_TYPE,
                           f"item {i + 1} of `{name}` is {_kind(item)}, not a string: quote it or remove it")
    for name in STR_FIELDS:
        value = meta.get(name)
        if name not in meta or value is None or isinstance(value, str):
            continue
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            continue  # `title: 2048` reads fine as text
        yield make(ctx, note, value_span(note, name), FIELD_TYPE,
                   f"`{name}` is {_kind(value)} but must be a single string: write `{name}: text`")
    if "priority" in meta and meta["priority"] is not None:
        value = meta["priority"]
        if isinstance(value, bool) or not isinstance(value, int):
            fix = None
            text = value.strip() if isinstance(value, str) else ""
            if text.lstrip("-").isdigit():
                fix = Fix(f"write `priority: {int(text)}` as a number",
                          (Edit("replace-value", "priority", old=value, new=int(text)),))
                message = f"`priority` is the text {value!r}, not a number: write `priority: {int(text)}` without quotes"
            else:
                message = f"`priority` is {_kind(value)} ({value!r}) but must be a whole number, e.g. `priority: 5`"
            yield make(ctx, note, value_span(note, "priority"), FIELD_TYPE, message, fix)


@FIELD_TYPE.quick
def _types_quick(ctx: LintContext) -> None:
    return None  # the quick gate lets through only lists of strings, strings and a whole-number priority


VISIBILITY_VALUE = Rule(
    "visibility-value", "frontmatter", ERROR,
    "`visibility` is neither `public` nor `private` (or the values the taxonomy lists), has no value, is "
    "written `Visibility` or misspelt (`visibilty`, two edits at most), or sits inside another field; or "
    "the note says it is not public another way: `publish` other than `true` (`publish: false` beside "
    "`visibility: public` included), `private: true`.",
    "An unknown or empty value is treated as private (fail closed): the note silently disappears from the "
    "bot; `Public` or ` public ` is served (case and blanks are ignored), and the finding says so. A "
    "`Visibility:` or `visibilty:` key, a nested `visibility`, `publish: false` and `private: true` hide the "
    "note all the same, so that a private note never leaks (docs/service.md, \"What private means\").",
    "visibility: Public", "When the value differs from a known one only by case or spaces: write it.",
    "visibility: public",
)


@VISIBILITY_VALUE.check
def _visibility(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
    if not has_fields(note):
        return
    meta = note.meta
    for key in other_visibility_keys(meta):
        value = meta[key]
        effect = ("the bot reads it as the field all the same, so that a private note never leaks"
                  if not says_public(value) else "its value is public, so it changes nothing, but a `private` "
                  "there would hide the note")
        what = ("keys are case-sensitive" if key.strip().lower() == "visibility"
                else "it looks like `visibility` misspelt")
        yield make(ctx, note, key_span(note, key), VISIBILITY_VALUE,
                   f"`{key}` is not the `visibility` field ({what}); {effect}; rename the key to `visibility`"
                   + (" and keep one of the two" if "visibility" in meta else ""))
    yield from _other_privacy_fields(note, ctx)
    if "visibility" not in meta:
        return
    value = meta["visibility"]
    if value is None:
        yield make(ctx, note, key_span(note, "visibility"), VISIBILITY_VALUE,
                   "`visibility` has no value: the note is treated as private and the bot will not use it; "
                   "write `public` or `private`")
        return
    if not isinstance(value, str):
        return
    vocabulary = ctx.taxonomy.vocabularies.get("visibility") if ctx.taxonomy is not None else None
    allowed = tuple(vocabulary.values) if vocabulary and vocabulary.values else DEFAULT_VISIBILITY
    if value in allowed:
        return
    matches = [a for a in allowed if fold(a) == fold(value)]
    span = value_span(note, "visibility")
    if len(matches) == 1:
        fix = Fix(f"write `visibility: {matches[0]}`",
                  (Edit("replace-value", "visibility", old=value, new=matches[0]),))
        # (what the bot does, said as it is: `Public` and ` public` are served, case and blanks ignored;
        # anything else, `Públic` or a taxonomy's `Draft`, hides the note)
        read_as = ("is read as `public` (case and blanks are ignored): the bot serves the note" if says_public(value)
                   else "is not a known value: it is read as private and the bot will not use the note")
        yield make(ctx, note, span, VISIBILITY_VALUE, f"`visibility: {value}` {read_as}; write `{matches[0]}`", fix)
        return
    guess = did_you_mean(value, allowed)
    hint = f"did you mean `{guess}`? " if guess else ""
    yield make(ctx, note, span, VISIBILITY_VALUE,
               f"`visibility: {value}` is not one of {', '.join(allowed)}: the note is treated as private and "
               f"the bot will not use it; {hint}write one of {', '.join(allowed)}")


def _other_privacy_fields(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
    """`publish`, `private` and a nested `visibility`: other ways of saying "not public" that the bot
    honours (`grasbot.model.private_by_fields`), reported so that what they do is never a surprise."""
    meta = note.meta
    visibility = meta.get("visibility")
    if "publish" in meta:
        value = meta["publish"]
        if not says_true(value):
            if value is not False:
                yield make(ctx, note, value_span(note, "publish"), VISIBILITY_VALUE,
                           f"`publish: {value}` is not a boolean: the bot reads it as `publish: false` and will "
                           "not use the note (only `true` publishes); write `publish: true` or `publish: false`")
            elif says_public(visibility):
                yield make(ctx, note, key_span(note, "publish"), VISIBILITY_VALUE,
                           "`publish: false` hides the note from the bot although `visibility` says public; "
                           "keep one of the two (`visibility: private`, or remove `publish: false`)")
    if "private" in meta and says_true(meta["private"]):
        yield make(ctx, note, key_span(note, "private"), VISIBILITY_VALUE,
                   "`private: true` is not a GrasBot field, yet the bot hides the note all the same, so that a "
                   "private note never leaks; write `visibility: private` instead")
    for top, value in nested_visibility(meta):
        effect = ("the bot hides the note all the same, so that a private note never leaks"
                  if not says_public(value) else "it is public, so it changes nothing")
        yield make(ctx, note, key_span(note, top), VISIBILITY_VALUE,
                   f"a `visibility` inside `{top}` is not the field (only a top-level key is); {effect}; "
                   "write `visibility` as a top-level key")


@VISIBILITY_VALUE.quick
def _visibility_quick(ctx: LintContext) -> QuickPredicate:
    vocabulary = ctx.taxonomy.vocabularies.get("visibility") if ctx.taxonomy is not None else None
    allowed = frozenset(vocabulary.values if vocabulary and vocabulary.values else DEFAULT_VISIBILITY)

    def quiet(note: Note, meta: dict) -> bool:
        if "visibility" in meta and meta["visibility"] not in allowed:
            return False  # also `visibility:` with no value
        if other_visibility_keys(meta):  # `Visibility:`, `visibilty:`, beside the field or without it
            return False
        return "publish" not in meta and "private" not in meta and not nested_visibility(meta)

    return quiet


UPDATED_DATE = Rule(
    "updated-date", "frontmatter", WARNING,
    "`updated` is not a date (YYYY-MM-DD) or lies in the future.",
    "Readers and tools sort by it; a wrong date hides what changed recently.",
    "updated: 22/04/2026", None,
)


@UPDATED_DATE.check
def _updated(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
    if not has_fields(note):
        return
    if "updated" not in note.meta or note.meta["updated"] is None:
        return
    value = note.meta["updated"]
    date: _dt.date | None = None
    if isinstance(value, _dt.datetime):
        date = value.date()
    elif isinstance(value, _dt.date):
        date = value
    elif isinstance(value, str):
        try:
            date = _dt.date.fromisoformat(value.strip())
        except ValueError:
            date = None
    if date is None:
        yield make(ctx, note, value_span(note, "updated"), UPDATED_DATE,
                   f"`updated: {value}` is not a date: write it as YYYY-MM-DD, e.g. `updated: {ctx.today.isoformat()}`")
    elif date > ctx.today:
        yield make(ctx, note, value_span(note, "updated"), UPDATED_DATE,
                   f"`updated: {date.isoformat()}` is in the future (today is {ctx.today.isoformat()}): "
                   f"write the date of the last real edit")


@UPDATED_DATE.quick
def _updated_quick(ctx: LintContext) -> QuickPredicate:
    today = ctx.today

    def quiet(note: Note, meta: dict) -> bool:
        updated = meta.get("updated")
        if updated is None:
            return True
        return updated.__class__ is _dt.date and updated <= today  # a datetime or a text date: let the check decide

    return quiet


#: `_fold_item("tags" or "domains", value)`, memoised (the same few hundred words on every note).
_FOLDED_VOCAB: dict[str, str] = {}


def fold_vocab(value: str) -> str:
    found = _FOLDED_VOCAB.get(value)
    if found is None:
        if len(_FOLDED_VOCAB) >= 100_000:
            _FOLDED_VOCAB.clear()
        found = _FOLDED_VOCAB[value] = _fold_item("tags", value)
    return found


DUPLICATE_ITEM = Rule(
    "duplicate-item", "frontmatter", WARNING,
    "The same value appears twice in a list field.",
    "Duplicates count twice in scoring signals and inflate the count rules.",
    "aliases:\n  - push swap\n  - push swap", "Remove the later copies.", "aliases:\n  - push swap",
)


@DUPLICATE_ITEM.check
def _duplicates(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
    if not has_fields(note):
        return
    for name in LIST_FIELDS:
        value = note.meta.get(name)
        if not isinstance(value, list) or len(value) < 2:
            continue
        # the usual list repeats nothing: one set of its keys says so (10k notes x 6 lists)
        strings = [item for item in value if isinstance(item, str)]
        if name in ("tags", "domains"):
            distinct = {fold_vocab(item) for item in strings}
        else:
            distinct = {item.strip() for item in strings}
        if len(distinct) == len(strings):
            continue
        seen: dict[str, int] = {}
        for i, item in enumerate(value):
            if not isinstance(item, str):
                continue
            key = _fold_item(name, item)
            if key not in seen:
                seen[key] = i
                continue
            first = seen[key]
            fix = Fix(f"remove the repeated item {i + 1} of `{name}`",
                      (Edit("drop-item", name, index=i, old=item),))
            yield make(ctx, note, item_span(note, name, i), DUPLICATE_ITEM,
                       f"`{item}` repeats item {first + 1} of `{name}` ({value[first]!r}): remove it", fix)


@DUPLICATE_ITEM.quick
def _duplicates_quick(ctx: LintContext) -> QuickPredicate:
    def quiet(note: Note, meta: dict) -> bool:
        for name in LIST_FIELDS:
            value = meta.get(name)
            if value is not None and len(value) > 1:  # (the gate: a list of strings)
                distinct = set(map(fold_vocab, value)) if name in ("tags", "domains") else {i.strip() for i in value}
                if len(distinct) != len(value):
                    return False
        return True

    return quiet


UNKNOWN_RULE = Rule(
    "unknown-rule", "frontmatter", WARNING,
    "`vaulttools-ignore` names a rule that does not exist.",
    "A misspelt suppression suppresses nothing.",
    "vaulttools-ignore: [answers-cont]", None,
)


@UNKNOWN_RULE.check
def _suppressions(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
    """The frontmatter key's names (`vaulttools.lint.suppression` reports the inline comments' under this rule)."""
    if not has_fields(note) or IGNORE_KEY not in note.meta:
        return
    names = ctx.rule_names
    for i, item in enumerate(raw_items(note, IGNORE_KEY)):
        if not isinstance(item, str) or item in names or item == "all":
            continue
        guess = did_you_mean(item, tuple(names))
        hint = f"did you mean `{guess}`?" if guess else "see docs/rules.md for the rule names"
        yield make(ctx, note, item_span(note, IGNORE_KEY, i), UNKNOWN_RULE,
                   f"`{IGNORE_KEY}` names `{item}`, which is no rule: it suppresses nothing; {hint}")


@UNKNOWN_RULE.quick
def _suppressions_quick(ctx: LintContext) -> QuickPredicate:
    return lambda note, meta: IGNORE_KEY not in meta


def suppressed_names(note: Note) -> frozenset[str] | None:
    """The rule names a note turns off for itself with `vaulttools-ignore: [rule, ...]`; None for every rule
    (`all`, or `vaulttools-ignore: true`): `vaulttools.lint.registry.suppressed_rules` spells that out."""
    value = note.meta.get(IGNORE_KEY) if isinstance(note.meta, dict) else None
    if value is None:
        return frozenset()
    items = value if isinstance(value, list) else [value]
    names = {item.strip() for item in items if isinstance(item, str)}
    if "all" in names or value is True:
        return None
    return frozenset(names)
