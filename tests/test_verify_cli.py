"""`vaulttools verify` and the answer items of `vaulttools eval`, run as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.service_fixtures import REPO, SAMPLE_VAULT
from vaulttools.cli import main
from vaulttools.evaluation import QuestionSetError, load_answer_items

pytestmark = pytest.mark.skipif(not SAMPLE_VAULT.is_dir(), reason="the bundled vault/ is missing")

ANSWER = "Aurèle a appris Rust en 2020 [rust]. Il a appris Rust en 2021 [rust]. Bonne journée !"


def run(*args: str, stdin: str | None = None, monkeypatch=None) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "vaulttools.cli", *args], input=stdin, capture_output=True, text=True, cwd=REPO, timeout=120
    )
    return proc.returncode, proc.stdout, proc.stderr


def test_verify_json(capsys) -> None:
    code = main(["verify", "--vault", str(SAMPLE_VAULT), "--sources", "rust,collecte-telemetrie-solaire", "--json", "--answer", ANSWER])
    data = json.loads(capsys.readouterr().out)
    assert code == 1  # partial: exit 1, as a check that found something
    assert data["status"] == "partial"
    assert [s["label"] for s in data["sentences"]] == ["supported", "unsupported", "no-claim"]
    second = data["sentences"][1]
    assert ANSWER[second["start"]:second["end"]] == second["text"] and second["cited"] == ["rust"]
    assert second["evidence"]["id"] == "rust" and "2021" in second["reason"]
    assert data["summary"]["supported"] == 1 and set(data["summary"]) == {"supported", "unsupported", "wrong-citation", "abstention", "no-claim"}


def test_verify_reads_stdin_and_prints_a_table() -> None:
    code, out, err = run("verify", "--vault", str(SAMPLE_VAULT), "--sources", "rust", "-", stdin="Aurèle a appris Rust en 2020 [rust].\n")
    assert code == 0, err
    assert "supported" in out and "[rust]" in out and "status: verified" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sources", "rustt", "--answer", "x"], "no note `rustt`"),
        (["--sources", "rustt", "--answer", "x"], "did you mean `rust`"),
        (["--sources", " , ", "--answer", "x"], "--sources is empty"),
        (["--sources", "rust", "--answer", "  "], "the answer is empty"),
    ],
)
def test_verify_errors_are_one_line(args: list[str], message: str, capsys) -> None:
    assert main(["verify", "--vault", str(SAMPLE_VAULT), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_verify_refuses_a_private_note(tmp_path: Path, capsys) -> None:
    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "secret.md").write_text("---\ntitle: Secret\nslug: secret\nvisibility: private\n---\nSon salaire est de 50 000 €.\n", encoding="utf-8")
    (vault / "pub.md").write_text("---\ntitle: Pub\nslug: pub\nvisibility: public\n---\nIl code en Rust.\n", encoding="utf-8")
    assert main(["verify", "--vault", str(vault), "--sources", "secret", "--answer", "Son salaire est de 50 000 €."]) == 2
    err = capsys.readouterr().err
    assert "not a public note" in err and "50 000" not in err


# -- vaulttools eval on answer items ------------------------------------------------------------------
ITEMS = """
- id: a1
  question: Rust ?
  context: [rust]
  answer: "Aurèle a appris Rust en 2020 [rust]. Il a appris Rust en 2021 [rust]. Il a appris Rust en 2020 [python]."
  sentences:
    - {text: "Aurèle a appris Rust en 2020 [rust].", label: supported}
    - {text: "Il a appris Rust en 2021 [rust].", label: unsupported}
    - {text: "Il a appris Rust en 2020 [python].", label: wrong-citation}
- id: a2
  question: Salaire ?
  context: [recherche-poste]
  answer: "Je ne trouve pas cette information dans les notes. Il demande 60 000 € [recherche-poste]."
  sentences:
    - {text: "Je ne trouve pas cette information dans les notes.", label: abstention}
    - {text: "Il demande 60 000 € [recherche-poste].", label: supported}
