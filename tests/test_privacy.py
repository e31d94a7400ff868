"""Private notes never reach a visitor: not in a response, a stream, a prompt, a trace, a log or an error.

Questions aimed squarely at the private notes of the bundled vault (their titles, aliases and sample
questions) go through every endpoint, with a model that repeats its whole prompt back (the worst case: a
model that leaks everything it sees), with LLM failures, a reload and feedback. Then every byte the service
produced or sent anywhere is searched for the secrets planted in those notes (tests/private_markers.py) and
for the notes' slugs, and for the service's own secrets.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from grasbot.vault import Vault
from tests.fake_ollama import FakeOllama
from tests.langfuse_collector import LangfuseCollector
from tests.service_fixtures import *  # noqa: F403
from tests.service_fixtures import SAMPLE_VAULT, langfuse_settings, run_server, sse_events

private_markers = pytest.importorskip("tests.private_markers", reason="tests/private_markers.py is not there yet")
MARKERS: tuple[str, ...] = private_markers.PRIVATE_MARKERS
SLUGS: tuple[str, ...] = private_markers.PRIVATE_SLUGS
RELOAD_TOKEN = "reload-token-TOP-SECRET-123"


def echo_prompt(body: dict[str, Any]) -> str:
    """The model repeats everything it was given."""
    return "ÉCHO " + "\n".join(m.get("content", "") for m in body.get("messages", []))


def private_questions() -> list[str]:
    vault = Vault.load(SAMPLE_VAULT)
    questions: list[str] = []
    for path in sorted(vault.notes):
        note = vault.notes[path]
        if note.is_private:
            questions.append(note.title)
            questions.extend(note.aliases)
            questions.extend(note.answers)
    questions += [
        "Quel salaire demande-t-il ?",
        "Quel est son numéro de téléphone ?",
        "Quelle est son adresse personnelle ?",
        "A-t-il des problèmes de santé ?",
        "Quel est son TJM en freelance ?",
    ]
    # A question quoting a secret would be echoed back as the visitor's own text: not a leak, so not asked.
    return [q for q in dict.fromkeys(questions) if not any(m.casefold() in q.casefold() for m in MARKERS)]


def find_leaks(where: str, text: str, needles: tuple[str, ...]) -> list[str]:
    folded = text.casefold()
    return [f"{where}: {n!r}" for n in needles if n.casefold() in folded]


def test_sample_vault_has_private_notes_with_markers() -> None:
    vault = Vault.load(SAMPLE_VAULT)
    private = [n for n in vault.notes.values() if n.is_private]
    assert len(private) >= 3
    text = "\n".join(n.text for n in private)
    assert all(m in text for m in MARKERS)
    assert {n.slug for n in private} >= set(SLUGS)


def test_private_notes_never_leak(tmp_path: Path, fake_ollama: FakeOllama, collector: LangfuseCollector) -> None:
    import shutil

    vault = tmp_path / "vault"
    shutil.copytree(SAMPLE_VAULT, vault)
    questions = private_questions()
    assert len(questions) >= 10
    settings = langfuse_settings(fake_ollama, collector, reload_token=RELOAD_TOKEN)
    outputs: list[tuple[str, str]] = []
    fake_ollama.script(reply=echo_prompt)
    with run_server(settings, vault) as server:
        client = server.client()
        trace_ids: list[str] = []
        first: str | None = None  # two conversations, each going on with the id the server issued
        second: str | None = None
        for i, q in enumerate(questions):
            r = client.get("/ask", params={"q": q, "user_id": "u-1"} | ({"session_id": first} if first else {}))
            assert r.status_code == 200, r.text
            first = r.json()["session_id"]
            outputs.append((f"/ask {q!r}", r.text))
            trace_ids.append(r.json()["trace_id"])
            assert all(s["slug"] not in SLUGS for s in r.json()["sources"])
            if i % 3 == 0:
                r = client.get("/ask/stream", params={"q": q} | ({"session_id": second} if second else {}))
                events = sse_events(r.text)
                assert events[-1][0] == "done"
                second = events[-1][1]["session_id"]
                outputs.append((f"/ask/stream {q!r}", r.text))
        # The memory of a session now holds echoed prompts: a follow-up must not bring anything private.
        r = client.get("/ask", params={"q": "Et son salaire exact ?", "session_id": first})
        outputs.append(("/ask follow-up", r.text))

        # Failures: the error bodies and events must be as clean as the answers.
        for script in ({"fail_status": 500, "fail_message": "boom"}, {"empty": True}, {"reply": echo_prompt, "error_mid_stream": "crash"}):
            fake_ollama.script(**script)
            for q in questions[:3]:
                outputs.append((f"/ask {script}", client.get("/ask", params={"q": q}).text))
                outputs.append((f"/ask/stream {script}", client.get("/ask/stream", params={"q": q}).text))
        fake_ollama.script(reply=echo_prompt)

        # Bad input echoes nothing private either (there is nothing private in it), and stays JSON.
        outputs.append(("/ask too long", client.get("/ask", params={"q": "salaire " * 400}).text))
        outputs.append(("/feedback bad", client.post("/feedback", json={"trace_id": "x", "value": 9}).text))
        outputs.append(("/feedback", client.post("/feedback", json={"trace_id": trace_ids[0], "value": 1}).text))

        # A private note edited, then a reload: the answer must not name it.
        salary = vault / "30-Parcours" / "prive-pretentions-salariales.md"
        salary.write_text(salary.read_text(encoding="utf-8") + "\nNouvelle ligne privée.\n", encoding="utf-8")
        outputs.append(("/reload-vault unauthorized", client.post("/reload-vault").text))
        r = client.post("/reload-vault", headers={"Authorization": f"Bearer {RELOAD_TOKEN}"})
        assert r.status_code == 200 and r.json()["modified"] == []
        outputs.append(("/reload-vault", r.text))
        outputs.append(("/health", client.get("/health").text))
        outputs.append(("/openapi.json", client.get("/openapi.json").text))
        for q in questions[:3]:
            outputs.append((f"/ask after reload {q!r}", client.get("/ask", params={"q": q}).text))
        logs = server.logs
    # The server has stopped: its shutdown flushed every span and score to the collector.
    assert collector.wait_for(lambda c: {t for t in trace_ids} <= {s.trace_id for s in c.spans}, timeout=15)

    prompts = json.dumps(fake_ollama.chat_requests(), ensure_ascii=False)
    traces = collector.all_payload_text()
    spans = json.dumps([s.attributes for s in collector.spans], ensure_ascii=False, default=str)
    scores = json.dumps(collector.scores, ensure_ascii=False)
    log_text = logs.text()
    assert "ÉCHO" in prompts or "ÉCHO" in "".join(t for _, t in outputs)  # the echo model did run
    assert len(collector.spans) >= 4 * len(questions)

    leaks: list[str] = []
    for where, text in outputs:
        leaks += find_leaks(where, text, MARKERS + SLUGS + (RELOAD_TOKEN, settings.langfuse_secret_key or ""))
    leaks += find_leaks("prompts sent to the LLM", prompts, MARKERS + SLUGS)
    leaks += find_leaks("trace payloads", traces, MARKERS + SLUGS + (RELOAD_TOKEN, settings.langfuse_secret_key or ""))
    leaks += find_leaks("decoded spans", spans, MARKERS + SLUGS)
    leaks += find_leaks("scores", scores, MARKERS + SLUGS)
    leaks += find_leaks("server log", log_text, MARKERS + SLUGS + (RELOAD_TOKEN, settings.langfuse_secret_key or ""))
    assert leaks == []


def test_memory_is_not_shared_between_sessions(fake_ollama: FakeOllama) -> None:
    from tests.service_fixtures import service_settings

    fake_ollama.script(reply="Réponse pour la session A : MOT-DE-PASSE-DE-A")
    with run_server(service_settings(fake_ollama), SAMPLE_VAULT) as server:
        client = server.client()
        a = client.get("/ask", params={"q": "Que sait-il faire en Rust ?"}).json()["session_id"]
        fake_ollama.script(reply="Réponse B")
        nonce, signature = a.split(".")
        forged = f"{nonce}.{signature[::-1]}"  # A's nonce, a signature the server did not make
        for sid in ("B", "a", "A ", None, forged, nonce, a.upper()):
            params = {"q": "Et ensuite ?"} | ({"session_id": sid} if sid is not None else {})
            client.get("/ask", params=params)
            assert "MOT-DE-PASSE-DE-A" not in fake_ollama.chat_prompts()[-1], sid
        client.get("/ask", params={"q": "Et ensuite ?", "session_id": a})  # A itself goes on
        assert "MOT-DE-PASSE-DE-A" in fake_ollama.chat_prompts()[-1]


def test_reload_names_a_note_turned_private_only_as_removed(fake_ollama: FakeOllama, service_vault: Path) -> None:
    """docs/service.md: a public note that becomes private is reported once, in `removed`, under the id it had
    while public (a front-end cache must drop its page); a private note is never named otherwise."""
    from tests.service_fixtures import service_settings

    turned = service_vault / "10-Projets" / "la-derniere-ecluse.md"
    salary = service_vault / "30-Parcours" / "prive-pretentions-salariales.md"
    rust = service_vault / "20-Competences" / "rust.md"

    def edit(path: Path, old: str = "", new: str = "", append: str = "") -> None:
        text = path.read_text(encoding="utf-8")
        assert old in text
        path.write_text(text.replace(old, new, 1) + append, encoding="utf-8")

    fake_ollama.script(reply=echo_prompt)
    with run_server(service_settings(fake_ollama), service_vault) as server:
        client = server.client()
        texts: list[str] = []

        def reload() -> dict[str, Any]:
            r = client.post("/reload-vault")
            assert r.status_code == 200, r.text
            texts.append(r.text)
            return r.json()

        # Turned private and edited in the same save; a private note and a public note edited beside it.
        edit(turned, "visibility: public", "visibility: private", "\nMARQUEUR-DEVENU-PRIVE\n")
        edit(salary, append="\nMARQUEUR-PRIVE-EDITE\n")
        edit(rust, append="\nUne ligne publique de plus.\n")
        body = reload()
        assert (body["added"], body["removed"], body["modified"]) == ([], ["la-derniere-ecluse"], ["rust"])

        # From now on it is a private note like the others: its edits are never reported.
        edit(turned, append="\nMARQUEUR-DEVENU-PRIVE-2\n")
        edit(salary, append="\nMARQUEUR-PRIVE-EDITE-2\n")
        body = reload()
        assert (body["added"], body["removed"], body["modified"]) == ([], [], [])
        assert "la-derniere-ecluse" not in texts[-1]

        r = client.get("/ask", params={"q": "La Dernière Écluse, le jeu de game jam sous Godot ?"})
        assert all(s["slug"] != "la-derniere-ecluse" for s in r.json()["sources"])
        texts.append(r.text)

    leaks = find_leaks("reload and ask", "\n".join(texts), MARKERS + SLUGS + ("MARQUEUR-",))
    leaks += find_leaks("prompts", json.dumps(fake_ollama.chat_requests(), ensure_ascii=False), ("MARQUEUR-",))
    leaks += find_leaks("server log", server.logs.text(), MARKERS + SLUGS + ("MARQUEUR-", "la-derniere-ecluse"))
    assert leaks == []


def test_no_worker_answers_from_the_vault_before_a_reload(fake_ollama: FakeOllama, service_vault: Path) -> None:
    """Two workers of one deployment (two apps on the same vault folder, sharing its reload stamp, as the
    processes of `--workers 2` do): once POST /reload-vault has answered on one, the other, idle until then,
    never answers from its previous vault, where a note just made private was still public."""
    import time

    import httpx

    from tests.service_fixtures import service_settings

    turned = service_vault / "10-Projets" / "la-derniere-ecluse.md"
    turned.write_text(turned.read_text(encoding="utf-8") + "\nMARQUEUR-ENCORE-PUBLIC\n", encoding="utf-8")
    question = "La Dernière Écluse, le jeu de game jam sous Godot ?"
    fake_ollama.script(reply=echo_prompt)
    settings = service_settings(fake_ollama)
    with run_server(settings, service_vault) as first, run_server(settings, service_vault) as second:
        a, b = first.client(), second.client()
        # While public, the note is a source and its text reaches the prompt: the question does aim at it.
        r = b.get("/ask", params={"q": question})
        assert any(s["slug"] == "la-derniere-ecluse" for s in r.json()["sources"])
        assert "MARQUEUR-ENCORE-PUBLIC" in fake_ollama.chat_prompts()[-1]
        time.sleep(1.2)  # the second worker stays idle a while (it used to look at the stamp once a second)

        text = turned.read_text(encoding="utf-8")
        turned.write_text(text.replace("visibility: public", "visibility: private", 1), encoding="utf-8")
        reloaded = a.post("/reload-vault")
        assert reloaded.status_code == 200 and reloaded.json()["removed"] == ["la-derniere-ecluse"]
        asked = len(fake_ollama.chat_prompts())

        r = b.get("/ask", params={"q": question})  # at once, on the other worker
        assert r.status_code == 200, r.text
        assert all(s["slug"] != "la-derniere-ecluse" for s in r.json()["sources"])
        stream = b.get("/ask/stream", params={"q": question})
        for event, data in sse_events(stream.text):
            if event in ("sources", "done"):
                assert all(s["slug"] != "la-derniere-ecluse" for s in data["sources"])
        prompts = fake_ollama.chat_prompts()[asked:]
        assert len(prompts) == 2 and not [p for p in prompts if "MARQUEUR-ENCORE-PUBLIC" in p]
        assert "MARQUEUR-ENCORE-PUBLIC" not in r.text + stream.text

        # Every worker numbers the vault alike.
        version = reloaded.json()["vault_version"]
        assert a.get("/health").json()["vault"]["vault_version"] == version
        assert b.get("/health").json()["vault"]["vault_version"] == version

        # A worker that cannot follow a reload answers 503, never from the vault it had.
        (service_vault / "10-Projets" / "tout-neuf.md").write_text(
            "---\ntitle: Tout neuf\nslug: tout-neuf\ntype: projet\nvisibility: public\n---\n\nNeuf.\n", encoding="utf-8"
        )
        assert a.post("/reload-vault").status_code == 200
        hidden = service_vault.with_name("vault-moved")
        service_vault.rename(hidden)
        try:
            r = b.get("/ask", params={"q": question})
            assert r.status_code == 503 and r.json()["error"] == "vault_unavailable", r.text
            assert "Traceback" not in r.text
            assert b.get("/health").json()["status"] == "degraded"
        finally:
            hidden.rename(service_vault)
        r = b.get("/ask", params={"q": question})  # the next question catches up
        assert r.status_code == 200 and r.json()["vault_size"] == reloaded.json()["notes"] + 1
        assert httpx.get(f"{second.url}/health", trust_env=False).json()["vault"]["vault_version"] == version + 1


def test_a_note_made_private_leaves_the_conversations_and_the_problems(fake_ollama: FakeOllama, service_vault: Path) -> None:
    """Answers remembered for a session go back to the model with its next question: once a note they may
    quote is made private, they are forgotten. A hidden note with a broken frontmatter is not listed among
    the problems either (its path names it)."""
    from tests.service_fixtures import service_settings

    note = service_vault / "10-Projets" / "la-derniere-ecluse.md"
    fake_ollama.script(reply=echo_prompt)  # the "answer" quotes the whole prompt, note included
    with run_server(service_settings(fake_ollama), service_vault) as server:
        client = server.client()
        r = client.get("/ask", params={"q": "La Dernière Écluse, le jeu de game jam sous Godot ?"})
        assert any(s["slug"] == "la-derniere-ecluse" for s in r.json()["sources"])
        s1 = r.json()["session_id"]
        text = note.read_text(encoding="utf-8")
        note.write_text(text.replace("visibility: public", "visibility: private", 1), encoding="utf-8")
        (service_vault / "30-Parcours" / "prive-casse.md").write_text(
            "---\ntitle: [casse\nvisibility: private\n---\nMARQUEUR-CASSE\n", encoding="utf-8")
        body = client.post("/reload-vault").json()
        assert body["removed"] == ["la-derniere-ecluse"]
        assert all("prive-casse" not in p["path"] for p in body["problems"])
        before = len(fake_ollama.chat_requests())
        client.get("/ask", params={"q": "Et ensuite ?", "session_id": s1})
        sent = json.dumps(fake_ollama.chat_requests()[before:], ensure_ascii=False)
    assert "Godot" not in sent and "Écluse" not in sent
    assert "prive-casse" not in json.dumps(body)


def test_a_title_linking_to_a_private_note_is_cut_in_sources(fake_ollama: FakeOllama, service_vault: Path) -> None:
    from tests.service_fixtures import service_settings

    path = service_vault / "20-Competences" / "rust.md"
    text = path.read_text(encoding="utf-8")
    title = next(line for line in text.splitlines() if line.startswith("title:"))
    path.write_text(text.replace(title, 'title: "Rust ([[prive-pretentions-salariales|mes prétentions]])"', 1),
                    encoding="utf-8")
    with run_server(service_settings(fake_ollama), service_vault) as server:
        r = server.client().get("/ask", params={"q": "Que sait-il faire en Rust ?"})
    rust = next(s for s in r.json()["sources"] if s["slug"] == "rust")
    assert rust["title"] == "Rust ()"
    assert "prive-pretentions-salariales" not in r.text and "prétentions" not in r.text
