"""Snapshots of the TUI at 80x24 on a copy of the TUI fixture vault: the first screen, a note with
problems, and the question preview with results.

The vault is copied to `tmp/vault` (its name is what the app shows), the watcher and the API check are
off, and each snapshot waits until the first lint and the search index are done, so the pictures are
the same on every run. Update them with `pytest tests/test_tui_snapshots.py --snapshot-update` and
look at the SVGs in `__snapshots__/` before committing.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

pytest.importorskip("pytest_textual_snapshot")

from tests.conftest import REPO  # noqa: E402
from vaulttools.tui.app import VaultApp  # noqa: E402

FIXTURE = REPO / "tests" / "fixtures" / "tui"
TIMEOUT = 20.0


@pytest.fixture
def app(tmp_path: Path) -> VaultApp:
    shutil.copytree(FIXTURE / "vault", tmp_path / "vault")
    shutil.copy2(FIXTURE / "TAXONOMIE.md", tmp_path / "TAXONOMIE.md")
    # a profile of its own, prompts inline: the summary's profile line (and its version) does not change
    # with the text of the shipped prompts
    (tmp_path / "vault" / ".grasbot").mkdir()
    (tmp_path / "vault" / ".grasbot" / "profile.toml").write_text(
        'name = "fixture"\nsystem_prompt = "Réponds. {citation}"\nungrounded_prompt = "Rien."\npointers = []\n',
        encoding="utf-8",
    )
    return VaultApp(tmp_path / "vault", watch=False, check_api=False)


async def _until(pilot, predicate, what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        await pilot.pause(0.05)


async def _ready(pilot) -> None:
    app = pilot.app
    await _until(pilot, lambda: app.main_screen is not None and app.main_screen.linted, "first lint")
    await _until(pilot, lambda: app.main_screen.index_ready, "search index")
    await _until(pilot, lambda: app.main_screen.summary is not None and app.main_screen.summary.linted, "summary")
    await pilot.pause()


def test_main_screen(snap_compare, app: VaultApp) -> None:
    assert snap_compare(app, terminal_size=(80, 24), run_before=_ready)


def test_note_with_problems(snap_compare, app: VaultApp) -> None:
    async def run_before(pilot) -> None:
        await _ready(pilot)
        await pilot.press("p")  # only the notes with problems; the cursor goes to the first one
        screen = pilot.app.main_screen
        await _until(pilot, lambda: screen.current == "10-Projets/station-meteo.md", "selection")
        view = screen.query_one("#note")
        await _until(pilot, lambda: view.detail is not None and view.detail.path == screen.current, "detail")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)


def test_preview_with_results(snap_compare, app: VaultApp) -> None:
    async def run_before(pilot) -> None:
        await _ready(pilot)
        await pilot.press("slash", *"robot suiveur de ligne")
        preview = pilot.app.main_screen.query_one("#preview")
        await _until(
            pilot,
            lambda: preview.preview is not None and preview.preview.query == "robot suiveur de ligne",
            "preview",
        )
        pilot.app.main_screen.query_one("#question").cursor_blink = False  # a blinking cursor is not a picture
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 24), run_before=run_before)
