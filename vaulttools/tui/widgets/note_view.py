"""The selected note: what is wrong with it first, then its fields, its links and its body."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import Markdown, OptionList, Static
from textual.widgets.option_list import Option

from vaulttools.tui.backend import LinkRow, NoteDetail

#: Bodies longer than this are shown cut (Markdown rendering of a huge note would stall the screen).
MAX_BODY_CHARS = 20_000

_STATUS_MARK = {
    "ok": ("→", "green"),
    "ambiguous": ("?", "yellow"),
    "broken": ("✗", "bold red"),
    "broken-anchor": ("#", "red"),
    "external": ("↗", "dim"),
    "backlink": ("←", "cyan"),
}


def _value_text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(_value_text(v) for v in value) if value else "[]"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_value_text(v)}" for k, v in value.items())
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    if value is None:
        return "(empty)"
    return str(value)


def problems_text(detail: NoteDetail) -> Table | Text:
    """One block per problem: severity, rule and line on a first line, the message indented below (it
    stays readable in a narrow pane, where a table's message column would be a few characters wide)."""
    if not detail.linted:
        return Text("checking the vault…", style="dim")
    if not detail.diagnostics:
        return Text("✓ no problem", style="green")
    grid = Table.grid(expand=True)
    grid.add_column(width=2, no_wrap=True)
    grid.add_column(ratio=1, overflow="fold")
    for d in detail.diagnostics:
        sev = str(d.severity)
        style = "bold red" if sev == "error" else "yellow"
        head = Text(d.rule, style=style)
        head.append(f"  line {d.line}", style="dim")
        if d.fix is not None:
            head.append("  fixable: x", style="green")
        grid.add_row(Text("✗" if sev == "error" else "!", style=style), head)
        grid.add_row("", Text(d.message))
        if d.fix is not None:
            grid.add_row("", Text(f"fix: {d.fix.message}", style="green"))
    return grid


def fields_table(detail: NoteDetail) -> Table | Text:
    note = detail.note
    if not note.has_frontmatter and not note.meta:
        return Text("no frontmatter", style="dim")
    table = Table(box=None, show_header=False, pad_edge=False, expand=True)
    table.add_column("field", style="cyan", no_wrap=True)
    table.add_column("value", ratio=1, overflow="fold")
    for key, value in note.meta.items():
        # Text, not str: a str cell is parsed as rich markup, and note values are full of brackets
        # (`[[wikilinks]]` vanished, an alias `[/x] ...` stopped the app)
        table.add_row(Text(str(key)), Text(_value_text(value)))
    return table


def link_prompt(row: LinkRow, outgoing: bool) -> Text:
    mark, style = _STATUS_MARK.get(row.status, ("·", ""))
    text = Text()
    text.append(f"{mark} ", style=style)
    if outgoing:
        text.append(f"L{row.line} ", style="dim")
        text.append(row.text)
        if row.target and row.status != "external":
            text.append(f" {row.target}", style="dim")
        if row.status not in ("ok", "external"):
            text.append(f" {row.status}", style=style)
    else:
        text.append(row.target or row.text)
        text.append(f" L{row.line}", style="dim")
    if row.private:
        text.append(" private", style="magenta")
    if row.hint:
        text.append(f" ({row.hint})", style="italic")
    return text


class NoteView(VerticalScroll):
    """Header line, problems, fields, links (Enter follows one), body."""

    class FollowLink(Message):
        """The author chose a link or a backlink: show that note."""

        def __init__(self, path: str) -> None:
            super().__init__()
            self.path = path

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="-no-note")
        self.detail: NoteDetail | None = None
        self._targets: list[str | None] = []

    def compose(self) -> ComposeResult:
        yield Static("Pick a note in the tree (↑ ↓) to see its problems, fields, links and body.", id="note-head")
        yield Static("Problems", classes="section")
        yield Static("", id="note-problems")
        yield Static("Fields", classes="section")
        yield Static("", id="note-fields")
        yield Static("Links", classes="section", id="links-title")
        yield OptionList(id="note-links")
        yield Static("Body", classes="section")
        yield Markdown("", id="note-body")

    def show(self, detail: NoteDetail | None, *, message: str | None = None) -> None:
        same_note = self.detail is not None and detail is not None and self.detail.path == detail.path
        self.detail = detail
        head = self.query_one("#note-head", Static)
        self.set_class(detail is None, "-no-note")  # no note: only the head line, no empty sections
        if detail is None:
            head.update(Text(message or "This note is gone (deleted or moved).", style="yellow"))
            for wid in ("#note-problems", "#note-fields"):
                self.query_one(wid, Static).update("")
            self.query_one("#note-links", OptionList).clear_options()
            self._targets = []
            self.query_one("#links-title", Static).update(Text("Links"))
            self.query_one("#note-body", Markdown).update("")
            return
        head.update(self._head(detail))
        self.query_one("#note-problems", Static).update(problems_text(detail))
        self.query_one("#note-fields", Static).update(fields_table(detail))
        self._show_links(detail)
        self._show_body(detail)
        if not same_note:
            self.scroll_home(animate=False)

    def _head(self, detail: NoteDetail) -> Text:
        note = detail.note
        text = Text()
        text.append(note.title, style="bold")
        text.append(f"  {detail.path}\n", style="dim")
        text.append(f"{note.type or '(no type)'} · ")
        if note.is_private:
            text.append("private", style="magenta")
            text.append(" (never shown to visitors)", style="dim")
        else:
            text.append("public", style="green")
        if detail.linted:
            errors = sum(1 for d in detail.diagnostics if str(d.severity) == "error")
            warnings = len(detail.diagnostics) - errors
            text.append(" · ")
            if errors:
                text.append(f"✗{errors} error{'s' * (errors != 1)} ", style="bold red")
            if warnings:
                text.append(f"!{warnings} warning{'s' * (warnings != 1)} ", style="yellow")
            if not detail.diagnostics:
                text.append("✓ clean", style="green")
            if detail.fixable:
                n = detail.fixable
                text.append(f"\nx: apply {n} safe fix{'es' * (n != 1)} (diff shown first)", style="green")
        return text

    def _show_links(self, detail: NoteDetail) -> None:
        links = self.query_one("#note-links", OptionList)
        highlighted = links.highlighted
        links.clear_options()
        self._targets = []
        options: list[Option] = []
        for row in detail.links:
            options.append(Option(link_prompt(row, True), disabled=row.target is None or row.status == "external"))
            self._targets.append(row.target)
        if detail.backlinks:
            for row in detail.backlinks:
                options.append(Option(link_prompt(row, False)))
                self._targets.append(row.target)
        if not options:
            options.append(Option(Text("no links in or out", style="dim"), disabled=True))
            self._targets.append(None)
        links.add_options(options)
        title = f"Links: {len(detail.links)} out, {len(detail.backlinks)} back"
        if detail.links or detail.backlinks:
            title += " — k jumps here, Enter follows one"
        self.query_one("#links-title", Static).update(Text(title))
        if highlighted is not None and highlighted < len(options):
            links.highlighted = highlighted

    def _show_body(self, detail: NoteDetail) -> None:
        body = detail.note.body
        problems = [p for p in detail.note.problems if p.code in ("unreadable", "binary", "not-utf8")]
        if problems:
            body = "\n\n".join(f"> **{p.message}**" for p in problems) + ("\n\n" + body if body else "")
        if len(body) > MAX_BODY_CHARS:
            body = body[:MAX_BODY_CHARS] + "\n\n*… (cut here: press e to open the whole note)*"
        if not body.strip():
            body = "*(empty body)*"
        self.query_one("#note-body", Markdown).update(body)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option_list.id != "note-links":
            return
        event.stop()
        index = event.option_index
        if 0 <= index < len(self._targets) and self._targets[index]:
            self.post_message(self.FollowLink(self._targets[index]))  # type: ignore[arg-type]
