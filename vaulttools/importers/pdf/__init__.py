"""`vaulttools import pdf`: a PDF book becomes section notes with page provenance, and a moc note.

The steps, each in its module: `reading` (pypdfium2, bounded), `cleaning` (accents, ligatures), `pages`
(running heads, printed page numbers), `structure` (outline or numbered headings), `blocks` (Markdown),
`book` (sections), `notes` (frontmatter and bodies), `merge` (re-import without loss). This module plans
an import (what each file would become, nothing written) and writes a plan atomically. docs/pdf-import.md
describes the note format and the choices.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grasbot.files import write_atomic
from vaulttools.authoring import slugify
from vaulttools.importers.pdf.book import Book, build_book
from vaulttools.importers.pdf.merge import find_existing, fresh_text, merge_note
from vaulttools.importers.pdf.notes import section_drafts
from vaulttools.importers.pdf.reading import PdfImportError, read_pdf

__all__ = ["FileChange", "ImportOptions", "ImportPlan", "PdfImportError", "attachment_folder", "plan_import", "write_plan"]

DEFAULT_FOLDER = "60-Livres"


@dataclass(slots=True)
class ImportOptions:
    vault: Path
    folder: str | None = None  # vault-relative; default 60-Livres/<book-slug>
    meta: dict[str, Any] = field(default_factory=dict)
    level: int = 2
    visibility: str = "private"
    copy_pdf: bool = False
    max_pages: int = 1500
    time_limit: float = 120.0
    today: _dt.date = field(default_factory=_dt.date.today)


@dataclass(slots=True)
class FileChange:
    path: str  # vault-relative
    before: bytes | None
    after: bytes
    notes: list[str] = field(default_factory=list)
    section: str = ""  # the section number, for reports
    pages: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        if self.before is None:
            return "created"
        return "unchanged" if self.before == self.after else "updated"


@dataclass(slots=True)
class ImportPlan:
    pdf: Path
    book_slug: str
    folder: str
    book: Book
    changes: list[FileChange]
    stale: list[str]  # notes of this book that the PDF no longer has (kept)
    warnings: list[str]

    def summary(self) -> dict[str, Any]:
        counts = {s: sum(1 for c in self.changes if c.status == s) for s in ("created", "updated", "unchanged")}
        return {
            "pdf": str(self.pdf),
            "book": self.book_slug,
            "title": self.book.title,
            "folder": self.folder,
            "pages": self.book.page_count,
            "structure": self.book.structure,
            "page_source": sorted(set(self.book.numbers.sources)),
            "offset": self.book.numbers.offset,
            "sections": len(self.book.sections),
            **counts,
            "files": [
                {"path": c.path, "status": c.status, "section": c.section, "pages": c.pages, "notes": c.notes}
                for c in self.changes
            ],
            "stale": self.stale,
            "problems": self.book.problems,
            "warnings": self.warnings,
        }


def attachment_folder(vault: Path, note_folder: str) -> str:
    """Where Obsidian puts attachments (`.obsidian/app.json`, attachmentFolderPath): the vault root by
    default, `./x` beside the notes, else the folder named. Vault-relative, "" for the root."""
    setting = "/"
    try:
        data = json.loads((vault / ".obsidian" / "app.json").read_text(encoding="utf-8"))
        if isinstance(data, dict) and isinstance(data.get("attachmentFolderPath"), str):
            setting = data["attachmentFolderPath"].strip() or "/"
    except (OSError, ValueError):
        pass
    if setting in ("/", "."):
        return ""
    if setting == "./" or setting.startswith("./"):
        rest = setting[2:].strip("/")
        return f"{note_folder}/{rest}".strip("/") if rest else note_folder
    return setting.strip("/")


def _safe_folder(vault: Path, folder: str) -> str:
    clean = Path(folder.strip().strip("/"))
    if clean.is_absolute() or ".." in clean.parts or not clean.parts:
        raise PdfImportError(f"--folder {folder!r}: give a folder inside the vault, e.g. 60-Livres/mon-livre")
    return clean.as_posix()


def plan_import(pdf: Path, options: ImportOptions, taken: set[str]) -> ImportPlan:
    """Read `pdf` and compute every file the import would write; nothing is written. `taken` holds the
    casefolded slugs of the vault's other notes (updated with the new ones)."""
    raw = read_pdf(pdf, max_pages=options.max_pages, time_limit=options.time_limit)
    book_slug = slugify(pdf.stem) or "livre"
    folder = _safe_folder(options.vault, options.folder or f"{DEFAULT_FOLDER}/{book_slug}")
    attach = attachment_folder(options.vault, folder) if options.copy_pdf else ""
    pdf_name = pdf.name

    def marker(index: int, printed: str) -> str:
        if options.copy_pdf:
            return f"[[{pdf_name}#page={index + 1}|p. {printed}]]"
        return f"[p. {printed}]"

    if not any(page.lines for page in raw.pages):
        raise PdfImportError(f"{pdf}: no text in any page (a scanned book? run OCR on it first)")
    book = build_book(raw, options.level, marker)
    existing = find_existing(options.vault, folder, book_slug)
    for item in existing.values():  # their slugs are theirs already
        taken.discard(str(item.meta.get("slug") or "").casefold())
        taken.discard(Path(item.path).stem.casefold())
    drafts = section_drafts(book, book_slug, folder, pdf_name, options.meta, options.visibility, options.today, taken)
    changes: list[FileChange] = []
    matched: set[str] = set()
    by_number: dict[str, list[tuple[str, str]]] = {}
    for key in existing:
        by_number.setdefault(key[0], []).append(key)
    draft_numbers: dict[str, int] = {}
    for draft in drafts:
        draft_numbers[draft.key[0]] = draft_numbers.get(draft.key[0], 0) + 1
    for draft in drafts:
        old = existing.get(draft.key)
        if old is None and draft.key[0] and draft.key[0] != "moc":
            # a new edition renamed the section: the same number, when it is unambiguous on both sides
            same = [k for k in by_number.get(draft.key[0], []) if existing[k].path not in matched]
            if len(same) == 1 and draft_numbers[draft.key[0]] == 1:
                old = existing[same[0]]
        section = draft.section
        info = {"section": section.number if section else "", "pages": list(section.pages) if section else []}
        if old is not None and old.path not in matched:
            matched.add(old.path)
            merged = merge_note(old, draft, options.today)
            changes.append(FileChange(old.path, old.raw, merged.text.encode("utf-8"), merged.kept, **info))
        else:
            target = options.vault / draft.path
            before = target.read_bytes() if target.is_file() else None
            if before is not None:
                raise PdfImportError(
                    f"{draft.path} exists and is not a note of this book (no `book: {book_slug}`): not overwritten; "
                    "pass another --folder"
                )
            changes.append(FileChange(draft.path, None, fresh_text(draft).encode("utf-8"), **info))
    if options.copy_pdf:
        target_rel = f"{attach}/{pdf_name}".lstrip("/")
        data = pdf.read_bytes()
        target = options.vault / target_rel
        before = target.read_bytes() if target.is_file() else None
        changes.append(FileChange(target_rel, before, data))
    stale = sorted(e.path for e in existing.values() if e.path not in matched)
    return ImportPlan(pdf, book_slug, folder, book, changes, stale, [])


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _atomic_write(target: Path, data: bytes, before: bytes | None) -> None:
    """Write `data` to `target` through a temporary file and a rename, only if the file still holds
    `before` (None: does not exist yet): an editor's save meanwhile is never overwritten."""
    target.parent.mkdir(parents=True, exist_ok=True)
    now = target.read_bytes() if target.exists() else None
    if (now is None) != (before is None) or (now is not None and before is not None and _digest(now) != _digest(before)):
        raise PdfImportError(f"{target}: changed on disk since it was read; not overwritten (run the import again)")
    mode = os.stat(target).st_mode & 0o7777 if target.exists() else 0o644
    write_atomic(target, data, mode=mode, durable=True, suffix=".vaulttools-tmp")


def write_plan(plan: ImportPlan, vault: Path) -> list[str]:
    """Write the changed files of `plan`; returns the paths written. Unchanged files are not touched."""
    written: list[str] = []
    for change in plan.changes:
        if change.status == "unchanged":
            continue
        _atomic_write(vault / change.path, change.after, change.before)
        written.append(change.path)
    return written
