"""The main screen: the tree of notes on the left; Summary, Note and Ask tabs on the right.

Heavy work (reading, linting, searching, fixing, the API) runs on daemon threads that post messages
back (`post_message` is thread-safe); the UI thread only draws. Daemon threads, not Textual's thread
workers: quitting during a minute-long lint of a big vault must not wait for it.
"""

from __future__ import annotations

import datetime as _dt
import subprocess
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Input, Static, TabbedContent, TabPane, Tree

from vaulttools.tui.backend import Backend, BackendError, NoteDetail, NoteRow, Preview, Summary, VaultMissing
from vaulttools.tui.filters import HELP as FILTER_HELP
from vaulttools.tui.filters import NoteFilter
from vaulttools.tui.screens.fix import FixScreen
from vaulttools.tui.screens.new_note import NewNoteScreen
from vaulttools.tui.widgets.inputs import TextBox
from vaulttools.tui.widgets.note_tree import NoteTree
from vaulttools.tui.widgets.note_view import NoteView
from vaulttools.tui.widgets.preview import QuestionPreview
from vaulttools.tui.widgets.summary import VaultSummary
from vaulttools.words import count

if TYPE_CHECKING:
    from vaulttools.lint.fixes import FileFix
    from vaulttools.live import LiveDelta
    from vaulttools.reload_client import ReloadResult

#: Seconds of quiet typing before the preview / the filter runs.
PREVIEW_DEBOUNCE = 0.25
FILTER_DEBOUNCE = 0.2
#: Seconds between two `GET /health` checks of the API.
API_CHECK_EVERY = 10.0
#: Seconds between two looks for a vault folder that went away (it is picked up again when it is back).
VAULT_LOOK_EVERY = 1.0


# -- messages from the threads --------------------------------------------------------------------------


class Scanned(Message):
    """The note files are known (a folder walk, nothing read yet): the tree can be drawn."""

    def __init__(self, rows: list[NoteRow]) -> None:
        super().__init__()
        self.rows = rows


class Loaded(Message):
    def __init__(self, rows: list[NoteRow]) -> None:
        super().__init__()
        self.rows = rows


class IndexReady(Message):
    pass


class Linted(Message):
    def __init__(self, rows: list[NoteRow], summary: Summary, delta: LiveDelta | None = None) -> None:
        super().__init__()
        self.rows = rows
        self.summary = summary
        self.delta = delta


class LoadFailed(Message):
    def __init__(self, message: str) -> None:
        super().__init__()
        self.message = message


class LintEnded(Message):
    """The full check started by `l` is over, whatever happened to it (a failure says so itself)."""


class LintFailed(Message):
    def __init__(self, message: str, missing: bool) -> None:
        super().__init__()
        self.message = message
        self.missing = missing  # the vault folder is gone


class VaultChanged(Message):
    """A burst of changes was applied: the rows it touched (None: gone) and the new summary; `missing`
    when the vault folder itself is gone after it (deleted or moved away)."""

    def __init__(
        self, delta: LiveDelta, rows: dict[str, NoteRow | None], summary: Summary, missing: bool = False
    ) -> None:
        super().__init__()
        self.delta = delta
        self.rows = rows
        self.summary = summary
        self.missing = missing


class DetailReady(Message):
    def __init__(self, path: str, detail: NoteDetail | None, error: str | None = None) -> None:
        super().__init__()
        self.path = path
        self.detail = detail
        self.error = error


class PreviewReady(Message):
    def __init__(self, seq: int, preview: Preview, started: float) -> None:
        super().__init__()
        self.seq = seq
        self.preview = preview
        self.started = started


class Notice(Message):
    def __init__(self, text: str, severity: str = "information", timeout: float | None = None) -> None:
        super().__init__()
        self.text = text
        self.severity = severity
        self.timeout = timeout


class FixPlanned(Message):
    def __init__(self, path: str, fix: FileFix | None) -> None:
        super().__init__()
        self.path = path
        self.fix = fix


class ApiChecked(Message):
    def __init__(self, up: bool, text: str) -> None:
        super().__init__()
        self.up = up
        self.text = text


class Reloaded(Message):
    def __init__(self, result: ReloadResult | None, error: str | None = None) -> None:
        super().__init__()
        self.result = result
        self.error = error


