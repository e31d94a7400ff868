"""profile-invalid: the vault's answering profile (`.grasbot/profile.toml`, grasbot/answer/profile.py), checked
by the loader the service uses, so lint and the server never disagree on what is wrong.

Not a note check: the profile is no note (Obsidian and the vault loader skip the hidden `.grasbot/`), so its
findings come from `lint_vault` alone (the watcher and the TUI lint notes), at the file's own path.
"""

from __future__ import annotations

from pathlib import Path

from grasbot import profile_problems
from vaulttools.lint.diagnostics import Diagnostic
from vaulttools.lint.rule import ERROR, Rule

PROFILE_INVALID = Rule(
    "profile-invalid", "profile", ERROR,
    "The vault's answering profile, `.grasbot/profile.toml` (or a prompt file it names), cannot be used: "
    "not valid TOML, an unknown key, a wrong type or value, an `extends` that names no shipped profile, a "
    "prompt file that is missing or outside `.grasbot/`, a prompt without the placeholders it needs "
    "(`{citation}` in the system prompt, `{pointers}` in the ungrounded one when the profile has pointers) "
    "or with an unknown one.",
    "GrasBot refuses to start with a profile it cannot use, and a reload keeps the previous one: the "
    "author learns it here, with the file and the line, before the server does (docs/service.md, "
    "\"Answering profiles\").",
    "# .grasbot/profile.toml\nextends = \"textbook\"\ntemprature = 0.1   # did you mean `temperature`?", None, scope="run",
)


@PROFILE_INVALID.check
def check_profile(root: Path) -> list[Diagnostic]:
    """The findings on the profile of the vault at `root` (none when it has no profile or a right one)."""
    severity = PROFILE_INVALID.severity
    out = []
    for problem in profile_problems(root):
        line, column = (problem.line, problem.column) if problem.line else (1, 1)  # 0: the whole file
        out.append(Diagnostic(_relative(problem.path, root), line, column, line, column, PROFILE_INVALID.name, severity,
                              problem.message))
    return out


def _relative(path: str, root: Path) -> str:
    """`path` as the vault-relative POSIX path every finding has (the loader names files as it found them)."""
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path
