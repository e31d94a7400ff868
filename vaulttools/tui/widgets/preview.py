"""The question preview: type a visitor's question, see what GrasBot would retrieve and put in its prompt.

The ranking comes from the bot's own retrieval pipeline (`grasbot.answer.pipeline`, what the API's `/ask`
calls), through the backend's `preview`; the app runs it in a worker, debounced, and hands the result to
`show()`.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from vaulttools.tui.backend import Preview, PreviewRow
from vaulttools.tui.widgets.inputs import TextBox
from vaulttools.words import count

PLACEHOLDER = "Ask as a visitor would, e.g. « C'est quoi ce projet ? »"


def result_prompt(row: PreviewRow) -> Table:
    """Rank, note, score and prompt share on one line; the reasons indented below."""
    head = Text()
    head.append(row.id, style="bold cyan")
    if row.type:
        head.append(f" {row.type}", style="dim")
    head.append(f"  score {row.score:.2f}", style="bold")
    if row.prompt == "cut":
        head.append(f"  cut to {row.chars} chars", style="yellow")
    else:
        head.append("  whole", style="green")
    if not row.direct:
        head.append("  via a link", style="italic")
    grid = Table.grid(expand=True)
    grid.add_column(width=3, no_wrap=True)
    grid.add_column(ratio=1, overflow="fold")
    grid.add_row(Text(f"{row.rank}.", style="bold"), head)
    grid.add_row("", Text(", ".join(row.reasons) or "(no reason)", style="dim"))
    return grid


def verdict_text(preview: Preview) -> Text:
    if preview.message:
        return Text(preview.message, style="dim")
    text = Text()
    if not preview.rows:
        text.append("grounded: no", style="bold yellow")
        text.append(" — no note matches: it says it does not know", style="dim")
        return text
    if preview.grounded:
        text.append("grounded: yes", style="bold green")
        text.append(" — it answers from these notes", style="dim")
    else:
        text.append("grounded: no", style="bold yellow")
        text.append(" — no credible source: it must not invent", style="dim")
    if preview.filters:
        text.append("\nfilters: ", style="bold")
        text.append(", ".join(preview.filters), style="cyan")
    text.append(f"\n{len(preview.rows)} of {count(preview.candidates, 'public note')} · prompt: ", style="dim")
    whole = sum(1 for r in preview.rows if r.prompt == "whole")
    text.append(f"{whole} whole, {len(preview.rows) - whole} cut", style="dim")
    return text


class QuestionPreview(Vertical):
    class OpenNote(Message):
        def __init__(self, path: str) -> None:
            super().__init__()
            self.path = path

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.preview: Preview | None = None
        self._paths: list[str] = []

    def compose(self) -> ComposeResult:
        yield TextBox(placeholder=PLACEHOLDER, id="question")
        yield Static(Text("Type a question: the notes GrasBot would retrieve appear below, best first.", style="dim"), id="verdict")
        yield OptionList(id="results")

    def show(self, preview: Preview) -> None:
        self.preview = preview
        self.query_one("#verdict", Static).update(verdict_text(preview))
        results = self.query_one("#results", OptionList)
        highlighted = results.highlighted
        results.clear_options()
        self._paths = [r.path for r in preview.rows]
        results.add_options([Option(result_prompt(r)) for r in preview.rows])
        if preview.rows:
            results.highlighted = highlighted if highlighted is not None and highlighted < len(preview.rows) else 0

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option_list.id != "results":
            return
        event.stop()
        if 0 <= event.option_index < len(self._paths):
            self.post_message(self.OpenNote(self._paths[event.option_index]))
