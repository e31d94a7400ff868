"""Running headers and footers, and the page number printed on each page.

A *margin line* is one of the first three or last two lines of a page that sits in the top or bottom band
of the page and either repeats on other pages once its digits are ignored (a running head, a proof stamp,
``28 Organisation d'un document`` / ``30 Organisation d'un document``) or holds only a page number. Margin
lines are removed from the text.

Printed pages come, in this order, from:

- ``labels``: the PDF's /PageLabels (``i``–``xviii`` then ``1``…);
- ``text``: numbers at the start or end of margin lines (not a serial number such as ``No 46``); each one
  votes for an offset "PDF index − printed number", the offset with the most votes wins if enough pages
  agree with it (`MIN_AGREEMENT` of the pages that show a number, and at least two), which is the check on
  several pages; pages before the first printed page (the offset would give 0 or less) keep their index;
- ``index``: the 1-based PDF index.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from vaulttools.importers.pdf.cleaning import fold_for_match
from vaulttools.importers.pdf.reading import Page

__all__ = ["PageNumbers", "find_margins", "printed_pages"]

TOP_BAND = 0.16
BOTTOM_BAND = 0.85
MIN_AGREEMENT = 0.6
_HEAD_LINES, _FOOT_LINES = 3, 2

_ROMAN = re.compile(r"^(?=[ivxlcdm]+$)m{0,3}(cm|cd|d?c{0,3})(xc|xl|l?x{0,3})(ix|iv|v?i{0,3})$")
_EDGE_START = re.compile(r"^(\d{1,4})(?!\s*[:/.,]\d)\b")
_EDGE_END = re.compile(r"(?<![\d:/.,])(\d{1,4})$")
_SERIAL = re.compile(r"(?:\bno|n°|nº|#|\bnr)\.?\s*$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class PageNumbers:
    printed: tuple[str, ...]  # per page, the printed page as a string
    sources: tuple[str, ...]  # per page: labels | text | index
    offset: int | None  # the inferred offset (text), else None
    agreeing: int  # pages whose margins show the printed number the offset predicts

    def source_of(self, indexes: list[int]) -> str:
        """One source for a set of pages: the weakest one among them."""
        found = {self.sources[i] for i in indexes}
        for source in ("index", "text", "labels"):
            if source in found:
                return source
        return "index"


def _candidates(page: Page) -> list[int]:
    lines = page.lines
    n = len(lines)
    picks = sorted(set(range(min(_HEAD_LINES, n))) | set(range(max(0, n - _FOOT_LINES), n)))
    height = page.height or 1.0
    return [i for i in picks if lines[i].top <= TOP_BAND * height or lines[i].top >= BOTTOM_BAND * height]


def _signature(text: str) -> str:
    words = fold_for_match(text).split()
    return " ".join("#" if w.isdigit() or _ROMAN.match(w) else w for w in words)


def find_margins(pages: list[Page]) -> dict[int, set[int]]:
    """Page index -> indexes of its margin lines (running heads, footers, page numbers)."""
    seen: dict[str, set[int]] = {}
    cands: dict[int, list[tuple[int, str]]] = {}
    for page in pages:
        for i in _candidates(page):
            sig = _signature(page.lines[i].text)
            cands.setdefault(page.index, []).append((i, sig))
            seen.setdefault(sig, set()).add(page.index)
    repeat = 2 if len(pages) <= 20 else 3
    out: dict[int, set[int]] = {}
    for index, items in cands.items():
        for i, sig in items:
            if sig in ("", "#") or len(seen[sig]) >= repeat:
                out.setdefault(index, set()).add(i)
    return out


def _edge_numbers(text: str) -> list[int]:
    text = text.strip()
    found: list[int] = []
    start = _EDGE_START.match(text)
    if start:
        found.append(int(start.group(1)))
    end = _EDGE_END.search(text)
    if end and not _SERIAL.search(text[: end.start()]) and (not start or end.start() > start.start()):
        found.append(int(end.group(1)))
    return [v for v in found if v > 0]


def printed_pages(pages: list[Page], margins: dict[int, set[int]]) -> PageNumbers:
    """The printed page of every page and where it comes from (see the module doc). Lines of the bands that
    show the predicted number are added to `margins` (a folio line that does not repeat)."""
    n = len(pages)
    if any(p.label for p in pages):
        printed = tuple(p.label or str(p.index + 1) for p in pages)
        sources = tuple("labels" if p.label else "index" for p in pages)
        for page in pages:  # a folio line that does not repeat ("3.1. Choix d'une classe 29") is a margin too
            for i in _candidates(page):
                text = page.lines[i].text.strip()
                label = page.label.strip()
                if label and (text.startswith(label + " ") or text.endswith(" " + label) or text == label):
                    margins.setdefault(page.index, set()).add(i)
        return PageNumbers(printed, sources, None, 0)
    numbers: dict[int, list[tuple[int, int]]] = {}  # page -> (line, number)
    votes: Counter[int] = Counter()
    for page in pages:
        found: list[tuple[int, int]] = []
        for i in _candidates(page):
            for value in _edge_numbers(page.lines[i].text):
                found.append((i, value))
        numbers[page.index] = found
        for offset in {page.index + 1 - value for _i, value in found}:
            votes[offset] += 1
    showing = sum(1 for f in numbers.values() if f)
    if votes:
        # most votes, then the smallest offset magnitude: deterministic whatever the order of pages
        offset, count = min(votes.items(), key=lambda kv: (-kv[1], abs(kv[0]), kv[0]))
        if count >= 2 and count >= MIN_AGREEMENT * showing:
            printed: list[str] = []
            sources: list[str] = []
            for page in pages:
                value = page.index + 1 - offset
                if value >= 1:
                    printed.append(str(value))
                    sources.append("text")
                    for i, number in numbers[page.index]:
                        if number == value:
                            margins.setdefault(page.index, set()).add(i)
                else:
                    printed.append(str(page.index + 1))
                    sources.append("index")
            return PageNumbers(tuple(printed), tuple(sources), offset, count)
    return PageNumbers(tuple(str(i + 1) for i in range(n)), ("index",) * n, None, 0)
