"""`--format sarif`: SARIF 2.1.0 for code-scanning tools (GitHub code scanning, IDE viewers), with the rule
metadata of `vaulttools.lint.registry` so each alert explains itself. Columns are Unicode code points."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from vaulttools import __version__
from vaulttools.lint.registry import RULES

if TYPE_CHECKING:
    from vaulttools.lint.engine import LintResult

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _rule_descriptor(rule) -> dict:
    help_text = f"{rule.summary}\n\nWhy: {rule.why}\n\nExample:\n{rule.example}\n\nFix: {rule.fix or 'by hand, as the message says'}"
    help_md = (
        f"{rule.summary}\n\n**Why.** {rule.why}\n\n**Example.**\n\n```\n{rule.example}\n```\n\n"
        f"**Fix.** {rule.fix or 'By hand, as the message says.'}"
    )
    return {
        "id": rule.name,
        "name": "".join(part.capitalize() for part in rule.name.split("-")),
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": f"{rule.summary} {rule.why}"},
        "help": {"text": help_text, "markdown": help_md},
        "defaultConfiguration": {"level": rule.severity.value},
        "properties": {"tags": [rule.family, "taxonomy" if rule.needs_taxonomy else "structural"],
                       "fixable": rule.fix is not None},
    }


def _uri(shown_path: str) -> str:
    """A URI reference: relative paths percent-encoded (`My Note.md` -> `My%20Note.md`), absolute ones as
    `file://` URIs."""
    if shown_path.startswith("/"):
        return Path(shown_path).as_uri()
    return quote(shown_path, safe="/")


def to_data(result: LintResult, shown: Callable[[str], str]) -> dict:
    index = {rule.name: i for i, rule in enumerate(RULES)}
    results = []
    for d in result.diagnostics:
        item = {
            "ruleId": d.rule,
            "ruleIndex": index[d.rule],
            "level": d.severity.value,
            "message": {"text": d.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(shown(d.path))},
                        "region": {
                            "startLine": d.line,
                            "startColumn": d.column,
                            "endLine": d.end_line,
                            "endColumn": max(d.end_column, 1),
                        },
                    }
                }
            ],
        }
        if d.fix is not None:
            item["properties"] = {"fix": d.fix.message}
        results.append(item)
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "vaulttools",
                        "version": __version__,
                        "rules": [_rule_descriptor(rule) for rule in RULES],
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def render(result: LintResult, shown: Callable[[str], str]) -> str:
    return json.dumps(to_data(result, shown), ensure_ascii=False, indent=2) + "\n"
