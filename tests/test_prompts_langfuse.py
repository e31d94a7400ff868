"""The system prompt from Langfuse Prompts, through the real server, the real SDK and the collector's prompts
API: fetched and cached, linked to the generation, the local prompt when Langfuse is down or has none (said
once), and `grasbot prompt push` making a new version."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from grasbot.answer.profile import shipped
from tests.fake_ollama import FakeOllama
from tests.langfuse_collector import LangfuseCollector, Span
from tests.service_fixtures import *  # noqa: F403
from tests.service_fixtures import REPO, SAMPLE_VAULT, langfuse_settings, run_server

RUST = "Que sait-il faire en Rust ?"
NAME = "grasbot-system"
REMOTE = "Tu es le GrasBot de la version Langfuse. Cite [slug]."


def generation_of(collector: LangfuseCollector, trace_id: str) -> tuple[Span, Span]:
    ok = collector.wait_for(lambda c: {"ask", "ollama-chat"} <= {s.name for s in c.trace(trace_id)}, timeout=15)
    assert ok, [s.name for s in collector.trace(trace_id)]
    spans = {s.name: s for s in collector.trace(trace_id)}
    return spans["ask"], spans["ollama-chat"]


def test_the_prompt_comes_from_langfuse_cached_and_linked(fake_ollama: FakeOllama, collector: LangfuseCollector) -> None:
    collector.add_prompt(NAME, "ancienne version", labels=["production"])
    collector.add_prompt(NAME, REMOTE, labels=["production"])  # version 2 takes the label
    collector.add_prompt(NAME, "brouillon", labels=["staging"])
    settings = langfuse_settings(fake_ollama, collector, prompt_name=NAME)
    with run_server(settings, SAMPLE_VAULT) as server:
        client = server.client()
        first = client.get("/ask", params={"q": RUST}).json()
        second = client.get("/ask", params={"q": RUST}).json()
        assert [r["messages"][0]["content"] for r in fake_ollama.chat_requests()] == [REMOTE, REMOTE]
        assert len(collector.prompt_fetches(NAME)) == 1  # the SDK's cache answered the second
        assert "label=production" in collector.prompt_fetches(NAME)[0].path
        assert client.get("/health").json()["prompt"] == {"source": "langfuse", "name": NAME, "label": "production"}
        for body in (first, second):
            root, gen = generation_of(collector, body["trace_id"])
            assert gen.attributes["langfuse.observation.prompt.name"] == NAME
            assert gen.attributes["langfuse.observation.prompt.version"] == 2
            assert root.json("langfuse.trace.metadata.prompt") == f"langfuse:{NAME}@2"


def test_a_label_picks_its_version(fake_ollama: FakeOllama, collector: LangfuseCollector) -> None:
    collector.add_prompt(NAME, REMOTE, labels=["production"])
    collector.add_prompt(NAME, "Version de test A/B. Cite [slug].", labels=["staging"])
    settings = langfuse_settings(fake_ollama, collector, prompt_name=NAME, prompt_label="staging")
    with run_server(settings, SAMPLE_VAULT) as server:
        body = server.client().get("/ask", params={"q": RUST}).json()
        assert fake_ollama.chat_requests()[-1]["messages"][0]["content"] == "Version de test A/B. Cite [slug]."
        _, gen = generation_of(collector, body["trace_id"])
        assert gen.attributes["langfuse.observation.prompt.version"] == 2


def test_a_missing_prompt_falls_back_to_the_local_one_said_once(fake_ollama: FakeOllama, collector: LangfuseCollector) -> None:
    settings = langfuse_settings(fake_ollama, collector, prompt_name="absent")
    with run_server(settings, SAMPLE_VAULT) as server:
        client = server.client()
        bodies = [client.get("/ask", params={"q": RUST}) for _ in range(3)]
        assert all(b.status_code == 200 for b in bodies)
        assert {r["messages"][0]["content"] for r in fake_ollama.chat_requests()} == {shipped("site").system_prompt}
        said = [line for line in server.logs.lines if "answers use the profile's local system prompt" in line]
        assert len(said) == 1 and "Langfuse has no prompt 'absent' with the label 'production'" in said[0]
        assert len(collector.prompt_fetches("absent")) == 1  # not asked again before the cache period
        health = client.get("/health").json()["prompt"]
        assert health["source"] == "langfuse" and "no prompt 'absent'" in health["fallback"]
        root, gen = generation_of(collector, bodies[0].json()["trace_id"])
        assert "langfuse.observation.prompt.name" not in gen.attributes  # no link to a prompt that did not answer
        assert root.json("langfuse.trace.metadata.prompt") == f"local:site@{shipped('site').version}"


def test_a_down_langfuse_falls_back_then_comes_back(fake_ollama: FakeOllama, collector: LangfuseCollector) -> None:
    collector.add_prompt(NAME, REMOTE, labels=["production"])
    collector.prompts_down = True
    settings = langfuse_settings(fake_ollama, collector, prompt_name=NAME, prompt_cache_seconds=0)
    with run_server(settings, SAMPLE_VAULT) as server:
        client = server.client()
        assert client.get("/ask", params={"q": RUST}).status_code == 200
        assert fake_ollama.chat_requests()[-1]["messages"][0]["content"] == shipped("site").system_prompt
        assert any("Langfuse answered HTTP 503" in line for line in server.logs.lines)
        collector.prompts_down = False
        server.service.prompts._retry_at = 0.0  # the retry period (MIN_RETRY_SECONDS) is over
        assert client.get("/ask", params={"q": RUST}).status_code == 200
        assert fake_ollama.chat_requests()[-1]["messages"][0]["content"] == REMOTE
        assert any("comes from Langfuse again" in line for line in server.logs.lines)


def test_an_unreachable_langfuse_costs_one_bounded_attempt(fake_ollama: FakeOllama) -> None:
    with LangfuseCollector() as gone:
        pass  # stopped: nothing listens on its port
    settings = langfuse_settings(fake_ollama, gone, prompt_name=NAME, langfuse_timeout=1)
    with run_server(settings, SAMPLE_VAULT) as server:
        client = server.client()
        for _ in range(3):
            assert client.get("/ask", params={"q": RUST}).status_code == 200
        assert {r["messages"][0]["content"] for r in fake_ollama.chat_requests()} == {shipped("site").system_prompt}
        assert len([line for line in server.logs.lines if "answers use the profile's local" in line]) == 1


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "grasbot.service.cli", *args],
        capture_output=True, text=True, timeout=60, cwd=REPO, env={"PATH": os.environ.get("PATH", ""), **env},
    )  # fmt: skip


def test_prompt_push_makes_a_new_version(tmp_path: Path, collector: LangfuseCollector) -> None:
    env = {"LANGFUSE_PUBLIC_KEY": "pk-lf-push", "LANGFUSE_SECRET_KEY": "sk-lf-push", "LANGFUSE_BASE_URL": collector.url}
    done = run_cli("prompt", "push", "--vault", str(SAMPLE_VAULT), "--name", NAME, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"pushed {NAME} version 1 (production): profile site@{shipped('site').version}")
    again = run_cli("prompt", "push", "--vault", str(SAMPLE_VAULT), "--name", NAME, "--label", "staging", "--profile", "textbook", env=env)
    assert again.returncode == 0 and f"version 2 (staging): profile textbook@" in again.stdout
    versions = collector.prompts[NAME]
    assert versions[0]["prompt"] == shipped("site").system_prompt and "production" in versions[0]["labels"]
    assert versions[1]["prompt"] == shipped("textbook").system_prompt and versions[1]["config"]["profile"] == "textbook"
    assert not [s for s in collector.received if "otel" in s.path]  # the command sends no trace


def test_prompt_push_says_what_is_missing(collector: LangfuseCollector) -> None:
    done = run_cli("prompt", "push", "--vault", str(SAMPLE_VAULT), "--name", NAME, env={})
    assert done.returncode == 2 and "Langfuse is not configured" in done.stderr
    env = {"LANGFUSE_PUBLIC_KEY": "pk", "LANGFUSE_SECRET_KEY": "sk", "LANGFUSE_BASE_URL": collector.url}
    done = run_cli("prompt", "push", "--vault", str(SAMPLE_VAULT), env=env)
    assert done.returncode == 2 and "give --name NAME or set GRASBOT_PROMPT_NAME" in done.stderr
    collector.prompts_down = True
    done = run_cli("prompt", "push", "--vault", str(SAMPLE_VAULT), "--name", NAME, env=env)
    assert done.returncode == 2 and "Langfuse refused the prompt (HTTP 503)" in done.stderr
    assert "Traceback" not in done.stderr
