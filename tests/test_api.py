"""The HTTP API through a real uvicorn server on 127.0.0.1, with httpx and the fake Ollama."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from grasbot.service.state import lock_path, reload_stamp_path
from grasbot.vault import Vault
from tests.fake_ollama import FakeOllama
from tests.service_fixtures import *  # noqa: F403
from tests.service_fixtures import (
    SAMPLE_VAULT,
    RunningServer,
    closed_port,
    run_server,
    service_settings,
    sse_events,
    state_dir_for_tests,
    stop_process,
    wait_for_health,
    write_note,
)

PUBLIC_COUNT = sum(1 for n in Vault.load(SAMPLE_VAULT).notes.values() if not n.is_private) if SAMPLE_VAULT.is_dir() else 0
RUST = "Que sait-il faire en Rust ?"
OFF_TOPIC = "Comment faire une pâte à crêpes ?"  # below the evidence floor: a clear no, no note goes in
NEAR_MISS = "Quel temps fait-il demain ?"  # in the middle band: the notes go in, tentatively
SUPPORTED = "Aurèle a appris Rust en 2020, en réécrivant un outil de géocodage [rust]."


@pytest.fixture(scope="module")
def shared_fake() -> Iterator[FakeOllama]:
    with FakeOllama() as fake:
        yield fake


@pytest.fixture(scope="module")
def shared_server(shared_fake: FakeOllama) -> Iterator[RunningServer]:
    if not SAMPLE_VAULT.is_dir():
        pytest.skip("the bundled vault/ is missing")
    with run_server(service_settings(shared_fake), SAMPLE_VAULT) as server:
        yield server


@pytest.fixture
def fake(shared_fake: FakeOllama) -> FakeOllama:
    shared_fake.reset()
    return shared_fake


@pytest.fixture
def api(shared_server: RunningServer, fake: FakeOllama) -> Iterator[httpx.Client]:
    shared_server.service.memory.inner.clear()  # (the in-process memory: no Redis here)
    with httpx.Client(base_url=shared_server.url, timeout=httpx.Timeout(20.0, connect=5.0), trust_env=False) as client:
        yield client


# -- /ask -------------------------------------------------------------------------------------------
def test_ask_grounded_answer(api: httpx.Client, fake: FakeOllama) -> None:
    fake.script(reply=SUPPORTED)
    r = api.get("/ask", params={"q": RUST})
    assert r.status_code == 200
    body = r.json()
    assert body["response"] == SUPPORTED
    assert body["grounded"] is True
    assert body["verification"]["status"] == "verified"
    assert body["model"] == "qwen3:8b"
    assert body["vault_size"] == PUBLIC_COUNT
    assert re.fullmatch(r"[0-9a-f]{32}", body["trace_id"])
    first = body["sources"][0]
    assert set(first) == {"slug", "title", "type", "score", "reasons", "url"}
    assert first["slug"] == "rust" and first["type"] == "competence" and first["url"] == "/competences/rust"
    assert first["reasons"] and first["score"] > 0
    scores = [s["score"] for s in body["sources"]]
    assert scores == sorted(scores, reverse=True)
    by_type = {s["type"]: s for s in body["sources"]}
    assert by_type["projet"]["url"] == f"/portfolio/{by_type['projet']['slug']}"
    assert by_type["moc"]["url"] is None
    # The prompt that reached the model: the top note in it, the question last, the documented options.
    sent = fake.chat_requests()[-1]
    assert sent["options"] == {"num_ctx": 8192, "num_predict": 1024, "temperature": 0.4}
    assert sent["think"] is False and sent["keep_alive"] == "30m" and sent["stream"] is False
    user = sent["messages"][-1]["content"]
    assert "[rust]" in user and user.endswith(f"Question du visiteur : {RUST}")
    assert "Server-Timing" in r.headers and "llm;dur=" in r.headers["Server-Timing"]


def test_ask_off_topic_is_ungrounded(api: httpx.Client, fake: FakeOllama) -> None:
    fake.script(reply="Je ne peux parler que du parcours de l'auteur.")
    body = api.get("/ask", params={"q": OFF_TOPIC}).json()
    assert body["grounded"] is False
    assert body["sources"] == []
    user = fake.chat_requests()[-1]["messages"][-1]["content"]
    assert "Aucune note du vault" in user and "###" not in user


def test_think_block_never_reaches_the_visitor(api: httpx.Client, fake: FakeOllama) -> None:
    fake.script(reply="Réponse nette [rust].", think="je pèse le pour et le contre")
    assert api.get("/ask", params={"q": RUST}).json()["response"] == "Réponse nette [rust]."
    text = api.get("/ask/stream", params={"q": RUST}).text
    assert "pèse" not in text and "think" not in text


@pytest.mark.parametrize("q", ["", "   ", "\x00\x07\n\t", "\u200b\u202e"])
def test_empty_question_is_400(api: httpx.Client, fake: FakeOllama, q: str) -> None:
    r = api.get("/ask", params={"q": q})
    assert r.status_code == 400
    assert r.json()["error"] == "empty_question"
    assert fake.chat_requests() == []


def test_missing_question_is_400(api: httpx.Client) -> None:
    r = api.get("/ask")
    assert r.status_code == 400 and r.json()["error"] == "empty_question"


def test_question_length_limit(api: httpx.Client, fake: FakeOllama) -> None:
    r = api.get("/ask", params={"q": "a" * 2001})
    assert r.status_code == 413
    assert r.json() == {"error": "question_too_long", "message": "the question is longer than 2000 characters", "max_chars": 2000}
    assert fake.chat_requests() == []
    assert api.get("/ask", params={"q": "é" * 2000}).status_code == 200  # accented, percent-encoded: 18 KB URL
    assert api.get("/ask/stream", params={"q": "a" * 2001}).status_code == 413


def test_control_characters_are_stripped(api: httpx.Client, fake: FakeOllama) -> None:
    r = api.get("/ask", params={"q": "Que sait-il\x00 faire\x1b[31m en\u202e Rust\t?\r\n"})
    assert r.status_code == 200
    user = fake.chat_requests()[-1]["messages"][-1]["content"]
    assert user.endswith("Question du visiteur : Que sait-il faire[31m en Rust ?")
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f\u202e]", user)


@pytest.mark.parametrize("param", ["session_id", "user_id"])
def test_bad_ids_are_422(api: httpx.Client, fake: FakeOllama, param: str) -> None:
    r = api.get("/ask", params={"q": RUST, param: "x" * 201})
    assert r.status_code == 422 and r.json()["error"] == f"invalid_{param}"
    assert api.get("/ask", params={"q": RUST, param: "a b\n"}).status_code == 422
    # A trailing newline (`abc%0A`) is not an id either: a `$`-anchored pattern let it through.
    for path in ("/ask", "/ask/stream"):
        r = api.get(path, params={"q": RUST, param: "abc\n"})
        assert r.status_code == 422 and r.json()["error"] == f"invalid_{param}", path
    assert fake.chat_requests() == []
    assert api.get("/ask", params={"q": RUST, param: "abc"}).status_code == 200


def test_memory_is_per_session(api: httpx.Client, fake: FakeOllama) -> None:
    fake.script(reply="Première réponse sur Rust [rust].")
    alice_id = api.get("/ask", params={"q": RUST}).json()["session_id"]
    fake.script(reply="Suite.")
    again = api.get("/ask", params={"q": "Et avec quels outils ?", "session_id": alice_id}).json()
    assert again["session_id"] == alice_id  # an issued id goes on
    alice = fake.chat_requests()[-1]["messages"]
    assert [m["role"] for m in alice] == ["system", "user", "assistant", "user"]
    assert alice[1]["content"] == RUST and alice[2]["content"] == "Première réponse sur Rust [rust]."
    bob_id = api.get("/ask", params={"q": "Et avec quels outils ?"}).json()["session_id"]
    bob = fake.chat_requests()[-1]["messages"]
    assert [m["role"] for m in bob] == ["system", "user"] and bob_id != alice_id
    assert "Première réponse" not in str(bob)


def test_memory_keeps_the_last_four_turns(api: httpx.Client, fake: FakeOllama) -> None:
    session = None
    for i in range(6):
        fake.script(reply=f"réponse {i}")
        session = api.get("/ask", params={"q": f"{RUST} ({i})"} | ({"session_id": session} if session else {})).json()["session_id"]
    messages = fake.chat_requests()[-1]["messages"]
    assert [m["content"] for m in messages if m["role"] == "assistant"] == ["réponse 1", "réponse 2", "réponse 3", "réponse 4"]


# -- /ask/stream ------------------------------------------------------------------------------------
def test_stream_events(api: httpx.Client, fake: FakeOllama) -> None:
    reply = "Aurèle écrit un collecteur en Rust [collecte-telemetrie-solaire] et des outils [rust]."
    fake.script(reply=reply)
    with api.stream("GET", "/ask/stream", params={"q": RUST}) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        events = sse_events(r.read().decode())
    names = [e for e, _ in events]
    assert names[0] == "sources" and names[-2:] == ["verification", "done"]
    assert set(names[1:-2]) == {"token"} and len(names) > 5
    assert events[-2][1] == events[-1][1]["verification"]
    sources, done = events[0][1], events[-1][1]
    assert sources["sources"][0]["slug"] == "rust" and sources["grounded"] is True
    assert "".join(d["text"] for e, d in events if e == "token") == reply
    assert done["response"] == reply
    assert done["trace_id"] == sources["trace_id"]
    assert done["sources"] == sources["sources"] and done["vault_size"] == PUBLIC_COUNT
    assert fake.chat_requests()[-1]["stream"] is True


def test_stream_error_mid_stream_closes_with_error_event(api: httpx.Client, fake: FakeOllama) -> None:
    fake.script(reply="Un début de réponse", error_mid_stream="llama runner process has terminated")
    events = sse_events(api.get("/ask/stream", params={"q": RUST}).text)
    names = [e for e, _ in events]
    assert names[0] == "sources" and "token" in names and names[-1] == "error"
    error = events[-1][1]
    assert error["status"] == 502 and error["error"] == "llm_bad_response"
    assert error["sources"] and error["trace_id"]
    assert "llama runner" not in str(error)


def test_failed_answer_is_not_remembered(api: httpx.Client, fake: FakeOllama) -> None:
    fake.script(fail_status=500)
    failed = api.get("/ask", params={"q": RUST})
    assert failed.status_code == 502 and failed.json()["session_id"]  # error bodies carry the id too
    fake.script(reply="ok")
    api.get("/ask", params={"q": RUST, "session_id": failed.json()["session_id"]})
    assert len(fake.chat_requests()[-1]["messages"]) == 2


# -- LLM failures -----------------------------------------------------------------------------------
def test_unreachable_llm_is_503_with_sources() -> None:
    settings = service_settings(None, ollama_url=f"http://127.0.0.1:{closed_port()}")
    with run_server(settings, SAMPLE_VAULT) as server:
        # A short client timeout: the answer must come quickly, not after the generation timeout.
        with httpx.Client(base_url=server.url, timeout=httpx.Timeout(5.0), trust_env=False) as client:
            started = time.monotonic()
            r = client.get("/ask", params={"q": RUST})
            waited = time.monotonic() - started
            assert r.status_code == 503, waited
            body = r.json()
            assert body["error"] == "llm_unavailable"
            assert body["sources"][0]["slug"] == "rust" and body["grounded"] is True and body["trace_id"]
            events = sse_events(client.get("/ask/stream", params={"q": RUST}).text)
            assert [e for e, _ in events] == ["sources", "failed", "error"] and events[-1][1]["status"] == 503
            assert events[1][1] == events[2][1]  # `error`: the deprecated name, for clients written before `failed`
            health = client.get("/health").json()
            assert health["llm"]["reachable"] is False and health["status"] == "degraded"


def test_slow_llm_is_504(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(delay=10.0)
    with run_server(service_settings(fake_ollama, llm_timeout=0.4), SAMPLE_VAULT) as server:
        client = server.client()
        r = client.get("/ask", params={"q": RUST})
        assert r.status_code == 504
        assert r.json()["error"] == "llm_timeout" and r.json()["sources"]
        events = sse_events(client.get("/ask/stream", params={"q": RUST}).text)
        assert [e for e, _ in events][-2:] == ["failed", "error"] and events[-1][1]["status"] == 504


def test_llm_error_statuses(api: httpx.Client, fake: FakeOllama) -> None:
    fake.script(fail_status=500, fail_message="out of memory")
    r = api.get("/ask", params={"q": RUST})
    assert r.status_code == 502 and r.json()["error"] == "llm_bad_response" and r.json()["sources"]
    assert "out of memory" not in r.text
    fake.script(empty=True)
    r = api.get("/ask", params={"q": RUST})
    assert r.status_code == 502 and r.json()["error"] == "llm_empty_answer"
    fake.script(drop=True)
    r = api.get("/ask", params={"q": RUST})
    assert r.status_code == 502


def test_unknown_model(fake_ollama: FakeOllama) -> None:
    with run_server(service_settings(fake_ollama, llm_model="mistral:7b"), SAMPLE_VAULT) as server:
        client = server.client()
        r = client.get("/ask", params={"q": RUST})
        assert r.status_code == 502 and r.json()["error"] == "llm_model_not_found"
        health = client.get("/health").json()
        assert health["llm"]["reachable"] is True and health["llm"]["model_available"] is False


# -- /health, OpenAPI, CORS -------------------------------------------------------------------------
def test_health(api: httpx.Client) -> None:
    body = api.get("/health").json()
    assert body["status"] == "ok"
    assert body["vault"]["notes"] == body["vault_size"] == PUBLIC_COUNT
    assert sum(body["vault"]["by_type"].values()) == PUBLIC_COUNT
    assert body["llm"] == {
        "backend": "ollama", "url": body["config"]["ollama_url"], "model": "qwen3:8b",
        "reachable": True, "model_available": True,
        "in_flight": 0, "max_connections": 200, "saturated": False,
    }  # fmt: skip
    assert body["observability"] == {"langfuse_enabled": False}
    assert body["config"]["search_top_k"] == 5 and body["config"]["ask_max_chars"] == 2000


def test_health_is_degraded_while_every_llm_connection_is_taken(fake_ollama: FakeOllama) -> None:
    """Generations under way are counted: with all of the pool's connections taken, new questions would
    wait, so /health does not say plainly ok."""
    import threading

    fake_ollama.script(reply="lent", delay=1.5)
    with run_server(service_settings(fake_ollama), SAMPLE_VAULT) as server:
        server.service.llm.max_connections = 2  # what /health compares with (the pool itself holds 200)
        asks = [threading.Thread(target=httpx.get, args=(f"{server.url}/ask",), kwargs={"params": {"q": RUST}, "timeout": 10}) for _ in range(2)]
        for t in asks:
            t.start()
        assert fake_ollama.wait_until(lambda f: f.chats_in_progress == 2, timeout=5)
        body = httpx.get(f"{server.url}/health", timeout=5, trust_env=False).json()
        assert body["status"] == "degraded"
        assert body["llm"]["in_flight"] == 2 and body["llm"]["saturated"] is True
        for t in asks:
            t.join(timeout=10)
        body = httpx.get(f"{server.url}/health", timeout=5, trust_env=False).json()
        assert body["status"] == "ok" and body["llm"]["in_flight"] == 0


def test_health_shows_no_secret(fake_ollama: FakeOllama) -> None:
    settings = service_settings(
        fake_ollama,
        reload_token="tok-VERY-SECRET-1",
        langfuse_public_key="pk-lf-x",
        langfuse_secret_key="sk-lf-VERY-SECRET-2",
        ollama_url=fake_ollama.url.replace("http://", "http://admin:VERY-SECRET-3@"),
    )
    assert "VERY-SECRET" not in repr(settings)
    with run_server(settings, SAMPLE_VAULT) as server:
        client = server.client()
        text = client.get("/health").text
        assert "VERY-SECRET" not in text
        assert '"reload_token_set":true' in text.replace(" ", "")
        assert client.get("/ask", params={"q": RUST}).status_code == 200
        assert client.post("/reload-vault", headers={"Authorization": "Bearer tok-VERY-SECRET-1"}).status_code == 200
        assert "VERY-SECRET" not in server.logs.text()


def test_openapi_and_docs(api: httpx.Client) -> None:
    spec = api.get("/openapi.json").json()
    assert {"/ask", "/ask/stream", "/health", "/reload-vault", "/feedback"} <= set(spec["paths"])
    assert api.get("/docs").status_code == 200


def test_unknown_route_is_json_404(api: httpx.Client) -> None:
    r = api.get("/nope")
    assert r.status_code == 404 and r.json()["error"] == "not_found"
    assert api.delete("/ask").status_code == 405


def test_cors_from_configuration(fake_ollama: FakeOllama) -> None:
    settings = service_settings(fake_ollama, cors_origins=("https://site.example",))
    with run_server(settings, SAMPLE_VAULT) as server:
        client = server.client()
        ok = client.get("/health", headers={"Origin": "https://site.example"})
        assert ok.headers.get("access-control-allow-origin") == "https://site.example"
        other = client.get("/health", headers={"Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers
        pre = client.options(
            "/ask", headers={"Origin": "https://site.example", "Access-Control-Request-Method": "GET"}
        )
        assert pre.status_code == 200


def test_no_cors_by_default(api: httpx.Client) -> None:
    assert "access-control-allow-origin" not in api.get("/health", headers={"Origin": "https://site.example"}).headers


# -- /feedback --------------------------------------------------------------------------------------
def test_feedback_without_langfuse_is_accepted_but_not_recorded(api: httpx.Client) -> None:
    trace_id = api.get("/ask", params={"q": RUST}).json()["trace_id"]
    r = api.post("/feedback", json={"trace_id": trace_id, "value": 1, "comment": "utile"})
    assert r.status_code == 200 and r.json() == {"recorded": False, "trace_id": trace_id}


@pytest.mark.parametrize(
    "payload",
    [
        {"trace_id": "z" * 32, "value": 1},
        {"trace_id": "abc", "value": 1},
        {"trace_id": "a" * 32, "value": 2},
        {"trace_id": "a" * 32},
        {"trace_id": "a" * 32, "value": 1, "comment": "x" * 2001},
    ],
)
def test_feedback_validation(api: httpx.Client, payload: dict[str, object]) -> None:
    r = api.post("/feedback", json=payload)
    assert r.status_code == 422
    assert r.json()["error"] in {"invalid_request", "invalid_trace_id"}
    assert "x" * 100 not in r.text  # the submitted value is not echoed


@pytest.mark.parametrize(
    "body",
    [
        b'{"trace_id":"\xff","value":1}',  # not UTF-8
        b'{"trace_id":"' + "é".encode("latin-1") * 32 + b'","value":1}',  # Latin-1, not UTF-8
        b"[" * 10_000,  # nested beyond what the JSON decoder accepts (and under MAX_BODY_BYTES)
    ],
    ids=["not-utf8", "latin1", "deep"],
)
def test_unreadable_body_is_422_invalid_request(api: httpx.Client, body: bytes) -> None:
    r = api.post("/feedback", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 422
    assert r.json()["error"] == "invalid_request"
    assert r.json()["detail"] == [{"loc": ["body"], "msg": r.json()["detail"][0]["msg"]}]
    assert "trace_id" not in r.text and "0xff" not in r.text and "codec" not in r.text  # nothing echoed


def raw_exchange(url: str, request: bytes) -> bytes:
    """Send `request` as is on a new connection and read until the server closes it."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return received


