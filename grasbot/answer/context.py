"""Which retrieved notes go into the prompt, whole or cut (docs/architecture.md, "The way of a question").

The first note always goes in whole. A note ranked 2nd or lower whose score is below
`keep_ratio` x the first's is cut to `max_chars` at a paragraph boundary: it is context, not the answer,
and a long secondary note would push the main one out of the model's attention.
"""

from __future__ import annotations

import re
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


_PAGE_LINK = re.compile(r"\[\[[^\]|]*\.pdf#page=\d+\|(p\. [^\]]*)\]\]", re.IGNORECASE)


def plain_page_markers(text: str) -> str:
    """Page markers of an imported book as the model should see them: ``[[b.pdf#page=46|p. 28]]`` ->
    ``[p. 28]`` (the printed page to cite, not a link it would copy)."""
    return _PAGE_LINK.sub(r"[\1]", text) if "#page=" in text else text


def passage_label(note: Note, fields: Sequence[str] = ()) -> str:
    """``[Classe 10 | § 13 | p. 27–28]``: the note's filterable `fields` (capitalised name and value), its
    `section` and its printed `pages`, for any note that has them ("" for a note with none)."""
    meta = note.meta if isinstance(note.meta, dict) else {}
    parts: list[str] = []
    for name in fields:
        value = meta.get(name)
        if isinstance(value, (str, int, float)) and not isinstance(value, bool) and str(value).strip():
            parts.append(f"{name[:1].upper()}{name[1:]} {value}")
    section = meta.get("section")
    if isinstance(section, (str, int)) and not isinstance(section, bool) and str(section).strip():
        parts.append(f"§ {section}")
    pages = meta.get("pages")
    if isinstance(pages, list):
        labels = [str(p) for p in pages if isinstance(p, (str, int)) and not isinstance(p, bool)]
        if labels:
            parts.append(f"p. {labels[0]}" if labels[0] == labels[-1] else f"p. {labels[0]}–{labels[-1]}")
    return f"[{' | '.join(parts)}]" if parts else ""
