"""`--format sarif`: SARIF 2.1.0 for code-scanning tools (GitHub code scanning, IDE viewers), with the rule
metadata of `vaulttools.lint.registry` so each alert explains itself (and links to its documentation,
`helpUri`), and, for a finding with a safe fix, the fix as SARIF `fixes` (the replacement `--fix` would make).
Columns are Unicode code points."""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import encode_basestring  # type: ignore[attr-defined]
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from vaulttools import __version__
from vaulttools.lint.registry import RULES
from vaulttools.lint.urls import rule_url

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
        "helpUri": rule_url(rule.name),
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
    fixes = fix_changes(result) if results else {}
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
            change = fixes.get(id(d))
            if change is not None:
                item["fixes"] = [_fix_object(d, shown, change)]
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
    fixes = fix_changes(result)
    uris: dict[str, str] = {}
    enc = encode_basestring
    items = []
    for d in result.diagnostics:
        uri = uris.get(d.path)
        if uri is None:
            uri = uris[d.path] = enc(_uri(shown(d.path)))
        props = "" if d.fix is None else (
            ',\n          "properties": {\n            "fix": ' + enc(d.fix.message) + "\n          }")
        change = fixes.get(id(d)) if d.fix is not None else None
        if change is not None:  # json's own indented dump, indented to where it sits
            dumped = json.dumps([_fix_object(d, shown, change)], ensure_ascii=False, indent=2)
            props += ',\n          "fixes": ' + dumped.replace("\n", "\n          ")
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


# -- fixes ------------------------------------------------------------------------------------------------

#: One replacement: (start line, start column, end line, end column, inserted text), columns 1-based code points.
Change = tuple[int, int, int, int, str]


def fix_changes(result: LintResult) -> dict[int, Change]:
    """id(finding) -> the replacement its safe fix makes in its note, as it is on disk now: the note is read
    and fixed in memory by the same code as `--fix` (each finding's fix on its own), and the changed characters
    are the region between the longest common prefix and suffix of the text before and after. A finding
    whose fix no longer applies (the file changed, or it cannot be read) gets no `fixes`."""
    from vaulttools.lint.fixes import fix_bytes

    out: dict[int, Change] = {}
    root = Path(result.root)
    raws: dict[str, bytes | None] = {}
    for d in result.diagnostics:
        if d.fix is None:
            continue
        if d.path not in raws:
            try:
                raws[d.path] = (root / d.path).read_bytes()
            except OSError:
                raws[d.path] = None
        raw = raws[d.path]
        if raw is None:
            continue
        fixed = fix_bytes(d.path, raw, [d])
        if not fixed.changed or fixed.skipped:
            continue
        change = _change(raw.decode("utf-8"), fixed.fixed.decode("utf-8"))
        if change is not None:
            out[id(d)] = change
    return out


def _change(before: str, after: str) -> Change | None:
    if before.startswith("\ufeff") and after.startswith("\ufeff"):  # columns are counted after the BOM
        before, after = before[1:], after[1:]
    limit = min(len(before), len(after))
    start = 0
    while start < limit and before[start] == after[start]:
        start += 1
    end_b, end_a = len(before), len(after)
    while end_b > start and end_a > start and before[end_b - 1] == after[end_a - 1]:
        end_b -= 1
        end_a -= 1
    if start == end_b and start == end_a:
        return None
    line, column = _position(before, start)
    end_line, end_column = _position(before, end_b)
    return (line, column, end_line, end_column, after[start:end_a])


def _position(text: str, offset: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


def _fix_object(d, shown: Callable[[str], str], change: Change) -> dict:
    line, column, end_line, end_column, text = change
    return {
        "description": {"text": d.fix.message},
        "artifactChanges": [
            {
                "artifactLocation": {"uri": _uri(shown(d.path))},
                "replacements": [
                    {
                        "deletedRegion": {"startLine": line, "startColumn": column, "endLine": end_line,
                                          "endColumn": end_column},
                        "insertedContent": {"text": text},
                    }
                ],
            }
        ],
    }
