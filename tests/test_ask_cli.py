"""`vaulttools ask`: the table, the JSON of docs/architecture.md, and the user errors (exit 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from vaulttools.cli import main

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "retrieval"


@pytest.fixture
def basic(tmp_path: Path) -> Path:
    dest = tmp_path / "basic"
    shutil.copytree(FIXTURES / "basic", dest)
    return dest


def test_json_output(basic: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "--vault", str(basic), "--json", "--top-k", "3", "C'est quoi push_swap ?"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["query"] == "C'est quoi push_swap ?"
    assert data["grounded"] is True
    assert 1 <= len(data["results"]) <= 3
    first = data["results"][0]
    assert {"slug", "path", "title", "type", "score", "reasons"} <= set(first)
    assert first["slug"] == "push-swap"
    assert first["path"] == "10-Projets/push-swap.md"
    assert first["title"] == "push_swap" and first["type"] == "projet"
    assert "alias:push swap" in first["reasons"]
    assert first["prompt"] == "whole"
    scores = [r["score"] for r in data["results"]]
    assert scores == sorted(scores, reverse=True)


def test_json_marks_long_secondary_notes_as_cut(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "main.md").write_text("---\ntitle: Piles\naliases: [piles]\n---\nLes piles.\n", encoding="utf-8")
    long_body = "\n\n".join(["Un paragraphe qui mentionne les piles une fois et parle d'autre chose." * 3] * 20)
    (tmp_path / "long.md").write_text(f"---\ntitle: Divers\n---\n{long_body}\n", encoding="utf-8")
    assert main(["ask", "--vault", str(tmp_path), "--json", "piles"]) == 0
    data = json.loads(capsys.readouterr().out)
    prompts = {r["slug"]: r["prompt"] for r in data["results"]}
    assert prompts == {"main": "whole", "long": "cut"}


def test_json_page_fields_are_the_apis_and_stay_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A hand-edited PDF section whose `pages` holds a YAML date: `ask --json` used to pass the raw list on and
    # stop on "date is not JSON serializable"; it now shows the same page fields as the API's sources.
    (tmp_path / "pdf").mkdir()
    (tmp_path / "fractions.md").write_text(
        "---\ntitle: Les fractions\nvisibility: public\nsource: pdf/maths.pdf\n"
        "pages: [2020-01-01, 12]\npdf_pages: [3, 4]\n---\nLes fractions se simplifient par le PGCD.\n",
        encoding="utf-8",
    )
    assert main(["ask", "--vault", str(tmp_path), "--json", "fractions PGCD"]) == 0
    top = json.loads(capsys.readouterr().out)["results"][0]
    assert top["slug"] == "fractions"
    assert top["pages"] == ["12"] and top["pdf_pages"] == [3, 4] and top["page_link"] == "maths.pdf#page=3"


def test_table_output(basic: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "--vault", str(basic), "Parle-moi de minishell"]) == 0
    out = capsys.readouterr().out
    assert "minishell" in out and "grounded: yes" in out and "whole" in out
    assert main(["ask", "--vault", str(basic), "Quelle est la capitale de l'Australie ?"]) == 0
    assert "grounded: no" in capsys.readouterr().out


def test_private_note_never_shown(basic: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "--vault", str(basic), "--json", "--top-k", "50", "salaire prétentions Zanzibar"]) == 0
    out = capsys.readouterr().out
    assert "salaire-prive" not in out and "Zanzibar-confidentiel" not in out


def test_vault_from_environment(basic: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("VAULT_DIR", str(basic))
    assert main(["ask", "--json", "minishell"]) == 0
    assert json.loads(capsys.readouterr().out)["results"][0]["slug"] == "minishell"


@pytest.mark.parametrize("question", ["", "   "])
def test_empty_question_exits_2(basic: Path, question: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "--vault", str(basic), question]) == 2
    assert "empty question" in capsys.readouterr().err


def test_missing_vault_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "--vault", str(tmp_path / "nope"), "push swap"]) == 2
    assert "vault not found" in capsys.readouterr().err


def test_vault_without_public_note_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "secret.md").write_text("---\ntitle: Secret\nvisibility: private\n---\nTexte.\n", encoding="utf-8")
    assert main(["ask", "--vault", str(tmp_path), "secret"]) == 2
    assert "no public note" in capsys.readouterr().err


def test_bad_top_k_exits_2(basic: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "--vault", str(basic), "--top-k", "0", "push swap"]) == 2
    assert "--top-k" in capsys.readouterr().err