def test_unreadable_request_is_json_400(shared_server: RunningServer) -> None:
    """A request uvicorn cannot parse gets a JSON 400 with a stable code, not uvicorn's plain text."""
    from grasbot.service.cli import MAX_REQUEST_HEAD

    # A request line over the 64 KiB head limit (what a 1 MB `q` hits), sent whole before the server
    # answers so the connection closes cleanly; and a request line that is not HTTP at all.
    too_long = b"GET /ask?q=" + b"a" * (MAX_REQUEST_HEAD + 4096)
    for request in (too_long, b"NOT HTTP AT ALL\r\n\r\n"):
        answer = raw_exchange(shared_server.url, request)
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400 "), answer[:200]
        assert b"content-type: application/json" in head.lower()
        assert b"access-control-allow-origin: *" in head.lower()  # a page (its EventSource) can read it
        assert json.loads(body) == {
            "error": "bad_http_request",
            "message": "the HTTP request could not be read: malformed, or its URL and headers are over 64 KiB",
        }
    with shared_server.client() as client:  # the server keeps serving
        assert client.get("/health").status_code == 200


# -- /reload-vault ----------------------------------------------------------------------------------
def test_reload_reports_changes_and_swaps(fake_ollama: FakeOllama, service_vault: Path) -> None:
    with run_server(service_settings(fake_ollama), service_vault) as server:
        client = server.client()
        before = client.get("/health").json()["vault_size"]
        rust = service_vault / "20-Competences" / "rust.md"
        rust.write_text(rust.read_text(encoding="utf-8") + "\nMARQUEUR-APRES-RECHARGEMENT\n", encoding="utf-8")
        (service_vault / "10-Projets" / "la-derniere-ecluse.md").unlink()
        write_note(
            service_vault,
            "10-Projets/nouveau-projet.md",
            "title: Nouveau projet\nslug: nouveau-projet\ntype: projet\nvisibility: public",
            "Un nouveau projet.",
        )
        write_note(service_vault, "30-Parcours/prive-nouveau.md", "title: Secret\nslug: prive-nouveau\ntype: parcours\nvisibility: private", "x")
        client.get("/ask", params={"q": RUST})
        assert "MARQUEUR-APRES-RECHARGEMENT" not in fake_ollama.chat_prompts()[-1]  # not reloaded yet
        r = client.post("/reload-vault")
        assert r.status_code == 200
        body = r.json()
        assert body["status"] == "reloaded" and body["vault_version"] == 2
        assert body["added"] == ["nouveau-projet"]
        assert body["removed"] == ["la-derniere-ecluse"]
        assert body["modified"] == ["rust"]
        assert body["notes"] == before and body["problems"] == []
        assert "prive-nouveau" not in r.text  # a private note is not even named
        client.get("/ask", params={"q": RUST})
        assert "MARQUEUR-APRES-RECHARGEMENT" in fake_ollama.chat_prompts()[-1]