def _paths_of(delta: LiveDelta) -> set[str]:
    paths = set(delta.changed) | set(delta.removed) | set(delta.relinked)
    for old, new in delta.moved:
        paths.update((old, new))
    for d in (*delta.new, *delta.fixed):
        paths.add(d.path)
    for old, new in delta.updated:
        paths.update((old.path, new.path))
    return paths


class MainScreen(Screen[None]):
    # Priority bindings: the app runs them the moment it reads the key, before it reads the next one. A
    # plain binding is run only once the key has bubbled up from the focused widget, and keys typed right
    # after it were by then already handed to that widget: `f` then `rust` typed at once sent `r` to the
    # tree (a reload) before the filter box got the focus. A box that takes the typed text (the filter,
    # the question) still gets these letters: Textual leaves out the bindings of keys an Input consumes.
    BINDINGS = [
        Binding("slash", "ask", "Ask", priority=True),
        Binding("p", "problems", "Problems", priority=True),
        Binding("x", "fix", "Fix", priority=True),
        Binding("n", "new_note", "New", priority=True),
        Binding("e", "edit", "Edit", priority=True),
        Binding("o", "obsidian", "Obsidian", priority=True),
        Binding("l", "lint", "Lint", priority=True),
        Binding("r", "reload", "Reload", priority=True),
        Binding("q", "app.quit", "Quit", priority=True),
        Binding("f", "filter", "Filter", show=False, priority=True),
        Binding("s", "summary", "Summary", show=False, priority=True),
        Binding("v", "note", "Note", show=False, priority=True),
        Binding("k", "links", "Links of the note", show=False, priority=True),
        Binding("right_square_bracket", "next_problem", "Next note with problems", show=False, priority=True),
        Binding("escape", "back", "Tree", priority=True),
    ]

    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide"), (160, "-very-wide")]

    def __init__(self, backend: Backend, *, watch: bool = True, check_api: bool = True) -> None:
        super().__init__()
        self.backend = backend
        self.watch_vault = watch
        self.check_api = check_api and bool(backend.api)
        self.current: str | None = None
        self.linted = False
        self.index_ready = False
        self.failed: str | None = None
        self.summary: Summary | None = None
        self.last_preview_ms: float | None = None  # question to result on screen (the benchmark reads it)
        self.first_screen_at: float | None = None  # perf_counter when the tree first showed the notes
        self.busy: str | None = "reading the vault…"
        self.api_text = "not set (--api URL)" if not backend.api else "checking…"
        self.api_up: bool | None = None
        self.last_reload: str | None = None
        self._preview_seq = 0
        self._detail_seq = 0
        self._preview_timer: Timer | None = None
        self._filter_timer: Timer | None = None
        self._lint_running = False
        self.missing: str | None = None  # "vault folder not found: PATH" while the folder is gone
        self._look_timer: Timer | None = None
        self._painted = threading.Event()  # the tree has been drawn once: the full read may take the CPU

    # -- layout -----------------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield TextBox(placeholder="filter: name type: rule: has:", id="filter", compact=True)
                yield Static("", id="filter-status")
                yield NoteTree(id="tree")
            with TabbedContent(id="tabs", initial="tab-summary"):
                with TabPane("Summary", id="tab-summary"):
                    yield VaultSummary(id="summary")
                with TabPane("Note", id="tab-note"):
                    yield NoteView(id="note")
                with TabPane("Ask", id="tab-ask"):
                    yield QuestionPreview(id="preview")
        with Horizontal(id="status"):
            yield Static("", id="status-vault")
            yield Static("", id="status-api")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self._update_status()
        self._update_filter_status()
        self.set_focus(self.query_one(NoteTree))
        self._spawn(self._load_thread, "tui-load")
        if self.check_api:
            self._check_api()
            self.set_interval(API_CHECK_EVERY, self._check_api)

    # -- threads ----------------------------------------------------------------------------------------
    def _spawn(self, target: Callable[[], Any], name: str) -> None:
        """Run `target` on a daemon thread; an unexpected exception becomes a message, not a traceback."""

        def run() -> None:
            try:
                target()
            except Exception as exc:  # a bug of ours: tell the user, keep the app alive
                self._post(Notice(f"internal error ({name}): {type(exc).__name__}: {exc}", "error", 10))

        threading.Thread(target=run, name=name, daemon=True).start()

    def _post(self, message: Message) -> None:
        try:
            self.post_message(message)
        except RuntimeError:  # the app is closing
            pass

    def _load_thread(self) -> None:
        backend = self.backend
        try:
            scanned = backend.scan()
            if scanned:
                self._post(Scanned(scanned))
                # let the UI thread draw the tree before the full read competes with it for the GIL
                self._painted.wait(timeout=3.0)
            if self.watch_vault:  # watch before reading: a save made while the vault is read is not lost
                self._watch_thread()
            rows = backend.load()
        except BackendError as exc:
            self._post(LoadFailed(str(exc)))
            return
        self._post(Loaded(rows))
        try:
            backend.build_index()
        except Exception as exc:
            self._post(Notice(f"the question preview is off: the index failed: {type(exc).__name__}: {exc}", "error", 10))
        else:
            self._post(IndexReady())
        try:
            rows = backend.start_live()
        except Exception as exc:
            self._post(LoadFailed(f"the check of the vault failed: {type(exc).__name__}: {exc}"))
            return
        self._post(Linted(rows, backend.summary()))

    def _watch_thread(self) -> None:
        try:
            self.backend.start_watching(self._on_delta_thread, self._on_watch_error)
        except BackendError as exc:
            self._post(Notice(f"not watching the vault: {exc}", "warning", 10))

    def _on_delta_thread(self, delta: LiveDelta) -> None:
        """On the watcher's thread: collect what the UI needs, then hand it over."""
        paths = _paths_of(delta)
        rows = {r.path: r for r in self.backend.rows_all()} if delta.taxonomy_reloaded else None
        changed = self.backend.rows(paths) if rows is None else {p: rows.get(p) for p in set(rows) | paths}
        # a vault folder deleted as a whole arrives as every note deleted: say that, not "all clean"
        self._post(VaultChanged(delta, changed, self.backend.summary(), missing=not self.backend.root.is_dir()))
        if self.backend.own_index and delta.vault_changed:  # big vault: the preview follows a bit later
            self._spawn(self._reindex_thread, "tui-reindex")

    def _reindex_thread(self) -> None:
        if self.backend.refresh_index():
            self._post(IndexReady())

    def _on_watch_error(self, exc: BaseException) -> None:
        self._post(Notice(f"error while applying changes (watching goes on): {type(exc).__name__}: {exc}", "error", 10))

    # -- loading ----------------------------------------------------------------------------------------
    def on_scanned(self, message: Scanned) -> None:
        self.query_one(NoteTree).set_rows(message.rows, linted=False)
        self._update_filter_status()
        self.call_after_refresh(self._first_paint)

    def _first_paint(self) -> None:
        if self.first_screen_at is None:
            self.first_screen_at = time.perf_counter()
        self._painted.set()

    def on_loaded(self, message: Loaded) -> None:
        self.busy = "building the search index…"
        tree = self.query_one(NoteTree)
        if set(tree.rows) == {r.path for r in message.rows} and not tree.filter.active:
            tree.rows = {r.path: r for r in message.rows}
            tree.relabel_all(linted=False)
        else:
            tree.set_rows(message.rows, linted=False)
        if self.first_screen_at is None:
            self.call_after_refresh(self._first_paint)
        self._update_status()
        self._update_filter_status()
        self._refresh_summary()

    def on_index_ready(self, _: IndexReady) -> None:
        self.index_ready = True
        if not self.linted:
            self.busy = f"checking {count(len(self.query_one(NoteTree).rows), 'note')}…"
        self._update_status()
        self._run_preview(now=True)

    def on_linted(self, message: Linted) -> None:
        self.linted = True
        self._lint_running = False
        self.busy = None
        self.failed = None  # a full check that worked: the vault is readable again
        self._set_missing(None)
        tree = self.query_one(NoteTree)
        shown = tree.shown
        tree.rows = {r.path: r for r in message.rows}
        tree.linted = True
        if tree.filter.active:
            # after `l`, what the author was looking at stays (the note just fixed must not vanish)
            tree.rebuild(sticky=shown if message.delta is not None else ())
        else:
            missing = set(tree.rows) ^ set(tree.shown)
            if missing:
                tree.rebuild()
            else:
                tree.relabel_all(linted=True)
        tree.linted = True
        self._show_summary(message.summary)
        self._update_filter_status()
        self._load_detail()
        self._run_preview(now=True)
        if message.delta is not None:
            s = message.summary
            d = message.delta
            self._tell(
                f"Full check: {count(s.errors, 'error')}, {count(s.warnings, 'warning')}"
                f" in {s.notes_with_problems} of {count(s.notes, 'note')}"
                f" ({len(d.new)} new, {len(d.fixed)} fixed since the last check).",
                title="Lint",
            )

    def on_load_failed(self, message: LoadFailed) -> None:
        self.failed = message.message
        self.busy = None
        self._lint_running = False
        self._update_status()
        self.query_one("#health", Static).update(Text(f"✗ {message.message}", style="bold red"))
        self.query_one(NoteView).show(None, message=message.message)
        self._tell(message.message, title="Cannot open the vault", severity="error", timeout=30)

    def on_lint_failed(self, message: LintFailed) -> None:
        # another failure means the folder is there (unreadable, say): stop looking for it
        self._set_missing(message.message if message.missing else None)
        self._tell(message.message, title="Lint", severity="error", timeout=10)

    def on_lint_ended(self, _: LintEnded) -> None:
        self._lint_running = False
        self._update_status()

    # -- a vault folder that goes away ------------------------------------------------------------------
    def _set_missing(self, message: str | None) -> None:
        """Enter (message) or leave (None) the "vault folder not found" state. While in it, the folder is
        looked for every second and checked again in full as soon as it is back."""
        if message == self.missing:
            return
        self.missing = message
        if message is None:
            if self._look_timer is not None:
                self._look_timer.stop()
                self._look_timer = None
        elif self._look_timer is None:
            self._look_timer = self.set_interval(VAULT_LOOK_EVERY, self._look_for_vault)
        if self.summary is not None:
            self.query_one(VaultSummary).show(self.summary, missing=self.missing)
        self._update_status()
        self._update_filter_status()

    def _look_for_vault(self) -> None:
        if self.missing and not self._lint_running and self.backend.root.is_dir():
            self._start_lint()

    # -- live changes -----------------------------------------------------------------------------------
    def on_vault_changed(self, message: VaultChanged) -> None:
        tree = self.query_one(NoteTree)
        tree.update_rows(message.rows)
        if message.missing:
            self._set_missing(f"vault folder not found: {self.backend.root}")
        self._show_summary(message.summary)
        self._update_filter_status()
        delta = message.delta
        if self.current is not None:
            if self.current in delta.removed and not any(old == self.current for old, _ in delta.moved):
                self.query_one(NoteView).show(None, message=f"{self.current} was deleted.")
            else:
                for old, new in delta.moved:
                    if old == self.current:
                        self.current = new
                        tree.select_path(new)
                self._load_detail()
        self._run_preview(now=True)

    # -- the tree and the note ----------------------------------------------------------------------------
    @on(Tree.NodeHighlighted, "#tree")
    def _highlighted(self, event: Tree.NodeHighlighted) -> None:
        data = event.node.data
        if data is None or data.startswith("dir:"):
            return
        if data == self.current and self.query_one(NoteView).detail is not None:
            return
        self.current = data
        tabs = self.query_one(TabbedContent)
        if tabs.active == "tab-summary":
            tabs.active = "tab-note"
        self._load_detail()

    @on(Tree.NodeSelected, "#tree")
    def _selected(self, event: Tree.NodeSelected) -> None:
        data = event.node.data
        if data is None or data.startswith("dir:"):
            return
        self.query_one(TabbedContent).active = "tab-note"

    def _load_detail(self) -> None:
        path = self.current
        if path is None:
            return
        self._detail_seq += 1
        seq = self._detail_seq

        def work() -> None:
            try:
                detail = self.backend.detail(path)
            except Exception as exc:
                self._post(DetailReady(path, None, f"cannot show {path}: {type(exc).__name__}: {exc}"))
                return
            if seq == self._detail_seq:
                self._post(DetailReady(path, detail))

        self._spawn(work, "tui-detail")

    def on_detail_ready(self, message: DetailReady) -> None:
        if message.path != self.current:
            return
        self.query_one(NoteView).show(message.detail, message=message.error)

    def on_note_view_follow_link(self, message: NoteView.FollowLink) -> None:
        self._go_to(message.path)

    def on_question_preview_open_note(self, message: QuestionPreview.OpenNote) -> None:
        # focus the tree first: a focused widget left in a hidden tab would pull its tab back
        self.set_focus(self.query_one(NoteTree))
        self._go_to(message.path)

    def _go_to(self, path: str) -> None:
        tree = self.query_one(NoteTree)
        was_filtered = tree.filter.active
        if not tree.select_path(path):
            self._tell(f"{path} is not a note of this vault (an attachment?)", severity="warning")
            return
        if was_filtered and not tree.filter.active:  # the filter hid it and was cleared
            self.query_one("#filter", Input).value = ""
        self.current = path
        self._load_detail()
        self.query_one(TabbedContent).active = "tab-note"
        self._update_filter_status()

    # -- filter -----------------------------------------------------------------------------------------
    @on(Input.Changed, "#filter")
    def _filter_changed(self, _: Input.Changed) -> None:
        if self._filter_timer is not None:
            self._filter_timer.stop()
        self._filter_timer = self.set_timer(FILTER_DEBOUNCE, self._apply_filter)

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self, _: Input.Submitted) -> None:
        self._apply_filter()
        self.set_focus(self.query_one(NoteTree))

    def _apply_filter(self) -> None:
        flt = NoteFilter.parse(self.query_one("#filter", Input).value)
        tree = self.query_one(NoteTree)
        if flt.text.split() != tree.filter.text.split():
            tree.set_filter(flt)
        self._update_filter_status()

    def _update_filter_status(self) -> None:
        tree = self.query_one(NoteTree)
        total = len(tree.rows)
        text = Text()
        flt = tree.filter
        if self.failed:
            text.append("no vault", style="red")
        elif self.missing:
            text.append("vault folder not found", style="bold red")
        elif not total and self.busy:
            text.append(self.busy, style="dim")
        elif flt.active:
            text.append(f"{len(tree.shown)} of {count(total, 'note')} match", style="bold")
        else:
            with_problems = sum(1 for r in tree.rows.values() if r.problems)
            text.append(count(total, "note"), style="bold")
            if self.linted:
                text.append(f", {with_problems} with problems" if with_problems else ", all clean")
        errors = NoteFilter.parse(self.query_one("#filter", Input).value).errors
        if self.missing:
            text.append("\nlooking for it again every second", style="dim")
        elif errors:
            text.append(f"\n? {' '.join(errors)} — try: {FILTER_HELP}", style="yellow")
        elif not flt.active:
            text.append("\n✗ errors ! warnings · p: filter", style="dim")
        else:
            text.append("\nempty the box to see all", style="dim")
        self.query_one("#filter-status", Static).update(text)

    # -- preview ----------------------------------------------------------------------------------------
    @on(Input.Changed, "#question")
    def _question_changed(self, _: Input.Changed) -> None:
        self._run_preview()

    @on(Input.Submitted, "#question")
    def _question_submitted(self, _: Input.Submitted) -> None:
        self._run_preview(now=True)
        self.set_focus(self.query_one("#results"))

    def _run_preview(self, now: bool = False) -> None:
        if self._preview_timer is not None:
            self._preview_timer.stop()
            self._preview_timer = None
        if not now:
            self._preview_timer = self.set_timer(PREVIEW_DEBOUNCE, lambda: self._run_preview(now=True))
            return
        query = self.query_one("#question", Input).value
        if not query.strip() and self.query_one(QuestionPreview).preview is None:
            return
        self._preview_seq += 1
        seq = self._preview_seq
        started = time.perf_counter()

        def work() -> None:
            preview = self.backend.preview(query)
            if seq == self._preview_seq:
                self._post(PreviewReady(seq, preview, started))

        self._spawn(work, "tui-preview")

    def on_preview_ready(self, message: PreviewReady) -> None:
        if message.seq != self._preview_seq:
            return
        self.query_one(QuestionPreview).show(message.preview)
        self.last_preview_ms = (time.perf_counter() - message.started) * 1000.0

    # -- summary and status -----------------------------------------------------------------------------
    def _refresh_summary(self) -> None:
        self._spawn(lambda: self._post_summary(), "tui-summary")

    def _post_summary(self) -> None:
        summary = self.backend.summary()
        self.app.call_from_thread(self._show_summary, summary)

    def _show_summary(self, summary: Summary) -> None:
        if self.summary is not None and self.summary.linted and not summary.linted:
            return  # computed on a worker before the first lint finished, and arrived after it: stale
        self.summary = summary
        self.query_one(VaultSummary).show(summary, missing=self.missing)
        self._update_status()

    def on_vault_summary_filter_rule(self, message: VaultSummary.FilterRule) -> None:
        self.set_focus(self.query_one(NoteTree))
        box = self.query_one("#filter", Input)
        box.value = f"rule:{message.rule}"
        self._apply_filter()

    def _update_status(self) -> None:
        right = Text()
        right.append("API ")
        style = "green" if self.api_up else ("red" if self.api_up is False else "dim")
        right.append(self.api_text, style=style)
        right.append(" · reload: ")
        right.append(self.last_reload or "none yet", style="dim" if self.last_reload is None else "")
        right.append(" ")
        self.query_one("#status-api", Static).update(right)
        # The left half gets what the right half leaves (its Static is `1fr`): on a narrow terminal the
        # note count goes first (the tree and the summary show it too), then the end is cut with "…".
        room = self.size.width - right.cell_len - 1  # the right half's padding
        left = self._status_left(with_count=True)
        if left.cell_len > room:
            left = self._status_left(with_count=False)
        left.truncate(max(room, 1), overflow="ellipsis")  # cut here: the Static would wrap and show line 1
        self.query_one("#status-vault", Static).update(left)

    def on_resize(self, _: events.Resize) -> None:
        self._update_status()

    def _status_left(self, *, with_count: bool) -> Text:
        left = Text()
        left.append(f" {self.backend.vault_name}", style="bold")
        s = self.summary
        notes = f" · {count(s.notes, 'note')}" if s is not None and with_count else ""
        if self.failed:
            left.append(" · cannot open the vault", style="bold red")
        elif self.missing:
            left.append(f" · {self.missing}", style="bold red")
        elif self.busy:
            left.append(notes)
            left.append(f" · {self.busy}", style="italic")
        elif s is not None:
            # with problems, "in 2 of 6 notes" says the count already
            left.append(" · " if s.errors or s.warnings else notes + " · ")
            if s.errors or s.warnings:
                marks = [(f"✗{s.errors}", "bold red")] if s.errors else []
                marks += [(f"!{s.warnings}", "yellow")] if s.warnings else []
                for i, (mark, style) in enumerate(marks):
                    left.append(" " * (i > 0) + mark, style=style)
                left.append(f" in {s.notes_with_problems} of {count(s.notes, 'note')}")
            else:
                left.append("✓ clean", style="green")
        if self._lint_running:
            left.append(" · linting…", style="italic")
        return left

    def _check_api(self) -> None:
        def work() -> None:
            up, text = self.backend.check_api()
            self._post(ApiChecked(up, text))

        self._spawn(work, "tui-api-check")

    def on_api_checked(self, message: ApiChecked) -> None:
        self.api_up = message.up
        self.api_text = message.text
        self._update_status()

    # -- actions ----------------------------------------------------------------------------------------
    def _note_or_warn(self) -> str | None:
        if self.current is None or self.current not in self.query_one(NoteTree).rows:
            self._tell("Pick a note in the tree first (↑ ↓).", severity="warning")
            return None
        return self.current

    def action_ask(self) -> None:
        self.query_one(TabbedContent).active = "tab-ask"
        self.set_focus(self.query_one("#question", Input))

    def action_filter(self) -> None:
        # now, not after a refresh (`Widget.focus`): the keys typed right after `f` are the filter's
        self.set_focus(self.query_one("#filter", Input))

    def action_summary(self) -> None:
        self.query_one(TabbedContent).active = "tab-summary"

    def action_note(self) -> None:
        self.query_one(TabbedContent).active = "tab-note"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "back":  # only worth a place in the footer when the focus is away from the tree
            return not isinstance(self.focused, NoteTree) or bool(self.query("HelpPanel"))
        return True

    def action_links(self) -> None:
        """Show the note's links and put the cursor in them (Enter follows one)."""
        if self._note_or_warn() is None:
            return
        self.query_one(TabbedContent).active = "tab-note"
        self.set_focus(self.query_one("#note-links"))
        self.call_after_refresh(self.query_one(NoteView).scroll_to_widget, self.query_one("#links-title"), top=True)

    def action_back(self) -> None:
        """Escape: close the keys panel when it is open, else go back to the tree."""
        if self.query("HelpPanel"):
            self.app.action_hide_help_panel()
            return
        self.set_focus(self.query_one(NoteTree))

    def action_problems(self) -> None:
        """Toggle `has:problems` in the filter."""
        box = self.query_one("#filter", Input)
        words = box.value.split()
        if "has:problems" in words:
            words = [w for w in words if w != "has:problems"]
        else:
            words.append("has:problems")
        box.value = " ".join(words)
        self._apply_filter()
        self.set_focus(self.query_one(NoteTree))
        if not self.linted:
            self._tell("The first check is still running: badges and this filter fill in when it ends.")

    def action_next_problem(self) -> None:
        tree = self.query_one(NoteTree)
        path = tree.next_with_problems(self.current)
        if path is None:
            self._tell("No note with problems is shown.")
            return
        self._go_to(path)

    def action_lint(self) -> None:
        if self.failed and not self.linted:
            self._tell(self.failed, severity="error")
            return
        if not self.linted or self._lint_running:
            self._tell("A check is already running.")
            return
        self._start_lint()

    def _start_lint(self) -> None:
        self._lint_running = True
        self._update_status()

        def work() -> None:
            try:
                delta = self.backend.full_lint()
                self._post(Linted(self.backend.rows_all(), self.backend.summary(), delta))
            except VaultMissing as exc:
                self._post(LintFailed(str(exc), missing=True))
            except BackendError as exc:
                self._post(LintFailed(str(exc), missing=False))
            finally:  # whatever happened (even a bug of ours, reported by `_spawn`), `l` must work again
                self._post(LintEnded())

        self._spawn(work, "tui-lint")

    def action_fix(self) -> None:
        path = self._note_or_warn()
        if path is None:
            return
        if not self.linted:
            self._tell("The first check is still running; try again in a moment.")
            return

        def work() -> None:
            try:
                fix = self.backend.plan_fix(path)
            except BackendError as exc:
                self._post(Notice(str(exc), "error"))
                return
            self._post(FixPlanned(path, fix))

        self._spawn(work, "tui-plan-fix")

    def on_fix_planned(self, message: FixPlanned) -> None:
        fix = message.fix
        if fix is None or (not fix.changed and not fix.error):
            row = self.query_one(NoteTree).rows.get(message.path)
            if row is not None and row.problems:
                self._tell(
                    f"No safe automatic fix for {message.path}: its problems need you (e to edit it).",
                    severity="warning",
                )
            else:
                self._tell(f"Nothing to fix in {message.path}.")
            return
        if fix.error:
            self._tell(fix.error, severity="error")
            return

        def confirmed(ok: bool | None) -> None:
            if ok:
                self._write_fix(fix)
            else:
                self._tell("Nothing written.")

        self.app.push_screen(FixScreen(fix), confirmed)

    def _write_fix(self, fix: FileFix) -> None:
        def work() -> None:
            try:
                delta = self.backend.write_fix(fix)
            except BackendError as exc:
                self._post(Notice(f"Not written: {exc}", "error", 10))
                return
            n = len(fix.applied)
            self._post(Notice(f"Fixed {n} problem{'s' * (n != 1)} in {fix.path}."))
            if delta is not None and not delta.is_empty:
                self._on_delta_thread(delta)

        self._spawn(work, "tui-write-fix")

    def action_new_note(self) -> None:
        if self.failed:
            self._tell(self.failed, severity="error")
            return
        default = "projet"
        row = self.query_one(NoteTree).rows.get(self.current or "")
        if row is not None and row.type in self.backend.note_types():
            default = row.type

        def created(path: str | None) -> None:
            if not path:
                return

            def work() -> None:
                rows = self.backend.rows([path])
                summary = self.backend.summary()
                self.app.call_from_thread(self._show_created, path, rows, summary)

            self._spawn(work, "tui-created")

        self.app.push_screen(NewNoteScreen(self.backend, default), created)

    def _show_created(self, path: str, rows: dict[str, NoteRow | None], summary: Summary) -> None:
        self.query_one(NoteTree).update_rows(rows)
        self._show_summary(summary)
        self._update_filter_status()
        self._go_to(path)
        self._tell(f"Created {path} (private until you publish it). Press e to write it.", title="New note")

    def action_edit(self) -> None:
        path = self._note_or_warn()
        if path is None:
            return
        argv = self.backend.editor_command(path, self._problem_line(path))
        if argv is None:
            self._tell(f"Set $EDITOR to edit notes from here; the file is {self.backend.absolute(path)}", severity="warning")
            return
        try:
            with self.app.suspend():
                result = subprocess.run(argv, check=False)
        except SuspendNotSupported:
            self._tell(f"This terminal cannot hand over to an editor; the file is {self.backend.absolute(path)}", severity="warning")
            return
        except OSError as exc:
            self._tell(f"Could not run {argv[0]}: {exc.strerror or exc}", severity="error")
            return
        if result.returncode != 0:
            self._tell(f"{argv[0]} exited with status {result.returncode}", severity="warning")

        def work() -> None:  # do not wait for the watcher: show the saved note at once
            delta = self.backend.apply([path])
            if delta is not None and not delta.is_empty:
                self._on_delta_thread(delta)

        if self.linted:
            self._spawn(work, "tui-after-edit")

    def _problem_line(self, path: str) -> int | None:
        """The line of the note's first problem (the note pane lists them by line); None without one."""
        detail = self.backend.detail(path)
        if detail is None or not detail.diagnostics:
            return None
        return min(d.line for d in detail.diagnostics)

    def action_obsidian(self) -> None:
        path = self._note_or_warn()
        if path is None:
            return

        def work() -> None:
            argv, text = self.backend.open_in_obsidian(path)
            self._post(Notice(text, "information" if argv else "warning", 8))

        self._spawn(work, "tui-obsidian")

    def action_reload(self) -> None:
        if not self.backend.api:
            self._tell("No API configured: start the TUI with --api URL (or set GRASBOT_API).", severity="warning")
            return
        self.last_reload = "pushing…"
        self._update_status()

        def work() -> None:
            try:
                result = self.backend.push_reload()
            except (BackendError, ValueError) as exc:
                self._post(Reloaded(None, str(exc)))
                return
            self._post(Reloaded(result))

        self._spawn(work, "tui-reload")

    def on_reloaded(self, message: Reloaded) -> None:
        stamp = _dt.datetime.now().strftime("%H:%M:%S")
        result = message.result
        if result is None:
            self.last_reload = f"failed {stamp}"
            self._tell(message.error or "reload failed", severity="error")
            line = Text(f"{stamp} {message.error}", style="red")
        else:
            self.last_reload = f"{'ok' if result.ok else 'failed'} {stamp}"
            self.api_up = result.ok or result.kind != "unreachable"
            self.api_text = "up" if result.ok else ("down" if result.kind == "unreachable" else f"error {result.status}")
            self._tell(result.summary(), severity="information" if result.ok else "error", title="Reload")
            line = Text(f"{stamp} {result.summary()}", style="green" if result.ok else "red")
        self.query_one(VaultSummary).show_reload(line)
        self._update_status()

    def on_notice(self, message: Notice) -> None:
        self._tell(message.text, severity=message.severity, timeout=message.timeout)

    def _tell(
        self, text: str, *, title: str = "", severity: str = "information", timeout: float | None = None
    ) -> None:
        """A notification, shown verbatim: the text holds note paths and messages, where `[x]` is no markup
        (Textual's default would parse it, and `[/x]` would stop the app)."""
        self.app.notify(text, title=title, severity=severity, timeout=timeout, markup=False)  # type: ignore[arg-type]
