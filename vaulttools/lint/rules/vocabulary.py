"""The vocabulary rules, on one note, against TAXONOMIE.md: allowed values (`domains`, `tags`, `type`), counts
and the priority range, plus `tag-format`, which needs no taxonomy. Closed list -> error, open list -> warning.

Each rule is one unit (`vaulttools.lint.rule.Rule`): its docs, its check (run in the order declared here) and
its quick-clean predicate side by side.
"""

from __future__ import annotations

from collections.abc import Iterator

from grasbot import Note
from grasbot import fold
from vaulttools.lint.diagnostics import Diagnostic, Edit, Fix, Severity
from vaulttools.lint.rule import ERROR, WARNING, QuickPredicate, Rule
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



def vocab_key(value: str) -> str:
    """How a value is compared to the list: case, accents, a leading `#`, `_` and blanks do not count."""
    return fold(value.strip().lstrip("#").replace("_", "-")).replace(" ", "-")


def normal_tag(value: str) -> str:
    """A tag as Obsidian and the taxonomy write it: no `#`, lower-case, blanks become `-`."""
    return "-".join(value.strip().lstrip("#").lower().split())


def _read(note: Note) -> bool:
    """Whether the note's fields can be checked against the vocabularies (a frontmatter that was read)."""
    return note.has_frontmatter and not fields_unreadable(note)


def allowed_match(ctx: LintContext, name: str, value: str) -> str | None:
    """The listed value equal to `value` up to case/accents/`#`/spaces, when exactly one is."""
    vocabulary = ctx.taxonomy.vocabularies.get(name) if ctx.taxonomy is not None else None
    if vocabulary is None:
        return None
    found = ctx.vocab_keys(name, vocabulary.values, vocab_key).get(vocab_key(value), [])
    return found[0] if len(found) == 1 else None


TAG_FORMAT = Rule(
    "tag-format", "vocabulary", WARNING,
    "A tag starts with `#`, contains spaces, or has capitals.",
    "Obsidian reads frontmatter tags without `#` and without spaces, case-insensitively; the taxonomy's tags "
    "are lower-case kebab-case. Variants split one tag in several.",
    "tags: [\"#Docker\", Machine Learning]",
    "Lower-case, drop the `#`, spaces and underscores become `-`.",
    "tags: [\"docker\", machine-learning]",
)


