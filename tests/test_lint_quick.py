"""`vaulttools.lint.rules.quick.is_clean` may only say "clean" of a note the note checks find nothing in.

It lets the usual clean note skip a dozen checks; a wrong "clean" would hide findings. Checked on every note
of the lint fixtures, the bundled vault, the real corpora (with and without their taxonomy) and a synthetic
vault, against the checks themselves.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import pytest

from grasbot.vault import Vault
from tests.conftest import CORPORA, REPO, SAMPLE_VAULT
from vaulttools.lint import LintConfig
from vaulttools.lint.rules import LintContext, checks, quick
from vaulttools.taxonomy import find_taxonomy, load_taxonomy

FIXTURES = REPO / "tests" / "fixtures" / "lint"


def _compare(root: Path, with_taxonomy: bool = True, today: dt.date | None = None) -> tuple[int, int]:
    """(notes said clean, notes) after checking each "clean" against the real checks."""
    vault = Vault.load(root)
    found = find_taxonomy(root) if with_taxonomy else None
    taxonomy = load_taxonomy(found) if found else None
    ctx = LintContext(vault=vault, taxonomy=taxonomy, config=LintConfig(), today=today or dt.date.today())
    note_checks, _ = checks()
    clean = 0
    for path, note in vault.notes.items():
        if quick.is_clean(note, ctx):
            clean += 1
            findings = [d for check in note_checks for d in check(note, ctx)]
            assert findings == [], (path, findings)
    return clean, len(vault.notes)


def test_it_covers_the_note_checks():
    assert quick.applies(checks()[0])


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()))
def test_fixture_vaults(name):
    for with_taxonomy in (True, False):
        _compare(FIXTURES / name, with_taxonomy)


def test_sample_vault_is_mostly_quick():
    clean, total = _compare(SAMPLE_VAULT)
    assert clean > total // 2
    _compare(SAMPLE_VAULT, with_taxonomy=False, today=dt.date(2000, 1, 1))  # every `updated` in the future


@pytest.mark.parametrize("name", ["grasbot-vault", "obsidian-help-en", "obsidian-help-fr"])
def test_real_corpora(name):
    root = CORPORA / name
    if not root.is_dir():
        pytest.skip(f"corpus {name} not available")
    _compare(root)
    _compare(root, with_taxonomy=False)


def test_synthetic_vault(tmp_path):
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import synth
    finally:
        sys.path.pop(0)
    root = synth.generate(tmp_path / "synth", 400, seed=11)
    clean, total = _compare(root)
    assert clean > total // 2  # the point of it: most notes skip the checks
    _compare(root, with_taxonomy=False)
