"""A section's lines as Markdown: paragraphs, lists, tables, sub-headings and page markers.

Input is the stream of a section: `PageBreak`s, `Heading`s and `TextLine`s (margin lines already removed).
Lines join into paragraphs unless the layout says a new block starts (more space above than between lines,
a first-line indent after a short line, a list marker, a table row); a line that ends with PDFium's
soft-hyphen mark (U+FFFE, end-of-line hyphenation) joins the next one without the hyphen. Lines cut into
several cells at wide gaps, two rows or more whose cells fall in the same columns, make a Markdown table.
A page marker goes where the page starts: on its own line before a block, or inside a paragraph that runs
over the page break, so each passage keeps its printed page. Text that Markdown or Obsidian would read as
syntax (a leading ``#``, ``[[``) is escaped; headings are plain text (never ``**``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from vaulttools.importers.pdf.cleaning import clean_text
from vaulttools.importers.pdf.reading import Line

__all__ = ["Heading", "PageBreak", "TextLine", "render_blocks"]

_BULLET = re.compile(r"^[•◦▪‣●○■□·∙–—\-\*]\s+(?P<text>\S.*)$")
_NUMBERED = re.compile(r"^(?P<num>\d{1,2})[.)]\s+(?P<text>\S.*)$")
_LETTERED = re.compile(r"^(?P<num>[a-z])\)\s+(?P<text>\S.*)$")
_SENTENCE_END = re.compile(r"[.!?:»\"”)]$")
_SOFT = ("\ufffe", "\u00ad")


@dataclass(frozen=True, slots=True)
class PageBreak:
    marker: str  # the Markdown of the page marker


@dataclass(frozen=True, slots=True)
class Heading:
    level: int  # Markdown level (### and below)
    text: str


@dataclass(frozen=True, slots=True)
class TextLine:
    line: Line


def _escape_inline(text: str) -> str:
    """`[[` in the book's text is not a link of the vault."""
    return text.replace("[[", "\\[\\[").replace("]]", "\\]\\]")


def _escape(text: str) -> str:
    """A block that would start as Markdown syntax (a heading, a quote, a fence, a rule, a table row)."""
    if re.match(r"^(#{1,6}(\s|$)|>|```|~~~|[=\-_*]{3,}\s*$|\|)", text):
        text = "\\" + text
    return text


def _cell(text: str) -> str:
    return _escape_inline(text).replace("|", "\\|")