def test_reload_with_a_broken_note_keeps_serving(fake_ollama: FakeOllama, service_vault: Path) -> None:
    with run_server(service_settings(fake_ollama), service_vault) as server:
        client = server.client()
        broken = service_vault / "10-Projets" / "casse.md"
        broken.write_text("---\ntitle: [non fermé\nslug: casse\n---\n\nCorps de la note cassée.\n", encoding="utf-8")
        hidden = service_vault / "30-Parcours" / "prive-casse.md"
        hidden.write_text("---\ntitle: [oups\nvisibility: private\n---\n\nMARQUEUR-PRIVE-CASSE\n", encoding="utf-8")
        r = client.post("/reload-vault")
        assert r.status_code == 200
        body = r.json()
        problems = {p["path"]: p for p in body["problems"]}
        assert set(problems) == {"10-Projets/casse.md"}  # a hidden note is not named, even by its problems
        assert all(p["line"] >= 1 and p["code"] for p in problems.values())
        assert "MARQUEUR-PRIVE-CASSE" not in r.text and "oups" not in r.text
        assert "casse" in body["added"]  # no visibility: served from its file name and body, as lint shows
        assert "prive-casse" not in body["added"]  # a non-public visibility in broken YAML: hidden
        assert client.get("/ask", params={"q": RUST}).status_code == 200
        client.get("/ask", params={"q": "oups prive casse"})
        assert "MARQUEUR-PRIVE-CASSE" not in "".join(fake_ollama.chat_prompts())


