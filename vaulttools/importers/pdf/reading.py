"""Reading a PDF with pypdfium2 (Apache-2.0/BSD): pages as positioned lines, the outline, the page labels.

Everything the rest of the importer needs comes out of here as plain data, so that structure, page numbers
and text cleaning are pure functions that tests can feed directly. Every reader is bounded: a page cap
(`max_pages`), a wall-clock deadline checked between pages, an outline walk that stops at a fixed number of
entries and depth (PDFium itself refuses outline cycles), and bad input is one `PdfImportError` naming the
file, never a traceback.
"""

from __future__ import annotations

import ctypes
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Line", "OutlineEntry", "Page", "PdfImportError", "RawBook", "read_pdf"]

#: Outline entries read at most, and their depth: a real book has a few hundred.
MAX_OUTLINE_ENTRIES = 5000
MAX_OUTLINE_DEPTH = 8
SCANNED = "no text, only an image (a scanned page? run OCR on the PDF first)"
_SURROGATE = re.compile("[\ud800-\udfff]")
#: A gap between two characters of one line wider than this many font sizes separates two cells (tables).
CELL_GAP_EM = 1.2


class PdfImportError(Exception):
    """The PDF cannot be imported; the message names the file and says why, in one line."""


@dataclass(frozen=True, slots=True)
class Line:
    """One line of text as PDFium orders it. `top` is the distance of its baseline from the top of the page
    (points); `x` where it starts; `size` the largest font size in it; `cells` the line cut at wide gaps
    (one cell for ordinary text), each with the x where it starts."""

    text: str
    x: float
    top: float
    size: float
    bold: bool
    cells: tuple[tuple[float, str], ...] = ()
    end_top: float = -1.0  # baseline of its last character: PDFium joins hyphenated lines into one

    @property
    def bottom(self) -> float:
        return self.end_top if self.end_top >= 0 else self.top


@dataclass(slots=True)
class Page:
    index: int  # 0-based PDF index
    width: float
    height: float
    lines: list[Line] = field(default_factory=list)
    label: str = ""  # the PDF's /PageLabels label, "" when the PDF has none
    problem: str | None = None  # why this page gave no text
    has_image: bool = False  # looked at only on pages with few lines (a scan with a running head)


@dataclass(frozen=True, slots=True)
class OutlineEntry:
    level: int  # 1 = top level
    title: str
    page: int | None  # 0-based PDF index of its destination, None when it has none


@dataclass(slots=True)
class RawBook:
    path: Path
    pages: list[Page]
    outline: list[OutlineEntry]
    title: str = ""  # the PDF's /Title metadata


def _check_header(path: Path) -> None:
    try:
        with path.open("rb") as handle:
            head = handle.read(1024)
    except FileNotFoundError:
        raise PdfImportError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise PdfImportError(f"{path}: is a folder, not a PDF") from None
    except OSError as exc:
        raise PdfImportError(f"{path}: cannot be read: {exc.strerror or exc}") from None
    if b"%PDF-" not in head:
        raise PdfImportError(f"{path}: not a PDF (no %PDF- header in its first 1024 bytes)")


def _open(path: Path):  # -> pypdfium2.PdfDocument
    import pypdfium2 as pdfium

    try:
        return pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as exc:
        text = str(exc)
        if "password" in text.lower():
            raise PdfImportError(f"{path}: encrypted (a password is needed); decrypt it first, e.g. qpdf --decrypt") from None
        raise PdfImportError(f"{path}: broken or unreadable PDF ({text.rstrip('.')})") from None


def _outline(pdf, n_pages: int) -> list[OutlineEntry]:
    entries: list[OutlineEntry] = []
    for item in pdf.get_toc(max_depth=MAX_OUTLINE_DEPTH):
        if len(entries) >= MAX_OUTLINE_ENTRIES:
            break
        dest = item.get_dest()
        index = dest.get_index() if dest is not None else None
        if index is not None and not 0 <= index < n_pages:
            index = None
        entries.append(OutlineEntry(level=item.level + 1, title=(item.get_title() or "").strip(), page=index))
    return entries


def _bold(raw, textpage, char: int) -> bool:
    """Bold by the font's weight when it says one, else by its name (Type 1 fonts of TeX say -1: CMBX...)."""
    weight = raw.FPDFText_GetFontWeight(textpage, char)
    if weight >= 600:
        return True
    buffer = ctypes.create_string_buffer(128)
    flags = ctypes.c_int()
    size = raw.FPDFText_GetFontInfo(textpage, char, buffer, 128, ctypes.byref(flags))
    name = buffer.raw[: max(0, min(size, 128) - 1)].decode("latin-1", "replace").lower()
    name = name.split("+", 1)[-1]
    return any(mark in name for mark in ("bold", "black", "heavy", "semibold", "demi", "cmbx", "cmb10", "-bd", ",bd"))


