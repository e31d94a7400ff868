"""Which retrieved notes go into the prompt, whole or cut (docs/architecture.md, "The way of a question").

The first note always goes in whole. A note ranked 2nd or lower whose score is below
`keep_ratio` x the first's is cut to `max_chars` at a paragraph boundary: it is context, not the answer,
and a long secondary note would push the main one out of the model's attention.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from grasbot.model import Note
from grasbot.search.index import Hit

SECONDARY_KEEP_RATIO = 0.8
SECONDARY_MAX_CHARS = 1500


@dataclass(frozen=True, slots=True)
class ContextNote:
    hit: Hit
    text: str  # the body as it goes into the prompt
    truncated: bool
    full_length: int = 0  # the length of the text it was cut from (the same as `text` when whole)


def cut_at_paragraph(text: str, max_chars: int) -> str:
    """`text` cut to at most `max_chars`, at the last paragraph break that fits (else the last line
    break, else a hard cut), never in the middle of a word when a boundary exists."""
    if len(text) <= max_chars:
        return text
    head = text[:max_chars]
    for sep in ("\n\n", "\n", " "):
        cut = head.rfind(sep)
        if cut > max_chars // 3:
            return head[:cut].rstrip()
    return head.rstrip()


def plan_context(
    hits: Sequence[Hit],
    keep_ratio: float = SECONDARY_KEEP_RATIO,
    max_chars: int = SECONDARY_MAX_CHARS,
    text_of: Callable[[Note], str] | None = None,
) -> list[ContextNote]:
    """The prompt's notes, in rank order, with their text whole or cut. `text_of` gives a note's text
    (default: its body without comments, `Note.reader_body`); the cut is made on that text, so that
    whatever it removes (links to hidden notes) is removed whole, never cut in half first."""
    planned: list[ContextNote] = []
    if not hits:
        return planned
    first = hits[0].score
    for rank, hit in enumerate(hits):
        # (comments are the author's notes to self: never quoted)
        body = (text_of(hit.note) if text_of is not None else hit.note.reader_body).strip()
        if rank > 0 and hit.score < keep_ratio * first and len(body) > max_chars:
            planned.append(ContextNote(hit, cut_at_paragraph(body, max_chars), True, len(body)))
        else:
            planned.append(ContextNote(hit, body, False, len(body)))
    return planned
