"""Where each rule is documented: one URL scheme for every report that links to a rule (JSON `url`, SARIF
`helpUri`): `<DOCS_URL>#<rule>`, the rule's section of this project's docs/rules.md (which gives each rule a
`## <rule>` heading, whose anchor is the rule's name).

`DOCS_URL` is the one setting: `$VAULTTOOLS_DOCS_URL` when set (where a copy of this repository is published,
e.g. `https://git.example.org/you/grasbot/src/branch/main/docs/rules.md`, so that the links open in a
browser); else `docs/rules.md`, the file's path in the repository, a reference relative to its root (the
project has no public home to point at). The lint cache keys its stored reports on it.
"""

from __future__ import annotations

import os

__all__ = ["DEFAULT_DOCS_URL", "DOCS_URL", "rule_url"]

#: docs/rules.md, as a path from the repository's root.
DEFAULT_DOCS_URL = "docs/rules.md"

#: Read once per process: every report of a run (and every row memoised by the formats) uses the same base.
DOCS_URL = os.environ.get("VAULTTOOLS_DOCS_URL", "").strip() or DEFAULT_DOCS_URL


def rule_url(rule: str) -> str:
    """The documentation of `rule` (a stable kebab-case name: usable as an anchor as it is)."""
    return f"{DOCS_URL}#{rule}"
