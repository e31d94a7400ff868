"""`--format json`: the stable shape of DESIGN §10. `path` is relative to the vault, `vault` is the vault folder."""

from __future__ import annotations

import json
from collections.abc import Callable

from vaulttools.lint.engine import LintResult


def to_data(result: LintResult) -> dict:
    return {
        "version": 1,
        "vault": str(result.root),
        "notes": result.notes,
        "diagnostics": [d.to_dict() for d in result.diagnostics],
        "summary": result.summary,
    }


def render(result: LintResult, shown: Callable[[str], str] | None = None) -> str:
    return json.dumps(to_data(result), ensure_ascii=False, indent=2) + "\n"
