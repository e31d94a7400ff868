"""Questions with filters (grasbot/search/filters.py) over two imported civics books, classes 9 and 10:
§ / chapter / page / class filters, relaxation with reasons, the conversation keeping the class, and
`vaulttools ask --json` showing them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grasbot.search.filters import Filter, FilterConfig, Filters, filtered_search, filters_from_history, parse_filters, search_with_filters
from grasbot.search.index import SearchIndex
from grasbot.vault import Vault
from tests.pdf_factory import civics_book, write_book
from vaulttools.cli import main

CONFIG = FilterConfig.parse({"classe": {"words": ["classe", "class", "niveau"], "ordinal": True}})


@pytest.fixture(scope="module")
def books(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("books")
    vault = tmp / "vault"
    vault.mkdir()
    (tmp / "TAXONOMIE.md").write_text(
        "# Taxonomie\n\n## Classe (`classe:`)\n\nLibre.\n\n```yaml vaulttools\nfilterable:\n"
        "  classe: {words: [classe, class, niveau], ordinal: true}\n```\n",
        encoding="utf-8",
    )
    for classe in (9, 10):
        pdf = write_book(tmp / f"civique-{classe}.pdf", civics_book(classe))
        assert main(["import", "pdf", str(pdf), "--vault", str(vault), "--meta", f"classe={classe}", "--visibility", "public"]) == 0
    return vault


@pytest.fixture(scope="module")
def index(books) -> SearchIndex:
    return SearchIndex.build(Vault.load(books))


def _top(found) -> dict:
    meta = found.result.hits[0].note.meta
    return {"classe": meta.get("classe"), "section": meta.get("section"), "type": meta.get("type")}


@pytest.mark.parametrize(
    "question,expected",
    [
        ("donne les réponses aux questions du paragraphe 13 de la classe 10", {"section": "13", "classe": "10"}),
        ("§ 14 classe 9", {"section": "14", "classe": "9"}),
        ("section 3.1 du chapitre 3", {"section": "3.1", "chapter": "3"}),
        ("que dit la page 28 du manuel de 9e ?", {"page": "28", "classe": "9"}),
        ("p. 27, niveau 10", {"page": "27", "classe": "10"}),
        ("Quelles sont ses compétences en Rust ?", {}),
        ("les classes de document", {}),  # « classes » followed by a word that no note has: no filter
    ],
)
def test_filters_read_from_the_question(question, expected, index):
    from grasbot.search.filters import known_values

    assert parse_filters(question, CONFIG, known_values(index.notes(), CONFIG)).as_dict() == expected


def test_paragraph_of_a_class_retrieves_that_section_of_that_book(index):
    found = search_with_filters(index, "donne les réponses aux questions du paragraphe 13 de la classe 10", 5, CONFIG)
    assert found is not None and _top(found) == {"classe": 10, "section": "13", "type": "section"}
    assert all(h.note.meta["classe"] == 10 and h.note.meta["section"] == "13" for h in found.result.hits)
    assert "filter:section=13" in found.result.hits[0].reasons and "filter:classe=10" in found.result.hits[0].reasons
    assert found.result.grounded


def test_text_of_the_continuation_page_is_found_in_its_section(index):
    # « quorum citoyen » is printed only on the page after § 13's heading (PDF page 3, no heading there)
    found = search_with_filters(index, "classe 9 : qu'est-ce que le quorum citoyen ?", 5, CONFIG)
    assert found is not None and _top(found) == {"classe": 9, "section": "13", "type": "section"}
    plain = index.search("quorum citoyen budget participatif", top_k=2)
    assert {h.note.meta.get("section") for h in plain.hits} == {"13"}


def test_nothing_matches_so_the_section_is_relaxed_first_and_the_class_kept(index):
    found = search_with_filters(index, "que dit le § 99 de la classe 10 sur les élections ?", 5, CONFIG)
    assert found is not None
    assert [f.name for f in found.relaxed] == ["section"] and found.as_dict()["applied"] == {"classe": "10"}
    assert found.result.hits and all(h.note.meta["classe"] == 10 for h in found.result.hits)
    assert "filter-relaxed:section" in found.result.hits[0].reasons and "filter:classe=10" in found.result.hits[0].reasons
    # a chapter no book has: relaxed before the class
    found = search_with_filters(index, "chapitre 7 de la classe 9", 5, CONFIG)
    assert found is not None and [f.name for f in found.relaxed] == ["chapter"]
    assert all(h.note.meta["classe"] == 9 for h in found.result.hits)
    # and the class goes last (a class no book has is no filter at all when read from a question)
    wanted = Filters((Filter("field", "classe", "12"), Filter("section", "section", "99"), Filter("page", "page", "999")), "élections")
    found = filtered_search(index, wanted, 5)
    assert [f.name for f in found.relaxed] == ["page", "section", "classe"] and found.result.hits


def test_the_conversation_keeps_the_class(index):
    history = ["donne les réponses aux questions du paragraphe 13 de la classe 10"]
    kept = filters_from_history(history, CONFIG)
    assert kept is not None and kept.as_dict() == {"classe": "10"}
    found = search_with_filters(index, "et le § 14 ?", 5, CONFIG, history=history)
    assert found is not None and _top(found) == {"classe": 10, "section": "14", "type": "section"}
    assert found.as_dict()["inherited"] == ["classe"]
    # a new class in the follow-up replaces the remembered one
    found = search_with_filters(index, "et le § 14 de la classe 9 ?", 5, CONFIG, history=history)
    assert found is not None and _top(found)["classe"] == 9


def test_no_filter_means_the_plain_search(index):
    assert search_with_filters(index, "Comment voter ?", 5, CONFIG) is None


def test_private_notes_are_never_returned_by_a_filter(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    pdf = write_book(tmp_path / "civique-10.pdf", civics_book(10))
    assert main(["import", "pdf", str(pdf), "--vault", str(vault), "--meta", "classe=10"]) == 0  # private
    index = SearchIndex.build(Vault.load(vault))
    found = search_with_filters(index, "§ 13 classe 10", 5, CONFIG)
    assert found is None or not found.result.hits


def test_ask_json_shows_the_filters(books, capsys):
    capsys.readouterr()
    assert main(["ask", "--vault", str(books), "--json", "paragraphe 13 de la classe 10"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["filters"]["applied"] == {"section": "13", "classe": "10"}
    assert data["filters"]["reasons"] == ["filter:section=13", "filter:classe=10"]
    top = data["results"][0]
    assert top["slug"].startswith("civique-10-13-") and top["pages"] == ["25", "26"] and top["pdf_pages"] == [2, 3]
    assert main(["ask", "--vault", str(books), "--json", "Comment voter ?"]) == 0
    assert json.loads(capsys.readouterr().out)["filters"] == {}


def test_tui_preview_shows_the_filters(books):
    """The TUI's question box, driven with Textual's Pilot: a filtered question previews the filtered
    notes and says which filters it applied."""
    import asyncio

    pytest.importorskip("textual")
    from textual.widgets import Input

    from tests.test_tui import app_for, plain, ready, wait_for
    from vaulttools.tui.widgets.preview import QuestionPreview

    async def run() -> None:
        app = app_for(books)
        async with app.run_test(size=(100, 32)) as pilot:
            screen = await ready(pilot)
            await pilot.press("slash")
            screen.query_one("#question", Input).value = "paragraphe 13 de la classe 9"
            preview = screen.query_one(QuestionPreview)
            await wait_for(pilot, lambda: preview.preview is not None and preview.preview.rows, "preview results")
            assert preview.preview.rows[0].id.startswith("civique-9-13-")
            assert preview.preview.filters == ("filter:section=13", "filter:classe=9")
            assert "filters: filter:section=13, filter:classe=9" in plain(screen.query_one("#verdict"))

    asyncio.run(run())
