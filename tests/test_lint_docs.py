"""The rule reference, the pre-commit hooks and the rule registry stay in step with the code."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from grasbot.vault import Vault
from vaulttools.lint import LintConfig, lint_vault
from vaulttools.lint.registry import RULE_NAMES, RULES, render_rules_markdown
from vaulttools.taxonomy import load_taxonomy

REPO = Path(__file__).resolve().parents[1]
TAXO_VAULT = REPO / "tests" / "fixtures" / "lint" / "taxo-vault"


def test_rules_md_is_generated_from_the_registry():
    assert (REPO / "docs" / "rules.md").read_text(encoding="utf-8") == render_rules_markdown(), (
        "docs/rules.md is stale: regenerate it with the command in its first comment"
    )


def test_every_rule_is_documented_with_example_and_fix():
    text = render_rules_markdown()
    for rule in RULES:
        assert f"## {rule.name}\n" in text and rule.example and rule.why
        assert rule.name == rule.name.lower() and " " not in rule.name  # stable kebab-case ids
    assert len(set(RULE_NAMES)) == len(RULE_NAMES)


def test_design_rule_names_exist():
    # docs/architecture.md promises these names; they must never be renamed
    promised = ("frontmatter-invalid field-missing field-type type-value visibility-value unknown-domain unknown-tag "
                "domains-count aliases-count answers-count priority-range slug-mismatch slug-duplicate "
                "alias-duplicate broken-link broken-anchor ambiguous-link private-link").split()
    assert set(promised) <= set(RULE_NAMES)
    assert {"updated-date", "answer-not-retrieved"} <= set(RULE_NAMES)


def test_every_rule_fires_on_the_fixture_vault(tmp_path):
    # the fixture vault with a bad answering profile (kept out of the shared fixture: other tests count its findings)
    vault = tmp_path / "taxo-vault"
    shutil.copytree(TAXO_VAULT, vault)
    (vault / ".grasbot").mkdir()
    (vault / ".grasbot" / "profile.toml").write_text('name = "fixture"\ntemprature = 0.1\n', encoding="utf-8")
    result = lint_vault(Vault.load(vault), load_taxonomy(vault / "TAXONOMIE.md"), LintConfig())
    assert {d.rule for d in result.diagnostics} == set(RULE_NAMES)


def test_pre_commit_hooks():
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    by_id = {hook["id"]: hook for hook in hooks}
    assert set(by_id) == {"vaulttools-lint", "vaulttools-lint-fix"}
    for hook in hooks:
        assert hook["language"] == "python" and hook["pass_filenames"] is True  # the staged notes
        assert hook["entry"].startswith("vaulttools lint")
    assert "--fix" in by_id["vaulttools-lint-fix"]["entry"]
    assert "vaulttools-lint" in (REPO / "docs" / "ci.md").read_text(encoding="utf-8")