def _page_lines(page, raw) -> list[Line]:
    textpage = page.get_textpage()
    try:
        count = textpage.count_chars()
        if count <= 0:
            return []
        text = textpage.get_text_range()
        handle = textpage.raw
        if len(text) != count:  # characters outside the BMP: one call per character instead
            text = "".join(chr(raw.FPDFText_GetUnicode(handle, i) or 32) for i in range(count))
        # A lone UTF-16 surrogate (a glyph mapped to half a pair) cannot be written as UTF-8: U+FFFD, one
        # character for one, so indexes still match PDFium's.
        text = _SURROGATE.sub("\ufffd", text)
        height = page.get_height()
        left, right, bottom, top = (ctypes.c_double() for _ in range(4))
        lines: list[Line] = []
        start = 0
        while start < count:
            end = text.find("\r\n", start)
            if end < 0:
                end = count
            segment = text[start:end]
            if segment.strip():
                lines.append(_line(raw, handle, segment, start, height, left, right, bottom, top))
            start = end + 2
        return lines
    finally:
        textpage.close()


def _line(raw, handle, segment: str, start: int, height: float, left, right, bottom, top) -> Line:
    """One line: its characters' boxes give where it starts, its size, and the wide gaps that cut cells."""
    size = 0.0
    x0: float | None = None
    baseline = 0.0
    cells: list[tuple[float, str]] = []
    cell_start = 0
    cell_x = 0.0
    prev_right: float | None = None
    first_char = start
    last_bottom = 0.0
    for offset, ch in enumerate(segment):
        if ch.isspace() or ch in "\ufffe\u00ad":
            continue
        i = start + offset
        if not raw.FPDFText_GetCharBox(handle, i, ctypes.byref(left), ctypes.byref(right), ctypes.byref(bottom), ctypes.byref(top)):
            continue
        char_size = raw.FPDFText_GetFontSize(handle, i)
        if char_size > size:
            size = char_size
        if x0 is None:
            x0, baseline, cell_x, first_char = left.value, bottom.value, left.value, i
        elif prev_right is not None and left.value - prev_right > CELL_GAP_EM * max(char_size, 1.0) and abs(bottom.value - last_bottom) < max(char_size, 1.0):
            cells.append((cell_x, segment[cell_start:offset].strip()))
            cell_start, cell_x = offset, left.value
        prev_right = right.value
        last_bottom = bottom.value
    cells.append((cell_x, segment[cell_start:].strip()))
    bold = _bold(raw, handle, first_char) if x0 is not None else False
    return Line(
        text=segment.strip(),
        x=round(x0 or 0.0, 1),
        top=round(height - baseline, 1),
        size=round(size, 1),
        bold=bold,
        cells=tuple(c for c in cells if c[1]),
        end_top=round(height - last_bottom, 1) if x0 is not None else -1.0,
    )


def _has_image(page) -> bool:
    """Whether a page without text draws an image (a scan) rather than nothing (a blank page)."""
    import pypdfium2.raw as raw

    try:
        return any(True for _ in page.get_objects(filter=[raw.FPDF_PAGEOBJ_IMAGE], max_depth=2))
    except Exception:  # an odd page tree: say nothing rather than fail the import
        return False


def read_pdf(path: str | Path, max_pages: int = 1500, time_limit: float = 120.0) -> RawBook:
    """Read `path`: its pages' lines, outline and labels. Raises PdfImportError (only) on bad input.

    A page that cannot be read, or that has no text (a scanned image), is kept with its `problem` set, so
    the import can say which pages were left out instead of failing the whole book."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    path = Path(path)
    _check_header(path)
    deadline = time.monotonic() + time_limit
    pdf = _open(path)
    try:
        n = len(pdf)
        if n == 0:
            raise PdfImportError(f"{path}: the PDF has no pages")
        if n > max_pages:
            raise PdfImportError(
                f"{path}: {n} pages, more than the limit of {max_pages} (pass --max-pages {n} to import it anyway)"
            )
        try:
            outline = _outline(pdf, n)
        except pdfium.PdfiumError:
            outline = []
        title = ""
        try:
            title = (pdf.get_metadata_value("Title") or "").strip()
        except (pdfium.PdfiumError, KeyError, ValueError):
            pass
        pages: list[Page] = []
        for index in range(n):
            if time.monotonic() > deadline:
                raise PdfImportError(
                    f"{path}: reading took more than {time_limit:g} s (stopped at PDF page {index + 1} of {n})"
                )
            try:
                page = pdf[index]
            except pdfium.PdfiumError as exc:
                pages.append(Page(index, 0.0, 0.0, problem=f"cannot be read ({exc})"))
                continue
            try:
                record = Page(index, page.get_width(), page.get_height())
                try:
                    record.label = pdf.get_page_label(index) or ""
                except pdfium.PdfiumError:
                    record.label = ""
                try:
                    record.lines = _page_lines(page, raw)
                except pdfium.PdfiumError as exc:
                    record.problem = f"its text cannot be read ({exc})"
                if len(record.lines) <= 3 and record.problem is None:
                    record.has_image = _has_image(page)
                if not record.lines and record.problem is None and record.has_image:
                    record.problem = SCANNED
                pages.append(record)
            finally:
                page.close()
        return RawBook(path=path, pages=pages, outline=outline, title=title)
    finally:
        pdf.close()
