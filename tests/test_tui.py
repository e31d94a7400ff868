"""The TUI, driven with Textual's Pilot on a copy of a small vault: every action, the live update, and
bad input (missing vault, undecodable note, API down) shown as messages, never as a traceback."""

from __future__ import annotations

import asyncio
import contextlib
import http.server
import io
import json
import os
import shutil
import socket
import stat
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from rich.console import Console

pytest.importorskip("textual")

from textual.widgets import Input, OptionList, Select  # noqa: E402

from tests.conftest import REPO  # noqa: E402
from vaulttools.cli import main as cli_main  # noqa: E402
from vaulttools.tui.app import PALETTE, VaultApp  # noqa: E402
from vaulttools.tui.backend import NoteRow, obsidian_url  # noqa: E402
from vaulttools.tui.filters import NoteFilter  # noqa: E402
from vaulttools.tui.screens.fix import FixScreen  # noqa: E402
from vaulttools.tui.screens.main import MainScreen  # noqa: E402
from vaulttools.tui.screens.new_note import NewNoteScreen  # noqa: E402
from vaulttools.tui.widgets.note_tree import NoteTree  # noqa: E402
from vaulttools.tui.widgets.note_view import NoteView  # noqa: E402
from vaulttools.tui.widgets.preview import QuestionPreview  # noqa: E402
from vaulttools.tui.widgets.summary import VaultSummary  # noqa: E402

FIXTURE = REPO / "tests" / "fixtures" / "tui"
METEO = "10-Projets/station-meteo.md"
ROBOT = "10-Projets/robot-suiveur.md"
MOC = "00-MOC/MOC-Projets.md"
PRIVATE = "30-Parcours/prive-salaire.md"
SIZE = (100, 32)
TIMEOUT = 15.0

# async tests run on asyncio through anyio's pytest plugin (installed with httpx)
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """A writable copy of the TUI fixture vault, with its TAXONOMIE.md one level up."""
    shutil.copytree(FIXTURE / "vault", tmp_path / "vault")
    shutil.copy2(FIXTURE / "TAXONOMIE.md", tmp_path / "TAXONOMIE.md")
    return tmp_path / "vault"