@TAG_FORMAT.check
def _tag_format(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
    if not _read(note):
        return
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
        yield make(ctx, note, item_span(note, "tags", i), TAG_FORMAT,
                   f"tag `{item}` {' and '.join(problems)}: write `{target}`", fix)


@TAG_FORMAT.quick
def _tag_format_quick(ctx: LintContext) -> QuickPredicate:
    verdicts: dict[str, bool] = {}  # tag -> the check says nothing of it (once per distinct tag in a run)

    def quiet(note: Note, meta: dict) -> bool:
        for tag in meta.get("tags") or ():
            found = verdicts.get(tag)
            if found is None:
                target = allowed_match(ctx, "tags", tag) or normal_tag(tag)
                found = verdicts[tag] = not target or target == tag
            if not found:
                return False
        return True

    return quiet


def _values(note: Note, ctx: LintContext, name: str, rule: Rule) -> Iterator[Diagnostic]:
    if not _read(note) or ctx.taxonomy is None:
        return
    vocabulary = ctx.taxonomy.vocabularies.get(name)
    if vocabulary is None or not vocabulary.values:
        return
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


def _listed(rule: Rule, name: str) -> None:
    """`rule` checks that the values of the list field `name` are listed (its check and quick predicate)."""

    @rule.check
    def check(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
        return _values(note, ctx, name, rule)

    @rule.quick
    def quick(ctx: LintContext) -> QuickPredicate | None:
        return _listed_quick(ctx, name)


def _listed_quick(ctx: LintContext, name: str) -> QuickPredicate | None:
    """Quiet when every value of the list field `name` is listed (or blank); None without a list to check."""
    vocabulary = ctx.taxonomy.vocabularies.get(name) if ctx.taxonomy is not None else None
    if vocabulary is None or not vocabulary.values:
        return None
    allowed = frozenset(vocabulary.values)

    def quiet(note: Note, meta: dict) -> bool:
        for value in meta.get(name) or ():
            if value not in allowed and value.strip():
                return False
        return True

    return quiet


UNKNOWN_DOMAIN = Rule(
    "unknown-domain", "vocabulary", ERROR,
    "A `domains` value is not in the taxonomy's list (error when the list is closed, warning otherwise).",
    "Domains are matched against the visitor's question; an unlisted domain never matches and splits the "
    "vocabulary.",
    "domains: [IA, devop]",
    "When the value equals a listed one after folding case, accents, `#` and spaces: write the listed one. "
    "Otherwise the message suggests the closest listed value.",
    "domains: [ia, devop]   # devop: did you mean devops?", needs_taxonomy=True,
)



UNKNOWN_TAG = Rule(
    "unknown-tag", "vocabulary", WARNING,
    "A `tags` value is not in the taxonomy's list (error when the list is closed, warning otherwise).",
    "Tags are scoring signals; a tag only one note uses adds noise. Add it to TAXONOMIE.md first, or use a "
    "listed one.",
    "tags: [tris]", None, "tags: [tri]   # by hand, as suggested", needs_taxonomy=True,
)


_listed(UNKNOWN_DOMAIN, "domains")
_listed(UNKNOWN_TAG, "tags")


TYPE_VALUE = Rule(
    "type-value", "vocabulary", WARNING,
    "`type` is not one of the note types (projet, competence, parcours, moc, technique, plus those the "
    "taxonomy adds).",
    "Answers prefer `type: parcours` notes for biography and the API builds source URLs from the type.",
    "type: Projet", "When the value differs from a known type only by case or accents: write the known type.",
    "type: projet", needs_taxonomy=True,
)


@TYPE_VALUE.check
def _type(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
    if not _read(note) or ctx.taxonomy is None:
        return
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
        yield make(ctx, note, span, TYPE_VALUE, f"`type: {value}` is not a note type; write `{matches[0]}`",
                   fix, severity)
        return
    guess = did_you_mean(value, allowed)
    hint = f"did you mean `{guess}`? " if guess else ""
    yield make(ctx, note, span, TYPE_VALUE,
               f"`type: {value}` is not a note type ({', '.join(allowed)}); {hint}use one of them "
               f"or add a `type:` section to TAXONOMIE.md", None, severity)


@TYPE_VALUE.quick
def _type_quick(ctx: LintContext) -> QuickPredicate | None:
    if ctx.taxonomy is None:
        return None
    vocabulary = ctx.taxonomy.vocabularies.get("type")
    types = frozenset(DEFAULT_TYPES) | frozenset(vocabulary.values if vocabulary is not None else ())

    def quiet(note: Note, meta: dict) -> bool:
        kind = meta.get("type")
        return kind is None or not kind.strip() or kind in types

    return quiet


def _count(note: Note, ctx: LintContext, name: str, rule: Rule) -> Iterator[Diagnostic]:
    """`rule`'s finding when the number of `name` items is outside the taxonomy's bounds."""
    if not _read(note) or ctx.taxonomy is None:
        return
    bounds = ctx.taxonomy.counts.get(name)
    if bounds is None:
        return
    value = note.meta.get(name)
    if value is not None and not isinstance(value, (list, str)):
        return  # field-type reports it
    count = len([v for v in raw_items(note, name) if isinstance(v, str) and v.strip()])
    if bounds.allows(count):
        return
    where = f"TAXONOMIE.md line {bounds.line}" if bounds.line else "TAXONOMIE.md"
    if bounds.min is not None and count < bounds.min:
        action = f"add {bounds.min - count}" if count else f"add at least {bounds.min}"
    else:
        action = f"remove {count - bounds.max}"  # type: ignore[operator]
    span = key_span(note, name) if name in note.meta else frontmatter_start(note)
    yield make(ctx, note, span, rule,
               f"{count} {name} where the taxonomy asks for {bounds.describe()} ({where}): {action}")


def _counted(rule: Rule, name: str) -> None:
    """`rule` checks the number of `name` items against the taxonomy (its check and quick predicate)."""

    @rule.check
    def check(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
        return _count(note, ctx, name, rule)

    @rule.quick
    def quick(ctx: LintContext) -> QuickPredicate | None:
        return _count_quick(ctx, name)


def _count_quick(ctx: LintContext, name: str) -> QuickPredicate | None:
    bounds = ctx.taxonomy.counts.get(name) if ctx.taxonomy is not None else None
    if bounds is None:
        return None

    def quiet(note: Note, meta: dict) -> bool:
        value = meta.get(name)
        count = 0 if value is None else len(value) if all(map(str.strip, value)) else sum(
            1 for item in value if item.strip())
        return bounds.allows(count)

    return quiet


DOMAINS_COUNT = Rule(
    "domains-count", "vocabulary", ERROR,
    "The number of `domains` is outside the taxonomy's bounds (\"entre 1 et 4 domaines\").",
    "Too many domains make a note match everything; none makes it match nothing.",
    "domains: [algorithmique, c, cpp, systeme, reseau]", None, needs_taxonomy=True,
)



ALIASES_COUNT = Rule(
    "aliases-count", "vocabulary", WARNING,
    "The number of `aliases` is outside the taxonomy's bounds (\"Entre 3 et 12 aliases\").",
    "Too few aliases miss visitors' wordings; too many add noise to scoring.",
    "aliases: [push swap]", None, needs_taxonomy=True,
)



ANSWERS_COUNT = Rule(
    "answers-count", "vocabulary", WARNING,
    "The number of `answers` is outside the taxonomy's bounds (\"2 à 6 answers\").",
    "Answers are the strongest retrieval signal; one is too little, a dozen dilutes the note's focus.",
    "answers:\n  - Parle-moi de push_swap", None, needs_taxonomy=True,
)


_counted(DOMAINS_COUNT, "domains")
_counted(ALIASES_COUNT, "aliases")
_counted(ANSWERS_COUNT, "answers")


PRIORITY_RANGE = Rule(
    "priority-range", "vocabulary", ERROR,
    "`priority` is outside the taxonomy's range (\"Entier de 1 à 10\").",
    "Priority is a light scoring boost, (p − 5) × 0.3: out-of-range values distort rankings.",
    "priority: 15", None, needs_taxonomy=True,
)


@PRIORITY_RANGE.check
def _priority(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
    if not _read(note) or ctx.taxonomy is None:
        return
    bounds = ctx.taxonomy.ranges.get("priority")
    value = note.meta.get("priority")
    if bounds is None or isinstance(value, bool) or not isinstance(value, int):
        return  # a non-number is field-type's finding
    if bounds.allows(value):
        return
    where = f"TAXONOMIE.md line {bounds.line}" if bounds.line else "TAXONOMIE.md"
    yield make(ctx, note, value_span(note, "priority"), PRIORITY_RANGE,
               f"`priority: {value}` is outside {bounds.describe()} ({where}): write a whole number in that range")


@PRIORITY_RANGE.quick
def _priority_quick(ctx: LintContext) -> QuickPredicate | None:
    bounds = ctx.taxonomy.ranges.get("priority") if ctx.taxonomy is not None else None
    if bounds is None:
        return None
    return lambda note, meta: meta.get("priority") is None or bounds.allows(meta["priority"])  # (the gate: an int)
