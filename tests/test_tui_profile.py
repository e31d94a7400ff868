"""The TUI's summary shows the answering profile GrasBot would use for the vault (Textual Pilot)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Static

from grasbot import PROFILE_FILE
from grasbot.answer.profile import shipped
from tests.test_tui import anyio_backend, app_for, plain, ready, vault  # noqa: F401 - fixtures

pytestmark = pytest.mark.anyio


async def test_the_summary_shows_the_vault_profile(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GRASBOT_PROFILE", raising=False)
    (vault / PROFILE_FILE).parent.mkdir()
    (vault / PROFILE_FILE).write_text('name = "svt"\nextends = "textbook"\n', encoding="utf-8")
    app = app_for(vault)
    async with app.run_test(size=(100, 32)) as pilot:
        screen = await ready(pilot)
        shown = plain(screen.query_one("#health", Static))
        version = screen.summary.profile.split("@", 1)[1].split(" ", 1)[0]
        assert f"profile: svt@{version} (vault, cites page)" in shown and len(version) == 12


async def test_the_summary_shows_the_default_and_a_bad_profile(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GRASBOT_PROFILE", raising=False)
    app = app_for(vault)
    async with app.run_test(size=(100, 32)) as pilot:
        screen = await ready(pilot)
        assert f"profile: site@{shipped('site').version} (shipped:site, cites slug)" in plain(screen.query_one("#health", Static))
    (vault / PROFILE_FILE).parent.mkdir()
    (vault / PROFILE_FILE).write_text('extends = "textbook"\ntemprature = 0.1\n', encoding="utf-8")
    app = app_for(vault)
    async with app.run_test(size=(100, 32)) as pilot:
        screen = await ready(pilot)
        assert "profile: ✗ .grasbot/profile.toml:2:1: unknown key `temprature`" in plain(screen.query_one("#health", Static))
