"""The page fields of a note imported from a PDF (docs/pdf-import.md), as every output shows them: the API's
sources and `vaulttools ask --json`. Values the frontmatter may hold but a page is not (a date, a bool, a
nested map) are left out rather than passed on, so the output stays JSON and the same everywhere."""

from __future__ import annotations

from typing import Any

from grasbot.model import Note

__all__ = ["page_fields"]


def page_fields(note: Note) -> dict[str, Any]:
    """`pages`, `pdf_pages` and `page_link` (``book.pdf#page=46``, its first page) of a note imported from a
    PDF (docs/pdf-import.md); nothing for other notes."""
    meta = note.meta if isinstance(note.meta, dict) else {}
    pages, pdf_pages, source = meta.get("pages"), meta.get("pdf_pages"), meta.get("source")
    if not isinstance(pages, list) or not isinstance(pdf_pages, list):
        return {}
    out: dict[str, Any] = {
        "pages": [str(p) for p in pages if isinstance(p, (str, int)) and not isinstance(p, bool)],
        "pdf_pages": [p for p in pdf_pages if isinstance(p, int) and not isinstance(p, bool)],
    }
    if isinstance(source, str) and source.startswith("pdf/") and out["pdf_pages"]:
        out["page_link"] = f"{source[4:]}#page={out['pdf_pages'][0]}"
    return out
