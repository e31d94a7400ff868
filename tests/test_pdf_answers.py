"""Answers from imported books through the real service (uvicorn on 127.0.0.1, the fake Ollama speaking
Ollama's protocol): passage labels and page markers in the prompt, sources with their pages, the class
remembered across a conversation, and `format=text`."""

from __future__ import annotations

from pathlib import Path

from grasbot.answer.context import passage_label, plain_page_markers
from grasbot.answer.plaintext import markdown_to_text
from tests.pdf_factory import civics_book, write_book
from tests.service_fixtures import *  # noqa: F403
from tests.service_fixtures import fake_ollama, run_server, service_settings  # noqa: F401
from vaulttools.cli import main

FIELDS = "classe:classe|class|niveau+"


def _vault(tmp_path: Path, *extra: str) -> Path:
    vault = tmp_path / "vault"
    vault.mkdir()
    for classe in (9, 10):
        pdf = write_book(tmp_path / f"civique-{classe}.pdf", civics_book(classe))
        args = ["import", "pdf", str(pdf), "--vault", str(vault), "--meta", f"classe={classe}", "--visibility", "public", *extra]
        assert main(args) == 0
    return vault


def test_the_prompt_labels_each_passage_and_sources_carry_pages(tmp_path, fake_ollama):
    vault = _vault(tmp_path, "--copy-pdf")
    with run_server(service_settings(fake_ollama, filter_fields=FIELDS, profile="textbook"), vault) as server:
        c = server.client()
        r = c.get("/ask", params={"q": "donne les réponses aux questions du paragraphe 13 de la classe 10"})
        assert r.status_code == 200, r.text
        body = r.json()
        top = body["sources"][0]
        assert top["slug"].startswith("civique-10-13-")
        assert top["pages"] == ["25", "26"] and top["pdf_pages"] == [2, 3] and top["page_link"] == "civique-10.pdf#page=2"
        assert "filter:section=13" in top["reasons"] and "filter:classe=10" in top["reasons"]
        assert body["filters"]["applied"] == {"section": "13", "classe": "10"}
        prompt = fake_ollama.chat_prompts()[-1]
        assert "[Classe 10 | § 13 | p. 25–26]" in prompt
        assert "[p. 26]" in prompt and "#page=" not in prompt  # page markers as printed pages, not links
        assert "la page imprimée du passage" in prompt  # the textbook profile asks for the page
        # the follow-up names only the section: it stays in class 10
        r = c.get("/ask", params={"q": "et le § 14 ?", "session_id": body["session_id"]})  # the server's id
        assert r.status_code == 200, r.text
        follow = r.json()
        assert follow["sources"][0]["slug"].startswith("civique-10-14-")
        assert follow["filters"]["inherited"] == ["classe"]


def test_format_text_answers_without_markdown_marks(tmp_path, fake_ollama):
    vault = _vault(tmp_path)
    fake_ollama.script(reply="## Réponse\n\nLe **citoyen** vote et paie l'*impôt* [civique-10-13, p. 25].\n\n- un\n- deux")
    with run_server(service_settings(fake_ollama, filter_fields=FIELDS), vault) as server:
        c = server.client()
        plain = c.get("/ask", params={"q": "§ 13 classe 10", "format": "text"}).json()["response"]
        assert "**" not in plain and "##" not in plain and "*impôt*" not in plain
        assert "Le citoyen vote et paie l'impôt [civique-10-13, p. 25]." in plain
        marked = c.get("/ask", params={"q": "§ 13 classe 10"}).json()["response"]
        assert "**citoyen**" in marked  # the default stays Markdown
        assert c.get("/ask", params={"q": "§ 13", "format": "html"}).status_code == 422


def test_passage_label_is_generic():
    for meta, label in [
        ({"classe": 10, "section": "13", "pages": ["27", "28"]}, "[Classe 10 | § 13 | p. 27–28]"),
        ({"section": "3.1", "pages": ["4"]}, "[§ 3.1 | p. 4]"),
        ({"title": "Push swap"}, ""),
    ]:
        note = type("N", (), {"meta": meta})()  # only `meta` is read
        assert passage_label(note, ("classe",)) == label  # type: ignore[arg-type]


def test_markers_and_plain_text_helpers():
    assert plain_page_markers("a [[livre.pdf#page=46|p. 28]] b") == "a [p. 28] b"
    assert markdown_to_text("**gras** et `code` et [lien](http://x) et [[note|vue]]") == "gras et code et lien et vue"
