"""The notes a book becomes: one `section` note per section and one `moc` note for the book.

The frontmatter field names are a contract other tools read (docs/pdf-import.md): `title`, `slug`,
`type: section`, `source: pdf/<file name>`, `book`, `chapter`, `chapter_number`, `section`, `pages` (printed
labels, strings), `pdf_pages` (1-based indices), `page_source`, every `--meta` pair, `aliases`, `answers`,
`linked` (the book's moc), `updated`, `visibility`. Rendering is deterministic: same book, same bytes.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from vaulttools.authoring import slugify, unique_slug
from vaulttools.importers.pdf.book import Book, Section
from vaulttools.lint.fixes import render_flow_list, render_scalar

__all__ = ["Draft", "IMPORTER_FIELDS", "render_note", "section_drafts", "yaml_value"]

#: Fields the import owns: a re-import rewrites them. Everything else (aliases, answers, priority,
#: visibility, the author's own fields) is the author's once the note exists.
IMPORTER_FIELDS: tuple[str, ...] = (
    "title", "type", "source", "book", "chapter", "chapter_number", "section", "pages", "pdf_pages",
    "page_source", "linked",
)
_MAX_SLUG_WORDS = 8


@dataclass(slots=True)
class Draft:
    """One note to write: its vault-relative path, ordered frontmatter and body; `key` finds it again."""

    path: str
    meta: dict[str, Any]
    body: str
    key: tuple[str, str]  # (section number, folded bare title); ("moc", "") for the book's map
    section: Section | None = None
    owned: tuple[str, ...] = field(default=IMPORTER_FIELDS)


def yaml_value(value: Any) -> str:
    """One value as flow YAML that reads back as exactly `value` (strings stay strings: ``"13"``)."""
    if isinstance(value, list):
        return render_flow_list(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, _dt.date):
        return value.isoformat()
    return render_scalar(str(value), "", True)


def render_note(meta: dict[str, Any], body: str) -> str:
    lines = ["---"]
    for key, value in meta.items():
        lines.append(f"{key}: {yaml_value(value)}")
    lines.append("---")
    return "\n".join(lines) + "\n" + body.rstrip("\n") + "\n"


def _page_range(pages: list[str]) -> str:
    if not pages:
        return ""
    return f"p. {pages[0]}" if len(pages) == 1 or pages[0] == pages[-1] else f"p. {pages[0]}–{pages[-1]}"


def section_drafts(
    book: Book,
    book_slug: str,
    folder: str,
    pdf_name: str,
    meta: dict[str, Any],
    visibility: str,
    today: _dt.date,
    taken: set[str],
) -> list[Draft]:
    """The drafts of a book: its sections, then its moc. `taken` holds the slugs already used in the vault
    (other books), so a new note never collides; it is updated."""
    drafts: list[Draft] = []
    moc_slug = book_slug
    if moc_slug.casefold() in taken:
        moc_slug = unique_slug(moc_slug, taken)
    taken.add(moc_slug.casefold())
    seen: dict[tuple[str, str], int] = {}
    for section in book.sections:
        words = slugify(section.bare_title).split("-")[:_MAX_SLUG_WORDS]
        parts = [book_slug, section.number.replace(".", "-") if section.number else "", "-".join(words)]
        slug = "-".join(p for p in parts if p) or f"{book_slug}-section"
        slug = unique_slug(slug, taken)
        taken.add(slug.casefold())
        key = (section.number, " ".join(section.bare_title.casefold().split()))
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            key = (key[0], f"{key[1]}#{seen[key]}")  # the same heading twice in a book (a licence's "1.")
        body = f"# {section.title}\n\n{section.body}".rstrip() + "\n"
        note_meta: dict[str, Any] = {
            "title": section.title,
            "slug": slug,
            "type": "section",
            "source": f"pdf/{pdf_name}",
            "book": book_slug,
        }
        if section.chapter:
            note_meta["chapter"] = section.chapter
        if section.chapter_number:
            note_meta["chapter_number"] = section.chapter_number
        if section.number:
            note_meta["section"] = section.number
        note_meta["pages"] = list(section.pages)
        note_meta["pdf_pages"] = list(section.pdf_pages)
        note_meta["page_source"] = section.page_source
        note_meta.update(meta)
        alias = section.bare_title.strip()
        note_meta["aliases"] = [alias] if alias and len(alias) <= 80 else []
        if section.questions:
            note_meta["answers"] = list(section.questions)
        note_meta["linked"] = [f"[[{moc_slug}]]"]
        note_meta["updated"] = today
        note_meta["visibility"] = visibility
        drafts.append(Draft(f"{folder}/{slug}.md", note_meta, body, key, section))
    drafts.append(_moc(book, book_slug, moc_slug, folder, pdf_name, meta, visibility, today, drafts))
    return drafts


def _moc(book: Book, book_slug: str, moc_slug: str, folder: str, pdf_name: str, meta: dict[str, Any],
         visibility: str, today: _dt.date, drafts: list[Draft]) -> Draft:
    lines = [f"# {book.title}", ""]
    lines.append(
        f"Imported from `{pdf_name}`: {book.page_count} PDF pages, {len(drafts)} sections "
        f"(structure from the {'outline' if book.structure == 'outline' else 'numbered headings' if book.structure == 'headings' else 'whole document'}, "
        f"printed pages from {_source_words(book)})."
    )
    chapter = None
    for draft in drafts:
        section = draft.section
        assert section is not None
        if section.chapter != chapter:
            chapter = section.chapter
            lines += ["", f"## {chapter}" if chapter else "## Sections", ""]
        indent = "  " if section.level > 1 and section.chapter else ""
        slug = draft.meta["slug"]
        lines.append(f"{indent}- [[{slug}|{section.title}]] ({_page_range(section.pages)})")
    note_meta: dict[str, Any] = {
        "title": book.title,
        "slug": moc_slug,
        "type": "moc",
        "source": f"pdf/{pdf_name}",
        "book": book_slug,
        "pages": [book.numbers.printed[0], book.numbers.printed[-1]] if book.numbers.printed else [],
        "pdf_pages": [1, book.page_count],
        "page_source": book.numbers.source_of(list(range(book.page_count))),
    }
    note_meta.update(meta)
    note_meta["aliases"] = [book.title] if len(book.title) <= 80 else []
    note_meta["updated"] = today
    note_meta["visibility"] = visibility
    owned = ("title", "type", "source", "book", "pages", "pdf_pages", "page_source")
    return Draft(f"{folder}/{moc_slug}.md", note_meta, "\n".join(lines) + "\n", ("moc", ""), None, owned)


def _source_words(book: Book) -> str:
    sources = set(book.numbers.sources)
    if "labels" in sources:
        return "the PDF's page labels"
    if "text" in sources:
        return f"the page numbers printed in the margins (PDF page − {book.numbers.offset}, checked on {book.numbers.agreeing} pages)"
    return "the PDF index (no label, no printed number found)"
