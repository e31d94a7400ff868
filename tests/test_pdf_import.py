"""`vaulttools import pdf` on small PDF books the tests write themselves (tests/pdf_factory.py, reportlab):
sections from the outline and from headings, printed pages from labels and from footers, a § over two and
three pages, running heads, a table, re-import without loss, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.pdf_factory import BookSpec, civics_book, write_book
from vaulttools.cli import main
from vaulttools.importers.pdf.blocks import render_blocks, TextLine
from vaulttools.importers.pdf.book import build_book
from vaulttools.importers.pdf.cleaning import clean_text
from vaulttools.importers.pdf.reading import Line, read_pdf


def _notes(folder: Path) -> dict[str, tuple[dict, str]]:
    out = {}
    for path in sorted(folder.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        _, fm, body = text.split("---\n", 2)
        out[path.name] = (yaml.safe_load(fm), body)
    return out


def _by_section(folder: Path) -> dict[str, tuple[dict, str]]:
    return {meta.get("section", meta["type"]): (meta, body) for meta, body in _notes(folder).values()}


def _book(tmp_path: Path, name: str = "civique-10.pdf", **kwargs) -> Path:
    classe = kwargs.pop("classe", 10)
    return write_book(tmp_path / name, civics_book(classe, **kwargs))


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    return root


@pytest.mark.parametrize("outline,labels,source", [(True, True, "labels"), (False, False, "text"), (True, False, "text"), (False, True, "labels")])
def test_sections_and_printed_pages_with_or_without_outline_and_labels(tmp_path, vault, capsys, outline, labels, source):
    pdf = _book(tmp_path, outline=outline, labels=labels)
    assert main(["import", "pdf", str(pdf), "--vault", str(vault), "--meta", "classe=10"]) == 0
    notes = _by_section(vault / "60-Livres" / "civique-10")
    assert set(notes) == {"2", "13", "14", "15", "moc"}
    meta, body = notes["13"]
    assert meta["type"] == "section" and meta["book"] == "civique-10" and meta["source"] == "pdf/civique-10.pdf"
    assert meta["chapter"] == "Les droits du citoyen" and meta["chapter_number"] == "2"
    # § 13 starts on PDF page 2 (printed 25) and goes on, with no heading, on PDF page 3
    assert meta["pages"] == ["25", "26"] and meta["pdf_pages"] == [2, 3]
    assert meta["page_source"] == source
    assert meta["classe"] == 10 and meta["visibility"] == "private"
    assert "budget participatif" in body  # the text of the continuation page belongs to § 13
    assert body.index("[p. 25]") < body.index("démocratie locale") < body.index("[p. 26]") < body.index("budget participatif")
    # § 15 over three pages, the last two without a heading
    assert notes["15"][0]["pages"] == ["27", "28", "29"]
    assert "contrôle de constitutionnalité" in notes["15"][1]
    # running heads and folios are gone from the text
    assert "Instruction civique 10e" not in body
    # questions at the end of § 13 seed its answers; its title its alias
    assert meta["answers"] == ["Qu'est-ce qu'un citoyen selon ce paragraphe ?", "Comment la commune garantit-elle les droits du citoyen ?"]
    assert meta["aliases"] == ["Le citoyen et la commune"]
    assert "**" not in body


def test_a_table_becomes_a_markdown_table(tmp_path, vault):
    assert main(["import", "pdf", str(_book(tmp_path)), "--vault", str(vault)]) == 0
    body = _by_section(vault / "60-Livres" / "civique-10")["15"][1]
    assert "| Institution | Rôle | Durée |\n|---|---|---|\n| Conseil municipal | Gère la commune | 6 ans |" in body


def test_moc_lists_the_sections_with_their_pages(tmp_path, vault):
    assert main(["import", "pdf", str(_book(tmp_path)), "--vault", str(vault), "--visibility", "public"]) == 0
    meta, body = _by_section(vault / "60-Livres" / "civique-10")["moc"]
    assert meta["type"] == "moc" and meta["visibility"] == "public"
    assert "[[civique-10-13-le-citoyen-et-la-commune|§ 13. Le citoyen et la commune]] (p. 25–26)" in body


def test_copy_pdf_makes_page_links_obsidian_opens(tmp_path, vault):
    pdf = _book(tmp_path)
    assert main(["import", "pdf", str(pdf), "--vault", str(vault), "--copy-pdf"]) == 0
    assert (vault / "civique-10.pdf").read_bytes() == pdf.read_bytes()
    body = _by_section(vault / "60-Livres" / "civique-10")["13"][1]
    assert "[[civique-10.pdf#page=2|p. 25]]" in body and "[[civique-10.pdf#page=3|p. 26]]" in body


def test_copy_pdf_follows_the_obsidian_attachment_folder(tmp_path, vault):
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "app.json").write_text('{"attachmentFolderPath": "Pièces jointes"}', encoding="utf-8")
    assert main(["import", "pdf", str(_book(tmp_path)), "--vault", str(vault), "--copy-pdf"]) == 0
    assert (vault / "Pièces jointes" / "civique-10.pdf").is_file()


def test_reimport_of_the_same_pdf_changes_no_byte(tmp_path, vault, capsys):
    pdf = _book(tmp_path)
    assert main(["import", "pdf", str(pdf), "--vault", str(vault), "--copy-pdf"]) == 0
    files = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in vault.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main(["import", "pdf", str(pdf), "--vault", str(vault), "--copy-pdf", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)[0]
    assert report["created"] == 0 and report["updated"] == 0 and report["unchanged"] == 6
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in vault.rglob("*") if p.is_file()} == files


def test_new_edition_updates_text_and_pages_and_keeps_the_authors_additions(tmp_path, vault, capsys):
    assert main(["import", "pdf", str(_book(tmp_path)), "--vault", str(vault), "--meta", "classe=10"]) == 0
    path = vault / "60-Livres" / "civique-10" / "civique-10-13-le-citoyen-et-la-commune.md"
    text = path.read_text(encoding="utf-8")
    # the author's work: aliases and answers rewritten (block style, a comment), priority, published, own field
    text = text.replace("aliases: [Le citoyen et la commune]", "aliases:  # mes mots\n  - citoyenneté\n  - 'commune'")
    text = text.replace("visibility: private", "visibility: public\npriority: 8\nniveau: facile")
    text = text.replace("updated: ", "updated: 2020-01-01\nold_updated: ").replace("old_updated: ", "#", 1)
    path.write_text(text, encoding="utf-8")
    before = path.read_text(encoding="utf-8")
    # edition 2: one more word on the continuation page, and a front page more: every page moves by one
    spec = civics_book(10, edition=2)
    spec.pages.insert(0, [("p", "Avertissement de la deuxième édition.")])
    spec.labels = [(0, "r", 1), (2, "D", 25)]
    write_book(tmp_path / "civique-10.pdf", spec)
    capsys.readouterr()
    assert main(["import", "pdf", str(tmp_path / "civique-10.pdf"), "--vault", str(vault), "--meta", "classe=10"]) == 0
    after = path.read_text(encoding="utf-8")
    meta = yaml.safe_load(after.split("---\n")[1])
    assert meta["pdf_pages"] == [3, 4] and meta["pages"] == ["25", "26"]
    assert "budget participatif révisé" in after
    assert meta["aliases"] == ["citoyenneté", "commune"] and meta["priority"] == 8 and meta["niveau"] == "facile"
    assert meta["visibility"] == "public" and meta["updated"].isoformat() != "2020-01-01"
    # the author's lines are there byte for byte, comments included
    for line in ("aliases:  # mes mots", "  - citoyenneté", "  - 'commune'", "priority: 8", "niveau: facile"):
        assert line in before and line in after


def test_dry_run_shows_a_diff_and_writes_nothing(tmp_path, vault, capsys):
    pdf = _book(tmp_path)
    assert main(["import", "pdf", str(pdf), "--vault", str(vault), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "+++ b/60-Livres/civique-10/civique-10-13-le-citoyen-et-la-commune.md" in out
    assert "+section: \"13\"" in out
    assert not (vault / "60-Livres").exists()


def test_two_books_with_the_same_section_numbers_do_not_collide(tmp_path, vault):
    nine = _book(tmp_path, "civique-9.pdf", classe=9)
    ten = _book(tmp_path, "civique-10.pdf", classe=10)
    assert main(["import", "pdf", str(nine), "--vault", str(vault), "--meta", "classe=9"]) == 0
    assert main(["import", "pdf", str(ten), "--vault", str(vault), "--meta", "classe=10"]) == 0
    s9 = _by_section(vault / "60-Livres" / "civique-9")["13"][0]
    s10 = _by_section(vault / "60-Livres" / "civique-10")["13"][0]
    assert s9["slug"] != s10["slug"] and (s9["classe"], s10["classe"]) == (9, 10)


def test_meta_lists_and_refused_keys(tmp_path, vault, capsys):
    pdf = _book(tmp_path)
    assert main(["import", "pdf", str(pdf), "--vault", str(vault), "--meta", "domains=livres,transmission", "--meta", "matiere=instruction civique"]) == 0
    meta = _by_section(vault / "60-Livres" / "civique-10")["13"][0]
    assert meta["domains"] == ["livres", "transmission"] and meta["matiere"] == "instruction civique"
    assert main(["import", "pdf", str(pdf), "--vault", str(vault), "--meta", "pages=3"]) == 2
    assert "the import writes `pages` itself" in capsys.readouterr().err


# -- bad input: one clear line naming the file, never a traceback ---------------------------------------


def _fails(capsys, args: list[str], *needles: str) -> None:
    capsys.readouterr()
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err
    for needle in needles:
        assert needle in err, err


def test_not_a_pdf(tmp_path, vault, capsys):
    fake = tmp_path / "notes.pdf"
    fake.write_text("bonjour", encoding="utf-8")
    _fails(capsys, ["import", "pdf", str(fake), "--vault", str(vault)], "notes.pdf", "not a PDF")


def test_missing_file(tmp_path, vault, capsys):
    _fails(capsys, ["import", "pdf", str(tmp_path / "absent.pdf"), "--vault", str(vault)], "absent.pdf", "no such file")


def test_broken_pdf(tmp_path, vault, capsys):
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >> garbage\n")
    _fails(capsys, ["import", "pdf", str(broken), "--vault", str(vault)], "broken.pdf", "broken or unreadable PDF")


def test_truncated_pdf(tmp_path, vault, capsys):
    pdf = _book(tmp_path)
    data = pdf.read_bytes()
    cut = tmp_path / "cut.pdf"
    cut.write_bytes(data[: len(data) // 3])
    capsys.readouterr()
    status = main(["import", "pdf", str(cut), "--vault", str(vault)])
    err = capsys.readouterr().err
    assert status in (0, 1) and "Traceback" not in err and "internal error" not in err
    if status == 1:
        assert "cut.pdf" in err


def test_encrypted_pdf(tmp_path, vault, capsys):
    spec = civics_book(10)
    spec.encrypt = "secret"
    pdf = write_book(tmp_path / "locked.pdf", spec)
    _fails(capsys, ["import", "pdf", str(pdf), "--vault", str(vault)], "locked.pdf", "encrypted")


def test_scanned_pages_are_reported_and_a_scanned_book_refused(tmp_path, vault, capsys):
    spec = civics_book(10)
    spec.pages.append([("image", None)])
    pdf = write_book(tmp_path / "mixed.pdf", spec)
    capsys.readouterr()
    assert main(["import", "pdf", str(pdf), "--vault", str(vault)]) == 0
    assert "PDF page 7: no text, only an image" in capsys.readouterr().err
    scan = write_book(tmp_path / "scan.pdf", BookSpec(pages=[[("image", None)], [("image", None)]], outline=False, header=None, folio_offset=None))
    _fails(capsys, ["import", "pdf", str(scan), "--vault", str(vault)], "scan.pdf", "OCR")


def test_a_long_book_is_refused_with_the_limit_named(tmp_path, vault, capsys):
    spec = BookSpec(pages=[[("p", f"Page {i}.")] for i in range(2000)], outline=False, header=None)
    pdf = write_book(tmp_path / "long.pdf", spec)
    _fails(capsys, ["import", "pdf", str(pdf), "--vault", str(vault)], "long.pdf", "2000 pages", "--max-pages")


def test_reading_stops_at_its_time_limit(tmp_path):
    from vaulttools.importers.pdf.reading import PdfImportError

    with pytest.raises(PdfImportError, match=r"more than 0 s"):
        read_pdf(_book(tmp_path), time_limit=0.0)


def test_a_file_that_is_not_the_books_is_never_overwritten(tmp_path, vault, capsys):
    target = vault / "60-Livres" / "civique-10"
    target.mkdir(parents=True)
    mine = target / "civique-10-13-le-citoyen-et-la-commune.md"
    mine.write_text("# à moi\n", encoding="utf-8")
    assert main(["import", "pdf", str(_book(tmp_path)), "--vault", str(vault)]) == 0
    assert mine.read_text(encoding="utf-8") == "# à moi\n"
    assert (target / "civique-10-13-le-citoyen-et-la-commune-2.md").is_file()


# -- text cleaning --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw,clean",
    [
        ("pr´eparer le caract`eres mˆeme", "préparer le caractères même"),
        ("connaˆıtre na¨ıf", "connaître naïf"),
        ("ﬁn de la réﬂexion", "fin de la réflexion"),
        ("l’État", "l'État"),
    ],
)
def test_accents_ligatures_quotes(raw, clean):
    assert clean_text(raw, spacing_accents=True) == clean


def test_a_backtick_is_an_accent_only_in_books_with_separate_accents():
    assert clean_text("`a la ligne", spacing_accents=False) == "`a la ligne"
    assert clean_text("`a la ligne", spacing_accents=True) == "à la ligne"


def test_hyphenation_and_lists_in_blocks():
    def line(text: str, top: float, x: float = 72.0) -> TextLine:
        return TextLine(Line(text, x, top, 10.0, False, ((x, text),)))

    body = render_blocks(
        [line("La démocratie est un régime poli\ufffe", 100), line("tique fondé sur le vote.", 113),
         line("• premier droit", 140), line("• second droit", 153), line("# pas un titre", 180)],
        spacing=False, gap=13.0, left=72.0,
    )
    assert "régime politique fondé" in body
    assert "- premier droit\n\n- second droit" in body
    assert "\\# pas un titre" in body


def test_spacing_accents_from_a_real_pdf(tmp_path):
    text = "Il faut pr´eparer les caract`eres, mˆeme apr`es un point, d´ej`a vu, tr`es ´etrange. " * 3
    spec = BookSpec(pages=[[("chapter", "1 Les accents"), ("p", text)]], outline=True, header=None, folio_offset=None)
    pdf = write_book(tmp_path / "accents.pdf", spec)
    book = build_book(read_pdf(pdf), 2, lambda i, p: f"[p. {p}]")
    assert "préparer les caractères, même après un point, déjà vu, très étrange." in book.sections[0].body


def test_a_running_head_that_repeats_the_title_is_not_the_heading(tmp_path):
    # page 2 starts with a running head naming § 14, then the end of § 13, then § 14's real heading
    spec = BookSpec(
        pages=[
            [("chapter", "Chapitre 1 La cité"), ("h2", "§ 13. Le vote"), ("p", "Le vote est secret. " * 30)],
            [("p", "§ 14. Les partis"), ("p", "Fin du paragraphe treize sur le vote. " * 6), ("h2", "§ 14. Les partis"),
             ("p", "Les partis concourent à l'expression du suffrage. " * 6)],
        ],
        header=None, folio_offset=None,
    )
    book = build_book(read_pdf(write_book(tmp_path / "tete.pdf", spec)), 2, lambda i, p: f"[p. {p}]")
    sections = {s.number: s for s in book.sections}
    assert "Fin du paragraphe treize" in sections["13"].body
    assert "Fin du paragraphe treize" not in sections["14"].body
    assert "Les partis concourent" in sections["14"].body
    assert "§ 14" not in sections["13"].body  # the running head is gone from the text


def test_a_list_ends_at_a_line_not_indented_under_it():
    def line(text: str, top: float, x: float = 72.0) -> TextLine:
        return TextLine(Line(text, x, top, 10.0, False, ((x, text),)))

    body = render_blocks(
        [line("• premier droit", 100), line("suite du premier droit", 113, 86), line("La phrase qui suit la liste.", 126)],
        spacing=False, gap=13.0, left=72.0,
    )
    assert body == "- premier droit suite du premier droit\n\nLa phrase qui suit la liste."
