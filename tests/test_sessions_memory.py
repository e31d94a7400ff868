"""Conversation memory and session ids through a real uvicorn server, the fake Ollama and the Langfuse
collector: a turn never outlives a reload that removed a note it may quote (even when its generation ends
after the reload), and the server, not the visitor, issues the id that keys a conversation."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import httpx

from tests.fake_ollama import FakeOllama
from tests.langfuse_collector import LangfuseCollector
from tests.service_fixtures import *  # noqa: F403
from tests.service_fixtures import SAMPLE_VAULT, langfuse_settings, run_server, service_settings, sse_events

NOTE = Path("10-Projets") / "la-derniere-ecluse.md"
MARKER = "MARQUEUR-ECLUSE-7431"  # planted in the note: it must not come back once the note is private
QUESTION = "La Dernière Écluse, le jeu de game jam sous Godot ?"
FOLLOW_UP = "et ensuite ?"
SESSION_ID = re.compile(r"[0-9a-f]{32}\.[0-9a-f]{32}")


def plant_marker(vault: Path) -> Path:
    path = vault / NOTE
    path.write_text(path.read_text(encoding="utf-8") + f"\nLe mot de passe du projet : {MARKER}.\n", encoding="utf-8")
    return path


def make_private(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert "visibility: public" in text
    path.write_text(text.replace("visibility: public", "visibility: private", 1), encoding="utf-8")


def quoting_reply(body: dict[str, Any]) -> str:
    """The model quotes the note when it is in its prompt (history included), in several streamed words."""
    prompt = "\n".join(m.get("content", "") for m in body.get("messages", []))
    quoted = MARKER if MARKER in prompt else "rien de secret"
    return f"Voici ce que je sais du projet : il cite {quoted} comme mot de passe [la-derniere-ecluse]."


def trace_text(collector: LangfuseCollector, trace_id: str) -> str:
    assert collector.wait_for(lambda c: "ollama-chat" in {s.name for s in c.trace(trace_id)}, timeout=15), trace_id
    return json.dumps([s.attributes for s in collector.trace(trace_id)], ensure_ascii=False, default=str)


def follow_up_leaks(server: Any, fake: FakeOllama, collector: LangfuseCollector, session_id: str) -> list[str]:
    """Ask the follow-up in `session_id`; where the planted marker shows: the model's prompt, the trace, the visitor."""
    before = len(fake.chat_requests())
    r = server.client().get("/ask", params={"q": FOLLOW_UP, "session_id": session_id})
    assert r.status_code == 200, r.text
    prompts = json.dumps(fake.chat_requests()[before:], ensure_ascii=False)
    places = {"prompt": prompts, "visitor": r.text, "langfuse": trace_text(collector, r.json()["trace_id"])}
    return [where for where, text in places.items() if MARKER in text]


def reload_removing(client: httpx.Client, note: Path) -> None:
    make_private(note)
    body = client.post("/reload-vault").json()
    assert body["removed"] == ["la-derniere-ecluse"], body


def test_a_stream_that_ends_after_a_removing_reload_is_not_remembered(
    fake_ollama: FakeOllama, collector: LangfuseCollector, service_vault: Path
) -> None:
    """The red team's scenario: a slow stream answers from note N; while it runs, N is made private and the
    vault reloaded (`removed: [N]`); the stream then ends. Its answer quotes N and must not be remembered:
    the follow-up of the same session sends nothing of N to the model, to Langfuse or to the visitor."""
    note = plant_marker(service_vault)
    fake_ollama.script(reply=quoting_reply, chunk_delay=0.15)  # about 15 words: 2 s of streaming
    with run_server(langfuse_settings(fake_ollama, collector), service_vault) as server:
        client = server.client()
        events: list[str] = []
        with client.stream("GET", "/ask/stream", params={"q": QUESTION}) as r:
            lines = r.iter_lines()
            for line in lines:  # up to the first token: the generation is under way
                events.append(line)
                if line == "event: token":
                    break
            reload_removing(client, note)
            events.extend(lines)
        parsed = sse_events("\n".join(events) + "\n\n")
        assert parsed[0][0] == "sources" and parsed[-1][0] == "done"
        done = parsed[-1][1]
        assert MARKER in done["response"]  # the answer did quote the note (it was public when asked)
        assert SESSION_ID.fullmatch(done["session_id"]) and parsed[0][1]["session_id"] == done["session_id"]
        assert follow_up_leaks(server, fake_ollama, collector, done["session_id"]) == []