class _Builder:
    def __init__(self, spacing: bool, gap: float, left: float) -> None:
        self.spacing = spacing
        self.gap = gap  # typical distance between two lines of a paragraph
        self.left = left  # the text column's left edge
        self.out: list[str] = []  # finished blocks
        self.para: list[str] = []  # current paragraph or list item, as pieces
        self.kind = ""  # "", "p", "li"
        self.prefix = ""
        self.item_x = 0.0
        self.last: Line | None = None
        self.table: list[Line] = []

    # -- paragraphs ------------------------------------------------------------------------------------
    def _append_text(self, text: str) -> None:
        if self.para and self.para[-1].endswith(_SOFT):
            self.para[-1] = self.para[-1][:-1]
            self.para.append(text)
        elif self.para:
            self.para.append(" " + text)
        else:
            self.para.append(text)

    def flush(self) -> None:
        self.flush_table()
        if self.para:
            text = "".join(self.para).replace("\ufffe", "").replace("\u00ad", "")
            text = _escape(" ".join(text.split()))
            self.out.append(f"{self.prefix}{text}" if self.kind == "li" else text)
        self.para, self.kind, self.prefix = [], "", ""

    def marker(self, marker: str) -> None:
        """A page starts: inline if the paragraph may go on, else before the next block."""
        self.flush_table()
        if self.para and self.kind == "p" and not _SENTENCE_END.search(self.para[-1].rstrip()):
            self.para.append(f" {marker}")
            self.last = None
            return
        self.flush()
        self.out.append(marker)
        self.last = None

    def heading(self, level: int, text: str) -> None:
        self.flush()
        self.out.append(f"{'#' * level} {' '.join(text.split())}")
        self.last = None

    # -- tables ----------------------------------------------------------------------------------------
    def flush_table(self) -> None:
        rows = self.table
        self.table = []
        if not rows:
            return
        table = _table(rows, self.spacing)
        if table is None:
            for line in rows:  # not a table after all: ordinary lines
                self._line(line)
            return
        self._close_text()
        self.out.append(table)

    def _close_text(self) -> None:
        if self.para:
            text = "".join(self.para).replace("\ufffe", "").replace("\u00ad", "")
            text = _escape(" ".join(text.split()))
            self.out.append(f"{self.prefix}{text}" if self.kind == "li" else text)
        self.para, self.kind, self.prefix = [], "", ""

    # -- lines -----------------------------------------------------------------------------------------
    def add(self, line: Line) -> None:
        if len(line.cells) >= 2:
            if not self.table and self.para:
                self._close_text()
            self.table.append(line)
            self.last = line
            return
        if self.table:
            # a one-cell line inside a table run: a wrapped cell, when it sits right under the table
            if self.last is not None and 0 < line.top - self.last.bottom <= self.gap * 1.6 and line.x > self.table[0].x + 8:
                self.table.append(line)
                self.last = line
                return
            self.flush_table()
        self._line(line)

    def _line(self, line: Line) -> None:
        text = _escape_inline(clean_text(line.text, self.spacing))
        bullet = _BULLET.match(text) or _LETTERED.match(text)
        numbered = _NUMBERED.match(text)
        new_block = self.last is None or not self.para
        if self.last is not None and self.para:
            gap = line.top - self.last.bottom
            if gap > self.gap * 1.45 or gap < 0:
                new_block = True
            elif line.x > self.last.x + 0.8 * max(line.size, 1.0) and self.kind == "p" and _SENTENCE_END.search(self.para[-1].rstrip()):
                new_block = True  # a first-line indent after a sentence end
        if bullet or numbered:
            self._close_text()
            self.kind = "li"
            self.prefix = f"{numbered.group('num')}. " if numbered else ("- " if _BULLET.match(text) else f"- {bullet.group('num')}) ")
            self.para = [(numbered or bullet).group("text")]
            self.item_x = line.x
            self.last = line
            return
        if new_block:
            self._close_text()
            self.kind = "p"
        elif self.kind == "li" and line.x <= self.item_x + 0.5 * max(line.size, 1.0):
            self._close_text()  # not indented under the item's text: the list item ended
            self.kind = "p"
        self._append_text(text)
        self.last = line

    def result(self) -> str:
        self.flush()
        return "\n\n".join(block for block in self.out if block.strip())


def _table(rows: list[Line], spacing: bool) -> str | None:
    """A Markdown table from lines cut in cells, or None when the cells do not line up in columns."""
    starts = sorted(x for line in rows for x, _text in line.cells)
    anchors: list[float] = []
    for x in starts:
        if not anchors or x - anchors[-1] > 6:
            anchors.append(x)
    used = [sum(1 for line in rows if any(abs(x - a) <= 6 or (a <= x < a + 6) for x, _ in line.cells)) for a in anchors]
    columns = [a for a, n in zip(anchors, used) if n >= 2]
    multi = sum(1 for line in rows if len(line.cells) >= 2)
    if len(columns) < 2 or multi < 2:
        return None
    table: list[list[str]] = []
    for line in rows:
        cells = [""] * len(columns)
        for x, text in (line.cells if len(line.cells) >= 2 else ((line.x, line.text),)):
            col = max((k for k, a in enumerate(columns) if a <= x + 6), default=0)
            piece = clean_text(text, spacing)
            cells[col] = f"{cells[col]} {piece}".strip()
        if table and not cells[0]:  # a wrapped cell: continues the row above
            for k, piece in enumerate(cells):
                if piece:
                    above = table[-1][k]
                    table[-1][k] = f"{above[:-1]}{piece}" if above.endswith(_SOFT) else f"{above} {piece}".strip()
            continue
        table.append(cells)
    if len(table) < 2:
        return None
    width = len(columns)
    lines = ["| " + " | ".join(_cell(c.replace("\ufffe", "")) for c in table[0]) + " |", "|" + "---|" * width]
    lines += ["| " + " | ".join(_cell(c.replace("\ufffe", "")) for c in row) + " |" for row in table[1:]]
    return "\n".join(lines)


def render_blocks(items: list[PageBreak | Heading | TextLine], spacing: bool, gap: float, left: float) -> str:
    """The Markdown body of one section."""
    builder = _Builder(spacing, gap, left)
    for item in items:
        if isinstance(item, PageBreak):
            builder.marker(item.marker)
        elif isinstance(item, Heading):
            builder.heading(item.level, item.text)
        else:
            builder.add(item.line)
    return builder.result()
