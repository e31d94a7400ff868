"""`VaultApp`: the Textual app behind `vaulttools tui`.

    VaultApp("vault").run()                       # what `vaulttools tui vault` does
    VaultApp("vault", api="http://127.0.0.1:8000") # with the API check and `r` to push /reload-vault

The app owns the `Backend` (the engine, the watcher, the API client) and the command palette; the main
screen does the rest (see `vaulttools.tui.screens.main`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from vaulttools.tui.backend import Backend
from vaulttools.tui.prefs import load_prefs, save_pref
from vaulttools.tui.screens.main import MainScreen

__all__ = ["VaultApp"]

#: (palette title, help, main-screen action), in the order the palette lists them.
PALETTE: tuple[tuple[str, str, str], ...] = (
    ("Ask a question", "Preview which notes GrasBot would retrieve (/)", "ask"),
    ("Show notes with problems", "Toggle the has:problems filter of the tree (p)", "problems"),
    ("Next note with problems", "Jump to the next note that has a problem (])", "next_problem"),
    ("Links of the note", "Go to the note's links and backlinks; Enter follows one (k)", "links"),
    ("Fix the selected note", "Apply its safe fixes after showing the diff (x)", "fix"),
    ("New note", "Create a note from its type's template, like `vaulttools new` (n)", "new_note"),
    ("Edit in $EDITOR", "Open the selected note in your editor (e)", "edit"),
    ("Open in Obsidian", "Open the selected note with obsidian://open (o)", "obsidian"),
    ("Lint the whole vault", "Re-read and re-check every note (l)", "lint"),
    ("Push /reload-vault", "Tell the running GrasBot API to re-read the vault (r)", "reload"),
    ("Filter the tree", "Focus the filter box: name, type:, rule:, has:problems, is:private (f)", "filter"),
    ("Vault summary", "Notes by type, problems by rule, last reload (s)", "summary"),
)


class VaultApp(App[None]):
    CSS_PATH = "vaulttools.tcss"
    TITLE = "vaulttools"
    ENABLE_COMMAND_PALETTE = True
    # "more" rather than Textual's "palette": shorter, so the footer holds every action at 80 columns
    BINDINGS = [
        Binding("ctrl+p", "command_palette", "more", show=False, priority=True, tooltip="Every command"),
        # `?` is not a priority binding: typed in the question or filter box it is a question mark
        Binding("question_mark", "toggle_keys", "Keys", show=False, tooltip="Show or hide every key"),
        Binding("f1", "toggle_keys", "Keys", show=False, priority=True, tooltip="Show or hide every key"),
    ]

    def __init__(
        self,
        vault: str | Path,
        *,
        taxonomy: str | Path | None = None,
        api: str | None = None,
        token: str | None = None,
        watch: bool = True,
        check_api: bool = True,
        use_cache: bool = True,
    ) -> None:
        super().__init__()
        self.backend = Backend(vault, taxonomy=taxonomy, api=api, token=token, use_cache=use_cache)
        self.watch_vault = watch
        self.check_api_enabled = check_api
        self.main_screen: MainScreen | None = None
        #: The exception that stopped the app, if one did (a bug of ours: `run` raises it again).
        self.crash: BaseException | None = None

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """`App.run`, except that an exception that stopped the app is raised again once the terminal is
        given back: Textual returns normally, and `vaulttools tui` would exit 0 after a crash. The command
        line turns it into one line on stderr and exit status 2."""
        result = super().run(*args, **kwargs)
        if self.crash is not None:
            raise self.crash
        return result

    def _handle_exception(self, error: Exception) -> None:
        # Textual's hook for an exception nothing caught: it stops the app and prints a traceback (with
        # local variables) after it. Keep the exception for `run`, and the traceback for
        # VAULTTOOLS_DEBUG=1, as every other command does.
        if self.crash is None:
            self.crash = error
        super()._handle_exception(error)
        if not os.environ.get("VAULTTOOLS_DEBUG"):
            self._exit_renderables.clear()

    def on_mount(self) -> None:
        saved = load_prefs().get("theme")
        if isinstance(saved, str) and saved in self.available_themes:
            self.theme = saved
        self._theme_loaded = True
        self.main_screen = MainScreen(self.backend, watch=self.watch_vault, check_api=self.check_api_enabled)
        self.push_screen(self.main_screen)

    def watch_theme(self, theme: str) -> None:
        """Remember the theme chosen in the palette (Change theme) for the next run (vaulttools.tui.prefs)."""
        if getattr(self, "_theme_loaded", False):
            save_pref("theme", theme)

    @property
    def keys_shown(self) -> bool:
        """Whether the keys panel (Textual's help panel) is open."""
        return bool(self.screen.query("HelpPanel"))

    def action_toggle_keys(self) -> None:
        """`?` and F1: open the keys panel, or close it when it is open (Escape closes it too)."""
        if self.keys_shown:
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        if isinstance(screen, MainScreen):
            for title, help_text, action in PALETTE:
                yield SystemCommand(title, help_text, getattr(screen, f"action_{action}"))
        yield from super().get_system_commands(screen)

    def on_unmount(self) -> None:
        self.backend.stop()