def test_reload_of_a_missing_vault_keeps_the_old_one(fake_ollama: FakeOllama, service_vault: Path) -> None:
    with run_server(service_settings(fake_ollama), service_vault) as server:
        client = server.client()
        moved = service_vault.with_name("ailleurs")
        service_vault.rename(moved)
        r = client.post("/reload-vault")
        assert r.status_code == 500 and r.json()["error"] == "reload_failed"
        assert client.get("/ask", params={"q": RUST}).status_code == 200
        assert client.get("/health").json()["vault"]["vault_version"] == 1


def test_reload_token(fake_ollama: FakeOllama) -> None:
    token = "s3cr3t-reload-token-XYZ"
    with run_server(service_settings(fake_ollama, reload_token=token), SAMPLE_VAULT) as server:
        client = server.client()
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": token}, {"Authorization": f"Basic {token}"}):
            r = client.post("/reload-vault", headers=headers)
            assert r.status_code == 401, headers
            assert r.json()["error"] == "unauthorized" and r.headers["www-authenticate"] == "Bearer"
            assert token not in r.text
        assert client.post("/reload-vault", headers={"Authorization": f"Bearer {token}"}).status_code == 200
        assert client.post("/reload-vault", headers={"Authorization": f"bearer {token}"}).status_code == 200
        assert token not in server.logs.text()


