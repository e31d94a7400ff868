"""Where sections start: outline entries matched to the page text, else numbered headings found by layout.

The result is a list of `Mark`s (page, line, how many lines the heading takes, level, number, title), in
reading order. A section then runs from its mark to the next mark of its level or above, across as many
pages as it takes: a continuation page without any heading belongs to the section that began before it,
which is what the page-by-page splitter of the textbook seed lost.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from vaulttools.importers.pdf.cleaning import clean_text, fold_for_match
from vaulttools.importers.pdf.reading import Line, OutlineEntry, Page

__all__ = ["Mark", "body_size", "marks_from_headings", "marks_from_outline", "split_number"]

#: Outline entries whose text is a list of other entries (a table of contents): boundaries, never notes.
_SKIP_TITLES = re.compile(
    r"^(table des matieres|sommaire|contents|table of contents|liste des (figures|tableaux|tables)|"
    r"list of (figures|tables)|index)$"
)
_NUMBER = re.compile(
    r"^(?:(?P<kw>§|paragraphe|chapitre|chapter|section|partie|part|le[cç]on|annexe)\s*)?"
    r"(?P<num>\d{1,3}(?:\.\d{1,3})*)(?:\.(?!\d)|\s*[-–—:]\s|\s)\s*(?P<rest>.*)$",
    re.IGNORECASE,
)
_KEYWORD_ONLY = re.compile(r"^(?P<kw>§|paragraphe|chapitre|chapter|section|le[cç]on|annexe)\s*(?P<num>\d{1,3}(?:\.\d{1,3})*)\.?$", re.IGNORECASE)
_CHAPTER_WORDS = ("chapitre", "chapter", "partie", "part", "annexe", "appendix")
HEAD_BAND = 0.16  # the top of a page where running heads sit (pages.py's TOP_BAND)


@dataclass(frozen=True, slots=True)
class Mark:
    page: int  # 0-based PDF index
    line: int  # index in the page's lines where the heading starts
    span: int  # lines the heading takes (0: the outline entry was not found on the page; starts at `line`)
    level: int  # 1 = chapter
    number: str  # "3.1", "13", "" when unnumbered
    title: str  # the title as printed, cleaned, number included
    skip: bool = False  # a table of contents, list of figures: a boundary, not a note

    @property
    def bare_title(self) -> str:
        return split_number(self.title)[1]


def split_number(title: str) -> tuple[str, str]:
    """(number, title without its number): ``"3.1 Les classes"`` -> ``("3.1", "Les classes")``,
    ``"§ 13. Le citoyen"`` -> ``("13", "Le citoyen")``, ``"Introduction"`` -> ``("", "Introduction")``."""
    text = title.strip()
    only = _KEYWORD_ONLY.match(text)
    if only:
        return only.group("num"), text
    match = _NUMBER.match(text)
    if match and match.group("rest").strip():
        return match.group("num"), match.group("rest").strip()
    return "", text


def _fold_heading(text: str) -> str:
    words = fold_for_match(text).split()
    while words and words[0] in _CHAPTER_WORDS:
        words = words[1:]
    return " ".join(words)


def marks_from_outline(pages: list[Page], margins: dict[int, set[int]], outline: list[OutlineEntry], spacing: bool) -> list[Mark]:
    """One mark per outline entry with a destination, placed on the line of its page that shows its title
    (looked for on the destination page, then the next one); at the top of the page when none does."""
    marks: list[Mark] = []
    cursor: tuple[int, int] = (-1, -1)
    for entry in outline:
        if entry.page is None or not entry.title:
            continue
        title = clean_text(entry.title, spacing)
        number, bare = split_number(title)
        wanted = {w for w in (_fold_heading(title), _fold_heading(bare)) if w}
        found: tuple[int, int, int] | None = None
        for page_index in (entry.page, entry.page + 1):
            if page_index >= len(pages):
                break
            page = pages[page_index]
            start = cursor[1] + 1 if page_index == cursor[0] else 0
            found = _find_title(page, margins.setdefault(page_index, set()), start, wanted, spacing)
            if found is not None:
                break
        if found is None:
            line = cursor[1] + 1 if entry.page == cursor[0] else 0
            found = (entry.page, line, 0)
        page_index, line, span = found
        if (page_index, line) < cursor:  # an entry out of reading order: keep it after the previous one
            page_index, line, span = cursor[0], cursor[1] + 1, 0
        skip = not number and bool(_SKIP_TITLES.match(fold_for_match(bare)))
        marks.append(Mark(page_index, line, span, entry.level, number, title, skip))
        cursor = (page_index, line + max(span, 1) - 1)
    return marks


def _find_title(page: Page, margin: set[int], start: int, wanted: set[str], spacing: bool) -> tuple[int, int, int] | None:
    """The first line(s) of `page` from `start` that show the title. A running head that repeats the
    section's title (``5.7. Les listes`` atop the page where § 5.7 begins further down) is not the heading
    when the title shows again below: that match is taken, and the head becomes a margin line."""
    lines = page.lines
    found: list[tuple[int, int]] = []
    for i in range(start, len(lines)):
        if i in margin:
            continue
        joined = ""
        for span in range(1, 4):
            j = i + span - 1
            if j >= len(lines) or j in margin:
                break
            joined = f"{joined} {lines[j].text}" if joined else lines[j].text
            folded = _fold_heading(joined)
            if folded in wanted:
                found.append((i, span))
                break
            if not any(w.startswith(folded) for w in wanted):
                break
        if found and not _in_head(page, found[0][0]):
            break
        if len(found) >= 2:
            break
    if not found:
        return None
    if len(found) >= 2 and _in_head(page, found[0][0]):
        for k in range(found[0][0], found[0][0] + found[0][1]):
            margin.add(k)
        return page.index, found[1][0], found[1][1]
    return page.index, found[0][0], found[0][1]


def _in_head(page: Page, i: int) -> bool:
    return i < 3 and page.lines[i].top <= HEAD_BAND * (page.height or 1.0)


_TOC_LINE = re.compile(r"(\.\s*){3,}\d+$|\s\d{1,4}$")


def _is_contents_page(page: Page, margin: set[int]) -> bool:
    """Most lines end with a page number: a table of contents (or an index)."""
    lines = [line for i, line in enumerate(page.lines) if i not in margin]
    ending = sum(1 for line in lines if re.search(r"\d{1,4}$", line.text))
    return len(lines) >= 5 and ending >= 0.5 * len(lines)


def body_size(pages: list[Page]) -> float:
    """The font size of most characters: the body text."""
    sizes: Counter[float] = Counter()
    for page in pages:
        for line in page.lines:
            sizes[line.size] += len(line.text)
    return min(sizes.items(), key=lambda kv: (-kv[1], kv[0]))[0] if sizes else 10.0


def _gap_above(lines: list[Line], i: int) -> float:
    return lines[i].top - lines[i - 1].bottom if i > 0 else float("inf")


def _typical_gap(pages: list[Page]) -> float:
    gaps: Counter[float] = Counter()
    for page in pages:
        for a, b in zip(page.lines, page.lines[1:]):
            gap = round(b.top - a.top)
            if gap > 0:
                gaps[gap] += 1
    return float(min(gaps.items(), key=lambda kv: (-kv[1], kv[0]))[0]) if gaps else 12.0


def marks_from_headings(pages: list[Page], margins: dict[int, set[int]], spacing: bool) -> list[Mark]:
    """Numbered headings (``Chapitre 2``, ``§ 13``, ``Paragraphe 13``, ``13.``, ``3.1``) found by layout:
    the number pattern, *and* a heading look (bold or larger than the body), *and* a heading place (a short
    line with more space above it than between lines of text, or the first line of the page). A numbered
    list item set like the body is never a heading; a large line without a number opens no section."""
    body = body_size(pages)
    gap = _typical_gap(pages)
    marks: list[Mark] = []
    has_chapters = False
    candidates: list[tuple[int, int, int, str, str, str]] = []  # page, line, span, keyword, number, title
    for page in pages:
        margin = margins.get(page.index, set())
        lines = page.lines
        if _is_contents_page(page, margin):
            continue  # a table of contents lists every heading: none of them starts here
        first = next((i for i in range(len(lines)) if i not in margin), None)
        for i, line in enumerate(lines):
            if i in margin:
                continue
            text = clean_text(line.text, spacing)
            if len(text) > 100 or text.endswith((",", ";")) or _TOC_LINE.search(text):
                continue
            looks = line.bold or line.size >= body * 1.15
            placed = i == first or _gap_above(lines, i) >= gap * 1.3
            if not (looks and placed):
                continue
            keyword_only = _KEYWORD_ONLY.match(text)
            match = keyword_only or _NUMBER.match(text)
            if not match:
                continue
            keyword = (match.group("kw") or "").lower()
            number = match.group("num")
            title, span = text, 1
            if keyword_only and i + 1 < len(lines) and (i + 1) not in margin:
                nxt = lines[i + 1]
                if (nxt.bold or nxt.size >= body * 1.15) and not _NUMBER.match(nxt.text):
                    title, span = f"{text} {clean_text(nxt.text, spacing)}", 2
            elif not keyword_only and not match.group("rest").strip():
                continue
            else:  # a title that wraps: the next line in the same style, close below
                while i + span < len(lines) and (i + span) not in margin and span < 3:
                    nxt = lines[i + span]
                    prev = lines[i + span - 1]
                    heading_like = nxt.bold or nxt.size >= body * 1.15
                    if not heading_like or _NUMBER.match(nxt.text) or len(nxt.text) > 60:
                        break
                    if not 0 < nxt.top - prev.bottom <= 1.6 * max(prev.size, nxt.size, gap):
                        break
                    title, span = f"{title} {clean_text(nxt.text, spacing)}", span + 1
            if keyword in ("chapitre", "chapter", "partie", "part"):
                has_chapters = True
            candidates.append((page.index, i, span, keyword, number, title))
    for page_index, line, span, keyword, number, title in candidates:
        depth = number.count(".") + 1
        if keyword in ("chapitre", "chapter", "partie", "part"):
            level = 1
        elif keyword in ("§", "paragraphe", "section", "leçon", "lecon"):
            level = 2
        else:
            level = depth + 1 if has_chapters else depth
        marks.append(Mark(page_index, line, span, min(level, 6), number, title))
    return marks