"""


def test_eval_reports_precision_and_recall_per_label(tmp_path: Path, capsys) -> None:
    path = tmp_path / "answers.yaml"
    path.write_text(ITEMS, encoding="utf-8")
    assert main(["eval", "--vault", str(SAMPLE_VAULT), "--json", str(path)]) == 0
    data = json.loads(capsys.readouterr().out)
    summary = data["summary"]
    assert summary["sentences"] == 5
    # the last gold label is wrong on purpose: the verifier says unsupported, so supported recall is 1/2
    assert summary["labels"]["supported"] == {"gold": 2, "predicted": 1, "precision": 1.0, "recall": 0.5}
    assert summary["labels"]["unsupported"]["predicted"] == 2 and summary["labels"]["unsupported"]["recall"] == 1.0
    assert summary["wrong_citation_named"] == 1.0 and summary["abstention_recall"] == 1.0
    assert summary["flagged_recall"] == 1.0 and summary["supported_flagged"] == 0.5
    assert [i["predicted"] for i in data["items"]] == ["supported", "unsupported", "wrong-citation", "abstention", "unsupported"]
    assert main(["eval", "--vault", str(SAMPLE_VAULT), str(path)]) == 0
    out = capsys.readouterr().out
    assert "wrong-citation" in out and "misses" in out and "60 000" in out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- {id: x, answer: 'a.', context: [rust], sentences: [{text: 'b.', label: supported}]}", "not in the answer"),
        ("- {id: x, answer: 'a.', context: [rust], sentences: [{text: 'a.', label: true-ish}]}", "`label` must be one of"),
        ("- {id: x, answer: 'a.', contxt: [rust], sentences: [{text: 'a.', label: supported}]}", "unknown key `contxt`"),
        ("- {id: x, answer: 'a.', context: [rust], sentences: []}", "`sentences` must be"),
    ],
)
def test_bad_answer_items_name_the_file_and_the_item(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(QuestionSetError, match="item 1 \\(id x\\)") as error:
        load_answer_items(path)
    assert message in str(error.value) and str(path) in str(error.value)


def test_eval_unknown_context_note_is_an_error(tmp_path: Path, capsys) -> None:
    path = tmp_path / "answers.yaml"
    path.write_text("- {id: x, answer: 'a.', context: [nope], sentences: [{text: 'a.', label: no-claim}]}", encoding="utf-8")
    assert main(["eval", "--vault", str(SAMPLE_VAULT), str(path)]) == 2
    assert "`nope`, which is no public note" in capsys.readouterr().err


def test_the_dev_set_loads_and_has_every_label() -> None:
    items = load_answer_items(REPO / "benchmarks" / "verify-dev.yaml")
    labels = [s.label for item in items for s in item.sentences]
    assert len(labels) >= 150
    assert {labels.count(label) > 0 for label in ("supported", "unsupported", "wrong-citation", "abstention", "no-claim")} == {True}


def test_answer_items_may_give_their_passages_inline(tmp_path: Path, capsys) -> None:
    path = tmp_path / "inline.yaml"
    path.write_text(
        "- id: i1\n  question: q\n  context: [{id: memo, title: Mémo, text: 'Le serveur a 64 Go de mémoire.'}, rust]\n"
        "  answer: 'Le serveur a 64 Go de mémoire [memo]. Le serveur a 32 Go de mémoire [memo].'\n"
        "  sentences:\n    - {text: 'Le serveur a 64 Go de mémoire [memo].', label: supported}\n"
        "    - {text: 'Le serveur a 32 Go de mémoire [memo].', label: unsupported}\n",
        encoding="utf-8",
    )
    assert main(["eval", "--vault", str(SAMPLE_VAULT), "--json", str(path)]) == 0
    assert [i["predicted"] for i in json.loads(capsys.readouterr().out)["items"]] == ["supported", "unsupported"]


def test_answer_items_may_name_notes_by_path(tmp_path: Path, capsys) -> None:
    path = tmp_path / "paths.yaml"
    path.write_text(
        "- id: p1\n  context: [20-Competences/rust.md]\n  answer: 'Aurèle a appris Rust en 2020 [rust].'\n"
        "  sentences: [{text: 'Aurèle a appris Rust en 2020 [rust].', label: supported}]\n",
        encoding="utf-8",
    )
    assert main(["eval", "--vault", str(SAMPLE_VAULT), "--json", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["items"][0]["predicted"] == "supported"
