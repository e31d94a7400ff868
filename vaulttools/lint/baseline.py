"""Lint baselines: adopt the linter on a vault that already has findings, and fail only on new ones.

``vaulttools lint --write-baseline FILE`` records today's findings; ``vaulttools lint --baseline FILE`` (or the
``baseline`` key of the configuration, see `vaulttools.lint.config`) reports only the findings that are not
in it, and says how many were baselined and how many of its entries are gone (fixed, or changed beyond
recognition: run ``--write-baseline`` again to drop them), as detekt, phpstan and SwiftLint baselines do.

A finding's *fingerprint* is its rule, its vault-relative path and its message, not its line or column: an
edit above a finding moves it without making it new. Line numbers quoted inside a message (``TAXONOMIE.md
line 12``) are left out of it for the same reason. The same fingerprint may occur several times in one note
(two identical broken links): the baseline keeps how many, and that many are matched.

The file is JSON, sorted, one entry per line, so that a baseline reads and diffs well in a pull request::

    {
      "version": 1,
      "findings": [
        {"rule": "alias-duplicate", "path": "20-Competences/c.md", "message": "...", "count": 1},
        ...
      ]
    }
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from grasbot.files import write_atomic

if TYPE_CHECKING:
    from vaulttools.lint.diagnostics import Diagnostic

__all__ = ["BASELINE_VERSION", "BaselineError", "Baseline", "BaselineMatch", "fingerprint"]

BASELINE_VERSION = 1

_LINE_IN_MESSAGE = re.compile(r"\bline \d+")

Fingerprint = tuple[str, str, str]


class BaselineError(ValueError):
    """The baseline file cannot be read or written; the message names the file."""


def fingerprint(diag: Diagnostic) -> Fingerprint:
    """(rule, path, message without quoted line numbers): what makes a finding the same one after an edit."""
    return (diag.rule, diag.path, _LINE_IN_MESSAGE.sub("line N", diag.message))


@dataclass(frozen=True, slots=True)
class BaselineMatch:
    """What applying a baseline to a run gives."""

    kept: list[Diagnostic]  # the findings not in the baseline, in report order
    baselined: int  # findings the baseline silenced
    gone: int  # baseline entries (counted with their multiplicity) no longer found in the notes checked


class Baseline:
    """A multiset of fingerprints, read from or written to a baseline file."""

    def __init__(self, counts: Counter[Fingerprint] | None = None, source: Path | None = None) -> None:
        self.counts: Counter[Fingerprint] = counts if counts is not None else Counter()
        self.source = source

    def __len__(self) -> int:
        return sum(self.counts.values())

    @classmethod
    def of(cls, diagnostics: Iterable[Diagnostic]) -> Baseline:
        return cls(Counter(fingerprint(d) for d in diagnostics))

    @classmethod
    def read(cls, file: str | Path) -> Baseline:
        """The baseline in `file`; BaselineError naming the file (and the entry) when it is not one."""
        path = Path(file)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise BaselineError(f"{path}: baseline not found (write one with --write-baseline {path})") from None
        except OSError as exc:
            raise BaselineError(f"{path}: cannot read: {exc.strerror or exc}") from None
        except UnicodeDecodeError:
            raise BaselineError(f"{path}: not a baseline (not UTF-8 text)") from None
        except json.JSONDecodeError as exc:
            raise BaselineError(f"{path}:{exc.lineno}:{exc.colno}: not a baseline (invalid JSON: {exc.msg})") from None
        if not isinstance(data, dict) or data.get("version") != BASELINE_VERSION or not isinstance(data.get("findings"), list):
            raise BaselineError(f"{path}: not a vaulttools baseline of version {BASELINE_VERSION} "
                                "(an object with \"version\": 1 and a \"findings\" list)")
        counts: Counter[Fingerprint] = Counter()
        for i, entry in enumerate(data["findings"], 1):
            ok = isinstance(entry, dict) and all(isinstance(entry.get(k), str) for k in ("rule", "path", "message"))
            number = entry.get("count", 1) if isinstance(entry, dict) else None
            if not ok or isinstance(number, bool) or not isinstance(number, int) or number < 1:
                raise BaselineError(f"{path}: finding {i}: expected {{\"rule\", \"path\", \"message\", \"count\" ≥ 1}}")
            counts[(entry["rule"], entry["path"], _LINE_IN_MESSAGE.sub("line N", entry["message"]))] += number
        return cls(counts, path)

    def to_json(self) -> str:
        rows = [
            json.dumps({"rule": rule, "path": path, "message": message, "count": n}, ensure_ascii=False)
            for (rule, path, message), n in sorted(self.counts.items(), key=lambda item: (item[0][1], item[0][0], item[0][2]))
        ]
        body = ",\n    ".join(rows)
        findings = f"[\n    {body}\n  ]" if rows else "[]"
        return f'{{\n  "version": {BASELINE_VERSION},\n  "findings": {findings}\n}}\n'

    def write(self, file: str | Path) -> None:
        """Write atomically (a temporary file beside it, then a rename): a failed write leaves the old one."""
        path = Path(file)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, self.to_json().encode("utf-8"), mode=0o644)
        except OSError as exc:
            raise BaselineError(f"{path}: cannot write: {exc.strerror or exc}") from None

    def match(self, diagnostics: Iterable[Diagnostic], checked: Collection[str] | None = None) -> BaselineMatch:
        """Split `diagnostics` into the new ones and those the baseline holds. `checked` are the notes the run
        looked at (None: every note): entries of other notes are neither used nor gone."""
        left = Counter(self.counts)
        kept: list[Diagnostic] = []
        baselined = 0
        for diag in diagnostics:
            key = fingerprint(diag)
            if left[key] > 0:
                left[key] -= 1
                baselined += 1
            else:
                kept.append(diag)
        gone = sum(n for (_rule, path, _msg), n in left.items() if n > 0 and (checked is None or path in checked))
        return BaselineMatch(kept, baselined, gone)