def test_a_plain_ask_that_ends_after_a_removing_reload_is_not_remembered(
    fake_ollama: FakeOllama, collector: LangfuseCollector, service_vault: Path
) -> None:
    """The same with `GET /ask`: the generation started before the reload and ends after it."""
    note = plant_marker(service_vault)
    fake_ollama.script(reply=quoting_reply, delay=1.5)
    with run_server(langfuse_settings(fake_ollama, collector), service_vault) as server:
        client = server.client()
        answers: list[httpx.Response] = []
        asking = threading.Thread(target=lambda: answers.append(server.client().get("/ask", params={"q": QUESTION})))
        asking.start()
        assert fake_ollama.wait_until(lambda f: f.chats_in_progress == 1, timeout=10)
        reload_removing(client, note)
        asking.join(timeout=20)
        first = answers[0].json()
        assert MARKER in first["response"]
        assert follow_up_leaks(server, fake_ollama, collector, first["session_id"]) == []


def test_a_turn_answered_after_the_reload_is_remembered(fake_ollama: FakeOllama, service_vault: Path) -> None:
    """The guard refuses only answers from before the removing reload: memory goes on afterwards."""
    note = plant_marker(service_vault)
    fake_ollama.script(reply="Première réponse, sur Rust [rust].")
    with run_server(service_settings(fake_ollama), service_vault) as server:
        client = server.client()
        reload_removing(client, note)
        sid = client.get("/ask", params={"q": "Que sait-il faire en Rust ?"}).json()["session_id"]
        client.get("/ask", params={"q": FOLLOW_UP, "session_id": sid})
        assert "Première réponse, sur Rust" in fake_ollama.chat_prompts()[-1]


def test_the_server_issues_the_session_id(fake_ollama: FakeOllama) -> None:
    """Every answer carries `session_id` (JSON, the stream's `sources` and `done`, error bodies); only an id
    the server issued continues a conversation: a chosen, unknown or forged one starts a new, empty one."""
    fake_ollama.script(reply="Réponse pour le premier visiteur : SECRET-DU-PREMIER")
    with run_server(service_settings(fake_ollama), SAMPLE_VAULT) as server:
        client = server.client()
        first = client.get("/ask", params={"q": "Que sait-il faire en Rust ?", "session_id": "tab-1"}).json()
        sid = first["session_id"]
        assert SESSION_ID.fullmatch(sid) and sid != "tab-1"  # the docs' old `tab-1` is not an id any more
        fake_ollama.script(reply="Autre réponse.")
        # A second visitor who sends the same chosen id (or any id the server did not issue) starts afresh.
        for chosen in ("tab-1", sid[:-1] + ("0" if sid[-1] != "0" else "1"), "0" * 32 + "." + "0" * 32):
            other = client.get("/ask", params={"q": FOLLOW_UP, "session_id": chosen}).json()
            assert other["session_id"] not in (chosen, sid)
            assert "SECRET-DU-PREMIER" not in fake_ollama.chat_prompts()[-1], chosen
        # The stream gives the id in its first event and its last, and continues an issued one.
        events = sse_events(client.get("/ask/stream", params={"q": FOLLOW_UP, "session_id": sid}).text)
        assert events[0][1]["session_id"] == events[-1][1]["session_id"] == sid
        assert "SECRET-DU-PREMIER" in fake_ollama.chat_prompts()[-1]  # the first visitor's own memory goes on
        fake_ollama.script(fail_status=500)
        failed = client.get("/ask", params={"q": FOLLOW_UP, "session_id": sid})
        assert failed.status_code == 502 and failed.json()["session_id"] == sid


def test_workers_sharing_a_state_folder_accept_each_others_ids(fake_ollama: FakeOllama, tmp_path: Path) -> None:
    """The signing key lives in the private state folder, so a follow-up that lands on another worker of the
    deployment keeps its id (that worker has no turns of it: memory is per worker, docs/service.md)."""
    settings = service_settings(fake_ollama, state_dir=tmp_path / "state")
    with run_server(settings, SAMPLE_VAULT) as one, run_server(settings, SAMPLE_VAULT) as two:
        sid = one.client().get("/ask", params={"q": "Que sait-il faire en Rust ?"}).json()["session_id"]
        assert two.client().get("/ask", params={"q": FOLLOW_UP, "session_id": sid}).json()["session_id"] == sid
    with run_server(service_settings(fake_ollama, state_dir=tmp_path / "elsewhere"), SAMPLE_VAULT) as stranger:
        assert stranger.client().get("/ask", params={"q": FOLLOW_UP, "session_id": sid}).json()["session_id"] != sid
