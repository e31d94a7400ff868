"""Checks against TAXONOMIE.md: allowed values (`domains`, `tags`, `type`), counts and the priority range,
plus `tag-format`, which needs no taxonomy. Closed list -> error, open list -> warning.
"""

from __future__ import annotations

from collections.abc import Iterator

from grasbot import Note
from grasbot import fold
from vaulttools.lint.diagnostics import Diagnostic, Edit, Fix, Severity
from vaulttools.lint.rules import (
    LintContext,
    did_you_mean,
    frontmatter_start,
    is_block_scalar,
    item_span,
    key_span,
    make,
    raw_items,
    value_span,
)
from vaulttools.lint.rules.frontmatter import fields_unreadable

#: Note types the engine knows (docs/architecture.md, "The note"); a taxonomy section `type:` may add more.
DEFAULT_TYPES: tuple[str, ...] = ("projet", "competence", "parcours", "moc", "technique")

_RULE_OF = {"domains": "unknown-domain", "tags": "unknown-tag"}
_COUNT_RULES = {"domains": "domains-count", "aliases": "aliases-count", "answers": "answers-count"}


def vocab_key(value: str) -> str:
    """How a value is compared to the list: case, accents, a leading `#`, `_` and blanks do not count."""
    return fold(value.strip().lstrip("#").replace("_", "-")).replace(" ", "-")


def normal_tag(value: str) -> str:
    """A tag as Obsidian and the taxonomy write it: no `#`, lower-case, blanks become `-`."""
    return "-".join(value.strip().lstrip("#").lower().split())


def check_note(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
    if not note.has_frontmatter or fields_unreadable(note):
        return
    yield from _tag_format(note, ctx)
    if ctx.taxonomy is None:
        return
    for name in ("domains", "tags"):
        yield from _values(note, ctx, name)
    yield from _type(note, ctx)
    yield from _counts(note, ctx)
    yield from _priority(note, ctx)


def allowed_match(ctx: LintContext, name: str, value: str) -> str | None:
    """The listed value equal to `value` up to case/accents/`#`/spaces, when exactly one is."""
    vocabulary = ctx.taxonomy.vocabularies.get(name) if ctx.taxonomy is not None else None
    if vocabulary is None:
        return None
    found = ctx.vocab_keys(name, vocabulary.values, vocab_key).get(vocab_key(value), [])
    return found[0] if len(found) == 1 else None


def _tag_format(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
    value = note.meta.get("tags")
    if not isinstance(value, (list, str)):
        return
    items = value if isinstance(value, list) else [value]
    for i, item in enumerate(items):
        if not isinstance(item, str):
            continue
        target = allowed_match(ctx, "tags", item) or normal_tag(item)
        if not target or target == item:
            continue
        problems = []
        if item.strip().startswith("#"):
            problems.append("starts with `#`")
        if any(ch.isspace() for ch in item.strip()):
            problems.append("contains spaces")
        if item != item.lower():
            problems.append("has capitals")
        if not problems:
            problems.append("is not written as in TAXONOMIE.md")
        fix = None if value is item and is_block_scalar(note, "tags") else Fix(
            f"write the tag `{target}`", (Edit("replace-item", "tags", index=i, old=item, new=target),))
        yield make(ctx, note, item_span(note, "tags", i), "tag-format",
                   f"tag `{item}` {' and '.join(problems)}: write `{target}`", fix)


def _values(note: Note, ctx: LintContext, name: str) -> Iterator[Diagnostic]:
    vocabulary = ctx.taxonomy.vocabularies.get(name)
    if vocabulary is None or not vocabulary.values:
        return
    rule = _RULE_OF[name]
    severity = Severity.ERROR if vocabulary.closed else Severity.WARNING
    allowed = list(vocabulary.values)
    where = f"TAXONOMIE.md line {vocabulary.line}" if getattr(vocabulary, "line", None) else "TAXONOMIE.md"
    kind = "closed list" if vocabulary.closed else "list"
    for i, item in enumerate(raw_items(note, name)):
        if not isinstance(item, str) or not item.strip() or item in vocabulary.values:
            continue
        match = allowed_match(ctx, name, item)
        span = item_span(note, name, i)
        if match is not None:
            if name == "tags":
                continue  # a spelling variant of a listed tag: tag-format reports and fixes it
            fix = Fix(f"write `{match}`", (Edit("replace-item", name, index=i, old=item, new=match),))
            yield make(ctx, note, span, rule,
                       f"`{item}` is not in the {kind} of `{name}` ({where}); write it as listed: `{match}`",
                       fix, severity)
            continue
        guess = ctx.suggester(f"vocab.{name}", lambda: allowed).suggest(item)
        hint = f"did you mean `{guess}`? " if guess else ""
        remedy = (
            "use a listed value" if vocabulary.closed else f"use a listed value or add `{item}` to TAXONOMIE.md first"
        )
        yield make(ctx, note, span, rule,
                   f"`{item}` is not in the {kind} of `{name}` ({where}); {hint}{remedy}", None, severity)


def _type(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
    value = note.meta.get("type")
    if not isinstance(value, str) or not value.strip():
        return
    vocabulary = ctx.taxonomy.vocabularies.get("type")
    allowed = list(DEFAULT_TYPES)
    if vocabulary is not None:
        allowed += [v for v in vocabulary.values if v not in allowed]
    if value in allowed:
        return
    severity = Severity.ERROR if vocabulary is not None and vocabulary.closed else Severity.WARNING
    span = value_span(note, "type")
    matches = [a for a in allowed if vocab_key(a) == vocab_key(value)]
    if len(matches) == 1:
        fix = Fix(f"write `type: {matches[0]}`", (Edit("replace-value", "type", old=value, new=matches[0]),))
        yield make(ctx, note, span, "type-value", f"`type: {value}` is not a note type; write `{matches[0]}`",
                   fix, severity)
        return
    guess = did_you_mean(value, allowed)
    hint = f"did you mean `{guess}`? " if guess else ""
    yield make(ctx, note, span, "type-value",
               f"`type: {value}` is not a note type ({', '.join(allowed)}); {hint}use one of them "
               f"or add a `type:` section to TAXONOMIE.md", None, severity)


def _counts(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
    for name, rule in _COUNT_RULES.items():
        bounds = ctx.taxonomy.counts.get(name)
        if bounds is None:
            continue
        value = note.meta.get(name)
        if value is not None and not isinstance(value, (list, str)):
            continue  # field-type reports it
        count = len([v for v in raw_items(note, name) if isinstance(v, str) and v.strip()])
        if bounds.allows(count):
            continue
        where = f"TAXONOMIE.md line {bounds.line}" if bounds.line else "TAXONOMIE.md"
        if bounds.min is not None and count < bounds.min:
            action = f"add {bounds.min - count}" if count else f"add at least {bounds.min}"
        else:
            action = f"remove {count - bounds.max}"  # type: ignore[operator]
        span = key_span(note, name) if name in note.meta else frontmatter_start(note)
        yield make(ctx, note, span, rule,
                   f"{count} {name} where the taxonomy asks for {bounds.describe()} ({where}): {action}")


def _priority(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
    bounds = ctx.taxonomy.ranges.get("priority")
    value = note.meta.get("priority")
    if bounds is None or isinstance(value, bool) or not isinstance(value, int):
        return  # a non-number is field-type's finding
    if bounds.allows(value):
        return
    where = f"TAXONOMIE.md line {bounds.line}" if bounds.line else "TAXONOMIE.md"
    yield make(ctx, note, value_span(note, "priority"), "priority-range",
               f"`priority: {value}` is outside {bounds.describe()} ({where}): write a whole number in that range")
