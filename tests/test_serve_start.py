"""What `grasbot serve` loads before it is ready, through a real `grasbot serve` (uvicorn on 127.0.0.1,
real HTTP, a fake LLM server speaking its real protocol), in a child process whose `sys.modules` is read.

Until the first `/health` answers, the server has loaded the configured LLM backend's module only, not the
other's, not the `ollama` library (the Ollama backend probes with httpx; its chat client is made by the
first chat), not the verifier; and Python's collector was off while the app was built, on again once it
started (grasbot/service/collector.py). The first answer then loads what it needs and works. Speed is
measured in benchmarks/bench_snapshot.py, not here (docs/architecture.md, "Fast starts").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fake_ollama import FakeLLMServer, FakeOllama
from tests.fake_openai import FakeOpenAI
from tests.service_fixtures import REPO, SAMPLE_VAULT, closed_port, state_dir_for_tests

RUST = "Que sait-il faire en Rust ?"

#: The modules whose presence is read, before and after the first answer.
WATCHED = ("ollama", "grasbot.llm.ollama", "grasbot.llm.openai", "grasbot.answer.verify", "grasbot.service.verification")

# The child: `grasbot serve` through its `main`, in its main thread (as `python -m grasbot.service.cli serve`
# runs it), and a thread that waits for /health, reads what is loaded, asks one question, reads again, and
# stops the server with SIGTERM, as a supervisor would.
CHILD = """
import gc, json, os, signal, sys, threading, time
import httpx
from grasbot.service import app as app_module, cli

report = {}
build = app_module.create_app

def create_app(*args, **kwargs):  # what uvicorn calls (`grasbot.service.app:create_app`)
    report["collector_on_while_building"] = gc.isenabled()
    return build(*args, **kwargs)

app_module.create_app = create_app
watched = %(watched)r
url = "http://127.0.0.1:%(port)d"

def loaded():
    return sorted(m for m in watched if m in sys.modules)

def watch():
    try:
        with httpx.Client(base_url=url, timeout=20, trust_env=False) as client:
            deadline = time.monotonic() + 60
            while True:
                try:
                    health = client.get("/health")
                    break
                except httpx.HTTPError:
                    assert time.monotonic() < deadline, "no /health"
                    time.sleep(0.05)
            report["loaded_when_ready"] = loaded()
            report["collector_on_when_ready"] = gc.isenabled()
            report["health"] = {"status": health.status_code, "llm": health.json()["llm"]}
            asked = client.get("/ask", params={"q": %(question)r})
            report["ask"] = {"status": asked.status_code, "response": asked.json().get("response")}
            report["loaded_after_answer"] = loaded()
    finally:
        print("REPORT " + json.dumps(report), flush=True)
        os.kill(os.getpid(), signal.SIGTERM)

threading.Thread(target=watch, daemon=True).start()
sys.exit(cli.main(["serve", "--vault", %(vault)r, "--port", "%(port)d", "--log-level", "warning"]))
"""


def serve_and_report(tmp_path: Path, env: dict[str, str]) -> dict[str, Any]:
    """Run the child with `env` over a clean environment; what its watcher saw."""
    if not SAMPLE_VAULT.is_dir():
        pytest.skip("the bundled vault/ is missing")
    code = CHILD % {"watched": WATCHED, "port": closed_port(), "question": RUST, "vault": str(SAMPLE_VAULT)}
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("LANGFUSE_", "GRASBOT_", "LLM_", "OLLAMA_"))}
    full_env = clean | {
        "GRASBOT_STATE_DIR": str(state_dir_for_tests()),
        "VAULTTOOLS_CACHE_DIR": str(tmp_path / "cache"),
        "PYTHONPATH": str(REPO),
    } | env  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", code], env=full_env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("REPORT ")]
    assert lines, f"no report (exit {done.returncode}):\n{done.stdout}\n{done.stderr}"
    return json.loads(lines[-1].removeprefix("REPORT "))


def _reply(fake: FakeLLMServer) -> str:
    fake.script(reply="Il écrit du Rust [rust].")
    return "Il écrit du Rust [rust]."


def test_the_ollama_backend_starts_without_the_ollama_library_or_the_other_backend(tmp_path: Path) -> None:
    with FakeOllama() as fake:
        reply = _reply(fake)
        report = serve_and_report(tmp_path, {"OLLAMA_URL": fake.url})
    assert report["health"]["status"] == 200 and report["health"]["llm"]["backend"] == "ollama"
    assert report["health"]["llm"]["reachable"] is True and report["health"]["llm"]["model_available"] is True
    assert report["loaded_when_ready"] == ["grasbot.llm.ollama"], report
    # the first answer builds the chat client (the library with it) and is verified: it works as before
    assert report["ask"] == {"status": 200, "response": reply}, report
    assert report["loaded_after_answer"] == [
        "grasbot.answer.verify", "grasbot.llm.ollama", "grasbot.service.verification", "ollama",
    ], report  # fmt: skip


def test_the_openai_backend_never_loads_the_ollama_backend_or_library(tmp_path: Path) -> None:
    with FakeOpenAI(api_key="sk-test-start") as fake:
        reply = _reply(fake)
        env = {"LLM_BACKEND": "openai", "LLM_BASE_URL": fake.base_url, "LLM_API_KEY": "sk-test-start"}
        report = serve_and_report(tmp_path, env)
    assert report["health"]["llm"]["backend"] == "openai" and report["health"]["llm"]["model_available"] is True
    assert report["loaded_when_ready"] == ["grasbot.llm.openai"], report
    assert report["ask"] == {"status": 200, "response": reply}, report
    assert "ollama" not in report["loaded_after_answer"] and "grasbot.llm.ollama" not in report["loaded_after_answer"]


def test_health_still_says_an_unreachable_llm_is_down(tmp_path: Path) -> None:
    """No chat client at the start does not make /health optimistic: it probes the server as before."""
    report = serve_and_report(tmp_path, {"OLLAMA_URL": f"http://127.0.0.1:{closed_port()}"})
    llm = report["health"]["llm"]
    assert report["health"]["status"] == 200 and llm["reachable"] is False and llm["model_available"] is False
    assert report["ask"]["status"] == 503  # `llm_unavailable`, with its sources, as documented
    assert "ollama" not in report["loaded_when_ready"]


def test_the_collector_is_off_while_the_app_is_built_and_on_once_it_started(tmp_path: Path) -> None:
    report = serve_and_report(tmp_path, {"OLLAMA_URL": f"http://127.0.0.1:{closed_port()}"})
    assert report["collector_on_while_building"] is False, report
    assert report["collector_on_when_ready"] is True, report


def test_a_refused_serve_leaves_the_collector_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """`grasbot serve` pauses the collector before its checks: every way out turns it back on."""
    import gc

    from grasbot.service import cli

    # (`serve` hands --vault to its workers as VAULT_DIR: set here so that the test's end takes it back)
    monkeypatch.setenv("VAULT_DIR", str(SAMPLE_VAULT))
    assert gc.isenabled()
    assert cli.main(["serve", "--vault", str(SAMPLE_VAULT), "--port", "0"]) == 2  # refused: a bad port
    assert gc.isenabled()
