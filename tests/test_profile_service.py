"""Answering profiles through the real server: a book vault answers with the textbook prompt and options, a
site vault with the default, /health says which, /reload-vault reloads it (and refuses a bad one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from grasbot.answer.profile import PROFILE_FILE, shipped
from tests.fake_ollama import FakeOllama
from tests.service_fixtures import *  # noqa: F403
from tests.service_fixtures import run_server, service_settings, write_note

BOOK_QUESTION = "Qu'est-ce que la photosynthèse ?"


def book_vault(root: Path, profile: str | None = 'name = "svt"\nextends = "textbook"\n') -> Path:
    """A small book vault: section notes as `vaulttools import pdf` writes them, and a profile file."""
    write_note(
        root, "svt/chapitre-1-section-1.md",
        "title: La photosynthèse\ntype: section\nvisibility: public\naliases: [photosynthèse]",
        "La photosynthèse est la fabrication de matière organique par les plantes à partir de lumière, "
        "d'eau et de dioxyde de carbone.",
    )  # fmt: skip
    write_note(
        root, "svt/chapitre-1-section-2.md",
        "title: La respiration\ntype: section\nvisibility: public\naliases: [respiration]",
        "La respiration consomme du dioxygène et rejette du dioxyde de carbone.",
    )  # fmt: skip
    if profile is not None:
        (root / PROFILE_FILE).parent.mkdir(parents=True, exist_ok=True)
        (root / PROFILE_FILE).write_text(profile, encoding="utf-8")
    return root


def last_chat(fake: FakeOllama) -> dict:
    return fake.chat_requests()[-1]


def test_a_book_vault_answers_with_the_textbook_profile(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    vault = book_vault(tmp_path / "book")
    with run_server(service_settings(fake_ollama), vault) as server:
        client = server.client()
        body = client.get("/ask", params={"q": BOOK_QUESTION}).json()
        assert body["grounded"], body
        sent = last_chat(fake_ollama)
        textbook = shipped("textbook")
        assert sent["messages"][0]["content"] == textbook.system_prompt
        assert "p. 28]" in sent["messages"][0]["content"]
        assert sent["options"]["temperature"] == 0.1 and sent["options"]["num_predict"] == 700
        health = client.get("/health").json()
        assert health["profile"]["name"] == "svt" and health["profile"]["origin"] == "vault"
        assert health["profile"]["citation"] == "page" and len(health["profile"]["version"]) == 12
        # ungrounded: the textbook's own instructions, no site pointer
        client.get("/ask", params={"q": "Quel temps fait-il demain à Lyon ?"})
        user = last_chat(fake_ollama)["messages"][-1]["content"]
        assert user.startswith(textbook.ungrounded_prompt) and "/portfolio" not in user
    assert any("answering profile svt@" in line for line in server.logs.lines)


def test_a_site_vault_answers_with_the_default_profile(service_vault: Path, fake_ollama: FakeOllama) -> None:
    with run_server(service_settings(fake_ollama), service_vault) as server:
        client = server.client()
        client.get("/ask", params={"q": "Que sait-il faire en Rust ?"})
        sent = last_chat(fake_ollama)
        assert sent["messages"][0]["content"] == shipped("site").system_prompt
        assert sent["options"]["temperature"] == 0.4 and sent["options"]["num_predict"] == 1024  # the settings'
        assert client.get("/health").json()["profile"] == {**shipped("site").describe()}


def test_grasbot_profile_picks_a_shipped_profile(service_vault: Path, fake_ollama: FakeOllama) -> None:
    with run_server(service_settings(fake_ollama, profile="textbook"), service_vault) as server:
        server.client().get("/ask", params={"q": "Que sait-il faire en Rust ?"})
        assert last_chat(fake_ollama)["messages"][0]["content"] == shipped("textbook").system_prompt
        assert server.client().get("/health").json()["profile"]["name"] == "textbook"


def test_reload_reloads_the_profile_and_keeps_the_old_one_when_the_new_is_bad(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    vault = book_vault(tmp_path / "book")
    file = vault / PROFILE_FILE
    with run_server(service_settings(fake_ollama), vault) as server:
        client = server.client()
        file.write_text('name = "svt"\nextends = "textbook"\ntemprature = 0.3\n', encoding="utf-8")
        reloaded = client.post("/reload-vault").json()
        assert reloaded["status"] == "reloaded"
        error = reloaded["profile"]["error"]
        assert ".grasbot/profile.toml:3:1: unknown key `temprature` (did you mean `temperature`?)" in error
        assert reloaded["profile"]["name"] == "svt"  # the old one still answers
        assert client.get("/health").json()["profile"]["error"] == error
        client.get("/ask", params={"q": BOOK_QUESTION})
        assert last_chat(fake_ollama)["options"]["temperature"] == 0.1
        assert any("profile not reloaded" in line for line in server.logs.lines)

        file.write_text('name = "svt"\nextends = "site"\ntemperature = 0.3\n', encoding="utf-8")
        reloaded = client.post("/reload-vault").json()
        assert "error" not in reloaded["profile"] and reloaded["profile"]["citation"] == "slug"
        client.get("/ask", params={"q": BOOK_QUESTION})
        sent = last_chat(fake_ollama)
        assert sent["options"]["temperature"] == 0.3
        assert sent["options"]["num_predict"] == 1024  # the textbook's 700 went with it: back to the settings'
        assert sent["messages"][0]["content"] == shipped("site").system_prompt

        file.unlink()
        assert client.post("/reload-vault").json()["profile"]["name"] == "site"
        client.get("/ask", params={"q": BOOK_QUESTION})
        assert last_chat(fake_ollama)["options"]["temperature"] == 0.4


def test_a_bad_profile_stops_the_start_with_its_error(tmp_path: Path) -> None:
    import subprocess
    import sys

    vault = book_vault(tmp_path / "book", profile='extends = "textbok"\n')
    done = subprocess.run(
        [sys.executable, "-m", "grasbot.service.cli", "serve", "--vault", str(vault), "--port", "1"],
        capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "GRASBOT_STATE_DIR": str(tmp_path / "state")},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "profile.toml:1:1: `extends` must name a shipped profile (site, textbook) (did you mean `textbook`?)" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("name", ["textbok"])
def test_an_unknown_grasbot_profile_is_a_clear_error(tmp_path: Path, name: str) -> None:
    import subprocess
    import sys

    vault = book_vault(tmp_path / "book", profile=None)
    done = subprocess.run(
        [sys.executable, "-m", "grasbot.service.cli", "serve", "--vault", str(vault)],
        capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "GRASBOT_PROFILE": name, "GRASBOT_STATE_DIR": str(tmp_path / "state")},
    )  # fmt: skip
    assert done.returncode == 2
    assert f"GRASBOT_PROFILE={name}: no profile of that name (did you mean `textbook`?)" in done.stderr


def test_the_textbook_profile_through_the_openai_backend(tmp_path: Path, fake_openai) -> None:  # noqa: ANN001
    from tests.service_fixtures import openai_settings

    vault = book_vault(tmp_path / "book")
    with run_server(openai_settings(fake_openai), vault) as server:
        server.client().get("/ask", params={"q": BOOK_QUESTION})
        sent = fake_openai.chat_requests()[-1]
        assert sent["messages"][0]["content"] == shipped("textbook").system_prompt
        assert sent["temperature"] == 0.1 and sent["max_tokens"] == 700
        (vault / PROFILE_FILE).unlink()
        server.client().post("/reload-vault")
        server.client().get("/ask", params={"q": BOOK_QUESTION})
        sent = fake_openai.chat_requests()[-1]
        assert sent["temperature"] == 0.4 and sent["max_tokens"] == 1024
