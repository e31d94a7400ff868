"""Each lint rule is one unit (`vaulttools.lint.rule.Rule`), collected by the registry, and a rule that is off
never runs: `--select`/`--ignore` drop it before anything is called, in the note families and in the vault
families whose one pass feeds several rules."""

from __future__ import annotations

import importlib
import pkgutil
import shutil
from pathlib import Path

import pytest

import vaulttools.lint.rules as rules_package
from grasbot.vault import Vault
from vaulttools.lint import LintConfig, lint_notes, lint_vault
from vaulttools.lint.registry import RULE_NAMES, RULES
from vaulttools.lint.rule import Rule
from vaulttools.lint.rules.families import NOTE_RULES
from vaulttools.taxonomy import load_taxonomy

REPO = Path(__file__).resolve().parents[1]
TAXO_VAULT = REPO / "tests" / "fixtures" / "lint" / "taxo-vault"


def _declared() -> dict[str, Rule]:
    """Every `Rule` defined at the top level of a lint module, by name."""
    modules = ["vaulttools.lint.suppression"] + [
        f"{rules_package.__name__}.{info.name}" for info in pkgutil.iter_modules(rules_package.__path__)
    ]
    found: dict[str, Rule] = {}
    for name in modules:
        for value in vars(importlib.import_module(name)).values():
            if isinstance(value, Rule):
                found[value.name] = value
    return found


def test_the_registry_collects_every_declared_rule_and_each_is_whole():
    declared = _declared()
    assert set(declared) == set(RULE_NAMES), "a rule declared in a family module is missing from registry.RULES"
    assert len(set(RULE_NAMES)) == len(RULE_NAMES)
    for rule in RULES:
        assert declared[rule.name] is rule
        assert rule.run is not None, f"{rule.name} has no check"
        assert rule.summary and rule.why and rule.example
        if rule.scope == "note":
            assert rule.quick_factory is not None, f"{rule.name} has no quick predicate"
    assert {rule.name for rule in NOTE_RULES} == {rule.name for rule in RULES if rule.scope == "note"}


def test_a_rule_has_one_check():
    rule = Rule("x-test", "frontmatter", RULES[0].severity, "s", "w", "e", None)
    rule.check(lambda note, ctx: ())
    with pytest.raises(ValueError, match="two checks"):
        rule.check(lambda note, ctx: ())


@pytest.fixture
def vault_dir(tmp_path: Path) -> Path:
    """The fixture vault where every rule fires, with a bad answering profile."""
    root = tmp_path / "taxo-vault"
    shutil.copytree(TAXO_VAULT, root)
    (root / ".grasbot").mkdir()
    (root / ".grasbot" / "profile.toml").write_text('name = "fixture"\ntemprature = 0.1\n', encoding="utf-8")
    return root


def _forbid_all_but(monkeypatch: pytest.MonkeyPatch, keep: set[str]) -> list[str]:
    """Make every rule's check but `keep`'s fail the run if called; returns the names of those called."""
    called: list[str] = []
    for rule in RULES:
        if rule.name in keep:
            original = rule.run

            def counted(*args, _original=original, _name=rule.name, **kwargs):
                called.append(_name)
                return _original(*args, **kwargs)

            monkeypatch.setattr(rule, "run", counted)
        else:

            def forbidden(*args, _name=rule.name, **kwargs):
                raise AssertionError(f"the check of {_name}, which is off, was called")

            monkeypatch.setattr(rule, "run", forbidden)
    return called


@pytest.mark.parametrize("selected", RULE_NAMES)
def test_select_runs_the_selected_rule_only(monkeypatch, vault_dir, selected):
    """`--select RULE`: no other rule's check is called (not even its siblings of one family pass), and the
    findings are those of a full run for that rule."""
    vault = Vault.load(vault_dir)
    taxonomy = load_taxonomy(vault_dir / "TAXONOMIE.md")
    full = lint_vault(vault, taxonomy, LintConfig())
    assert selected in {d.rule for d in full.diagnostics}
    called = _forbid_all_but(monkeypatch, {selected})
    only = lint_vault(vault, taxonomy, LintConfig(select=frozenset({selected})))
    expected = [d for d in full.diagnostics if d.rule == selected]
    if selected == "unused-suppression":  # a directive naming a rule that is off is not reported as unused
        assert set(only.diagnostics) < set(expected)
    else:
        assert only.diagnostics == expected
    assert called  # the selected rule did run
    assert set(called) == {selected}


@pytest.mark.parametrize("ignored", ["tag-format", "alias-duplicate", "broken-anchor", "private-link",
                                     "slug-duplicate", "field-type", "profile-invalid"])
def test_ignore_skips_a_rule_before_it_runs(monkeypatch, vault_dir, ignored):
    """`--ignore RULE`: its check is never called, the other rules of its family still run, and nothing else
    changes."""
    vault = Vault.load(vault_dir)
    taxonomy = load_taxonomy(vault_dir / "TAXONOMIE.md")
    full = lint_vault(vault, taxonomy, LintConfig())
    called = _forbid_all_but(monkeypatch, set(RULE_NAMES) - {ignored})
    rest = lint_vault(vault, taxonomy, LintConfig(ignore=frozenset({ignored})))
    # (a directive naming a rule that is off is not reported as unused either)
    assert rest.diagnostics == [d for d in full.diagnostics if d.rule != ignored
                                and not (d.rule == "unused-suppression" and f"no `{ignored}` finding" in d.message)]
    assert ignored not in called
    family = next(rule.family for rule in RULES if rule.name == ignored)
    siblings = {rule.name for rule in RULES if rule.family == family} - {ignored}
    assert siblings & set(called) or not siblings  # its family ran, without it
    # the watcher's path (lint_notes) drops it the same way
    some = lint_notes(vault, taxonomy, sorted(vault.notes), LintConfig(ignore=frozenset({ignored})))
    assert ignored not in {d.rule for d in some}


def test_only_fixable_rules_offer_fixes(vault_dir):
    """A rule's docs say whether it has a fix (`Rule.fix`): its check offers one only then."""
    vault = Vault.load(vault_dir)
    result = lint_vault(vault, load_taxonomy(vault_dir / "TAXONOMIE.md"), LintConfig())
    by_name = {rule.name: rule for rule in RULES}
    offering = {d.rule for d in result.diagnostics if d.fix is not None}
    assert offering and all(by_name[name].fixable for name in offering)
