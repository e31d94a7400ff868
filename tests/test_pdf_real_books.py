"""The three real French books of shared/corpora/pdf (see its README): sections found against the outline,
printed pages on pages checked by hand (docs/pdf-import.md), accents. Skipped when the books are absent."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import CORPORA
from vaulttools.importers.pdf import ImportOptions, plan_import
from vaulttools.importers.pdf.reading import read_pdf
from vaulttools.importers.pdf.structure import split_number

PDF = CORPORA / "pdf"


def _book(name: str) -> Path:
    path = PDF / name
    if not path.is_file():
        pytest.skip(f"real book {name} not available at {path}")
    return path


@pytest.fixture(scope="module")
def plans(tmp_path_factory):
    cache: dict[str, object] = {}

    def plan(name: str):
        if name not in cache:
            vault = tmp_path_factory.mktemp("vault")
            cache[name] = plan_import(_book(name), ImportOptions(vault=vault, visibility="public"), set())
        return cache[name]

    return plan


def _sections(plan) -> dict[str, object]:
    return {s.title: s for s in plan.book.sections}


@pytest.mark.parametrize("name", ["formation-latex-ul.pdf", "Apprends_LaTeX.pdf"])
def test_every_outline_entry_down_to_level_2_is_a_note(plans, name):
    plan = plans(name)
    raw = read_pdf(_book(name))
    wanted = [e.title for e in raw.outline if e.level <= 2 and e.page is not None]
    skipped = {"Table des matières", "Liste des tableaux", "Liste des figures", "Index"}  # lists of other entries
    titles = [s.title for s in plan.book.sections]
    for title in wanted:
        if title.strip() in skipped:
            assert title.strip() not in titles
            continue
        assert " ".join(title.replace("’", "'").split()) in titles, title
    assert plan.book.structure == "outline"


@pytest.mark.parametrize(
    "name,title,first_pdf,first_printed",
    [
        # checked by hand on the PDF pages (docs/pdf-import.md)
        ("formation-latex-ul.pdf", "3.1 Choix d'une classe", 45, "27"),
        ("formation-latex-ul.pdf", "2.10 LaTeX en français", 39, "21"),
        ("Apprends_LaTeX.pdf", "3.1 Le document LaTeX", 15, "9"),
        ("Apprends_LaTeX.pdf", "5.5 Les environnements center, flushleft et flushright", 43, "37"),
        ("fbook.pdf", "3 Exemples", 45, "23"),
        ("fbook.pdf", "4 Concepts", 67, "45"),
    ],
)
def test_printed_pages_on_pages_checked_by_hand(plans, name, title, first_pdf, first_printed):
    section = _sections(plans(name))[title]
    assert section.pdf_pages[0] == first_pdf and section.pages[0] == first_printed
    assert len(section.pages) == len(section.pdf_pages)


def test_formation_pages_41_to_52_all_have_a_chapter_and_a_section(plans):
    # the seed's splitter left 6 of these 12 pages with no chapter or section
    plan = plans("formation-latex-ul.pdf")
    owner = {}
    for section in plan.book.sections:
        for page in section.pdf_pages:
            owner.setdefault(page, section)
    for page in range(41, 53):
        section = owner[page]
        assert section.chapter and split_number(section.title)[0], page


def test_fbook_without_outline_or_labels_reads_its_footers(plans):
    plan = plans("fbook.pdf")
    assert plan.book.structure == "headings"
    assert plan.book.numbers.offset == 22 and plan.book.numbers.agreeing >= 300
    chapters = [s.title for s in plan.book.sections if s.level == 1][:13]
    assert chapters[:4] == ["1 Utiliser ce livre", "2 Utiliser TEX", "3 Exemples", "4 Concepts"]
    text = "\n".join(s.body for s in plan.book.sections)
    assert "caractères" in text and "caract`eres" not in text and "pr´eparer" not in text
    assert "No 46" not in text and "24 Sep 2004" not in text  # the proof stamp of every page is gone


@pytest.mark.parametrize("name", ["formation-latex-ul.pdf", "Apprends_LaTeX.pdf", "fbook.pdf"])
def test_no_markdown_bold_and_no_stray_link_in_the_notes(plans, name):
    plan = plans(name)
    for change in plan.changes:
        text = change.after.decode("utf-8")
        headings = [line for line in text.splitlines() if line.startswith("#")]
        assert not any("**" in h for h in headings)
        links = re.findall(r"\[\[([^\]|#]+)", text.split("---", 2)[2])
        assert all(link.endswith(".pdf") or link.startswith(plan.book_slug) for link in links), change.path
