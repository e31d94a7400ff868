"""Where each rule is documented: one URL scheme for every report that links to a rule (JSON `url`, SARIF
`helpUri`): the rule's section of docs/rules.md in the project's repository, `<DOCS_URL>#<rule>` (docs/rules.md
gives each rule a `## <rule>` heading, whose anchor is the rule's name)."""

from __future__ import annotations

__all__ = ["DOCS_URL", "rule_url"]

#: docs/rules.md on the project's default branch (the same repository as `[project.urls]` in pyproject.toml).
DOCS_URL = "https://github.com/grasbot/grasbot-vaulttools/blob/main/docs/rules.md"


def rule_url(rule: str) -> str:
    """The documentation of `rule` (a stable kebab-case name: usable as an anchor as it is)."""
    return f"{DOCS_URL}#{rule}"
