"""What a response shows of notes (docs/service.md, "The API"; "What private means"): a source's view
(`source_view`, its `url` and a PDF note's pages) and `scrub`, the copy of the engine's statistics with
every mention of a hidden note removed before it reaches a trace.

Sources' `url`: `/portfolio/<slug>` for `type: projet`, `/competences/<slug>` for `type: competence`, and
`null` for every other type (parcours, technique, moc...), which have no page of their own on the site.
"""

from __future__ import annotations

import re
from typing import Any

from grasbot.answer.pages import page_fields
from grasbot.answer.prompt import redact_hidden_links
from grasbot.model import Note
from grasbot.search.index import Hit
from grasbot.text import loose_name_key

SOURCE_URLS: dict[str, str] = {"projet": "/portfolio/{slug}", "competence": "/competences/{slug}"}


def source_url(note_type: str | None, slug: str) -> str | None:
    """The page of a source on the site, by its type (SOURCE_URLS); None for a type without pages."""
    pattern = SOURCE_URLS.get((note_type or "").lower())
    return pattern.format(slug=slug) if pattern else None


def source_view(hit: Hit, hidden: frozenset[str] = frozenset()) -> dict[str, Any]:
    """A source as the API gives it: `{slug, title, type, score, reasons, url}` and a PDF note's pages."""
    view = {
        "slug": hit.id,
        "title": redact_hidden_links(hit.note.title, hidden, hit.note.path),  # (a title may hold a link, as a body does)
        "type": hit.note.type,
        "score": round(float(hit.score), 2),
        "reasons": list(hit.reasons),
        "url": source_url(hit.note.type, hit.id),
    }
    view.update(page_fields(hit.note))
    return view


def _mentions(value: str, hidden: frozenset[str]) -> bool:
    """Whether `value`, or a part of it between `:`, `/`, `|` or `#`, names a hidden note."""
    folded = loose_name_key(value)
    return folded in hidden or any(part in hidden for part in re.split(r"[:/|#]", folded))


def scrub(value: Any, hidden: frozenset[str], depth: int = 0) -> Any:
    """A JSON-safe copy of engine stats with any mention of a hidden note removed."""
    if depth > 5:
        return None
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    if isinstance(value, str):
        return None if _mentions(value, hidden) else value[:200]
    if isinstance(value, dict):
        return {
            str(k): scrub(v, hidden, depth + 1)
            for k, v in list(value.items())[:50]
            if not _mentions(str(k), hidden)
        }
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else list(value)
        cleaned = [scrub(v, hidden, depth + 1) for v in items[:50]]
        return [v for v in cleaned if v is not None]
    if isinstance(value, Hit):
        return None if _mentions(value.id, hidden) else {"slug": value.id, "score": round(value.score, 2)}
    return None
