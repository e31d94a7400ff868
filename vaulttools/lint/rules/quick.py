"""The quick-clean test: a note that no note rule can report anything on skips the note rules' checks.

The note checks are a dozen generators per note (a tenth of the 10k benchmark vault's lint:
benchmarks/README.md, "Figures behind the code"), where most notes have no note-local finding. The test is
built once per run from the rules that are on: the gate below, then each rule's own quick predicate
(`@RULE.quick` beside its check, in its family module), in straight-line order. It is conservative: anything
unusual — a typed item in a list, a date written as text, a suppression, a problem — answers False, and the
checks run. It never decides a finding: when it says False the real checks run; when it says True they would
have found nothing. A note rule without a quick predicate turns the test off for the runs it is on in.

`tests/test_lint_quick.py` guards it: on every note of the lint fixtures, the bundled vault, the real corpora
and a synthetic vault (with and without their taxonomy), a "clean" is checked against the checks themselves;
so it is on made-up notes that put each field, one at a time, on every side of every condition of the note
checks and, with hypothesis, on random mixes of them; and rule by rule, with only that rule on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from grasbot import LIST_FIELDS, STR_FIELDS, Note
from vaulttools.lint.rule import QuickPredicate, Rule
from vaulttools.lint.rules import LintContext

__all__ = ["QuickTest", "gate", "build"]

QuickTest = Callable[[Note], bool]


def gate(note: Note) -> bool:
    """What every quick predicate may take for granted: the note was read without a problem, and its
    frontmatter is a mapping whose known fields have the types the engine expects (lists of strings, strings,
    a whole-number `priority`). So field-type and frontmatter-invalid have nothing to say of a note past it."""
    if note.problems or not note.has_frontmatter:
        return False
    meta = note.meta
    if meta.__class__ is not dict:
        return False
    for name in LIST_FIELDS:
        value = meta.get(name)
        if value is None:
            continue
        if value.__class__ is not list:
            return False
        for item in value:
            if item.__class__ is not str:
                return False
    for name in STR_FIELDS:
        value = meta.get(name)
        if value is not None and value.__class__ is not str:
            return False
    priority = meta.get("priority")
    return priority is None or priority.__class__ is int


def build(rules: Sequence[Rule], ctx: LintContext) -> QuickTest | None:
    """The quick-clean test of a run whose note rules on are `rules` (None when one has no quick predicate)."""
    predicates: list[QuickPredicate] = []
    for rule in rules:
        if rule.quick_factory is None:
            return None
        predicate = rule.quick_factory(ctx)
        if predicate is not None:  # None: nothing to check beyond the gate in this run
            predicates.append(predicate)
    checks = tuple(predicates)

    def is_clean(note: Note) -> bool:
        if not gate(note):
            return False
        meta = note.meta
        for quiet in checks:
            if not quiet(note, meta):
                return False
        return True

    return is_clean
