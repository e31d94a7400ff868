"""Check an answer: paste what GrasBot (or anyone) answered to the question in the preview, and see each
sentence labelled against the notes that question retrieves, as the API's verification labels it."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static, TextArea

from vaulttools.tui.backend import Backend, BackendError

STYLES = {"supported": "green", "unsupported": "bold red", "wrong-citation": "bold yellow", "abstention": "cyan", "no-claim": "dim"}


def verification_table(verification: object) -> Table:
    """One row per sentence: its label, the sentence, and why (with the evidence's note)."""
    table = Table(show_header=True, expand=True, box=None, pad_edge=False)
    table.add_column("label", no_wrap=True)
    table.add_column("sentence", ratio=3, overflow="fold")
    table.add_column("why", ratio=2, overflow="fold")
    for check in verification.sentences:  # type: ignore[attr-defined]
        why = Text(check.reason, style="dim")
        if check.evidence is not None:
            why.append(f"\n[{check.evidence[0]}]", style="cyan")
        table.add_row(Text(check.label, style=STYLES.get(check.label, "")), Text(check.text), why)
    return table


class VerifyScreen(ModalScreen[None]):
    """Paste an answer, press ctrl+s (or Check): the labels appear below it."""

    BINDINGS = [Binding("escape", "close", "Close"), Binding("ctrl+s", "check", "Check", priority=True)]

    def __init__(self, backend: Backend, question: str, ids: tuple[str, ...]) -> None:
        super().__init__()
        self.backend = backend
        self.question = question
        self.ids = ids
        self.verification: object | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="verify-dialog", classes="dialog"):
            yield Static(Text(f"Check an answer to « {self.question} »", style="bold"))
            yield Static(Text("against " + ", ".join(self.ids), style="dim"), id="verify-sources")
            yield TextArea(id="verify-answer", soft_wrap=True)
            with Horizontal(classes="buttons"):
                yield Button("Check (ctrl+s)", variant="primary", id="verify-check")
                yield Button("Close (esc)", id="verify-close")
            with VerticalScroll(id="verify-scroll"):
                yield Static(Text("Paste the answer above.", style="dim"), id="verify-result")

    def on_mount(self) -> None:
        self.query_one("#verify-answer", TextArea).focus()

    def action_close(self) -> None:
        self.dismiss(None)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "verify-check":
            self.action_check()
        else:
            self.dismiss(None)

    def action_check(self) -> None:
        answer = self.query_one("#verify-answer", TextArea).text
        result = self.query_one("#verify-result", Static)
        if not answer.strip():
            result.update(Text("Paste the answer above first.", style="yellow"))
            return
        try:
            verification = self.backend.verify_answer(answer, self.ids)
        except BackendError as exc:
            result.update(Text(str(exc), style="bold red"))
            return
        self.verification = verification
        counts = ", ".join(f"{n} {label}" for label, n in verification.summary.items() if n)
        head = Text(f"status: {verification.status}", style="bold")
        head.append(f" ({counts})", style="dim")
        table = verification_table(verification)
        from rich.console import Group

        result.update(Group(head, table))