async def wait_for(pilot, predicate: Callable[[], object], what: str, timeout: float = TIMEOUT) -> None:
    """Let the app run until `predicate()` is true (fails after `timeout` seconds, saying what)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        await pilot.pause(0.05)


def plain(widget) -> str:
    """The text a Static shows (a rich Text or Table), without styles."""
    content = widget.content
    if hasattr(content, "plain"):
        return content.plain
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(content)
    return console.export_text()


def main_screen(app: VaultApp) -> MainScreen:
    assert app.main_screen is not None
    return app.main_screen


async def ready(pilot) -> MainScreen:
    screen = main_screen(pilot.app) if pilot.app.main_screen else None
    await wait_for(pilot, lambda: pilot.app.main_screen is not None and pilot.app.main_screen.linted, "first lint")
    screen = main_screen(pilot.app)
    await wait_for(pilot, lambda: screen.index_ready, "search index")
    return screen


def row(app: VaultApp, path: str) -> NoteRow | None:
    return main_screen(app).query_one(NoteTree).rows.get(path)


async def select(pilot, path: str) -> NoteView:
    screen = main_screen(pilot.app)
    screen._go_to(path)
    view = screen.query_one(NoteView)
    await wait_for(pilot, lambda: view.detail is not None and view.detail.path == path, f"detail of {path}")
    return view


def app_for(vault: Path, **kwargs) -> VaultApp:
    kwargs.setdefault("watch", False)
    kwargs.setdefault("check_api", False)
    return VaultApp(vault, **kwargs)


# -- the command line ------------------------------------------------------------------------------------


def test_cli_missing_vault_is_a_message_and_exit_2(tmp_path: Path, capsys) -> None:
    assert cli_main(["tui", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert "vault not found" in err and "Traceback" not in err


def test_cli_unreadable_taxonomy_is_exit_2(vault: Path, capsys) -> None:
    assert cli_main(["tui", str(vault), "--taxonomy", str(vault / "missing.md")]) == 2
    assert "--taxonomy" in capsys.readouterr().err


def test_cli_exits_2_with_one_line_when_the_app_crashes(vault: Path, capsys, monkeypatch) -> None:
    """A bug that stops the app (none is known: one is planted) must not end in exit status 0, nor in
    Textual's traceback with local variables: one line, as for every other command."""
    # the real command, on Textual's headless driver (what a terminal gives is not needed to crash)
    monkeypatch.setattr("textual.constants.DRIVER", "textual.drivers.headless_driver:HeadlessDriver")
    monkeypatch.delenv("VAULTTOOLS_DEBUG", raising=False)

    def planted(self) -> None:
        raise RuntimeError("planted bug [/x]")

    monkeypatch.setattr(VaultSummary, "on_mount", planted, raising=False)
    assert cli_main(["tui", str(vault), "--no-watch"]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert lines == ["vaulttools tui: internal error: RuntimeError: planted bug [/x] (set VAULTTOOLS_DEBUG=1 for the traceback)"]
    assert "Traceback" not in captured.out + captured.err


# -- pure parts ------------------------------------------------------------------------------------------


def test_filter_syntax() -> None:
    meteo = NoteRow(METEO, "Station météo", "projet", False, 4, 1, ("broken-link", "field-type"), 3)
    private = NoteRow(PRIVATE, "Prétentions", "parcours", True)
    assert NoteFilter.parse("meteo").matches(meteo)  # accents folded
    assert not NoteFilter.parse("meteo").matches(private)
    assert NoteFilter.parse("type:proj has:problems rule:broken").matches(meteo)
    assert not NoteFilter.parse("-has:problems").matches(meteo)
    assert NoteFilter.parse("is:private").matches(private) and not NoteFilter.parse("is:private").matches(meteo)
    assert NoteFilter.parse("has:fix").matches(meteo) and not NoteFilter.parse("has:fix").matches(private)
    assert NoteFilter.parse("colour:red").errors == ("colour:red",)


def test_obsidian_url_encodes_vault_and_path() -> None:
    url = obsidian_url(Path("/x/Mon vault"), "10-Projets/Station météo.md")
    assert url == "obsidian://open?vault=Mon%20vault&file=10-Projets%2FStation%20m%C3%A9t%C3%A9o"


# -- the app ---------------------------------------------------------------------------------------------


async def test_tree_badges_private_mark_and_summary(vault: Path) -> None:
    app = app_for(vault)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready(pilot)
        meteo = row(app, METEO)
        assert meteo is not None and meteo.errors == 5 and meteo.warnings == 1 and meteo.fixable == 3
        assert row(app, PRIVATE).private
        assert row(app, ROBOT).problems == 0
        tree = screen.query_one(NoteTree)
        labels = {node.data: str(node.label) for node in tree._notes.values()}
        assert labels[METEO].startswith("✗5 !1 station-meteo")
        assert "private" in labels[PRIVATE]
        summary = screen.summary
        assert summary is not None and summary.notes == 6 and summary.private == 1
        assert ("broken-link", "error", 1, 1) in summary.by_rule
        assert dict(summary.by_type)["projet"] == 2
        assert summary.taxonomy == "../TAXONOMIE.md"


async def test_filter_box_and_problems_key(vault: Path) -> None:
    app = app_for(vault)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready(pilot)
        tree = screen.query_one(NoteTree)
        await pilot.press("p")
        assert tree.shown == ["10-Projets/station-meteo.md", "30-Parcours/bio.md"]
        await pilot.press("p")
        assert len(tree.shown) == 6
        await pilot.press("f")
        await pilot.press(*"type:competence")
        await pilot.press("enter")
        assert tree.shown == ["20-Competences/python.md"]
        assert tree.has_focus
        box = screen.query_one("#filter", Input)
        box.value = "is:private"
        screen._apply_filter()
        assert tree.shown == [PRIVATE]
        box.value = "rule:broken"
        screen._apply_filter()
        assert tree.shown == [METEO]


async def test_note_pane_shows_problems_fields_and_links_and_enter_follows(vault: Path) -> None:
    app = app_for(vault)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        view = await select(pilot, METEO)
        detail = view.detail
        assert [d.rule for d in detail.diagnostics].count("field-type") == 3
        assert any(link.status == "broken" and "pluviometre" in link.text for link in detail.links)
        assert [b.target for b in detail.backlinks] == [MOC]
        problems = plain(view.query_one("#note-problems"))
        assert "broken-link" in problems and "line 25" in problems
        assert "meteorologie" in plain(view.query_one("#note-fields"))
        # follow the backlink with Enter: the MOC becomes the current note
        links = view.query_one("#note-links", OptionList)
        await pilot.press("k")  # the links key
        assert links.has_focus
        links.highlighted = len(detail.links)  # the first backlink comes after the outgoing links
        await pilot.press("enter")
        await wait_for(pilot, lambda: view.detail.path == MOC, "the followed note")
        assert main_screen(app).query_one(NoteTree).current_path == MOC


async def test_preview_ranks_notes_and_never_shows_private_ones(vault: Path) -> None:
    app = app_for(vault)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready(pilot)
        await pilot.press("slash")
        question = screen.query_one("#question", Input)
        assert question.has_focus
        await pilot.press(*"robot suiveur de ligne")
        preview = screen.query_one(QuestionPreview)
        await wait_for(pilot, lambda: preview.preview is not None and preview.preview.rows, "preview results")
        first = preview.preview.rows[0]
        assert first.id == "robot-suiveur" and first.prompt == "whole" and first.reasons
        assert preview.preview.grounded
        assert "grounded: yes" in plain(screen.query_one("#verdict"))
        question.value = "quel salaire demande-t-il ? prétentions rémunération"
        await wait_for(pilot, lambda: preview.preview.query.startswith("quel salaire"), "second preview")
        assert all(r.path != PRIVATE for r in preview.preview.rows)
        # Enter on a result opens the note
        question.value = "robot suiveur de ligne"
        await wait_for(pilot, lambda: preview.preview.query == "robot suiveur de ligne", "third preview")
        await pilot.press("enter")  # submits the question: focus goes to the results
        await pilot.press("enter")  # opens the first result
        await wait_for(pilot, lambda: screen.current == ROBOT, "the opened result")
        await pilot.pause()
        assert screen.query_one("#tabs").active == "tab-note"  # and it stays there
        assert screen.query_one(NoteTree).has_focus


async def test_fix_shows_diff_asks_and_writes_only_when_confirmed(vault: Path) -> None:
    app = app_for(vault)
    before = (vault / METEO).read_bytes()
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await select(pilot, METEO)
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, FixScreen), "the fix dialog")
        diff = app.screen.fix.diff()
        assert "+tags: [docker]" in diff and '-priority: "6"' in diff
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen), "dialog closed")
        assert (vault / METEO).read_bytes() == before
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, FixScreen), "the fix dialog again")
        await pilot.press("y")
        await wait_for(pilot, lambda: row(app, METEO).errors == 2, "badge after the fix")
        text = (vault / METEO).read_text(encoding="utf-8")
        assert "tags: [docker]" in text and "priority: 6\n" in text
        assert "[[pluviometre]]" in text  # what needs a human is left alone
        view = main_screen(app).query_one(NoteView)
        await wait_for(pilot, lambda: view.detail.fixable == 0, "note pane after the fix")


