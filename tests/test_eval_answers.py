"""`vaulttools eval --answers`: every question answered by the service itself (the real pipeline, the vault's
answering profile, generation through a fake LLM speaking the real Ollama or OpenAI protocol, the answer
verifier), from a local question set and from a Langfuse dataset recorded in the local collector (the real
SDK, real HTTP); an answer with one unsupported sentence gives the faithfulness its labelled sentences say;
an LLM that errs on one item or is down fails those items, says why, and the run goes on (exit 1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from grasbot.answer.profile import PROFILE_FILE, load_profile
from grasbot.answer.verify import FACTUAL
from tests.fake_ollama import FakeOllama, faithful_reply
from tests.fake_openai import FakeOpenAI
from tests.langfuse_collector import LangfuseCollector, Span
from tests.private_markers import PRIVATE_MARKERS, PRIVATE_SLUGS
from tests.service_fixtures import *  # noqa: F403
from tests.service_fixtures import REPO, closed_port

RUST = "Quelles sont ses compétences en Rust ?"
SALARY = "Quelles sont ses prétentions salariales ?"  # only private notes say it: they must stay out
WEATHER = "Quel temps fera-t-il demain ?"
SET = f"""
- id: rust
  q: "{RUST}"
  expect: [rust]
  kind: scripted
- id: salaire
  q: "{SALARY}"
  kind: private-bait
- id: meteo
  q: "{WEATHER}"
  grounded: false
  kind: off-topic
"""

#: The scripted answer to the Rust question, sentence by sentence, labelled by hand against the `rust` note
#: ("Aurèle a appris Rust en 2020, le soir, en réécrivant un petit outil de conversion de fichiers de géocodage").
LABELLED = (
    ("Aurèle a appris Rust en 2020 en réécrivant un outil de conversion de fichiers de géocodage [rust].", "supported"),
    ("Il a appris Rust en 2019 à Berlin [rust].", "unsupported"),  # neither the year nor the city is in the notes
)
SCRIPTED = " ".join(text for text, _ in LABELLED)
#: The share of the factual sentences supported, from the labels (what the service must compute).
EXPECTED_FAITHFULNESS = sum(1 for _, label in LABELLED if label == "supported") / sum(1 for _, label in LABELLED if label in FACTUAL)


def question_of(body: dict[str, Any]) -> str:
    """The visitor's question, at the end of the last user message of a chat request."""
    user = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
    return next((q for q in (RUST, SALARY, WEATHER) if q in user), "")


def reply(body: dict[str, Any]) -> str:
    """The scripted answer to the Rust question; a faithful model's answer to the others."""
    return SCRIPTED if question_of(body) == RUST else faithful_reply(body)


