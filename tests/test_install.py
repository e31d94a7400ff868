"""A lint-only install (no extra) in a fresh virtual environment: none of the service, TUI or watcher packages,
and `vaulttools lint` works; a command whose extra is missing says which one to install (exit 2).

It runs pip for real (about 20-40 s with pip's cache: part of `make test`); it skips when the package index
cannot be reached."""

from __future__ import annotations

import shutil
import subprocess
import venv

import pytest

from tests.conftest import REPO

HEAVY = ("fastapi", "starlette", "uvicorn", "langfuse", "opentelemetry", "ollama", "textual", "watchdog", "pydantic")


@pytest.mark.timeout(300)
def test_lint_only_install_has_no_service_or_tui_package(tmp_path, sample_vault_copy):
    source = tmp_path / "src"  # a copy: building a wheel writes build/ and *.egg-info beside the sources
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    for package in ("grasbot", "vaulttools"):
        shutil.copytree(REPO / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(source)],
                          capture_output=True, text=True, timeout=280)
    if done.returncode != 0 and ("NewConnectionError" in done.stderr or "No matching distribution" in done.stderr):
        pytest.skip(f"the package index cannot be reached: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stderr
    probe = "import importlib.util as u, sys; print(' '.join(m for m in sys.argv[1:] if u.find_spec(m)))"
    found = subprocess.run([str(python), "-c", probe, *HEAVY], capture_output=True, text=True, check=True)
    assert found.stdout.split() == []
    bin_dir = env_dir / "bin"
    lint = subprocess.run([str(bin_dir / "vaulttools"), "lint", str(sample_vault_copy)], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert "notes checked, no finding" in lint.stdout
    for argv, extra in ((["vaulttools", "tui", str(sample_vault_copy)], "tui"),
                        (["vaulttools", "watch", str(sample_vault_copy)], "watch"),
                        (["grasbot", "serve", "--vault", str(sample_vault_copy)], "serve")):
        run = subprocess.run([str(bin_dir / argv[0]), *argv[1:]], capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert run.returncode == 2 and f"grasbot-vaulttools[{extra}]" in run.stderr, run.stderr
        assert "Traceback" not in run.stderr

