"""`TextBox`: Textual's `Input`, with its editing keys applied in the order they were typed."""

from __future__ import annotations

from textual import events
from textual.widgets import Input


class TextBox(Input):
    """An `Input` whose own key bindings (ctrl+u, backspace, arrows, enter, ...) run in the order of typing.

    Textual inserts a typed character in the Input's own `_on_key`, but a bound key is not handled there:
    it bubbles up to the app, which runs the binding when the event gets back to it. Characters typed in
    the same burst are inserted first, so `ctrl+u` followed at once by `rust` inserted `rust` and then
    emptied the box (Textual issue #6605). Here the Input's own bindings run inline, in order; priority
    bindings were already checked by the app before the key got here, as before.

    Textual calls the `_on_key` of every class in the MRO, this one first: when a binding ran, preventing
    the default stops it there; otherwise Input's `_on_key` inserts the character as usual.
    """

    def check_consume_key(self, key: str, character: str | None) -> bool:
        # The screen's bindings are priority bindings, which Textual leaves to a box only for the keys the
        # box says it consumes, judged by the key's character; it finds none for the key named `slash`, so
        # `/` typed in a box ran the Ask action instead (`ci/cd` in the filter opened the question box).
        if character is None and key == "slash":
            character = "/"
        return super().check_consume_key(key, character)

    async def _on_key(self, event: events.Key) -> None:
        if not event.is_printable:
            for binding in self._bindings.key_to_bindings.get(event.key, ()):
                if not binding.priority and await self.app.run_action(binding.action, self):
                    event.stop()
                    event.prevent_default()  # and Input's own `_on_key` (Textual calls each class's) is skipped
                    return
