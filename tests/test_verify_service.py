"""Verification through the whole service path: a real uvicorn, real HTTP, and a scripted fake Ollama that
answers with given texts (tests/fake_ollama.py speaks Ollama's protocol). `/ask` and `/ask/stream` carry
`verification` and the verified `grounded`; the policies `flag`, `drop` and `retry`; the two-stage
grounding (a clear no gets no note, a near miss gets the notes and the tentative instruction); Langfuse's
`verification` span, `faithfulness` score and `unsupported-claims` tag."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from grasbot.answer.prompt import TENTATIVE_INSTRUCTIONS
from grasbot.answer.verify import ABSTENTION
from grasbot.answer.verify_policy import NOT_IN_NOTES
from grasbot.service.settings import ConfigError, Settings
from tests.fake_ollama import FakeOllama
from tests.langfuse_collector import LangfuseCollector
from tests.service_fixtures import *  # noqa: F403
from tests.service_fixtures import SAMPLE_VAULT, langfuse_settings, run_server, service_settings, sse_events

RUST = "Que sait-il faire en Rust ?"
CLEAR_NO = "Comment faire une pâte à crêpes ?"  # evidence 0: below the floor
NEAR_MISS = "Quel temps fait-il demain ?"  # in the middle band of the evidence
TRUE = "Aurèle a appris Rust en 2020, en réécrivant un outil de géocodage [rust]."
TRUE_TOO = "La version Rust s'exécutait en vingt secondes [rust]."
WRONG_YEAR = "Il a appris Rust en 2019 [rust]."
WRONG_NOTE = "Le collecteur tourne en trois instances derrière un broker EMQX [python]."


@pytest.fixture
def serve(fake_ollama: FakeOllama) -> Iterator[callable]:
    if not SAMPLE_VAULT.is_dir():
        pytest.skip("the bundled vault/ is missing")
    servers: list = []

    def start(policy: str = "flag") -> httpx.Client:
        context = run_server(service_settings(fake_ollama, verify_policy=policy), SAMPLE_VAULT)
        server = context.__enter__()
        servers.append(context)
        return server.client()

    yield start
    for context in servers:
        context.__exit__(None, None, None)


def labels(body: dict) -> list[str]:
    return [s["label"] for s in body["verification"]["sentences"]]


def test_flag_keeps_the_answer_and_lists_what_is_unsupported(serve, fake_ollama: FakeOllama) -> None:
    api = serve("flag")
    fake_ollama.script(reply=f"{TRUE} {WRONG_YEAR}")
    body = api.get("/ask", params={"q": RUST}).json()
    assert body["response"] == f"{TRUE} {WRONG_YEAR}"
    assert labels(body) == ["supported", "unsupported"]
    v = body["verification"]
    assert v["status"] == "partial" and v["policy"] == "flag" and v["removed"] == []
    assert v["summary"] == {"supported": 1, "unsupported": 1, "wrong-citation": 0, "abstention": 0, "no-claim": 0}
    second = v["sentences"][1]
    assert body["response"][second["start"]:second["end"]] == WRONG_YEAR
    assert "2019" in second["reason"] and second["evidence"]["id"] == "rust"
    assert body["grounded"] is True and body["sources"][0]["slug"] == "rust"


def test_an_answer_with_no_supported_sentence_is_not_grounded(serve, fake_ollama: FakeOllama) -> None:
    api = serve("flag")
    fake_ollama.script(reply=WRONG_YEAR)
    body = api.get("/ask", params={"q": RUST}).json()
    assert body["response"] == WRONG_YEAR  # flag: as generated
    assert body["grounded"] is False and body["sources"] == []
    assert body["verification"]["status"] == "unsupported"


def test_stream_sends_verification_before_done(serve, fake_ollama: FakeOllama) -> None:
    api = serve("flag")
    fake_ollama.script(reply=f"{TRUE} {WRONG_NOTE}")
    events = sse_events(api.get("/ask/stream", params={"q": RUST}).text)
    names = [e for e, _ in events]
    assert names[0] == "sources" and names[-2:] == ["verification", "done"]
    verification, done = events[-2][1], events[-1][1]
    assert done["verification"] == verification
    assert [s["label"] for s in verification["sentences"]] == ["supported", "wrong-citation"]
    wrong = verification["sentences"][1]
    assert wrong["cited"] == ["python"] and wrong["evidence"]["id"] == "collecte-telemetrie-solaire"
    assert done["grounded"] is True


def test_drop_removes_unsupported_and_wrongly_cited_sentences(serve, fake_ollama: FakeOllama) -> None:
    api = serve("drop")
    fake_ollama.script(reply=f"{TRUE} {WRONG_YEAR} {WRONG_NOTE} {TRUE_TOO}")
    body = api.get("/ask", params={"q": RUST}).json()
    assert body["response"] == f"{TRUE} {TRUE_TOO}"
    assert labels(body) == ["supported", "supported"]
    assert [s["text"] for s in body["verification"]["removed"]] == [WRONG_YEAR, WRONG_NOTE]
    assert body["verification"]["status"] == "verified" and body["grounded"] is True


def test_what_is_remembered_is_what_the_visitor_got(serve, fake_ollama: FakeOllama) -> None:
    api = serve("drop")
    fake_ollama.script(reply=f"{TRUE} {WRONG_YEAR}")
    first = api.get("/ask", params={"q": RUST}).json()
    api.get("/ask", params={"q": RUST, "session_id": first["session_id"]})  # the id the server issued
    history = [m["content"] for m in fake_ollama.chat_requests()[-1]["messages"] if m["role"] == "assistant"]
    assert history == [TRUE]


def test_drop_turns_an_all_unsupported_answer_into_the_polite_one(serve, fake_ollama: FakeOllama) -> None:
    api = serve("drop")
    fake_ollama.script(reply=f"{WRONG_YEAR} Il a aussi écrit un compilateur Haskell en 2015.")
    body = api.get("/ask", params={"q": RUST}).json()
    assert body["response"] == NOT_IN_NOTES
    assert body["verification"]["status"] == "abstained" and body["grounded"] is False and body["sources"] == []
    assert len(body["verification"]["removed"]) == 2


def test_retry_regenerates_once_naming_the_unsupported_sentences(serve, fake_ollama: FakeOllama) -> None:
    api = serve("retry")
    fake_ollama.script(replies=(f"{TRUE} {WRONG_YEAR}", f"{TRUE} {TRUE_TOO}"))
    body = api.get("/ask", params={"q": RUST}).json()
    chats = fake_ollama.chat_requests()
    assert len(chats) == 2
    retry = chats[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": f"{TRUE} {WRONG_YEAR}"}
    assert WRONG_YEAR in retry[-1]["content"] and TRUE not in retry[-1]["content"]
    assert body["response"] == f"{TRUE} {TRUE_TOO}" and body["verification"]["retried"] is True
    assert body["verification"]["status"] == "verified" and body["grounded"] is True


def test_retry_then_drops_what_is_still_unsupported(serve, fake_ollama: FakeOllama) -> None:
    api = serve("retry")
    fake_ollama.script(replies=(WRONG_YEAR, f"{WRONG_NOTE} {TRUE_TOO}"))
    body = api.get("/ask", params={"q": RUST}).json()
    assert body["response"] == TRUE_TOO
    assert [s["text"] for s in body["verification"]["removed"]] == [WRONG_NOTE]


def test_retry_is_not_asked_for_a_verified_answer(serve, fake_ollama: FakeOllama) -> None:
    api = serve("retry")
    fake_ollama.script(replies=(TRUE, WRONG_YEAR))
    body = api.get("/ask", params={"q": RUST}).json()
    assert len(fake_ollama.chat_requests()) == 1 and body["response"] == TRUE


def test_a_near_miss_gets_the_notes_and_may_abstain(serve, fake_ollama: FakeOllama) -> None:
    api = serve("flag")
    fake_ollama.script(reply=f"{ABSTENTION} Ses projets sont sur /portfolio.")
    events = sse_events(api.get("/ask/stream", params={"q": NEAR_MISS}).text)
    sources, done = events[0][1], events[-1][1]
    user = fake_ollama.chat_requests()[-1]["messages"][-1]["content"]
    assert "###" in user and TENTATIVE_INSTRUCTIONS in user  # the notes went in, with the instruction
    assert sources["grounded"] is False and sources["sources"]  # the notes given, tentatively
    assert done["verification"]["status"] == "abstained"
    assert done["grounded"] is False and done["sources"] == []


def test_a_near_miss_answered_from_the_notes_is_grounded(serve, fake_ollama: FakeOllama) -> None:
    api = serve("flag")
    fake_ollama.script(reply=TRUE)
    body = api.get("/ask", params={"q": NEAR_MISS}).json()
    assert body["grounded"] is (body["verification"]["status"] == "verified")


def test_a_clear_no_gets_no_note_and_an_invented_fact_is_unsupported(serve, fake_ollama: FakeOllama) -> None:
    api = serve("flag")
    fake_ollama.script(reply="Il prépare ses crêpes avec 250 g de farine.")
    body = api.get("/ask", params={"q": CLEAR_NO}).json()
    user = fake_ollama.chat_requests()[-1]["messages"][-1]["content"]
    assert "Aucune note du vault" in user and "###" not in user
    assert body["grounded"] is False and body["sources"] == []
    assert labels(body) == ["unsupported"]


def test_policy_setting() -> None:
    assert Settings.from_env(environ={}, env_file=None).verify_policy == "flag"
    assert Settings.from_env(environ={"GRASBOT_VERIFY_POLICY": " Retry "}, env_file=None).verify_policy == "retry"
    with pytest.raises(ConfigError, match="GRASBOT_VERIFY_POLICY.*expected one of flag, drop, retry"):
        Settings.from_env(environ={"GRASBOT_VERIFY_POLICY": "strict"}, env_file=None)


def test_langfuse_gets_the_verification_span_faithfulness_and_tag(fake_ollama: FakeOllama, collector: LangfuseCollector) -> None:
    if not SAMPLE_VAULT.is_dir():
        pytest.skip("the bundled vault/ is missing")
    with run_server(langfuse_settings(fake_ollama, collector), SAMPLE_VAULT) as server:
        api = server.client()
        fake_ollama.script(reply=f"{TRUE} {WRONG_YEAR} {TRUE_TOO}")
        flagged = api.get("/ask", params={"q": RUST}).json()
        fake_ollama.script(reply=TRUE)
        clean = api.get("/ask", params={"q": RUST}).json()
        for body in (flagged, clean):
            assert collector.wait_for(
                lambda c, t=body["trace_id"]: "verification" in {s.name for s in c.trace(t)} and "faithfulness" in c.scores_for(t)
                and "ask" in {s.name for s in c.trace(t)},
                timeout=15,
            ), collector.scores
    spans = {s.name: s for s in collector.trace(flagged["trace_id"])}
    root, span = spans["ask"], spans["verification"]
    assert span.parent_span_id == root.span_id
    assert span.json("langfuse.observation.output")["sentences"] == flagged["verification"]["sentences"]
    assert span.json("langfuse.observation.input")["passages"][0] == "rust"
    assert collector.scores_for(flagged["trace_id"])["faithfulness"]["value"] == pytest.approx(2 / 3, abs=0.001)
    assert "unsupported-claims" in root.attributes["langfuse.trace.tags"]
    clean_root = {s.name: s for s in collector.trace(clean["trace_id"])}["ask"]
    assert collector.scores_for(clean["trace_id"])["faithfulness"]["value"] == 1.0
    assert "unsupported-claims" not in clean_root.attributes["langfuse.trace.tags"]
    assert "grounded" in clean_root.attributes["langfuse.trace.tags"]
