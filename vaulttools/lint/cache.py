"""A cache of note-local findings, keyed by each file's content digest, so re-linting after editing one note
re-checks only that note's frontmatter.

The cache is one JSON file, ``VAULT/.vaulttools_cache/lint.json`` (a hidden folder: neither Obsidian nor the
vault loader reads it; it holds a ``.gitignore`` so it is never committed), or under ``$VAULTTOOLS_CACHE_DIR``.
It is valid only for the same engine version, taxonomy (file digest), configuration and day (`updated-date`
compares with today); otherwise it starts empty. Cross-note rules (links, duplicates, retrieval) are always
recomputed on the whole loaded vault: they depend on every note. A cache that cannot be read or written is
silently ignored (a read-only vault lints fine, just without it).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from grasbot.notes import Note
from vaulttools.lint.config import LintConfig
from vaulttools.lint.diagnostics import Diagnostic, Edit, Fix, Severity

__all__ = ["LintCache", "cache_dir"]

_FILE = "lint.json"


def cache_dir(root: Path) -> Path:
    env = os.environ.get("VAULTTOOLS_CACHE_DIR")
    if env:
        key = hashlib.blake2b(str(Path(root).resolve()).encode(), digest_size=8).hexdigest()
        return Path(env) / key
    return Path(root) / ".vaulttools_cache"


def _encode(diag: Diagnostic) -> list[Any]:
    fix = None
    if diag.fix is not None:
        fix = [diag.fix.message, [[e.kind, e.field, e.index, e.old, e.new, e.after] for e in diag.fix.edits]]
    return [diag.line, diag.column, diag.end_line, diag.end_column, diag.rule, diag.severity.value, diag.message, fix]


def _decode(path: str, row: list[Any]) -> Diagnostic:
    line, column, end_line, end_column, rule, severity, message, fix = row
    decoded_fix = None
    if fix is not None:
        decoded_fix = Fix(fix[0], tuple(Edit(*edit) for edit in fix[1]))
    return Diagnostic(path, line, column, end_line, end_column, rule, Severity(severity), message, decoded_fix)


class LintCache:
    """Note-local findings by (path, content digest). Use `open`, pass to `lint_vault(cache=...)`, then `save`."""

    def __init__(self, file: Path | None, key: str) -> None:
        self.file = file
        self.key = key
        self.entries: dict[str, list[Any]] = {}
        self.used: set[str] = set()
        self.dirty = False
        self.hits = 0
        self.misses = 0

    @classmethod
    def open(cls, root: Path, taxonomy: Any, config: LintConfig, today: _dt.date | None = None) -> LintCache:
        from vaulttools.lint.engine import ENGINE_VERSION

        tax_digest = ""
        tax_path = getattr(taxonomy, "path", None)
        if tax_path is not None:
            try:
                tax_digest = hashlib.blake2b(Path(tax_path).read_bytes(), digest_size=12).hexdigest()
            except OSError:
                tax_digest = "unreadable"
        key = "|".join([ENGINE_VERSION, tax_digest, config.digest(), (today or _dt.date.today()).isoformat()])
        cache = cls(cache_dir(root) / _FILE, key)
        try:
            data = json.loads(cache.file.read_text(encoding="utf-8"))
            if data.get("key") == key and isinstance(data.get("notes"), dict):
                cache.entries = data["notes"]
        except (OSError, ValueError):
            pass
        return cache

    def get(self, note: Note) -> list[Diagnostic] | None:
        entry = self.entries.get(note.path)
        self.used.add(note.path)
        if entry is None or entry[0] != note.digest or not note.digest:
            self.misses += 1
            return None
        self.hits += 1
        return [_decode(note.path, row) for row in entry[1]]

    def put(self, note: Note, diagnostics: list[Diagnostic]) -> None:
        self.entries[note.path] = [note.digest, [_encode(d) for d in diagnostics]]
        self.used.add(note.path)
        self.dirty = True

    def save(self) -> None:
        """Write the cache (only entries of notes seen in this run), atomically; errors are ignored."""
        if self.file is None:
            return
        stale = set(self.entries) - self.used
        if not self.dirty and not stale:
            return
        for path in stale:
            del self.entries[path]
        folder = self.file.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
            ignore = folder / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# created by vaulttools lint\n*\n", encoding="utf-8")
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".lint.", suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump({"key": self.key, "notes": self.entries}, handle, ensure_ascii=False, separators=(",", ":"))
            os.replace(tmp, self.file)
        except OSError:
            pass
