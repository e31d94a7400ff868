"""Checks for notes imported from a PDF book (`vaulttools import pdf`, docs/pdf-import.md).

They look only at notes with a `book` field: `pages` and `pdf_pages` agree (one printed label per PDF
page, PDF pages increasing from 1), page links point into the note's own PDF pages, a section has text,
and no two notes of one book claim the same section (a vault rule). Each rule is one unit
(`vaulttools.lint.rule.Rule`); the note rules' quick predicate is the same: a note without `book` is quiet.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from grasbot.model import Note
from vaulttools.lint.diagnostics import Diagnostic
from vaulttools.lint.rule import ERROR, WARNING, QuickPredicate, Rule
from vaulttools.lint.rules import LintContext, key_span, make

_PAGE_LINK = re.compile(r"\[\[([^\]|#]+\.pdf)#page=(\d+)(?:\|[^\]]*)?\]\]", re.IGNORECASE)
_MARKER = re.compile(r"\[\[[^\]]*\.pdf#page=\d+(?:\|[^\]]*)?\]\]|\[p\. [^\]]*\]", re.IGNORECASE)


def _is_book_note(note: Note) -> bool:
    return isinstance(note.meta, dict) and isinstance(note.meta.get("book"), str) and bool(note.meta["book"].strip())


def _no_book(note: Note, meta: dict) -> bool:
    return "book" not in meta  # (conservative: a `book` of any value lets the checks decide)


def _quiet_without_book(ctx: LintContext) -> QuickPredicate:
    return _no_book


SECTION_PAGES = Rule(
    "section-pages", "books", ERROR,
    "A note imported from a PDF has `pages` and `pdf_pages` that disagree: not both lists, not as many "
    "printed labels as PDF pages, labels not strings, PDF pages not increasing whole numbers from 1.",
    "Answers cite the printed page and open the PDF at `pdf_pages`: the two must name the same pages.",
    "pages: [\"27\", \"28\"]\npdf_pages: [45]", None,
)


@SECTION_PAGES.check
def _section_pages(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
    if not note.has_frontmatter or not _is_book_note(note):
        return
    pages, pdf_pages = note.meta.get("pages"), note.meta.get("pdf_pages")
    if pages is not None or pdf_pages is not None:
        yield from _pages(note, ctx, pages, pdf_pages)


SECTION_PAGES.quick(_quiet_without_book)

SECTION_PAGE_LINK = Rule(
    "section-page-link", "books", ERROR,
    "A page link in an imported section opens another PDF than its `source`, or a PDF page outside its "
    "`pdf_pages`.",
    "A reader who follows the page marker must land on the passage it marks.",
    "[[manuel.pdf#page=99|p. 81]]   # in a section with pdf_pages: [45, 46]", None,
)


@SECTION_PAGE_LINK.check
def _section_page_links(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
    if not note.has_frontmatter or not _is_book_note(note) or note.meta.get("type") != "section":
        return
    pdf_pages = note.meta.get("pdf_pages")
    yield from _links(note, ctx, pdf_pages if isinstance(pdf_pages, list) else None)


SECTION_PAGE_LINK.quick(_quiet_without_book)

SECTION_EMPTY = Rule(
    "section-empty", "books", WARNING,
    "An imported `type: section` note has no text besides its heading and page markers.",
    "An empty section is a heading the import took for a section, or a page without a text layer: it can "
    "be retrieved and cited with nothing to say.",
    "# 3.3 Table des matières\n\n[p. 37]", None,
)


@SECTION_EMPTY.check
def _section_empty(note: Note, ctx: LintContext) -> Iterator[Diagnostic]:
    if not note.has_frontmatter or not _is_book_note(note) or note.meta.get("type") != "section":
        return
    text = _MARKER.sub(" ", re.sub(r"(?m)^#{1,6} .*$", " ", note.body))
    if not text.strip():
        yield make(ctx, note, key_span(note, "type"), SECTION_EMPTY,
                   "this section has no text besides its heading and page markers (a heading the import "
                   "took for a section, or a page without a text layer): delete the note or merge it")


SECTION_EMPTY.quick(_quiet_without_book)


def _pages(note: Note, ctx: LintContext, pages: object, pdf_pages: object) -> Iterator[Diagnostic]:
    where = "pages" if "pages" in note.meta else "pdf_pages"
    if not isinstance(pages, list) or not isinstance(pdf_pages, list):
        missing = "pdf_pages" if isinstance(pages, list) else "pages"
        yield make(ctx, note, key_span(note, where), SECTION_PAGES,
                   f"`pages` and `pdf_pages` go together, as lists: `{missing}` is missing or not a list")
        return
    if len(pages) != len(pdf_pages):
        yield make(ctx, note, key_span(note, "pages"), SECTION_PAGES,
                   f"{len(pages)} printed `pages` for {len(pdf_pages)} `pdf_pages`: one printed label per PDF page")
        return
    if not all(isinstance(p, str) and p.strip() for p in pages):
        yield make(ctx, note, key_span(note, "pages"), SECTION_PAGES,
                   "`pages` are printed labels, written as strings (`[\"27\", \"28\"]`)")
    ints = [p for p in pdf_pages if isinstance(p, int) and not isinstance(p, bool)]
    if len(ints) != len(pdf_pages) or any(p < 1 for p in ints):
        yield make(ctx, note, key_span(note, "pdf_pages"), SECTION_PAGES,
                   "`pdf_pages` are PDF page numbers counted from 1, as whole numbers")
    elif any(b <= a for a, b in zip(ints, ints[1:])):
        yield make(ctx, note, key_span(note, "pdf_pages"), SECTION_PAGES,
                   f"`pdf_pages` must increase: {ints}")


def _links(note: Note, ctx: LintContext, pdf_pages: list | None) -> Iterator[Diagnostic]:
    source = note.meta.get("source")
    pdf = source.split("/", 1)[1] if isinstance(source, str) and source.startswith("pdf/") else None
    allowed = {p for p in pdf_pages or [] if isinstance(p, int)}
    for match in _PAGE_LINK.finditer(note.body):
        name, page = match.group(1).rsplit("/", 1)[-1], int(match.group(2))
        if pdf is not None and name != pdf:
            problem = f"links to `{name}` but the note comes from `{pdf}` (its `source`)"
        elif allowed and page not in allowed:
            problem = f"opens PDF page {page}, which is not one of this section's `pdf_pages`"
        else:
            continue
        line = note.body[: match.start()].count("\n") + note.body_line
        yield make(ctx, note, _span(note, line, match), SECTION_PAGE_LINK, f"page link `{match.group(0)}` {problem}")


def _span(note: Note, line: int, match: re.Match[str]):
    from grasbot.model import Span

    start = note.body.rfind("\n", 0, match.start()) + 1
    column = match.start() - start + 1
    return Span(line, column, line, column + len(match.group(0)))


SECTION_DUPLICATE = Rule(
    "section-duplicate", "books", WARNING,
    "Two notes of one `book` have the same `section` number.",
    "A question that names « § 13 » of that book gets both: one of them is not the section it names "
    "(an example or a licence clause numbered like a section).",
    "section: \"6\"   # in two notes with book: fbook", None, scope="vault",
)


@SECTION_DUPLICATE.check
def _section_duplicates(ctx: LintContext, paths: list[str]) -> Iterator[Diagnostic]:
    wanted = set(paths)
    seen: dict[tuple[str, str], list[str]] = {}
    notes = ctx.vault.notes
    for path in sorted(notes):
        note = notes[path]
        if not _is_book_note(note) or note.meta.get("type") != "section":
            continue
        number = note.meta.get("section")
        if isinstance(number, (str, int)) and not isinstance(number, bool) and str(number).strip():
            seen.setdefault((note.meta["book"].strip(), str(number).strip()), []).append(path)
    for (book, number), holders in sorted(seen.items()):
        if len(holders) < 2:
            continue
        for path in holders:
            if path not in wanted:
                continue
            note = notes[path]
            others = ", ".join(h for h in holders if h != path)
            yield make(ctx, note, key_span(note, "section"), SECTION_DUPLICATE,
                       f"section {number} of `{book}` is also {others}: a filter on « § {number} » finds both; "
                       "renumber the one that is not a section of the book, or delete it")
