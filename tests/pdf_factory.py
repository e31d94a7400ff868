"""Small PDF books for the import tests, written with reportlab (BSD): headings, paragraphs, lists,
tables, running heads, page-number footers, an outline and /PageLabels when asked.

A book is a list of pages; a page a list of blocks: ("chapter", "Chapitre 2 Les droits"), ("h2", "§ 13. Le
citoyen"), ("p", "text..."), ("li", "item"), ("table", [["a", "b"], ["c", "d"]]), ("image", None). Outline
entries point at the page where their heading is drawn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from reportlab.lib.pagesizes import A4
from reportlab.lib.utils import simpleSplit
from reportlab.pdfgen import canvas

WIDTH, HEIGHT = A4
LEFT, RIGHT, TOP, BOTTOM = 72, 72, 90, 80
BODY = ("Helvetica", 10, 13)  # font, size, leading


@dataclass
class BookSpec:
    pages: list[list[tuple[str, object]]]
    title: str = "Manuel"
    outline: bool = True
    labels: list[tuple[int, str, int]] | None = None  # (page index, style D/r, first number)
    header: str | None = "Manuel d'instruction civique"  # running head, with the page number beside it
    folio_offset: int | None = 0  # printed number = PDF index + 1 - offset; None: no folio at all
    encrypt: str | None = None
    headings: list[tuple[int, str, int]] = field(default_factory=list)  # filled: (level, title, page)


def write_book(path: Path, spec: BookSpec) -> Path:
    kwargs = {}
    if spec.encrypt:
        from reportlab.lib.pdfencrypt import StandardEncryption

        kwargs["encrypt"] = StandardEncryption(spec.encrypt, canPrint=1)
    c = canvas.Canvas(str(path), pagesize=A4, **kwargs)
    c.setTitle(spec.title)
    spec.headings.clear()
    for index, blocks in enumerate(spec.pages):
        folio = None if spec.folio_offset is None else index + 1 - spec.folio_offset
        if spec.header and folio and folio > 0:
            c.setFont("Helvetica", 9)
            c.drawString(LEFT, HEIGHT - 50, f"{folio}  {spec.header}" if index % 2 else f"{spec.header}  {folio}")
        if folio and folio > 0:
            c.setFont("Helvetica", 9)
            c.drawCentredString(WIDTH / 2, 40, str(folio))
        y = HEIGHT - TOP
        for kind, content in blocks:
            y = _block(c, spec, index, kind, content, y)
        c.showPage()
    if spec.labels:
        for page, style, start in spec.labels:
            c.addPageLabel(page, style="ROMAN_LOWER" if style == "r" else "ARABIC", start=start)
    c.save()
    return path


def _block(c: canvas.Canvas, spec: BookSpec, index: int, kind: str, content: object, y: float) -> float:
    font, size, leading = BODY
    width = WIDTH - LEFT - RIGHT
    if kind in ("chapter", "h2", "h3"):
        level = {"chapter": 1, "h2": 2, "h3": 3}[kind]
        big = {1: 18, 2: 13, 3: 11}[level]
        y -= big * 1.2
        key = f"k{len(spec.headings)}"
        c.bookmarkHorizontal(key, 0, y + big * 2)
        c.setFont("Helvetica-Bold", big)
        c.drawString(LEFT, y, str(content))
        if spec.outline:
            c.addOutlineEntry(str(content), key, level=level - 1, closed=False)
        spec.headings.append((level, str(content), index))
        return y - big * 0.9
    if kind == "p":
        c.setFont(font, size)
        lines = simpleSplit(str(content), font, size, width)
        y -= leading * 0.6
        for i, line in enumerate(lines):
            c.drawString(LEFT + (12 if i == 0 else 0), y, line)
            y -= leading
        return y
    if kind == "li":
        c.setFont(font, size)
        lines = simpleSplit(str(content), font, size, width - 14)
        for i, line in enumerate(lines):
            c.drawString(LEFT + (0 if i == 0 else 14), y, ("• " if i == 0 else "") + line)
            y -= leading
        return y
    if kind == "table":
        rows = list(content)  # type: ignore[call-overload]
        y -= leading
        col = width / len(rows[0])
        for r, row in enumerate(rows):
            c.setFont("Helvetica-Bold" if r == 0 else font, size)
            for k, cell in enumerate(row):
                c.drawString(LEFT + k * col, y, str(cell))
            y -= leading * 1.3
        return y
    if kind == "image":
        from PIL import Image
        from reportlab.lib.utils import ImageReader

        image = Image.new("L", (60, 60), 128)
        c.drawImage(ImageReader(image), LEFT, y - 200, 200, 200)
        return y - 210
    raise ValueError(kind)


LOREM = (
    "Le citoyen participe à la vie de la cité : il vote, il paie l'impôt, il respecte la loi commune. "
    "Ce paragraphe décrit ses droits et ses devoirs, tels que la Constitution les énonce, et la manière "
    "dont les institutions les garantissent au quotidien dans la commune et dans l'État. "
)


def civics_book(classe: int, edition: int = 1, outline: bool = True, labels: bool = True) -> BookSpec:
    """A civics textbook like the seed's: chapter 2, § 13 over two pages (its second page has no
    heading), § 14 from the middle of a page, § 15 over three pages with a table, questions after § 13.
    Printed pages start at 25 on PDF page 2 (labels i, then 25...; or folios only, offset -23)."""
    tag = f"classe{classe}"
    p13 = f"Le citoyen de {tag} et la démocratie locale. " + LOREM * 3
    cont13 = (
        "Sur la page suivante le paragraphe continue : la municipalité organise le conseil des jeunes "
        f"et le budget participatif{' révisé' if edition > 1 else ''}, que l'on appelle aussi quorum citoyen. " + LOREM * 2
    )
    pages: list[list[tuple[str, object]]] = [
        [("p", f"Instruction civique, classe de {classe}e. Édition {edition}.")],
        [("chapter", "Chapitre 2 Les droits du citoyen"), ("h2", "§ 13. Le citoyen et la commune"), ("p", p13), ("p", p13)],
        [("p", cont13), ("p", "Questions"), ("p", "1. Qu'est-ce qu'un citoyen selon ce paragraphe ?"),
         ("p", "2. Comment la commune garantit-elle les droits du citoyen ?"),
         ("h2", "§ 14. Les élections"), ("p", f"Voter est un droit en {tag}. " + LOREM)],
        [("h2", "§ 15. Les institutions"), ("p", LOREM * 2),
         ("table", [["Institution", "Rôle", "Durée"], ["Conseil municipal", "Gère la commune", "6 ans"], ["Assemblée", "Vote la loi", "5 ans"]]),
         ("p", LOREM * 2)],
        [("p", "Les institutions se répartissent les pouvoirs : séparation des pouvoirs exécutif et législatif. " + LOREM * 3)],
        [("p", "Fin du paragraphe 15 : le contrôle de constitutionnalité, dernier mot de la section. " + LOREM * 2)],
    ]
    return BookSpec(
        pages=pages,
        title=f"Instruction civique {classe}e",
        outline=outline,
        labels=[(0, "r", 1), (1, "D", 25)] if labels else None,
        folio_offset=-23,
        header=f"Instruction civique {classe}e",
    )
