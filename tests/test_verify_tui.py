"""The TUI's answer check: after a question in the preview, `c` opens a box where the author pastes an
answer; ctrl+s labels each sentence against the notes that question retrieves (Textual Pilot)."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from textual.widgets import Input, TextArea  # noqa: E402

from tests.test_tui import SIZE, app_for, plain, ready, vault, wait_for  # noqa: E402,F401
from vaulttools.tui.screens.main import MainScreen  # noqa: E402
from vaulttools.tui.screens.verify import VerifyScreen  # noqa: E402
from vaulttools.tui.widgets.preview import QuestionPreview  # noqa: E402

pytestmark = pytest.mark.anyio

TRUE = "Le contrôleur du robot suiveur est écrit en Python [python]."
FALSE = "Python est son langage principal depuis 2015 [python]."


async def test_a_pasted_answer_is_checked_against_the_preview_notes(vault) -> None:
    app = app_for(vault)
    async with app.run_test(size=SIZE) as pilot:
        screen = await ready(pilot)
        await pilot.press("c")  # no question yet: a hint, no box
        await wait_for(pilot, lambda: any("Ask a question first" in n.message for n in app._notifications), "hint")
        assert isinstance(app.screen, MainScreen)
        await pilot.press("slash")
        await pilot.press(*"langage python du robot")
        preview = screen.query_one(QuestionPreview)
        await wait_for(pilot, lambda: preview.preview is not None and preview.preview.rows, "preview results")
        ids = [r.id for r in preview.preview.rows]
        assert "python" in ids
        question = screen.query_one("#question", Input)
        await pilot.press("c")  # typed in the question box: a letter, not the action
        assert question.value.endswith("robotc") and isinstance(app.screen, MainScreen)
        await pilot.press("backspace", "escape")  # back to the tree, then the key opens the box
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, VerifyScreen), "the answer box")
        box = app.screen
        assert box.query_one("#verify-answer", TextArea).has_focus
        await pilot.press("ctrl+s")
        assert "Paste the answer" in plain(box.query_one("#verify-result"))
        await pilot.press(*f"{TRUE} {FALSE}")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: box.verification is not None, "the verification")
        labels = [s.label for s in box.verification.sentences]
        assert labels == ["supported", "unsupported"]
        shown = plain(box.query_one("#verify-result"))
        assert "status: partial" in shown and "unsupported" in shown and "2015" in shown
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen), "back to the main screen")