def test_server_binds_loopback_by_default() -> None:
    from grasbot.service.cli import build_parser

    args = build_parser().parse_args(["serve"])
    assert args.host == "127.0.0.1" and args.port == 8000 and args.workers == 1


# -- configuration and the command line ------------------------------------------------------------
def test_settings_from_env_and_dotenv(tmp_path: Path) -> None:
    from grasbot.service.settings import ConfigError, Settings

    env_file = tmp_path / ".env"
    env_file.write_text(
        "LLM_MODEL=qwen3:14b\nSEARCH_TOP_K=7\nCORS_ORIGINS=https://a.example, https://b.example\n"
        "LANGFUSE_HOST=https://lf.example\nLLM_THINK=true\nASK_MAX_CHARS=500\n",
        encoding="utf-8",
    )
    s = Settings.from_env(environ={"SEARCH_TOP_K": "3"}, env_file=env_file)
    assert s.llm_model == "qwen3:14b"  # from .env
    assert s.search_top_k == 3  # the real environment wins over .env
    assert s.cors_origins == ("https://a.example", "https://b.example")
    assert s.langfuse_base_url == "https://lf.example"  # LANGFUSE_HOST as the fallback
    assert s.llm_think is True and s.ask_max_chars == 500
    assert not s.langfuse_enabled
    defaults = Settings.from_env(environ={}, env_file=None)
    assert (defaults.llm_url, defaults.llm_model, defaults.search_top_k) == ("http://localhost:11434", "qwen3:8b", 5)
    assert (defaults.llm_num_ctx, defaults.llm_num_predict, defaults.llm_temperature, defaults.llm_keep_alive) == (8192, 1024, 0.4, "30m")
    assert defaults.llm_think is False and defaults.ask_max_chars == 2000
    for bad in ({"SEARCH_TOP_K": "cinq"}, {"LLM_TIMEOUT": "-1"}, {"LLM_TIMEOUT": "inf"}, {"LLM_TIMEOUT": "nan"},
                {"OLLAMA_URL": "localhost:11434"}, {"LLM_THINK": "peut-être"}):
        with pytest.raises(ConfigError) as info:
            Settings.from_env(environ=bad, env_file=None)
        assert next(iter(bad)) in str(info.value)