async def test_fix_on_a_note_without_safe_fix_says_so(vault: Path) -> None:
    app = app_for(vault)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await select(pilot, "30-Parcours/bio.md")
        await pilot.press("x")
        await wait_for(pilot, lambda: any("No safe automatic fix" in n.message for n in app._notifications), "notice")
        assert isinstance(app.screen, MainScreen)


async def test_new_note_from_template(vault: Path) -> None:
    app = app_for(vault)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready(pilot)
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, NewNoteScreen), "the form")
        await pilot.press(*"Capteur de pluie")
        await pilot.press("enter")
        created = "10-Projets/capteur-de-pluie.md"
        await wait_for(pilot, lambda: row(app, created) is not None, "the new note in the tree")
        assert (vault / created).is_file()
        assert row(app, created).private  # `vaulttools new` makes it private
        await wait_for(pilot, lambda: screen.current == created, "the new note selected")
        # with a domain chosen in the form (the taxonomy asks for one), the note starts without that error
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, NewNoteScreen), "the form")
        domain = app.screen.query_one("#new-domain", Select)
        assert "ia" in [value for _, value in domain._options]  # the taxonomy's domains
        domain.value = "ia"
        app.screen.query_one("#new-title", Input).focus()
        await pilot.press(*"Serre autonome", "enter")
        with_domain = "10-Projets/serre-autonome.md"
        await wait_for(pilot, lambda: row(app, with_domain) is not None, "the second note in the tree")
        from grasbot.markdown.frontmatter import parse_text

        assert parse_text((vault / with_domain).read_text(encoding="utf-8"), with_domain).meta["domains"] == ["ia"]
        assert "domains-count" not in row(app, with_domain).rules
        # an empty title is refused in the form, nothing is created
        await pilot.press("n")
        await wait_for(pilot, lambda: isinstance(app.screen, NewNoteScreen), "the form again")
        await pilot.press("enter")
        assert isinstance(app.screen, NewNoteScreen)
        assert "title" in plain(app.screen.query_one("#new-error")).lower()
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen), "form closed")


