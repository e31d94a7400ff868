"""A small form to create a note from its type's template: the code `vaulttools new` runs."""

from __future__ import annotations

import threading

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Select, Static

from vaulttools.tui.backend import Backend, BackendError
from vaulttools.tui.widgets.inputs import TextBox


class NewNoteScreen(ModalScreen[str | None]):
    """Dismisses with the new note's vault-relative path, or None when cancelled."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, backend: Backend, note_type: str = "projet") -> None:
        super().__init__()
        self.backend = backend
        types = backend.note_types()
        self.initial_type = note_type if note_type in types else types[0]
        self._busy = False

    def compose(self) -> ComposeResult:
        types = self.backend.note_types()
        with Vertical(id="new-dialog", classes="dialog"):
            yield Static(Text("New note from a template (same as `vaulttools new`)", style="bold"))
            # The title first, where the cursor starts: Tab goes on to the type and the domain (Enter on a
            # list opens it), never straight to the Create button, so Tab then Enter does not create a note
            # the author has not finished describing.
            yield TextBox(placeholder="Title, e.g. Robot suiveur de ligne", id="new-title")
            yield Select([(t, t) for t in types], value=self.initial_type, allow_blank=False, id="new-type")
            domains = self.backend.domains()
            if domains:  # the taxonomy asks for at least one: without it the note starts with an error
                yield Select([(d, d) for d in domains], prompt="Domain (from TAXONOMIE.md)", id="new-domain")
            yield Static(
                Text("Slug and file name come from the title. The note starts private: set "
                     "`visibility: public` once it is written and reviewed.", style="dim"),  # fmt: skip
                id="new-help",
            )
            yield Static("", id="new-error")
            with Horizontal(classes="buttons"):
                yield Button("Create (enter)", variant="primary", id="create")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#new-title", Input).focus()

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._create()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "create":
            self._create()
        else:
            self.dismiss(None)

    def _create(self) -> None:
        if self._busy:
            return
        title = self.query_one("#new-title", Input).value
        note_type = str(self.query_one("#new-type", Select).value)
        found = self.query("#new-domain")
        domains = () if not found or found.first(Select).is_blank() else (str(found.first(Select).value),)
        if not title.strip():
            self._error("Type a title first.")
            return
        self._busy = True
        self._error("creating…", style="dim")

        def work() -> None:
            try:
                rel, _ = self.backend.create_note(note_type, title, domains)
            except BackendError as exc:
                self.app.call_from_thread(self._failed, str(exc))
            except Exception as exc:  # a bug of ours: say it, do not crash the app
                self.app.call_from_thread(self._failed, f"{type(exc).__name__}: {exc}")
            else:
                self.app.call_from_thread(self.dismiss, rel)

        threading.Thread(target=work, name="tui-new-note", daemon=True).start()

    def _failed(self, message: str) -> None:
        self._busy = False
        self._error(message)

    def _error(self, message: str, style: str = "bold red") -> None:
        self.query_one("#new-error", Static).update(Text(message, style=style))