def test_grasbot_serve_command(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    import sys

    port = closed_port()
    env = serve_env()
    env.update(OLLAMA_URL=fake_ollama.url, VAULT_DIR=str(tmp_path / "nowhere"), GRASBOT_RELOAD_TOKEN="tok-serve")
    cmd = [sys.executable, "-m", "grasbot.service.cli", "serve", "--vault", str(SAMPLE_VAULT), "--port", str(port), "--workers", "2"]
    proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 30
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5, trust_env=False) as client:
            while True:
                try:
                    # (the vault's folder is a detail for a caller with the reload token)
                    health = client.get("/health", headers={"Authorization": "Bearer tok-serve"}).json()
                    break
                except httpx.HTTPError:
                    assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.stdout else ""
                    time.sleep(0.1)
            assert health["vault"]["dir"] == str(SAMPLE_VAULT.resolve())  # --vault wins over VAULT_DIR
            assert client.get("/ask", params={"q": RUST}).status_code == 200
    finally:
        stop_process(proc)
    missing = subprocess.run(
        [sys.executable, "-m", "grasbot.service.cli", "serve", "--vault", str(tmp_path / "absent")],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip  (cwd: a developer's .env in the repository is not read)
    assert missing.returncode == 2
    assert "vault folder not found" in missing.stderr and "Traceback" not in missing.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "grasbot.service.cli", "serve", "--vault", str(SAMPLE_VAULT)],
        env={**env, "SEARCH_TOP_K": "many"}, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bad.returncode == 2 and "SEARCH_TOP_K" in bad.stderr and "Traceback" not in bad.stderr


def test_blank_reload_token_is_refused(tmp_path: Path) -> None:
    """A set-but-blank GRASBOT_RELOAD_TOKEN (a failed `$(...)`) stops the start; absent still means no token."""
    import sys

    from grasbot.service.settings import ConfigError, Settings

    assert Settings.from_env(environ={}, env_file=None).reload_token is None  # absent: no authentication
    assert Settings.from_env(environ={"GRASBOT_RELOAD_TOKEN": " tok "}, env_file=None).reload_token == "tok"
    for blank in ("", "   ", "\t\n"):
        with pytest.raises(ConfigError, match="GRASBOT_RELOAD_TOKEN"):
            Settings.from_env(environ={"GRASBOT_RELOAD_TOKEN": blank}, env_file=None)
    env_file = tmp_path / ".env"
    env_file.write_text("GRASBOT_RELOAD_TOKEN=\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="GRASBOT_RELOAD_TOKEN"):
        Settings.from_env(environ={}, env_file=env_file)
    with pytest.raises(ConfigError, match="GRASBOT_RELOAD_TOKEN"):  # however the settings are built
        Settings.from_env(environ={}, env_file=None).with_overrides(reload_token="")

    env = serve_env()
    cmd = [sys.executable, "-m", "grasbot.service.cli", "serve", "--vault", str(SAMPLE_VAULT), "--port", str(closed_port())]
    run = subprocess.run(cmd, env={**env, "GRASBOT_RELOAD_TOKEN": ""}, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert "GRASBOT_RELOAD_TOKEN" in run.stderr and "empty" in run.stderr and "Traceback" not in run.stderr


def forget_reloads(vault: Path) -> None:
    """Remove the reload stamp (and its lock) that the servers of `vault` share in the tests' state folder."""
    stamp = reload_stamp_path(vault, state_dir_for_tests())
    stamp.unlink(missing_ok=True)
    lock_path(stamp).unlink(missing_ok=True)


def serve_env(**extra: str) -> dict[str, str]:
    """The environment of a `grasbot serve` started by a test: none of the user's LANGFUSE_/GRASBOT_
    variables, and the tests' private state folder."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGFUSE_", "GRASBOT_", "UVICORN_"))}
    env["GRASBOT_STATE_DIR"] = str(state_dir_for_tests())
    # Every test request comes from 127.0.0.1: the limits have tests of their own (tests/test_replicas.py)
    env["GRASBOT_RATE_LIMIT"] = env["GRASBOT_MAX_GENERATIONS"] = "0"
    env.update(extra)
    return env


def start_and_log(cmd: list[str], env: dict[str, str], log_path: Path, port: int, reload: bool = True) -> str:
    """Run a server command until /health answers, optionally reload once, stop it; return its whole output."""
    with log_path.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, env=env, cwd=log_path.parent, stdout=out, stderr=subprocess.STDOUT, text=True)
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5, trust_env=False) as client:
                wait_for_health(client, proc, log_path)
                if reload:
                    assert client.post("/reload-vault").status_code == 200
        finally:
            stop_process(proc)
    return log_path.read_text(encoding="utf-8")


def test_log_level_applies_to_grasbot_lines(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    """`grasbot serve --log-level info` shows GrasBot's own INFO lines, formatted like uvicorn's, once each."""
    import sys

    env = serve_env()
    env.update(OLLAMA_URL=fake_ollama.url)
    forget_reloads(SAMPLE_VAULT)  # versions follow the vault's reload stamp: start from a fresh one
    port = closed_port()
    serve = [sys.executable, "-m", "grasbot.service.cli", "serve", "--vault", str(SAMPLE_VAULT), "--port", str(port)]
    text = start_and_log([*serve, "--log-level", "info"], env, tmp_path / "info.log", port)
    ready = re.findall(r"(?m)^INFO: +GrasBot ready: vault .* \(\d+ public notes\), model qwen3:8b at .*, langfuse off$", text)
    assert len(ready) == 1, text
    assert len(re.findall(r"(?m)^INFO: +vault reloaded: version 2, \d+ notes", text)) == 1, text
    assert len(re.findall(r"(?m)^INFO: +Langfuse disabled", text)) == 1, text
    assert re.search(r"(?m)^INFO: +Uvicorn running on", text)  # uvicorn's own lines, same format
    from tests.private_markers import PRIVATE_MARKERS, PRIVATE_SLUGS

    assert not [m for m in PRIVATE_MARKERS + PRIVATE_SLUGS if m.casefold() in text.casefold()]  # privacy rules kept

    port = closed_port()
    serve[-1] = str(port)
    quiet = start_and_log([*serve, "--log-level", "warning"], env, tmp_path / "warning.log", port)
    forget_reloads(SAMPLE_VAULT)
    assert "GrasBot ready" not in quiet and "vault reloaded" not in quiet and "Uvicorn running" not in quiet


def test_plain_uvicorn_log_level_applies_to_grasbot_lines(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    """Under `uvicorn --factory grasbot.service.api:create_app` (docs/service.md), GrasBot's lines follow uvicorn's."""
    import sys

    env = serve_env()
    env.update(OLLAMA_URL=fake_ollama.url, VAULT_DIR=str(SAMPLE_VAULT))
    port = closed_port()
    cmd = [sys.executable, "-m", "uvicorn", "--factory", "grasbot.service.api:create_app", "--port", str(port), "--log-level", "info"]
    forget_reloads(SAMPLE_VAULT)
    text = start_and_log(cmd, env, tmp_path / "uvicorn.log", port)
    forget_reloads(SAMPLE_VAULT)
    assert len(re.findall(r"(?m)^INFO: +GrasBot ready: ", text)) == 1, text
    assert len(re.findall(r"(?m)^INFO: +vault reloaded: version 2", text)) == 1, text


def test_a_reload_reaches_every_worker(tmp_path: Path, fake_ollama: FakeOllama, service_vault: Path) -> None:
    """With --workers 2, a reload lands on one worker; the other follows through the shared stamp."""
    import sys

    port = closed_port()
    env = serve_env(OLLAMA_URL=fake_ollama.url, GRASBOT_RELOAD_TOKEN="tok-workers")
    auth = {"Authorization": "Bearer tok-workers"}  # the worker's pid is a detail for a caller with the token
    cmd = [sys.executable, "-m", "grasbot.service.cli", "serve", "--vault", str(service_vault), "--port", str(port), "--workers", "2", "--log-level", "warning"]
    proc = subprocess.Popen(cmd, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        # A fresh connection per request, so the kernel spreads them over both workers.
        def health() -> dict:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5, trust_env=False) as c:
                return c.get("/health", headers=auth).json()

        while True:
            try:
                health()
                break
            except httpx.HTTPError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        pids: set[int] = set()
        while len(pids) < 2:  # both workers are up and answering with the old vault
            assert time.monotonic() < deadline, "the second worker never answered"
            pids.add(health()["worker_pid"])
        write_note(service_vault, "10-Projets/tout-neuf.md", "title: Tout neuf\nslug: tout-neuf\ntype: projet\nvisibility: public", "Neuf.")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5, trust_env=False) as c:
            assert c.post("/reload-vault", headers=auth).json()["added"] == ["tout-neuf"]
        updated: set[int] = set()
        deadline = time.monotonic() + 20
        while updated != pids:  # bounded poll: every worker ends up on the new vault
            assert time.monotonic() < deadline, f"workers {pids - updated} kept serving the old vault"
            body = health()
            if body["vault_size"] == PUBLIC_COUNT + 1:
                updated.add(body["worker_pid"])
            time.sleep(0.05)
    finally:
        stop_process(proc)
        forget_reloads(service_vault)


def test_client_leaving_a_stream_does_not_hang_the_server(fake_ollama: FakeOllama) -> None:
    fake_ollama.script(reply=" ".join(f"mot{i}" for i in range(200)), chunk_delay=0.2)  # 40 s if read to the end
    with run_server(service_settings(fake_ollama, llm_timeout=60.0), SAMPLE_VAULT) as server:
        with httpx.Client(base_url=server.url, timeout=10, trust_env=False) as client:
            with client.stream("GET", "/ask/stream", params={"q": RUST}) as r:
                assert "event: sources" in r.iter_lines()  # (reads up to the first event)
            # The visitor left after the first event; the server keeps answering others at once.
            fake_ollama.script(reply="ok")
            assert client.get("/ask", params={"q": RUST}).json()["response"] == "ok"
        assert "internal error" not in server.logs.text()
    # Leaving the `with` stopped the server: had the abandoned generation kept it busy, this would time out.


def _leave_streams_after_first_token(url: str, count: int) -> None:
    """Open `count` /ask/stream at once and drop each connection as soon as its first token arrives."""
    import asyncio

    async def one(client: httpx.AsyncClient) -> None:
        async with client.stream("GET", "/ask/stream", params={"q": RUST}) as r:
            async for line in r.aiter_lines():
                if line == "event: token":
                    return  # leaving the `with` closes the connection mid-stream
        raise AssertionError("the stream ended before its first token")

    async def main() -> None:
        limits = httpx.Limits(max_connections=count, max_keepalive_connections=0)
        async with httpx.AsyncClient(base_url=url, timeout=20, trust_env=False, limits=limits) as client:
            await asyncio.gather(*(one(client) for _ in range(count)))

    asyncio.run(main())


def test_visitors_leaving_streams_close_the_upstream_connections(fake_ollama: FakeOllama) -> None:
    """A visitor who leaves a stream stops its generation: the connection to Ollama is closed at once
    (before, every one stayed open and counted in the LLM client's pool for good, and after 200 of them
    every question hung until 504), and no task is left pending."""
    import gc

    count = 30
    # 200 words, 0.2 s apart: 40 s to read to the end, far beyond the waits below.
    fake_ollama.script(reply=" ".join(f"mot{i}" for i in range(200)), delay=0.5, chunk_delay=0.2)
    with run_server(service_settings(fake_ollama, llm_timeout=60.0), SAMPLE_VAULT) as server:
        probing = fake_ollama.open_connections  # the start-up probe's keep-alive connection (as after /health)
        _leave_streams_after_first_token(server.url, count)
        assert fake_ollama.wait_until(lambda f: f.chats_in_progress == 0 and f.open_connections <= probing, timeout=5), (
            f"{fake_ollama.chats_in_progress} chats still being read, {fake_ollama.open_connections} connections open"
        )
        assert fake_ollama.abandoned_chats == count
        assert server.service.llm.in_flight == 0
        fake_ollama.script(reply="toujours là")
        started = time.monotonic()
        r = httpx.get(f"{server.url}/ask", params={"q": RUST}, timeout=10, trust_env=False)
        assert r.status_code == 200 and r.json()["response"] == "toujours là"
        assert time.monotonic() - started < 2
        gc.collect()  # a pending task dropped on the floor is reported when it is collected
        time.sleep(0.1)
        assert "Task was destroyed" not in server.logs.text()
        assert not server.service._tasks


def test_visitor_leaving_a_plain_ask_cancels_the_generation(fake_ollama: FakeOllama) -> None:
    """GET /ask whose client gives up: the generation is cancelled and its Ollama connection closed,
    instead of running to the end for nobody."""
    fake_ollama.script(reply="trop tard", delay=30)
    with run_server(service_settings(fake_ollama, llm_timeout=60.0), SAMPLE_VAULT) as server:
        probing = fake_ollama.open_connections  # the start-up probe's keep-alive connection (as after /health)
        with pytest.raises(httpx.ReadTimeout):
            httpx.get(f"{server.url}/ask", params={"q": RUST}, timeout=httpx.Timeout(1.0), trust_env=False)
        assert fake_ollama.wait_until(lambda f: f.abandoned_chats == 1 and f.open_connections <= probing, timeout=5), (
            f"the fake still answers {fake_ollama.chats_in_progress} chats"
        )
        assert fake_ollama.wait_until(lambda _: not server.service._tasks, timeout=2)
        fake_ollama.script(reply="ok")
        assert httpx.get(f"{server.url}/ask", params={"q": RUST}, timeout=10, trust_env=False).json()["response"] == "ok"
