"""Re-import: a note that exists is edited in place, losslessly, never rewritten from scratch.

The import owns the fields in `notes.IMPORTER_FIELDS` (and the `--meta` ones it was given) and the body;
the author owns the rest: aliases, answers, priority, visibility and any field they added. An existing
note's owned fields are changed with the lint fixes' targeted edits (`vaulttools.lint.fixes`: ruamel
positions, the rest of the frontmatter byte for byte, checked by re-reading), its body replaced, and
`updated` moved to today only when something else changed: importing the same PDF again changes no byte.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grasbot.markdown.frontmatter import split_frontmatter
from vaulttools.importers.pdf.notes import Draft, render_note
from vaulttools.lint.diagnostics import Edit
from vaulttools.lint.fixes import apply_edits_to_text, plain_value as _plain, read_frontmatter as _load

__all__ = ["Existing", "MergeResult", "find_existing", "merge_note"]


@dataclass(slots=True)
class Existing:
    path: str  # vault-relative
    raw: bytes
    meta: dict[str, Any]


@dataclass(slots=True)
class MergeResult:
    text: str
    kept: list[str] = field(default_factory=list)  # what could not be updated, and why


def _meta_of(text: str) -> dict[str, Any] | None:
    where = split_frontmatter(text.lstrip("\ufeff"))
    if where is None or where[1] < 0:
        return None
    try:
        data = _load(text.lstrip("\ufeff")[where[0] : where[1]])
    except Exception:  # an author's broken frontmatter: the note is left alone (lint reports it)
        return None
    return data if isinstance(data, dict) else None


def key_of(meta: dict[str, Any]) -> tuple[str, str] | None:
    """The key an imported note is found again by: ("moc", "") for the book's map, else (section number,
    folded bare title) — with `import_key` when the author renamed it."""
    if meta.get("type") == "moc":
        return ("moc", "")
    from vaulttools.importers.pdf.structure import split_number

    title = str(meta.get("title") or "")
    number = str(meta.get("section") or "")
    bare = split_number(title)[1] if title else ""
    return (number, " ".join(bare.casefold().split()))


def find_existing(vault: Path, folder: str, book: str) -> dict[tuple[str, str], Existing]:
    """The notes of `book` already in `folder` (and below), by key; a file that cannot be read is skipped."""
    found: dict[tuple[str, str], Existing] = {}
    base = vault / folder
    if not base.is_dir():
        return found
    for path in sorted(base.rglob("*.md")):
        try:
            raw = path.read_bytes()
            text = raw.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        meta = _meta_of(text)
        if not meta or str(meta.get("book") or "") != book:
            continue
        key = key_of(meta)
        if key is None:
            continue
        while key in found:  # the same heading twice in a book: second, third ... (as the drafts number them)
            n = int(key[1].rsplit("#", 1)[1]) + 1 if "#" in key[1] else 2
            key = (key[0], f"{key[1].split('#', 1)[0]}#{n}")
        found[key] = Existing(path.relative_to(vault).as_posix(), raw, dict(meta))
    return found


def merge_note(existing: Existing, draft: Draft, today: _dt.date) -> MergeResult:
    """The existing note's text with the draft's owned fields and body (see the module doc)."""
    decoded = existing.raw.decode("utf-8")
    bom = decoded.startswith("\ufeff")
    text = decoded[1:] if bom else decoded
    result = MergeResult(text=decoded)
    data = _meta_of(text)
    where = split_frontmatter(text)
    if data is None or where is None or where[2] < 0:
        result.kept.append("the frontmatter cannot be read: note left as it is")
        return result
    edits: list[Edit] = []
    order = list(draft.meta)
    for name in draft.owned:
        if name not in draft.meta:
            continue
        new = draft.meta[name]
        if name in data:
            if _plain(data[name]) != _plain(new):
                edits.append(Edit("replace-value", name, old=data[name], new=new))
        else:
            before = [k for k in order[: order.index(name)] if k in data]
            edits.append(Edit("insert-key", name, new=new, after=before[-1] if before else None))
    body = draft.body
    new_text, applied, skipped = text, [], []
    inserts = [e for e in edits if e.kind == "insert-key"]
    others = [e for e in edits if e.kind != "insert-key"]
    if others:
        new_text, applied, skipped = apply_edits_to_text(new_text, others)
    for edit in inserts:  # one insertion at a time (the edit machinery's rule)
        new_text, done, not_done = apply_edits_to_text(new_text, [edit])
        applied += done
        skipped += not_done
    for edit, reason in skipped:
        result.kept.append(f"`{edit.field}` kept as written ({reason})")
    where = split_frontmatter(new_text)
    assert where is not None and where[2] >= 0
    new_text = new_text[: where[2]] + body
    if new_text != text:
        stamp = _load(new_text[where[0] : where[1]])
        if "updated" in stamp and _plain(stamp["updated"]) != _plain(today):
            new_text, _done, not_done = apply_edits_to_text(new_text, [Edit("replace-value", "updated", old=stamp["updated"], new=today)])
            result.kept += [f"`updated` kept as written ({reason})" for _e, reason in not_done]
    result.text = ("\ufeff" if bom else "") + new_text
    return result


def fresh_text(draft: Draft) -> str:
    return render_note(draft.meta, draft.body)
