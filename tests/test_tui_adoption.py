"""TUI points of issue 18, driven with Textual's Pilot: `?`/F1 and Escape for the keys panel, the theme kept
between runs, `e` at the problem's line, the new-note form's Tab then Enter, no "taxonomy: none found" flash."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

pytest.importorskip("textual")

from textual.widgets import Input  # noqa: E402

from tests.test_tui import (  # noqa: E402
    METEO,
    SIZE,
    _script,
    app_for,
    plain,
    ready,
    row,
    select,
    vault,  # noqa: F401 - the fixture
    wait_for,
)
from vaulttools.tui.backend import Backend, editor_argv  # noqa: E402
from vaulttools.tui.screens.main import MainScreen  # noqa: E402
from vaulttools.tui.screens.new_note import NewNoteScreen  # noqa: E402
from vaulttools.tui.widgets.summary import VaultSummary  # noqa: E402

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch) -> Path:
    home = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home


async def test_question_mark_and_f1_toggle_the_keys_panel_and_escape_closes_it(vault: Path) -> None:  # noqa: F811
    app = app_for(vault)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready(pilot)
        assert not app.keys_shown
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: app.keys_shown, "keys panel open")
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: not app.keys_shown, "keys panel closed by ?")
        await pilot.press("f1")
        await wait_for(pilot, lambda: app.keys_shown, "keys panel open by F1")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.keys_shown, "keys panel closed by Escape")
        # in the question box, `?` is a question mark, not the keys panel
        await pilot.press("slash")
        await wait_for(pilot, lambda: isinstance(app.focused, Input), "question box")
        await pilot.press(*"rust", "question_mark")
        assert screen.query_one("#question", Input).value == "rust?" and not app.keys_shown


async def test_the_theme_is_kept_for_the_next_run(vault: Path, config_home: Path) -> None:  # noqa: F811
    first = app_for(vault)
    async with first.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert first.theme != "nord"
        first.theme = "nord"  # what the palette's "Change theme" does
        await pilot.pause()
    saved = config_home / "vaulttools" / "tui.json"
    assert json.loads(saved.read_text(encoding="utf-8")) == {"theme": "nord"}
    second = app_for(vault)
    async with second.run_test(size=SIZE) as pilot:
        await ready(pilot)
        assert second.theme == "nord"
    # a damaged file, or a theme that does not exist (any more), is ignored
    for content in ("{not json", '{"theme": "no-such-theme"}', "[]"):
        saved.write_text(content, encoding="utf-8")
        third = app_for(vault)
        async with third.run_test(size=SIZE) as pilot:
            await ready(pilot)
            assert third.theme == "textual-dark"


async def test_e_opens_the_editor_at_the_first_problem(vault: Path, tmp_path: Path, monkeypatch) -> None:  # noqa: F811
    import contextlib

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "argv.json"
    editor = _script(bin_dir / "vi", f"import json, sys\nopen({str(record)!r}, 'w').write(json.dumps(sys.argv[1:]))\n")
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    app = app_for(vault)
    monkeypatch.setattr(app, "suspend", contextlib.nullcontext)  # the headless driver has no terminal to hand over
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        view = await select(pilot, METEO)
        first = min(d.line for d in view.detail.diagnostics)
        assert first > 1 and row(app, METEO).errors
        await pilot.press("e")
        await wait_for(pilot, record.exists, "the editor ran")
    assert json.loads(record.read_text(encoding="utf-8")) == [f"+{first}", str(vault / METEO)]


def test_editor_line_arguments_by_editor() -> None:
    assert editor_argv(["nvim"], "/v/n.md", 7) == ["nvim", "+7", "/v/n.md"]
    assert editor_argv(["/usr/bin/nano"], "/v/n.md", 7) == ["/usr/bin/nano", "+7", "/v/n.md"]
    assert editor_argv(["emacsclient", "-t"], "/v/n.md", 7) == ["emacsclient", "-t", "+7", "/v/n.md"]
    assert editor_argv(["code", "--wait"], "/v/n.md", 7) == ["code", "--wait", "-g", "/v/n.md:7"]
    assert editor_argv(["subl"], "/v/n.md", 7) == ["subl", "/v/n.md:7"]
    assert editor_argv(["some-editor"], "/v/n.md", 7) == ["some-editor", "/v/n.md"]  # unknown: no guess
    assert editor_argv(["vim"], "/v/n.md", None) == ["vim", "/v/n.md"]


async def test_tab_then_enter_in_the_new_note_form_does_not_create(vault: Path) -> None:  # noqa: F811
    app = app_for(vault)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        before = sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md"))
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, NewNoteScreen), "the form")
        await pilot.press(*"Capteur de vent", "tab", "enter")
        await pilot.pause(0.5)
        assert sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md")) == before
        await pilot.press("escape")  # closes what Enter opened (the type list), then the form
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen), "form closed")


async def test_no_taxonomy_none_found_before_the_taxonomy_is_read(vault: Path, monkeypatch) -> None:  # noqa: F811
    shown: list[str] = []
    original = VaultSummary.show

    def record(self, summary, *, missing=None):
        original(self, summary, missing=missing)
        shown.append(plain(self.query_one("#health")))

    monkeypatch.setattr(VaultSummary, "show", record)
    slow_start = Backend.start_live

    def start_live(self):  # a large vault: the first check (which reads the taxonomy) comes a while after the tree
        time.sleep(1.0)
        return slow_start(self)

    monkeypatch.setattr(Backend, "start_live", start_live)
    app = app_for(vault)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: shown and "TAXONOMIE.md" in shown[-1], "the taxonomy named")
    assert len(shown) >= 2 and "checking the vault" in shown[0]  # the summary before the first check was shown
    assert not any("none found" in text for text in shown)
    assert "of " in shown[-1] or "no problem" in shown[-1]
