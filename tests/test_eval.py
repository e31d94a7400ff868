"""Question sets and retrieval metrics (`vaulttools eval`)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from vaulttools.cli import main
from vaulttools.evaluation import QuestionSetError, evaluate, load_questions

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "retrieval"

HAND_SET = """
- id: q1
  q: first
  expect: [a]
  kind: direct
- id: q2
  q: second
  expect: [b, x]
  kind: direct
- id: q3
  q: third
  expect: [z]
  kind: paraphrase
- id: off1
  q: fourth
  grounded: false
  kind: offtopic
- id: off2
  q: fifth
  grounded: false
  kind: offtopic
"""


@dataclass
class _Hit:
    id: str


@dataclass
class _Result:
    hits: list[_Hit]
    grounded: bool
    stats: dict = field(default_factory=dict)


SCRIPT = {
    "first": (["a", "b", "c"], True),
    "second": (["a", "b", "c"], True),
    "third": (["a", "b", "c", "d", "e", "z"], False),
    "fourth": (["a"], False),
    "fifth": (["b"], True),
}


def scripted(question: str, top_k: int) -> _Result:
    ids, grounded = SCRIPT[question]
    return _Result([_Hit(i) for i in ids[:top_k]], grounded)


def test_metrics_on_a_hand_made_set(tmp_path: Path) -> None:
    path = tmp_path / "set.yaml"
    path.write_text(HAND_SET, encoding="utf-8")
    report = evaluate(load_questions(path), scripted)
    s = report.summary()
    # q1: rank 1; q2: first expected (b) at rank 2, x absent; q3: z at rank 6 (outside the top 5, but
    # MRR looks at the first 10 results).
    assert s["with_expect"] == 3
    assert s["hit@1"] == round(1 / 3, 4)
    assert s["hit@5"] == round(2 / 3, 4)
    assert s["recall@5"] == round((1 + 0.5 + 0) / 3, 4)
    assert s["mrr"] == round((1 + 1 / 2 + 1 / 6) / 3, 4)
    # off1 answered ungrounded (rejected), off2 grounded (not rejected); q3 on-topic but ungrounded.
    assert s["offtopic_rejected"] == 0.5
    assert s["ontopic_grounded"] == round(2 / 3, 4)
    assert s["by_kind"]["direct"]["hit@1"] == 0.5
    assert s["by_kind"]["paraphrase"]["mrr"] == round(1 / 6, 4)
    assert s["by_kind"]["offtopic"]["offtopic_rejected"] == 0.5
    assert s["ms_per_query"] is not None and s["ms_per_query"] >= 0
    items = {i["id"]: i for i in report.as_json()["items"]}
    assert items["q2"] == {
        "id": "q2",
        "q": "second",
        "kind": "direct",
        "expect": ["b", "x"],
        "expect_grounded": True,
        "results": ["a", "b", "c"],
        "grounded": True,
        "hit1": False,
        "hit5": True,
    }
    assert items["off1"]["hit1"] is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("- q: [unclosed\n", "not valid YAML"),
        ("- id: a\n  q: x\n  expect: [rust\n- id: b\n  q: y\n", "started at line 3, column 11"),
        ("q: not a list\n", "expected a list"),
        ("- id: a\n  q: ok\n- just a string\n", "item 2"),
        ("- id: a\n  q: ''\n", "item 1 (id a): `q` must be a non-empty string"),
        ("- id: a\n  q: x\n  expect: {a: 1}\n", "`expect` must be a list"),
        ("- id: a\n  q: x\n  grounded: maybe\n", "`grounded` must be true or false"),
        ("- id: a\n  q: x\n- id: a\n  q: y\n", "item 2 (id a): duplicate id"),
        ("- id: a\n  q: x\n  expect: [n]\n  grounded: false\n", "cannot expect notes"),
        ("[]\n", "no questions"),
        ("- id: a\n  q: x\n  expected: [n]\n", "item 1 (id a): unknown key `expected` (did you mean `expect`?)"),
        ("- id: a\n  q: x\n  groundd: false\n", "unknown key `groundd` (did you mean `grounded`?)"),
    ],
)
def test_bad_question_files_name_the_file_and_item(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(QuestionSetError) as info:
        load_questions(path)
    assert str(path) in str(info.value)
    assert message in str(info.value)


def test_mapping_with_questions_key_and_default_ids(tmp_path: Path) -> None:
    path = tmp_path / "set.yaml"
    path.write_text("questions:\n  - q: un\n    expect: a\n  - q: deux\n", encoding="utf-8")
    questions = load_questions(path)
    assert [q.id for q in questions] == ["q1", "q2"]
    assert questions[0].expect == ("a",) and questions[0].grounded
    assert questions[1].expect == () and not questions[1].grounded


@pytest.fixture
def basic(tmp_path: Path) -> Path:
    dest = tmp_path / "basic"
    shutil.copytree(FIXTURES / "basic", dest)
    return dest


def test_eval_command_json(basic: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "set.yaml"
    path.write_text(
        "- id: p\n  q: C'est quoi push_swap ?\n  expect: [push-swap]\n"
        "- id: m\n  q: Parle-moi de minishell\n  expect: [minishell]\n"
        "- id: o\n  q: Quelle est la capitale de l'Australie ?\n  grounded: false\n",
        encoding="utf-8",
    )
    assert main(["eval", "--vault", str(basic), "--json", str(path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["summary"]["hit@1"] == 1.0
    assert data["summary"]["offtopic_rejected"] == 1.0
    assert data["summary"]["mrr"] == 1.0
    assert isinstance(data["summary"]["ms_per_query"], float)
    first = data["items"][0]
    assert {"id", "q", "expect", "results", "grounded", "hit1", "hit5"} <= set(first)
    assert first["results"][0] == "push-swap" and first["hit1"] is True


def test_eval_command_table_and_unknown_expectation(basic: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "set.yaml"
    path.write_text("- id: p\n  q: push swap\n  expect: [push-swapp]\n", encoding="utf-8")
    assert main(["eval", "--vault", str(basic), str(path)]) == 0
    captured = capsys.readouterr()
    assert "push-swapp" in captured.err and "item p" in captured.err
    assert "hit@1" in captured.out and "0.000" in captured.out


def test_eval_command_bad_file_exits_2(basic: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("- id: a\n  q: 3\n", encoding="utf-8")
    assert main(["eval", "--vault", str(basic), str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "item 1 (id a)" in err
    assert main(["eval", "--vault", str(basic), str(tmp_path / "missing.yaml")]) == 2
    assert "not found" in capsys.readouterr().err