BRACKETS = "10-Projets/crochets.md"
BRACKETS_NOTE = """---
title: "Crochets [bold]gras[/bold]"
slug: crochets
type: "[red]projet"
aliases:
  - "[/x] tag fermant"
  - "[bold]pas gras"
linked: ["[[robot-suiveur]]"]
related: []
updated: 2026-01-12
---
# Crochets [/x]

Le corps garde ses [bold]crochets[/bold] [/x] et suit [[robot-suiveur]].
"""


async def test_note_text_is_shown_verbatim_never_as_markup(vault: Path) -> None:
    """Frontmatter values are the author's text: `[[x]]`, `[/x]` and `[bold]` show as typed (rich would
    read them as markup: the wikilink vanished, `[/x]` stopped the app)."""
    (vault / BRACKETS).write_text(BRACKETS_NOTE, encoding="utf-8")
    app = app_for(vault)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready(pilot)
        view = await select(pilot, BRACKETS)
        await pilot.pause()  # drawn: a markup error would stop the app here
        fields = plain(view.query_one("#note-fields"))
        for typed in ("[/x] tag fermant, [bold]pas gras", "[[robot-suiveur]]", "[red]projet", "related  []"):
            assert typed in fields, typed
        assert "Crochets [bold]gras[/bold]" in plain(view.query_one("#note-head"))
        await pilot.press("s")
        await pilot.pause()
        assert "[red]projet" in plain(screen.query_one("#types"))
        assert app.is_running


async def test_api_error_text_is_shown_verbatim(vault: Path) -> None:
    """The API's own words in a notice are not markup either (`[/x]` in a toast stopped the app)."""
    with api_server(answer=(500, {"error": "boom", "message": "[/x] le coffre est [bold]illisible"})) as (url, _):
        app = app_for(vault, api=url)
        async with app.run_test(size=SIZE) as pilot:
            screen = await ready(pilot)
            await pilot.press("r")
            await wait_for(pilot, lambda: (screen.last_reload or "").startswith("failed"), "reload result")
            await pilot.pause()  # the toast is drawn
            notices = [n for n in app._notifications if "[/x] le coffre" in n.message]
            assert notices and "[/x] le coffre est [bold]illisible" in notices[0].message and not notices[0].markup
            assert "[/x] le coffre est [bold]illisible" in plain(screen.query_one("#reload-status"))
            assert app.is_running