def vaulttools(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`vaulttools` as a user runs it, with `env` over an environment without the service's variables."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("LANGFUSE_", "GRASBOT_", "LLM_", "OLLAMA_"))}
    return subprocess.run(
        [sys.executable, "-m", "vaulttools.cli", *args], capture_output=True, text=True, timeout=120, cwd=cwd,
        env=base | {"COLUMNS": "200"} | env,
    )  # fmt: skip


def ollama_env(fake: FakeOllama) -> dict[str, str]:
    return {"OLLAMA_URL": fake.url, "LLM_TIMEOUT": "10", "LLM_CONNECT_TIMEOUT": "1"}


def langfuse_env(collector: LangfuseCollector) -> dict[str, str]:
    return {"LANGFUSE_PUBLIC_KEY": "pk-lf-answers", "LANGFUSE_SECRET_KEY": "sk-lf-answers", "LANGFUSE_BASE_URL": collector.url}


@pytest.fixture
def question_set(tmp_path: Path) -> Path:
    path = tmp_path / "set.yaml"
    path.write_text(SET, encoding="utf-8")
    return path


@pytest.fixture
def vault(service_vault: Path) -> Path:
    """The sample vault (public and private notes) with an answering profile of its own."""
    (service_vault / PROFILE_FILE).parent.mkdir(parents=True, exist_ok=True)
    (service_vault / PROFILE_FILE).write_text('name = "eval-book"\nextends = "textbook"\n', encoding="utf-8")
    return service_vault


def by_id(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["id"]: item for item in run["items"]}


def assert_nothing_private(*texts: str) -> None:
    for text in texts:
        for secret in (*PRIVATE_MARKERS, *PRIVATE_SLUGS):
            assert secret not in text, secret


def test_a_local_set_answered_through_ollama(vault: Path, question_set: Path, fake_ollama: FakeOllama, tmp_path: Path) -> None:
    fake_ollama.script(reply=reply)
    done = vaulttools("eval", "--vault", str(vault), "--answers", "--json", str(question_set), env=ollama_env(fake_ollama), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    items = by_id(run)

    rust = items["rust"]["answer"]
    assert rust["response"] == SCRIPTED
    assert rust["faithfulness"] == pytest.approx(EXPECTED_FAITHFULNESS) and EXPECTED_FAITHFULNESS == 0.5
    assert rust["status"] == "partial" and rust["grounded"] is True and "rust" in rust["sources"]
    assert items["meteo"]["answer"]["status"] == "abstained" and items["meteo"]["answer"]["grounded"] is False
    assert items["meteo"]["answer"]["faithfulness"] is None  # an abstention states no fact
    summary = run["summary"]["answers"]
    assert summary["statuses"]["failed"] == 0 and summary["answered"] == 3
    assert summary["by_kind"]["scripted"]["faithfulness"] == EXPECTED_FAITHFULNESS
    # the retrieval part is a local eval's, on the same pipeline
    local = json.loads(vaulttools("eval", "--vault", str(vault), "--json", str(question_set), env={}, cwd=tmp_path).stdout)
    assert [i["results"] for i in run["items"]] == [i["results"] for i in local["items"]]
    assert {k: v for k, v in run["summary"].items() if k not in ("answers", "ms_per_query", "by_kind")} == {
        k: v for k, v in local["summary"].items() if k not in ("ms_per_query", "by_kind")
    }

    # the real pipeline: one chat per question, with the vault's profile and the rust note in the prompt
    chats = fake_ollama.chat_requests()
    assert sorted(question_of(c) for c in chats) == sorted((RUST, SALARY, WEATHER))
    profile = load_profile(vault)
    assert profile.name == "eval-book" and all(c["messages"][0]["content"] == profile.system_prompt for c in chats)
    rust_chat = next(c for c in chats if question_of(c) == RUST)
    assert "réécrivant un petit outil de conversion" in rust_chat["messages"][-1]["content"]
    assert_nothing_private(json.dumps(chats, ensure_ascii=False), done.stdout, done.stderr)

    # the table: a local eval's columns, and the answers' (by kind: the scripted answer's own figures)
    table = vaulttools("eval", "--vault", str(vault), "--answers", str(question_set), env=ollama_env(fake_ollama), cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    header, *rows = [line.split("\t") for line in table.stdout.splitlines() if "\t" in line]
    assert header[:8] == ["set", "items", "hit@1", "hit@5", "recall@5", "MRR", "off-topic rejected", "on-topic grounded"]
    assert header[8:] == ["faithfulness", "answers grounded", "answers"]
    cells = {row[0]: dict(zip(header, row, strict=True)) for row in rows}
    assert cells["kind: scripted"]["faithfulness"] == f"{EXPECTED_FAITHFULNESS:.3f}"
    assert cells["kind: scripted"]["answers"] == "1 partial" and cells["kind: off-topic"]["answers"] == "1 abstained"
    assert cells["all"]["answers grounded"] == f"{sum(i['answer']['grounded'] for i in run['items']) / 3:.3f}"


def test_an_llm_that_errs_on_one_item_and_one_that_is_down(vault: Path, question_set: Path, fake_ollama: FakeOllama, tmp_path: Path) -> None:
    # the model answers nothing to the weather question, and the salary question is longer than the service
    # takes (ASK_MAX_CHARS, as the API refuses it): those items fail, the other is answered
    fake_ollama.script(reply=lambda body: "" if question_of(body) == WEATHER else reply(body))
    env = ollama_env(fake_ollama) | {"ASK_MAX_CHARS": str(len(SALARY) - 1)}
    done = vaulttools("eval", "--vault", str(vault), "--answers", "--json", str(question_set), env=env, cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # an answer failed: said by the exit code
    items = by_id(json.loads(done.stdout))
    assert items["meteo"]["answer"]["status"] == "failed" and "empty answer" in items["meteo"]["answer"]["error"]
    assert items["salaire"]["answer"]["status"] == "failed"
    assert items["salaire"]["answer"]["error"] == f"question_too_long: the question is longer than {len(SALARY) - 1} characters"
    assert SALARY not in [question_of(c) for c in fake_ollama.chat_requests()]  # never sent to the model
    assert items["rust"]["answer"]["faithfulness"] == EXPECTED_FAITHFULNESS  # the run went on
    assert "Traceback" not in done.stderr

    down = {"OLLAMA_URL": f"http://127.0.0.1:{closed_port()}", "LLM_CONNECT_TIMEOUT": "1"}
    done = vaulttools("eval", "--vault", str(vault), "--answers", str(question_set), env=down, cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "3 failed" in done.stdout and "failed answers (the run went on without them):" in done.stdout
    failures = [line for line in done.stdout.splitlines() if line.startswith("  ") and "llm_unavailable" in line]
    assert [line.split(":")[0].strip() for line in failures] == ["rust", "salaire", "meteo"]
    assert "the language model server cannot be reached" in failures[0]


def item_traces(collector: LangfuseCollector) -> dict[str, list[Span]]:
    """The spans of every dataset run item's trace, by the dataset item it ran."""
    out = {}
    for task in collector.spans_named("experiment-item-task"):
        out[task.attributes["langfuse.experiment.item.id"]] = collector.trace(task.trace_id)
    return out


def task_scores(collector: LangfuseCollector, spans: list[Span]) -> dict[str, dict[str, Any]]:
    """The scores the run gave the item (on its task observation, as the SDK's dataset runs put them)."""
    task = next(s for s in spans if s.name == "experiment-item-task")
    return {s["name"]: s for s in collector.scores if s.get("traceId") == task.trace_id and s.get("observationId") == task.span_id}


def test_a_langfuse_dataset_answered_through_an_openai_compatible_server(
    vault: Path, question_set: Path, fake_openai: FakeOpenAI, collector: LangfuseCollector, tmp_path: Path
) -> None:
    fake_openai.script(reply=reply)
    langfuse = langfuse_env(collector)
    assert vaulttools("eval", "--export-dataset", "answers", str(question_set), env=langfuse, cwd=tmp_path).returncode == 0
    items = {i["metadata"]["id"]: i["id"] for i in collector.dataset_items["answers"].values()}
    llm = {"LLM_BACKEND": "openai", "LLM_BASE_URL": fake_openai.base_url, "LLM_API_KEY": fake_openai.api_key or "", "LLM_TIMEOUT": "10"}
    done = vaulttools("eval", "--vault", str(vault), "--langfuse-dataset", "answers", "--answers", "--run-name", "qwen3",
                      "--json", env=langfuse | llm, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "dataset run 'qwen3' recorded in Langfuse: 3 items scored" in done.stderr
    run = by_id(json.loads(done.stdout))
    assert run["rust"]["answer"]["faithfulness"] == EXPECTED_FAITHFULNESS

    assert collector.wait_for(lambda c: len(c.spans_named("experiment-item-run")) == 3 and len(c.spans_named("openai-chat")) == 3, timeout=15)
    assert collector.wait_for(lambda c: sum(1 for s in c.scores if s.get("observationId")) >= 5, timeout=15)
    traces = item_traces(collector)
    assert set(traces) == set(items.values())  # every dataset item ran, linked to it
    for spans in traces.values():
        # the item's trace is the trace of its answer: the service's `ask`, its generation and verification in it
        named = {s.name: s for s in spans}
        assert {"ask", "retrieval", "prompt-build", "openai-chat", "verification"} <= set(named)
        assert named["ask"].parent_span_id == named["experiment-item-task"].span_id
        assert named["openai-chat"].parent_span_id == named["ask"].span_id
        assert len({s.trace_id for s in spans}) == 1

    rust = task_scores(collector, traces[items["rust"]])
    assert rust["faithfulness"]["value"] == EXPECTED_FAITHFULNESS
    assert (rust["grounded"]["value"], rust["grounded"]["dataType"]) == (1.0, "BOOLEAN") and rust["hit@5"]["value"] == 1.0
    weather = task_scores(collector, traces[items["meteo"]])
    assert set(weather) == {"grounded"} and weather["grounded"]["value"] == 0.0  # no fact, no expected note
    # the service scores its trace as it always does: the same faithfulness
    rust_trace = traces[items["rust"]][0].trace_id
    assert collector.scores_for(rust_trace)["faithfulness"]["value"] == EXPECTED_FAITHFULNESS

    assert_nothing_private(collector.all_payload_text(), json.dumps(fake_openai.chat_requests(), ensure_ascii=False), done.stdout)

    # the eval's answers are tagged, and no export from traces takes them for a visitor's questions
    assert all("vaulttools-eval" in (s.attributes.get("langfuse.trace.tags") or []) for s in collector.spans_named("ask"))
    assert any("grounded" in (s.attributes.get("langfuse.trace.tags") or []) for s in collector.spans_named("ask"))
    exported = vaulttools("eval", "--export-dataset", "from-eval", "--from-traces", "--tag", "grounded", env=langfuse, cwd=tmp_path)
    assert exported.returncode == 0 and "no trace matches: nothing exported" in exported.stderr, exported.stderr


def test_a_dataset_run_goes_on_when_the_llm_is_down(vault: Path, question_set: Path, collector: LangfuseCollector, tmp_path: Path) -> None:
    langfuse = langfuse_env(collector)
    assert vaulttools("eval", "--export-dataset", "down", str(question_set), env=langfuse, cwd=tmp_path).returncode == 0
    down = {"OLLAMA_URL": f"http://127.0.0.1:{closed_port()}", "LLM_CONNECT_TIMEOUT": "1"}
    done = vaulttools("eval", "--vault", str(vault), "--langfuse-dataset", "down", "--answers", "--run-name", "down", env=langfuse | down, cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "dataset run 'down' recorded in Langfuse: 3 items scored, 3 answers failed" in done.stderr
    assert "3 failed" in done.stdout and "llm_unavailable" in done.stdout
    assert collector.wait_for(lambda c: len(c.spans_named("experiment-item-run")) == 3, timeout=15)
    for spans in item_traces(collector).values():
        task = next(s for s in spans if s.name == "experiment-item-task")
        assert task.json("langfuse.observation.output")["status"] == "failed"
        assert task.json("langfuse.observation.output")["error"].startswith("llm_unavailable")
        assert "faithfulness" not in task_scores(collector, spans)  # no answer, no answer score
    expecting = collector.dataset_items["down"]
    rust = next(i for i in expecting if expecting[i]["metadata"]["id"] == "rust")
    assert task_scores(collector, item_traces(collector)[rust])["hit@5"]["value"] == 1.0  # the retrieval still scored


def test_clear_errors(question_set: Path, tmp_path: Path) -> None:
    done = vaulttools("eval", "--vault", str(REPO / "vault"), "--answers", str(REPO / "benchmarks" / "verify-dev.yaml"), env={}, cwd=tmp_path)
    assert done.returncode == 2 and "--answers answers a question set" in done.stderr
    done = vaulttools("eval", "--answers", "--export-dataset", "x", str(question_set), env={}, cwd=tmp_path)
    assert done.returncode == 2 and "not --export-dataset" in done.stderr
    done = vaulttools("eval", "--vault", str(REPO / "vault"), "--answers", str(question_set), env={"LLM_TIMEOUT": "soon"}, cwd=tmp_path)
    assert done.returncode == 2 and "LLM_TIMEOUT" in done.stderr and "Traceback" not in done.stderr
