"""The rule families, in the order they run, and which of their rules a run runs.

Note rules run family by family (this order), each family's rules in the order its module declares them;
then the vault families' passes, each only when one of its rules is on, given the rules that are. A rule that
is off (`--select`, `--ignore`, `severity = "off"`) is dropped here, before anything runs.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator
from types import ModuleType

from vaulttools.lint.diagnostics import Diagnostic
from vaulttools.lint.rule import Rule
from vaulttools.lint.rules import LintContext, books, frontmatter, links, retrieval, slugs, vocabulary

__all__ = ["NOTE_FAMILIES", "VAULT_FAMILIES", "VaultPass", "note_rules", "vault_passes"]

#: Families with note rules, in the order they run.
NOTE_FAMILIES: tuple[ModuleType, ...] = (frontmatter, vocabulary, slugs, books)
#: Families with vault rules, each with its one pass over the vault (`vault_pass(ctx, paths, rules)`; a family
#: without one has each rule's check called as `check(ctx, paths)`).
VAULT_FAMILIES: tuple[ModuleType, ...] = (slugs, links, retrieval, books)

VaultPass = Callable[[LintContext, list[str], Collection[Rule]], Iterator[Diagnostic]]


def _units(module: ModuleType, scope: str) -> tuple[Rule, ...]:
    """The rules `module` declares with `scope`, in declaration order (a rule it imports is not its own)."""
    found: dict[int, Rule] = {}  # (by identity: a name bound twice is one rule)
    for value in vars(module).values():
        if isinstance(value, Rule) and value.scope == scope and getattr(value.run, "__module__", None) == module.__name__:
            found.setdefault(id(value), value)
    return tuple(found.values())


#: Every note rule, in run order.
NOTE_RULES: tuple[Rule, ...] = tuple(rule for family in NOTE_FAMILIES for rule in _units(family, "note"))
_VAULT_RULES: tuple[tuple[ModuleType, tuple[Rule, ...]], ...] = tuple(
    (family, _units(family, "vault")) for family in VAULT_FAMILIES
)


def note_rules(enabled: Callable[[str], bool] | None = None) -> tuple[Rule, ...]:
    """The note rules that are on (all of them without `enabled`), in run order."""
    return NOTE_RULES if enabled is None else tuple(rule for rule in NOTE_RULES if enabled(rule.name))


def vault_passes(enabled: Callable[[str], bool] | None = None, only: Collection[ModuleType] | None = None
                 ) -> list[tuple[VaultPass, frozenset[Rule]]]:
    """(pass, the rules it runs) of each vault family (of those in `only`) that has a rule on, in run order."""
    out = []
    for family, rules in _VAULT_RULES:
        if only is not None and family not in only:
            continue
        on = frozenset(rule for rule in rules if enabled is None or enabled(rule.name))
        if on:
            out.append((getattr(family, "vault_pass", _each_rule), on))
    return out


def _each_rule(ctx: LintContext, paths: list[str], rules: Collection[Rule]) -> Iterator[Diagnostic]:
    """The pass of a family whose vault rules share nothing: each rule's check on its own, in name order."""
    for rule in sorted(rules, key=lambda r: r.name):
        yield from rule.run(ctx, paths)  # type: ignore[misc]
