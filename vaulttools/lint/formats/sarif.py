"""`--format sarif`: SARIF 2.1.0 for code-scanning tools (GitHub code scanning, IDE viewers), with the rule
metadata of `vaulttools.lint.registry` so each alert explains itself. Columns are Unicode code points."""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import encode_basestring  # type: ignore[attr-defined]
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


def to_data(result: LintResult, shown: Callable[[str], str], results: bool = True) -> dict:
    """The SARIF document as data (`results` False: with an empty `results` list, for `render`)."""
    index = {rule.name: i for i, rule in enumerate(RULES)}
    found: list[dict] = []
    for d in result.diagnostics if results else ():
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
        found.append(item)
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
                "results": found,
            }
        ],
    }


def render(result: LintResult, shown: Callable[[str], str]) -> str:
    """`json.dumps(to_data(result, shown), ensure_ascii=False, indent=2) + "\\n"`, byte for byte, in a
    fraction of the time: with `indent` json falls back to its pure-Python encoder (seconds for the 35k
    findings of the 10k benchmark vault (benchmarks/README.md, "Figures behind the code")), so the document
    around the results is dumped by json and each result is written from a template, its strings encoded by
    json's own C function (tests/test_lint_formats.py compares both)."""
    data = to_data(result, shown, results=False)
    skeleton = json.dumps(data, ensure_ascii=False, indent=2)
    if not result.diagnostics:
        return skeleton + "\n"
    head, marker, tail = skeleton.rpartition('"results": []')
    if not marker:  # cannot happen (the run always has its results key); the slow way then
        return json.dumps(to_data(result, shown), ensure_ascii=False, indent=2) + "\n"
    index = {rule.name: i for i, rule in enumerate(RULES)}
    uris: dict[str, str] = {}
    enc = encode_basestring
    items = []
    for d in result.diagnostics:
        uri = uris.get(d.path)
        if uri is None:
            uri = uris[d.path] = enc(_uri(shown(d.path)))
        props = "" if d.fix is None else (
            ',\n          "properties": {\n            "fix": ' + enc(d.fix.message) + "\n          }")
        items.append(
            f'        {{\n          "ruleId": {enc(d.rule)},\n          "ruleIndex": {index[d.rule]},\n'
            f'          "level": {enc(d.severity.value)},\n          "message": {{\n'
            f'            "text": {enc(d.message)}\n          }},\n          "locations": [\n            {{\n'
            f'              "physicalLocation": {{\n                "artifactLocation": {{\n'
            f'                  "uri": {uri}\n                }},\n                "region": {{\n'
            f'                  "startLine": {int(d.line)},\n                  "startColumn": {int(d.column)},\n'
            f'                  "endLine": {int(d.end_line)},\n                  "endColumn": {max(int(d.end_column), 1)}\n'
            f'                }}\n              }}\n            }}\n          ]{props}\n        }}'
        )
    return head + '"results": [\n' + ",\n".join(items) + "\n      ]" + tail + "\n"
