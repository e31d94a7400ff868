"""From a read PDF to a book: sections with their clean text, PDF pages and printed pages.

`build_book` chains the pure steps: margins (pages.py), printed pages, section marks (structure.py, from the
outline or else from numbered headings), then each section's stream of lines rendered as Markdown
(blocks.py) with a page marker where each page starts.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from vaulttools.importers.pdf.blocks import Heading, PageBreak, TextLine, render_blocks
from vaulttools.importers.pdf.cleaning import clean_text, uses_spacing_accents
from vaulttools.importers.pdf.pages import PageNumbers, find_margins, printed_pages
from vaulttools.importers.pdf.reading import SCANNED, Page, RawBook
from vaulttools.importers.pdf.structure import Mark, marks_from_headings, marks_from_outline, split_number

__all__ = ["Book", "Section", "build_book", "questions_of"]

#: A heading that opens the questions a section ends with.
_QUESTIONS = re.compile(
    r"^(#+ )?(questions?( et exercices)?|exercices?|v[ée]rifie[rz]? (tes|vos) connaissances|"
    r"r[ée]vision|pour aller plus loin|testez-vous|teste-toi|[àa] vous de jouer)\b",
    re.IGNORECASE,
)
_MARKER = re.compile(r"\s*(\[\[[^\]|]*\|p\. [^\]]*\]\]|\[p\. [^\]]*\])\s*")
_ITEM = re.compile(r"^(?:\d{1,2}\.|-)\s+(?:[a-z]\)\s+)?")


@dataclass(slots=True)
class Section:
    number: str
    title: str  # as printed, number included
    bare_title: str
    level: int
    chapter: str  # the chapter's title without its number ("" for a book without chapters)
    chapter_number: str
    pdf_pages: list[int]  # 1-based
    pages: list[str]  # printed
    page_source: str
    body: str
    questions: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Book:
    title: str
    sections: list[Section]
    numbers: PageNumbers
    structure: str  # outline | headings | none
    problems: list[str]  # per page, "PDF page N: why"
    page_count: int
    spacing_accents: bool


def _typical(values: list[float], default: float) -> float:
    counts = Counter(round(v) for v in values if v > 0)
    return float(min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]) if counts else default


def questions_of(body: str, limit: int = 5) -> list[str]:
    """The questions a section ends with: after a "Questions"/"Exercices" heading or line, the items and
    sentences that end with « ? » (numbering and page markers removed), at most `limit`."""
    blocks = [b.strip() for b in body.split("\n\n") if b.strip()]
    start = None
    for i, block in enumerate(blocks):
        if _QUESTIONS.match(_MARKER.sub(" ", block).strip()) and len(block) < 80:
            start = i + 1
    if start is None:
        return []
    found: list[str] = []
    for block in blocks[start:]:
        text = _ITEM.sub("", _MARKER.sub(" ", block).strip()).strip()
        for sentence in re.findall(r"[^.!?]*\?", text):
            sentence = " ".join(sentence.split()).strip(" -–")
            if 10 <= len(sentence) <= 200 and sentence not in found:
                found.append(sentence)
        if len(found) >= limit:
            break
    return found[:limit]


def build_book(raw: RawBook, level: int, marker: Callable[[int, str], str]) -> Book:
    """`marker(pdf_index_0_based, printed)` writes a page marker; `level` is the deepest outline or heading
    level that makes a note of its own (deeper ones become headings inside)."""
    pages = raw.pages
    sample = " ".join(line.text for page in pages[: min(len(pages), 60)] for line in page.lines)
    spacing = uses_spacing_accents(sample)
    margins = find_margins(pages)
    numbers = printed_pages(pages, margins)
    for page in pages:  # an image and nothing but running heads: a scanned page
        if page.problem is None and page.has_image and all(i in margins.get(page.index, ()) for i in range(len(page.lines))):
            page.problem = SCANNED
    problems = [f"PDF page {p.index + 1}: {p.problem}" for p in pages if p.problem]
    marks: list[Mark] = []
    structure = "none"
    if raw.outline:
        marks = marks_from_outline(pages, margins, raw.outline, spacing)
        structure = "outline" if marks else "none"
    if not marks:
        marks = marks_from_headings(pages, margins, spacing)
        structure = "headings" if marks else "none"
    gap = _typical([b.top - a.top for p in pages for a, b in zip(p.lines, p.lines[1:])], 12.0)
    left = _typical([line.x for p in pages for line in p.lines], 72.0)
    title = clean_text(raw.title, spacing) if raw.title else raw.path.stem
    if not marks:
        first = next((p.index for p in pages if p.lines), 0)
        marks = [Mark(first, 0, 0, 1, "", title)]
    sections = _sections(pages, margins, numbers, marks, level, spacing, gap, left, marker)
    return Book(title, sections, numbers, structure, problems, len(pages), spacing)


def _sections(
    pages: list[Page],
    margins: dict[int, set[int]],
    numbers: PageNumbers,
    marks: list[Mark],
    level: int,
    spacing: bool,
    gap: float,
    left: float,
    marker: Callable[[int, str], str],
) -> list[Section]:
    top = min(m.level for m in marks)
    level = max(level, top)
    owners = [i for i, m in enumerate(marks) if m.level <= level]
    sections: list[Section] = []
    chapter = ("", "")
    for k, i in enumerate(owners):
        mark = marks[i]
        if mark.level == top:
            number, bare = split_number(mark.title)
            chapter = (bare, number)
        end = marks[owners[k + 1]] if k + 1 < len(owners) else None
        inner = {(m.page, m.line): m for m in marks[i + 1 : owners[k + 1] if k + 1 < len(owners) else len(marks)]}
        items: list[PageBreak | Heading | TextLine] = []
        used: list[int] = []
        page_index = mark.page
        while page_index < len(pages) and (end is None or page_index <= end.page):
            page = pages[page_index]
            first = mark.line if page_index == mark.page else 0
            last = end.line if end is not None and page_index == end.page else len(page.lines)
            if end is not None and page_index == end.page and last == 0 and page_index != mark.page:
                break
            items.append(PageBreak(marker(page_index, numbers.printed[page_index])))
            used.append(page_index)
            margin = margins.get(page_index, set())
            skip_until = -1
            if page_index == mark.page:
                skip_until = mark.line + mark.span
            j = first
            while j < last:
                if j < skip_until or j in margin:
                    j += 1
                    continue
                sub = inner.get((page_index, j))
                if sub is not None and not sub.skip:
                    items.append(Heading(min(6, sub.level - mark.level + 2), sub.title))
                    j += max(sub.span, 1) if sub.span else 0
                    if sub.span:
                        continue
                items.append(TextLine(page.lines[j]))
                j += 1
            page_index += 1
        if mark.skip:
            continue
        body = render_blocks(items, spacing, gap, left)
        number, bare = split_number(mark.title)
        pdf_pages = [p + 1 for p in used]
        section = Section(
            number=number,
            title=" ".join(mark.title.split()),
            bare_title=bare,
            level=mark.level,
            chapter=chapter[0],
            chapter_number=chapter[1],
            pdf_pages=pdf_pages,
            pages=[numbers.printed[p] for p in used],
            page_source=numbers.source_of(used) if used else "index",
            body=body,
        )
        section.questions = questions_of(body)
        sections.append(section)
    return sections
