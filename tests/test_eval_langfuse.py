"""`vaulttools eval` with Langfuse datasets, against the collector (the real SDK, real HTTP): a local set
exported, a dataset run recorded with its scores and the same table as a local eval, and items made from the
traces the real server sent and a visitor's thumbs up picked."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fake_ollama import FakeOllama, faithful_reply
from tests.langfuse_collector import LangfuseCollector
from tests.service_fixtures import *  # noqa: F403
from tests.service_fixtures import REPO, SAMPLE_VAULT, langfuse_settings, run_server

SET = """
- id: rust
  q: Que sait-il faire en Rust ?
  expect: [rust]
- id: meteo
  q: Quel temps fera-t-il demain ?
  grounded: false
"""


def vaulttools(*args: str, collector: LangfuseCollector | None, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"), **(extra or {})}
    if collector is not None:
        env |= {"LANGFUSE_PUBLIC_KEY": "pk-lf-eval", "LANGFUSE_SECRET_KEY": "sk-lf-eval", "LANGFUSE_BASE_URL": collector.url}
    return subprocess.run(
        [sys.executable, "-m", "vaulttools.cli", *args], capture_output=True, text=True, timeout=120, cwd=REPO, env=env
    )


@pytest.fixture
def question_set(tmp_path: Path) -> Path:
    path = tmp_path / "set.yaml"
    path.write_text(SET, encoding="utf-8")
    return path


def test_export_a_local_set_then_run_the_dataset(question_set: Path, collector: LangfuseCollector) -> None:
    done = vaulttools("eval", "--export-dataset", "grasbot-eval", str(question_set), collector=collector)
    assert done.returncode == 0, done.stderr
    assert "exported 2 items to the Langfuse dataset grasbot-eval" in done.stdout
    items = list(collector.dataset_items["grasbot-eval"].values())
    assert [i["input"] for i in items] == [{"q": "Que sait-il faire en Rust ?"}, {"q": "Quel temps fera-t-il demain ?"}]
    assert items[0]["expectedOutput"] == {"expect": ["rust"], "grounded": True}
    # exporting again updates the same items (their ids come from the question ids)
    assert vaulttools("eval", "--export-dataset", "grasbot-eval", str(question_set), collector=collector).returncode == 0
    assert len(collector.dataset_items["grasbot-eval"]) == 2

    local = vaulttools("eval", "--vault", str(SAMPLE_VAULT), "--json", str(question_set), collector=None)
    run = vaulttools("eval", "--vault", str(SAMPLE_VAULT), "--langfuse-dataset", "grasbot-eval", "--run-name", "r1", "--json", collector=collector)
    assert run.returncode == 0, run.stderr
    ran, mine = json.loads(run.stdout), json.loads(local.stdout)
    for key in ("hit@1", "hit@5", "mrr", "offtopic_rejected", "ontopic_grounded"):
        assert ran["summary"][key] == mine["summary"][key]  # the same pipeline, the same figures
    assert [i["results"] for i in ran["items"]] == [i["results"] for i in mine["items"]]
    assert "dataset run 'r1' recorded in Langfuse: 2 items scored" in run.stderr

    # the run: one experiment trace per item, linked to the dataset item, with its scores
    assert collector.wait_for(lambda c: len(c.spans_named("experiment-item-run")) == 2 and len(c.scores) >= 3, timeout=15)
    runs = collector.spans_named("experiment-item-run")
    linked = {s.attributes.get("langfuse.experiment.item.id") for s in collector.spans if s.name == "experiment-item-task"}
    assert linked == set(collector.dataset_items["grasbot-eval"])
    by_trace = {s.trace_id: s for s in runs}
    scores = [(s["name"], s["value"]) for s in collector.scores if s.get("traceId") in by_trace]
    assert sorted(scores) == [("grounded", 1.0), ("grounded", 1.0), ("hit@5", 1.0)]

    table = vaulttools("eval", "--vault", str(SAMPLE_VAULT), "--langfuse-dataset", "grasbot-eval", collector=collector)
    assert "Langfuse dataset grasbot-eval" in table.stdout and "hit@1" in table.stdout and "off-topic" in table.stdout


def test_a_retrieval_run_hides_the_services_private_folders(tmp_path: Path, question_set: Path, collector: LangfuseCollector) -> None:
    # What a dataset run records leaves the machine: the service's GRASBOT_PRIVATE_FOLDERS hide the same notes
    # in it as for a visitor, with or without --answers (without, the run used to retrieve and record them).
    vault = tmp_path / "vault"
    shutil.copytree(SAMPLE_VAULT, vault, ignore=shutil.ignore_patterns(".vaulttools_cache"))
    hidden = sorted(p.stem for p in (vault / "20-Competences").glob("*.md"))
    assert "rust" in hidden
    assert vaulttools("eval", "--export-dataset", "grasbot-eval", str(question_set), collector=collector).returncode == 0
    before = len(collector.received)
    run = vaulttools("eval", "--vault", str(vault), "--langfuse-dataset", "grasbot-eval", "--json", collector=collector,
                     extra={"GRASBOT_PRIVATE_FOLDERS": "20-Competences"})
    assert run.returncode == 0, run.stderr
    retrieved = [r["id"] if isinstance(r, dict) else r for i in json.loads(run.stdout)["items"] for r in i["results"]]
    assert retrieved and not set(retrieved) & set(hidden)
    assert collector.wait_for(lambda c: len(c.spans_named("experiment-item-run")) == 2, timeout=15)
    sent = b"".join(r.raw for r in collector.received[before:])
    # the item's own id and expectation name `rust` (the author's dataset); no retrieved list and no other
    # hidden note may
    recorded = [json.loads(m.group(1)) for m in re.finditer(rb'"results": (\[[^\]]*\])', sent)]
    assert recorded and not [slug for ids in recorded for slug in ids if slug in hidden]
    assert b"20-Competences" not in sent
    assert not [slug for slug in hidden if slug != "rust" and f'"{slug}"'.encode() in sent]


def test_items_from_the_traces_a_visitor_liked(fake_ollama: FakeOllama, collector: LangfuseCollector) -> None:
    fake_ollama.script(reply=faithful_reply)  # `grounded` is the verified answer's: a model that answers from the notes
    with run_server(langfuse_settings(fake_ollama, collector), SAMPLE_VAULT) as server:
        client = server.client()
        liked = client.get("/ask", params={"q": "Que sait-il faire en Rust ?"}).json()
        disliked = client.get("/ask", params={"q": "Parle-moi de push_swap"}).json()
        offtopic = client.get("/ask", params={"q": "Quel temps fera-t-il demain ?"}).json()
        assert client.post("/feedback", json={"trace_id": liked["trace_id"], "value": 1}).status_code == 200
        assert client.post("/feedback", json={"trace_id": disliked["trace_id"], "value": 0}).status_code == 200
    assert collector.wait_for(lambda c: len(c.spans_named("ask")) == 3 and any(s["name"] == "user_feedback" for s in c.scores))
    done = vaulttools("eval", "--export-dataset", "liked", "--from-traces", "--score", "user_feedback=1", collector=collector)
    assert done.returncode == 0, done.stderr
    items = list(collector.dataset_items["liked"].values())
    assert [(i["input"], i["sourceTraceId"]) for i in items] == [({"q": "Que sait-il faire en Rust ?"}, liked["trace_id"])]

    done = vaulttools("eval", "--export-dataset", "ungrounded", "--from-traces", "--tag", "ungrounded", collector=collector)
    assert done.returncode == 0, done.stderr
    asked = {"Que sait-il faire en Rust ?": liked, "Parle-moi de push_swap": disliked, "Quel temps fera-t-il demain ?": offtopic}
    ungrounded = sorted(q for q, body in asked.items() if not body["grounded"])
    assert "Quel temps fera-t-il demain ?" in ungrounded and "Que sait-il faire en Rust ?" not in ungrounded
    assert sorted(i["input"]["q"] for i in collector.dataset_items["ungrounded"].values()) == ungrounded


def test_clear_errors(question_set: Path, collector: LangfuseCollector) -> None:
    done = vaulttools("eval", "--vault", str(SAMPLE_VAULT), "--langfuse-dataset", "x", collector=None)
    assert done.returncode == 2 and "Langfuse is not configured: set LANGFUSE_PUBLIC_KEY" in done.stderr
    done = vaulttools("eval", "--vault", str(SAMPLE_VAULT), "--langfuse-dataset", "absent", collector=collector)
    assert done.returncode == 2 and "--langfuse-dataset absent: Langfuse has no such dataset" in done.stderr
    done = vaulttools("eval", "--export-dataset", "x", "--from-traces", collector=collector)
    assert done.returncode == 2 and "--from-traces needs --score NAME=VALUE or --tag TAG" in done.stderr
    done = vaulttools("eval", "--export-dataset", "x", "--from-traces", "--score", "user_feedback", collector=collector)
    assert done.returncode == 2 and "expected NAME=VALUE" in done.stderr
    collector.add_dataset_item("bad", input={"text": 3})
    done = vaulttools("eval", "--vault", str(SAMPLE_VAULT), "--langfuse-dataset", "bad", collector=collector)
    assert done.returncode == 2 and "`input` must be a question" in done.stderr
    for run in (done,):
        assert "Traceback" not in run.stderr
