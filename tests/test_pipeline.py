"""The one retrieval pipeline (grasbot/answer/pipeline.py): the API, the TUI's preview, `vaulttools ask` and
`vaulttools eval` retrieve the same notes in the same order, because they all call it.

The API runs in a real uvicorn server on 127.0.0.1 with the fake Ollama (tests/fake_ollama.py, speaking
Ollama's protocol); the TUI's preview is its backend over the live vault; ask and eval are the real commands.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from grasbot import RetrievalLimits, RetrievalPipeline, SearchIndex, Turn, Vault
from tests.service_fixtures import *  # noqa: F403
from tests.service_fixtures import run_server, service_settings, write_note
from vaulttools.cli import main as vaulttools
from vaulttools.tui.backend import Backend

TOP_K = 10  # what `vaulttools eval` keeps of each ranking

QUESTIONS = [
    "Qui est Aurèle Quintard ?",
    "Parle-moi de l'optimiseur de tournées.",
    "Quelles sont ses compétences en Rust ?",
    "Parle-moi de Kubernetes",
    "What projects in Python?",  # English: no credible source in this vault
    "rust",
    "Quelle est la recette de la tarte tatin ?",  # off-topic: nothing is grounded
    "a-t-il travaillé avec des bases de données ?",
    "Comment le contacter ?",
]


def _ask_ids(vault: Path, question: str, capsys: pytest.CaptureFixture[str]) -> tuple[list[str], bool]:
    assert vaulttools(["ask", "--vault", str(vault), "--top-k", str(TOP_K), "--json", question]) == 0
    payload = json.loads(capsys.readouterr().out)
    return [r["slug"] for r in payload["results"]], payload["grounded"]


def _eval_ids(vault: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, tuple[list[str], bool]]:
    items = [{"id": f"q{i}", "q": q, "expect": [], "grounded": False} for i, q in enumerate(QUESTIONS)]
    questions = tmp_path / "questions.yaml"
    questions.write_text(yaml.safe_dump(items, allow_unicode=True), encoding="utf-8")
    assert vaulttools(["eval", "--vault", str(vault), "--json", str(questions)]) == 0
    payload = json.loads(capsys.readouterr().out)
    return {item["q"]: (item["results"], item["grounded"]) for item in payload["items"]}


def test_the_four_callers_retrieve_the_same_ranked_notes(
    service_vault: Path, fake_ollama, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vault = service_vault
    # a note whose frontmatter cannot be read and says it is private: the index keeps it out, and so does
    # every caller; a public note that links to it
    write_note(vault, "50-Technique/brouillon.md", "title: Brouillon rust\nvisibility: private\naliases: [x", "Rust.")

    api: dict[str, tuple[list[str], bool]] = {}
    with run_server(service_settings(fake_ollama, search_top_k=TOP_K), vault) as server:
        client = server.client()
        for question in QUESTIONS:
            body = client.get("/ask", params={"q": question}).json()
            api[question] = ([s["slug"] for s in body["sources"]], body["grounded"])

    backend = Backend(vault, top_k=TOP_K)
    backend.load()
    backend.build_index()
    backend.start_live()
    try:
        tui = {}
        for question in QUESTIONS:
            preview = backend.preview(question)
            tui[question] = ([row.id for row in preview.rows], preview.grounded)
    finally:
        backend.stop()

    ask = {question: _ask_ids(vault, question, capsys) for question in QUESTIONS}
    evaluated = _eval_ids(vault, tmp_path, capsys)

    grounded = [q for q in QUESTIONS if ask[q][1]]
    assert len(grounded) >= 6 and not ask[QUESTIONS[6]][1]  # the set probes both sides
    for question in QUESTIONS:
        ids, is_grounded = ask[question]
        assert "brouillon" not in ids
        assert tui[question] == evaluated[question] == (ids, is_grounded), question
        # the API serves its sources only when grounded, and then exactly these, in this order
        assert api[question] == ((ids, True) if is_grounded else ([], False)), question


def test_a_follow_up_is_decided_by_the_pipeline_the_api_runs(service_vault: Path, fake_ollama) -> None:
    """"Et en quel langage ?" names nothing: the pipeline searches again with the previous question. The
    API's sources for the second question of a session are the pipeline's, given that turn."""
    first, second = "Parle-moi du projet de télémétrie solaire", "avec qui ?"
    with run_server(service_settings(fake_ollama), service_vault) as server:
        client = server.client()
        session = client.get("/ask", params={"q": first}).raise_for_status().json()["session_id"]  # issued by the server
        body = client.get("/ask", params={"q": second, "session_id": session}).json()
    pipeline = RetrievalPipeline.of_vault(Vault.load(service_vault))
    alone = pipeline.retrieve(second)
    followed = pipeline.retrieve(second, [Turn(first, "(the answer)", 0.0)])  # only the question counts
    assert not alone.grounded and not alone.followup
    assert followed.followup and followed.grounded and followed.query == f"{first} {second}"
    assert [s["slug"] for s in body["sources"]] == followed.ids


def test_the_retrieval_holds_what_later_steps_need(service_vault: Path) -> None:
    vault = Vault.load(service_vault)
    index = SearchIndex.build(vault)
    pipeline = RetrievalPipeline.of_vault(vault, index, RetrievalLimits(top_k=3, keep_ratio=0.99, max_chars=200))
    retrieval = pipeline.retrieve("Quelles sont ses compétences en Rust ?")
    assert retrieval.ids == [hit.id for hit in index.search("Quelles sont ses compétences en Rust ?", 3).hits]
    assert [c.hit for c in retrieval.context] == list(retrieval.hits)
    assert not retrieval.context[0].truncated  # the first note always whole
    assert all(len(c.text) <= 200 for c in retrieval.context[1:] if c.truncated)
    noted = retrieval.with_extra("verification", {"checked": True})
    assert noted.extras == {"verification": {"checked": True}} and retrieval.extras == {}
    with pytest.raises(TypeError):
        noted.extras["other"] = 1  # type: ignore[index]

    class OnlyProjects:
        name = "only-projects"

        def __call__(self, r):
            import dataclasses

            hits = [h for h in r.result.hits if h.note.type == "projet"]
            return dataclasses.replace(r, result=dataclasses.replace(r.result, hits=hits))

    narrowed = RetrievalPipeline(index, stages=[OnlyProjects()]).retrieve("Quelles sont ses compétences en Rust ?")
    assert narrowed.hits and all(h.note.type == "projet" for h in narrowed.hits)
    assert len(narrowed.context) == len(narrowed.hits)
    with pytest.raises(ValueError):
        RetrievalLimits(top_k=0)
