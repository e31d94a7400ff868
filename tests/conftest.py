"""Fixtures shared by every test module. Area-specific fixtures live beside their tests."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE_VAULT = REPO / "vault"
CORPORA = Path(os.environ.get("GRASBOT_CORPORA") or REPO.parent / "shared" / "corpora")

#: The project's own environment variables (docs/service.md, README), and those of the libraries it drives
#: (the Langfuse SDK's OpenTelemetry exporter, the ollama client): a developer who keeps them in their shell,
#: as the README tells them to, must get the same green run, and no test may reach their Langfuse or LLM.
_PREFIXES = ("VAULTTOOLS_", "LANGFUSE_", "OLLAMA_", "LLM_", "GRASBOT_", "SEARCH_", "MEMORY_", "ASK_", "OTEL_")
_NAMES = ("VAULT_DIR", "CORS_ORIGINS", "VISUAL", "EDITOR")
#: Kept: where the real vaults are (read-only inputs, see `corpus_path`).
_KEEP = ("GRASBOT_CORPORA",)


def project_variables(environ: dict[str, str] | os._Environ) -> list[str]:
    """The names in `environ` that the scrub removes."""
    return sorted(
        name for name in environ
        if name not in _KEEP and (name in _NAMES or name.startswith(_PREFIXES))
    )


def _scrub_environment() -> None:
    """Remove the project's variables from this process, so that every test and every process a test starts
    (they inherit `os.environ`) sees defaults; the user config dir goes to a private folder (the TUI saves
    its theme there). Done at import, before any test module reads the environment."""
    for name in project_variables(os.environ):
        del os.environ[name]
    import atexit
    import tempfile

    config_home = tempfile.mkdtemp(prefix="vaulttools-test-config-")
    atexit.register(shutil.rmtree, config_home, ignore_errors=True)
    os.environ["XDG_CONFIG_HOME"] = config_home


_scrub_environment()


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
