"""profile-invalid: the vault's answering profile (`.grasbot/profile.toml`, grasbot/answer/profile.py), checked
by the loader the service uses, so lint and the server never disagree on what is wrong.

Not a note check: the profile is no note (Obsidian and the vault loader skip the hidden `.grasbot/`), so its
findings come from `lint_vault` alone (the watcher and the TUI lint notes), at the file's own path.
"""

from __future__ import annotations

from pathlib import Path

from grasbot import profile_problems
from vaulttools.lint.diagnostics import Diagnostic
from vaulttools.lint.registry import get_rule

RULE = "profile-invalid"


def check_profile(root: Path) -> list[Diagnostic]:
    """The findings on the profile of the vault at `root` (none when it has no profile or a right one)."""
    severity = get_rule(RULE).severity
    out = []
    for problem in profile_problems(root):
        line, column = (problem.line, problem.column) if problem.line else (1, 1)  # 0: the whole file
        out.append(Diagnostic(_relative(problem.path, root), line, column, line, column, RULE, severity, problem.message))
    return out


def _relative(path: str, root: Path) -> str:
    """`path` as the vault-relative POSIX path every finding has (the loader names files as it found them)."""
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path
