"""The vault at a glance: notes by type, problems by rule (Enter lists a rule's notes), the answering profile,
reload status."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from vaulttools.tui.backend import Summary
from vaulttools.words import count

GETTING_STARTED: tuple[tuple[str, str], ...] = (
    ("↑ ↓", "pick a note, see what is wrong"),
    ("p", "only the notes with problems"),
    ("x", "apply its safe fixes (diff first)"),
    ("k", "its links; Enter follows one"),
    ("/", "ask as a visitor: what is retrieved"),
    ("ctrl+p", "every command"),
    ("? F1", "every key"),
)


def getting_started() -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column()
    for key, what in GETTING_STARTED:
        table.add_row(key, what)
    return table


def health_text(summary: Summary, missing: str | None = None) -> Text:
    """Name, size, problems and taxonomy; `missing` (the vault folder is gone) replaces the problems."""
    text = Text()
    text.append(f"{summary.vault_name}", style="bold")
    text.append(f"  {count(summary.notes, 'note')}, {summary.private} private\n")
    if missing:
        text.append(f"✗ {missing}", style="bold red")
        text.append("\nit is checked again as soon as it is back (or press l)", style="dim")
    elif not summary.linted:
        text.append("checking the vault…", style="dim")
    elif summary.errors or summary.warnings:
        text.append(f"✗ {count(summary.errors, 'error')}", style="bold red")
        text.append(" · ")
        text.append(f"! {count(summary.warnings, 'warning')}", style="yellow")
        # "in 43 of 49 notes": the notes with problems, of the notes checked (as `vaulttools lint` says it)
        text.append(f" in {summary.notes_with_problems} of {count(summary.notes, 'note')}")
        if summary.fixable_notes:
            text.append(f" · {summary.fixable_notes} with safe fixes", style="green")
    else:
        text.append("✓ no problem found", style="green")
    text.append("\ntaxonomy: ", style="dim")
    if summary.taxonomy_error:
        text.append(f"{summary.taxonomy_error} (vocabulary rules off)", style="yellow")
    elif summary.taxonomy:
        text.append(summary.taxonomy)
    elif not summary.linted:  # not looked for yet: "none found" would be said, then taken back
        text.append("…", style="dim")
    else:
        text.append("none found (structural rules only)", style="yellow")
    text.append("\nprofile: ", style="dim")
    if summary.profile_error:
        text.append(f"✗ {summary.profile_error}", style="bold red")
    else:
        text.append(summary.profile)
    for notice in summary.notices:
        text.append(f"\n! {notice}", style="yellow")
    return text


def types_table(summary: Summary) -> Table:
    table = Table(box=None, show_header=False, pad_edge=False)
    table.add_column("type", style="cyan")
    table.add_column("notes", justify="right")
    for name, notes in summary.by_type:
        table.add_row(Text(name), str(notes))  # Text: a type is the note's own words, `[x]` is no markup
    return table


def rule_prompt(rule: str, severity: str, problems: int, notes: int) -> Text:
    style = "bold red" if severity == "error" else "yellow"
    text = Text()
    text.append("✗ " if severity == "error" else "! ", style=style)
    text.append(rule, style=style)
    text.append(f"  {problems} in {notes} note{'s' * (notes != 1)}", style="dim")
    return text


class VaultSummary(VerticalScroll):
    class FilterRule(Message):
        def __init__(self, rule: str) -> None:
            super().__init__()
            self.rule = rule

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._rules: list[str] = []

    def compose(self) -> ComposeResult:
        yield Static(Text("loading the vault…", style="dim"), id="health")
        yield Static(getting_started(), id="getting-started")
        yield Static("Problems by rule — Enter lists the notes", classes="section")
        yield OptionList(id="rules")
        yield Static("Notes by type", classes="section")
        yield Static("", id="types")
        yield Static("API", classes="section")
        yield Static(Text("no reload pushed yet (r pushes one)", style="dim"), id="reload-status")

    def show(self, summary: Summary, *, missing: str | None = None) -> None:
        self.query_one("#health", Static).update(health_text(summary, missing))
        self.query_one("#types", Static).update(types_table(summary))
        rules = self.query_one("#rules", OptionList)
        highlighted = rules.highlighted
        rules.clear_options()
        self._rules = [r[0] for r in summary.by_rule]
        if summary.by_rule:
            rules.add_options([Option(rule_prompt(*r)) for r in summary.by_rule])
            if highlighted is not None and highlighted < len(summary.by_rule):
                rules.highlighted = highlighted
        else:
            text = "checking…" if not summary.linted else "none"
            rules.add_option(Option(Text(text, style="dim"), disabled=True))

    def show_reload(self, text: Text) -> None:
        self.query_one("#reload-status", Static).update(text)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option_list.id != "rules":
            return
        event.stop()
        if 0 <= event.option_index < len(self._rules):
            self.post_message(self.FilterRule(self._rules[event.option_index]))
