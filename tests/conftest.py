"""Fixtures shared by every test module. Area-specific fixtures live beside their tests."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE_VAULT = REPO / "vault"
CORPORA = Path(os.environ.get("GRASBOT_CORPORA") or REPO.parent / "shared" / "corpora")


def corpus_path(name: str) -> Path:
    """The named real vault, or skip the test when the corpora are not on this machine."""
    path = CORPORA / name
    if not path.is_dir():
        pytest.skip(f"corpus {name} not available at {path}")
    return path


@pytest.fixture
def sample_vault_copy(tmp_path: Path) -> Path:
    """A writable copy of the bundled vault (and its TAXONOMIE.md one level up, as in the repo)."""
    dest = tmp_path / "repo" / "vault"
    shutil.copytree(SAMPLE_VAULT, dest)
    taxonomy = REPO / "TAXONOMIE.md"
    if taxonomy.exists():
        shutil.copy2(taxonomy, dest.parent / "TAXONOMIE.md")
    return dest
