"""Confirm the safe fixes of one note after reading the diff. Nothing is written before `y`."""

from __future__ import annotations

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from vaulttools.lint.fixes import FileFix


def fix_summary(fix: FileFix) -> Text:
    text = Text()
    n = len(fix.applied)
    text.append(f"Apply {n} safe fix{'es' * (n != 1)} to ", style="bold")
    text.append(fix.path, style="bold cyan")
    text.append("?\n")
    for diag in fix.applied:
        message = diag.fix.message if diag.fix is not None else diag.message
        text.append(f"  ✓ line {diag.line} {diag.rule}: {message}\n", style="green")
    for diag, reason in fix.skipped:
        text.append(f"  – line {diag.line} {diag.rule}: not fixed ({reason})\n", style="yellow")
    text.append("Only these characters change; the file is written only if nobody saved it meanwhile.", style="dim")
    return text


class FixScreen(ModalScreen[bool]):
    """Shows `fix.diff()`; dismisses with True (write it) or False."""

    BINDINGS = [
        Binding("y", "apply", "Apply the fixes"),
        Binding("n,escape", "cancel", "Cancel"),
    ]

    def __init__(self, fix: FileFix) -> None:
        super().__init__()
        self.fix = fix

    def compose(self) -> ComposeResult:
        with Vertical(id="fix-dialog", classes="dialog"):
            yield Static(fix_summary(self.fix), id="fix-summary")
            with VerticalScroll(id="fix-diff"):
                yield Static(Syntax(self.fix.diff(), "diff", theme="ansi_dark", word_wrap=True, background_color="default"))
            with Horizontal(classes="buttons"):
                yield Button("Apply (y)", variant="success", id="apply")
                yield Button("Cancel (n)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#apply", Button).focus()

    def action_apply(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "apply")