def _script(path: Path, body: str) -> Path:
    path.write_text(f"#!{sys.executable}\n{body}", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


async def test_edit_runs_the_editor_and_shows_the_saved_note(vault: Path, tmp_path: Path, monkeypatch) -> None:
    editor = _script(
        tmp_path / "editor.py",
        "import sys, pathlib\n"
        "p = pathlib.Path(sys.argv[-1])\n"
        "p.write_text(p.read_text(encoding='utf-8').replace('[meteorologie]', '[data]'), encoding='utf-8')\n",
    )
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    app = app_for(vault)
    # the headless test driver cannot hand the terminal over; the rest of the path is the real one
    monkeypatch.setattr(app, "suspend", contextlib.nullcontext)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await select(pilot, METEO)
        await pilot.press("e")
        await wait_for(pilot, lambda: row(app, METEO).errors == 4, "badge after the edit")
        assert "unknown-domain" not in row(app, METEO).rules


async def test_obsidian_runs_the_os_opener_and_says_what_ran(vault: Path, tmp_path: Path, monkeypatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    record = tmp_path / "opened.json"
    _script(bin_dir / "xdg-open", f"import json, sys\nopen({str(record)!r}, 'w').write(json.dumps(sys.argv[1:]))\n")
    monkeypatch.setenv("PATH", str(bin_dir) + os.pathsep + os.environ.get("PATH", ""))
    if sys.platform == "darwin" or sys.platform.startswith("win"):
        pytest.skip("the opener is xdg-open on Linux only")
    app = app_for(vault)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await select(pilot, METEO)
        await pilot.press("o")
        await wait_for(pilot, record.exists, "the opener to run")
        await wait_for(pilot, lambda: record.read_text() != "", "the opener to write")
        assert json.loads(record.read_text()) == ["obsidian://open?vault=vault&file=10-Projets%2Fstation-meteo"]
        await wait_for(pilot, lambda: any("ran: xdg-open" in n.message for n in app._notifications), "notice")
        # an opener that cannot open obsidian:// links (no handler) fails: that is said, with the URL
        _script(bin_dir / "xdg-open", "import sys\nsys.exit(4)\n")
        await pilot.press("o")
        await wait_for(pilot, lambda: any("could not open it (status 4" in n.message for n in app._notifications),
                       "the failure said")


class _Api(http.server.ThreadingHTTPServer):
    daemon_threads = True
    posts = 0
    answer: tuple[int, dict] = (200, {"notes": 6, "added": 0, "changed": 1, "removed": 0})


class _Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:  # keep the test output clean
        pass

    def _json(self, code: int, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._json(200, {"status": "ok"}) if self.path == "/health" else self._json(404, {"error": "no"})

    def do_POST(self) -> None:
        if self.path == "/reload-vault":
            self.server.posts += 1
            self._json(*self.server.answer)
        else:
            self._json(404, {"error": "no"})


@contextlib.contextmanager
def api_server(answer: tuple[int, dict] | None = None) -> Iterator[tuple[str, _Api]]:
    server = _Api(("127.0.0.1", 0), _Handler)
    if answer is not None:
        server.answer = answer
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server
    finally:
        server.shutdown()
        server.server_close()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_reload_pushes_to_the_api_and_the_status_line_says_so(vault: Path) -> None:
    with api_server() as (url, server):
        app = app_for(vault, api=url, check_api=True)
        async with app.run_test(size=SIZE) as pilot:
            screen = await ready(pilot)
            await wait_for(pilot, lambda: screen.api_up is True, "API check")
            assert "API up" in plain(screen.query_one("#status-api"))
            await pilot.press("r")
            await wait_for(pilot, lambda: (screen.last_reload or "").startswith("ok"), "reload result")
            assert server.posts == 1
            assert "reload: ok" in plain(screen.query_one("#status-api"))


async def test_api_down_is_a_message_not_a_traceback(vault: Path) -> None:
    app = app_for(vault, api=f"http://127.0.0.1:{_closed_port()}", check_api=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready(pilot)
        await wait_for(pilot, lambda: screen.api_up is False, "API check")
        assert "API down" in plain(screen.query_one("#status-api"))
        await pilot.press("r")
        await wait_for(pilot, lambda: (screen.last_reload or "").startswith("failed"), "reload result")
        assert any("unreachable" in n.message for n in app._notifications)


async def test_full_lint_picks_up_changes_made_behind_its_back(vault: Path) -> None:
    app = app_for(vault)  # not watching: only `l` can see the change
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        text = (vault / METEO).read_text(encoding="utf-8")
        (vault / METEO).write_text(text.replace("[[pluviometre]]", "[[python]]"), encoding="utf-8")
        await pilot.press("l")
        await wait_for(pilot, lambda: "broken-link" not in row(app, METEO).rules, "badge after the full lint")
        await wait_for(pilot, lambda: any("Full check" in n.message for n in app._notifications), "notice")


@pytest.mark.parametrize("big", [False, True], ids=["live-index", "big-vault-own-index"])
async def test_live_update_from_disk_keeps_the_selection_and_refreshes_the_preview(vault: Path, big: bool, monkeypatch) -> None:
    if big:  # as on a vault above the limit: the LiveVault keeps no index, the app rebuilds its own
        monkeypatch.setattr("vaulttools.tui.backend.INDEX_LIVE_LIMIT", 0)
    app = app_for(vault, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready(pilot)
        view = await select(pilot, METEO)
        tree = screen.query_one(NoteTree)
        await pilot.press("slash")
        await pilot.press(*"pluviomètre à augets")
        preview = screen.query_one(QuestionPreview)
        await wait_for(pilot, lambda: preview.preview is not None and preview.preview.query, "first preview")
        assert all(r.id != "pluviometre" for r in preview.preview.rows)
        # another program saves a new note: the broken link in station-meteo now resolves
        (vault / "10-Projets" / "pluviometre.md").write_text(
            "---\ntitle: Pluviomètre à augets\nslug: pluviometre\ntype: projet\nvisibility: public\n---\n"
            "# Pluviomètre à augets\n\nUn pluviomètre à augets basculants relié à la station.\n",
            encoding="utf-8",
        )
        await wait_for(pilot, lambda: "broken-link" not in row(app, METEO).rules, "badge after the save")
        assert tree.current_path == METEO and screen.current == METEO
        await wait_for(pilot, lambda: not any(l.status == "broken" for l in view.detail.links), "note pane")
        await wait_for(pilot, lambda: preview.preview.rows and preview.preview.rows[0].id == "pluviometre", "preview")
        assert row(app, "10-Projets/pluviometre.md") is not None
        assert app.backend.own_index is big


async def test_missing_vault_inside_the_app_is_a_message(tmp_path: Path) -> None:
    app = app_for(tmp_path / "nope")
    async with app.run_test(size=SIZE) as pilot:
        screen = main_screen(app) if app.main_screen else None
        await wait_for(pilot, lambda: app.main_screen is not None and app.main_screen.failed, "failure")
        screen = main_screen(app)
        assert "vault not found" in screen.failed
        assert "cannot open the vault" in plain(screen.query_one("#status-vault"))
        await pilot.press("x")  # actions stay harmless
        assert isinstance(app.screen, MainScreen)


def _notices(app: VaultApp, text: str) -> list[str]:
    return [n.message for n in app._notifications if text in n.message]


async def test_vault_folder_deleted_then_back_while_watching(vault: Path) -> None:
    app = app_for(vault, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready(pilot)
        await select(pilot, METEO)
        shutil.rmtree(vault)
        gone = f"vault folder not found: {vault}"
        await wait_for(pilot, lambda: screen.missing == gone, "the folder seen gone")
        status = plain(screen.query_one("#status-vault"))  # (cut with … to the bar's width: a long path)
        assert " · vault folder not found: " in status and "clean" not in status
        assert plain(screen.query_one("#filter-status")).startswith("vault folder not found")
        assert gone in plain(screen.query_one("#health"))
        await pilot.press("l")  # says so, and `l` works again afterwards
        await wait_for(pilot, lambda: not screen._lint_running and _notices(app, gone), "the failed check")
        await pilot.press("l")
        await wait_for(pilot, lambda: len(_notices(app, gone)) == 2, "the second check")
        assert not _notices(app, "already running") and not _notices(app, "internal error")
        # the folder comes back (a restore, a clone): picked up by itself, and watched again
        shutil.copytree(FIXTURE / "vault", vault)
        await wait_for(pilot, lambda: screen.missing is None and row(app, METEO) is not None, "the vault back")
        assert "✗5 !2 in 2 of 6 notes" in plain(screen.query_one("#status-vault"))
        text = (vault / ROBOT).read_text(encoding="utf-8")
        (vault / ROBOT).write_text(text.replace("[[python]]", "[[nulle-part]]"), encoding="utf-8")
        await wait_for(pilot, lambda: "broken-link" in row(app, ROBOT).rules, "a save seen by the new watch")


async def test_lint_of_a_vanished_vault_folder_can_be_run_again(vault: Path) -> None:
    app = app_for(vault)  # not watching: only `l` finds out
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready(pilot)
        shutil.rmtree(vault)
        await pilot.press("l")
        gone = f"vault folder not found: {vault}"
        await wait_for(pilot, lambda: screen.missing == gone and not screen._lint_running, "the failed check")
        assert "linting" not in plain(screen.query_one("#status-vault"))
        await pilot.press("l")
        await wait_for(pilot, lambda: len(_notices(app, gone)) == 2, "the second check")
        assert not _notices(app, "already running") and not _notices(app, "internal error")
        shutil.copytree(FIXTURE / "vault", vault)
        await wait_for(pilot, lambda: screen.missing is None and not screen._lint_running, "the vault back")
        assert "✗5 !2 in 2 of 6 notes" in plain(screen.query_one("#status-vault"))


async def test_a_deleted_note_leaves_no_links_header(vault: Path) -> None:
    app = app_for(vault, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        view = await select(pilot, METEO)
        title = view.query_one("#links-title")
        assert title.display and "Links: 2 out, 1 back" in plain(title)
        (vault / METEO).unlink()
        await wait_for(pilot, lambda: view.detail is None, "the note gone")
        assert "was deleted" in plain(view.query_one("#note-head"))
        assert not title.display and "out" not in plain(title)
        assert view.query_one("#note-links", OptionList).option_count == 0
        assert not view.query_one("#note-links").display


async def test_counts_are_said_in_words(vault: Path) -> None:
    """One warning in one note is "1 warning in 1 of 6 notes", not "1 warnings in 1 notes"; "of 6" says which
    count it is (as `vaulttools lint` says "in 1 of 6 notes checked")."""
    (vault / METEO).write_text(
        '---\ntitle: "Station météo"\nslug: station-meteo\ntype: projet\nsource: manual\ndomains: [backend]\n'
        "tags: [python, iot]\naliases: [station météo, météo maison, capteurs météo]\nanswers:\n"
        '  - "Parle-moi de la station météo."\n  - "Que mesure sa station météo ?"\npriority: 6\n'
        "updated: 2026-01-12\nvisibility: public\n---\n# Station météo\n\n"
        "Une station météo avec des capteurs de température, reliée au [[robot-suiveur]].\n",
        encoding="utf-8",
    )
    app = app_for(vault)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready(pilot)
        await pilot.press("l")
        await wait_for(pilot, lambda: _notices(app, "Full check"), "the full check")
        assert _notices(app, "Full check")[0].startswith("Full check: 0 errors, 1 warning in 1 of 6 notes (")
        assert "✗ 0 errors · ! 1 warning in 1 of 6 notes" in plain(screen.query_one("#health"))
        assert " · !1 in 1 of 6 notes" in plain(screen.query_one("#status-vault"))  # (no "✗0")


async def test_status_bar_halves_do_not_run_together_when_narrow(vault: Path) -> None:
    app = app_for(vault, api=f"http://127.0.0.1:{_closed_port()}", check_api=True)
    async with app.run_test(size=(60, 15)) as pilot:
        screen = await ready(pilot)
        await wait_for(pilot, lambda: screen.api_up is False and screen.summary and screen.summary.linted, "API check")
        await pilot.pause()
        left, right = screen.query_one("#status-vault"), screen.query_one("#status-api")
        # the note count goes first (the tree says it too); the problems stay whole, on one line
        assert plain(left) == " vault · ✗5 !2 in 2 of 6 notes"  # the notes with problems, of those checked
        assert len(plain(left)) <= left.size.width
        assert plain(right).startswith("API down") and right.region.x > left.region.x + len(plain(left))
        # narrower still: the end is cut, with "…", on the one line
        await pilot.resize_terminal(44, 15)
        await wait_for(pilot, lambda: plain(left).endswith("…"), "the left half cut with an ellipsis")
        assert plain(left).startswith(" vault · ✗5") and len(plain(left)) <= left.size.width


def _type_at_once(app: VaultApp, *keys: str) -> None:
    """Queue keys the way a terminal delivers a burst of typing: all at once, before the app handles
    the first (Pilot's `press` waits for each key to be handled, which hides ordering bugs)."""
    from textual import events

    named = {"slash": "/", "space": " "}  # what a terminal sends with these keys
    for key in keys:
        event = events.Key(key, key if len(key) == 1 else named.get(key))
        event.set_sender(app)
        app._driver.send_message(event)


async def test_keys_typed_at_once_land_where_they_were_typed(vault: Path) -> None:
    app = app_for(vault)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready(pilot)
        box = screen.query_one("#filter", Input)
        _type_at_once(app, "f", *"rust")  # `r` went to the tree (a reload) before the box had the focus
        await wait_for(pilot, lambda: box.value == "rust", "the typed filter")
        for _ in range(4):  # ctrl+u ran after the letters typed after it: the box ended empty
            _type_at_once(app, "ctrl+u", *"meteo")
            await wait_for(pilot, lambda: box.value == "meteo", "the filter typed again")
            _type_at_once(app, "ctrl+u", *"rust")
            await wait_for(pilot, lambda: box.value == "rust", "the filter typed again")
        _type_at_once(app, "backspace", "backspace", *"bot")
        await wait_for(pilot, lambda: box.value == "rubot", "editing keys in order")
        _type_at_once(app, "escape", "slash", *"robot")
        question = screen.query_one("#question", Input)
        await wait_for(pilot, lambda: question.value == "robot", "the typed question")
        await pilot.pause(0.3)
        assert box.value == "rubot"
        assert not _notices(app, "No API configured")  # no `r` ever reached the screen
        # `/` is the Ask key, and text in a box: `ci/cd` in the question, then in the filter
        _type_at_once(app, "space", *"ci", "slash", *"cd")
        await wait_for(pilot, lambda: question.value == "robot ci/cd", "a slash in the question")
        _type_at_once(app, "escape", "f", "ctrl+u", *"ci", "slash", *"cd")
        await wait_for(pilot, lambda: box.value == "ci/cd", "a slash in the filter")
        await pilot.pause(0.3)
        assert question.value == "robot ci/cd" and app.focused is box


async def test_undecodable_note_is_shown_with_its_problem(vault: Path) -> None:
    (vault / "10-Projets" / "casse.md").write_bytes(b"---\ntitle: \xff\xfe\n---\nbody\n")
    app = app_for(vault)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        bad = row(app, "10-Projets/casse.md")
        assert bad is not None and "frontmatter-invalid" in bad.rules
        view = await select(pilot, "10-Projets/casse.md")
        assert "frontmatter-invalid" in plain(view.query_one("#note-problems"))


async def test_every_action_is_in_the_command_palette(vault: Path) -> None:
    app = app_for(vault)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready(pilot)
        titles = [c.title for c in app.get_system_commands(screen)]
        for title, _, action in PALETTE:
            assert title in titles
            assert callable(getattr(screen, f"action_{action}"))
        keys = {b.action for b in screen.BINDINGS}  # and every action has a key
        assert {a for _, _, a in PALETTE} <= keys
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: type(app.screen).__name__ == "CommandPalette", "palette")
        await pilot.press(*"Vault summary")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen), "palette closed")
        await wait_for(pilot, lambda: screen.query_one("#tabs").active == "tab-summary", "summary tab")


async def test_filtered_tree_gains_new_matches_and_keeps_what_it_shows(vault: Path) -> None:
    app = app_for(vault)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready(pilot)
        tree = screen.query_one(NoteTree)
        screen.query_one("#filter", Input).value = "has:fix"
        screen._apply_filter()
        assert tree.shown == [METEO]
        await select(pilot, METEO)
        # the shown note gets fixed and a hidden one gets a fixable problem (saved behind the app's back)
        text = (vault / METEO).read_text(encoding="utf-8")
        (vault / METEO).write_text(text.replace("tags: docker", "tags: [docker]").replace('"6"', "6")
                                   .replace("aliases: station météo", "aliases: [station météo]"), encoding="utf-8")
        robot = (vault / ROBOT).read_text(encoding="utf-8")
        (vault / ROBOT).write_text(robot.replace("priority: 6", 'priority: "6"'), encoding="utf-8")
        await pilot.press("l")
        await wait_for(pilot, lambda: ROBOT in tree.shown, "the new match in the tree")
        assert METEO in tree.shown and row(app, METEO).fixable == 0  # still there, under the cursor
        assert screen.current == METEO and tree.current_path == METEO


async def test_the_note_pane_follows_the_cursor_after_a_filter(vault: Path) -> None:
    """A filtered tree may put its first match on the line the cursor had: the pane must follow the
    cursor (notes at the top of the vault, as in Obsidian's help vault, start the tree)."""
    (vault / "Accueil.md").write_text("---\ntitle: Accueil\n---\nBienvenue.\n", encoding="utf-8")
    (vault / "Zèbre.md").write_text("---\ntitle: Zèbre\n---\nRayures.\n", encoding="utf-8")
    app = app_for(vault)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready(pilot)
        tree = screen.query_one(NoteTree)
        view = await select(pilot, "10-Projets/robot-suiveur.md")
        box = screen.query_one("#filter", Input)
        screen.set_focus(box)
        box.value = "zebre"
        await wait_for(pilot, lambda: tree.current_path == "Zèbre.md", "the match under the cursor")
        await wait_for(pilot, lambda: view.detail is not None and view.detail.path == "Zèbre.md",
                       "the pane on the note under the cursor")


def test_big_vault_own_index_reads_what_a_visitor_may_read(tmp_path: Path, monkeypatch, capsys) -> None:
    # Above INDEX_LIVE_LIMIT the TUI rebuilds its own index from a copy of the live vault: that copy must read
    # notes through `visitor_text`, as the bot's index does, or the preview ranks a public note on the words
    # of its link to a private one (which the bot never sees) and stops being the bot's real retrieval.
    from vaulttools.tui.backend import Backend

    (tmp_path / "carnet.md").write_text(
        "---\ntitle: Carnet\nvisibility: public\n---\nVoir aussi [[secret|zorglubium quantique]].\n", encoding="utf-8"
    )
    (tmp_path / "secret.md").write_text("---\ntitle: Secret\nvisibility: private\n---\nRien.\n", encoding="utf-8")
    (tmp_path / "autre.md").write_text("---\ntitle: Autre\nvisibility: public\n---\nUne note.\n", encoding="utf-8")
    monkeypatch.setattr("vaulttools.tui.backend.INDEX_LIVE_LIMIT", 0)
    backend = Backend(tmp_path, use_cache=False)
    backend.load()
    backend.build_index()
    backend.start_live()
    assert backend.own_index
    assert backend.refresh_index()  # the index is now the one built from the live copy
    assert [r.id for r in backend.preview("zorglubium quantique").rows] == []
    assert cli_main(["ask", "--vault", str(tmp_path), "--no-cache", "--json", "zorglubium quantique"]) == 0
    assert json.loads(capsys.readouterr().out)["results"] == []  # what the bot retrieves: the same nothing
    assert [r.id for r in backend.preview("carnet").rows] == ["carnet"]  # the note itself is still indexed
