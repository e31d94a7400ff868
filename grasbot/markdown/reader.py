"""The Markdown reader: a `.md` file's bytes -> a `Note` (frontmatter, links, headings, block ids).

The first reader of the vault's registry (`grasbot.readers`, docs/architecture.md "Readers"): the vault
asks the registry which reader turns a file into a note, and a file no reader claims stays an attachment.
"""

from __future__ import annotations

import hashlib
from itertools import chain

from grasbot.links import MAX_LINKS_PER_NOTE, frontmatter_entries, frontmatter_links, links_from_entries, scan_body
from grasbot.markdown.frontmatter import parse_bytes, parse_text
from grasbot.model import Link, Note, Problem, Span

__all__ = ["MarkdownReader", "read_note"]

_UTF8_BOM = b"\xef\xbb\xbf"
_BAD_BYTES = frozenset(("not-utf8", "binary"))


def _positions(note: Note) -> tuple[dict[str, Span], dict[str, list[Span]]]:
    """The frontmatter positions a load skipped (only lint reads them): the note's text parsed again."""
    parsed = parse_text(note.text, note.path)
    return parsed.key_positions, parsed.item_positions


def _cap_links(rel: str, entries: list[tuple[object, ...]], problems: list[Problem]) -> None:
    """Keep the first MAX_LINKS_PER_NOTE links of a note that holds more, and say so (the note is hidden from
    visitors: see `grasbot.model.visible_to_visitors`)."""
    line, column = entries[MAX_LINKS_PER_NOTE][5:7]
    del entries[MAX_LINKS_PER_NOTE:]
    problems.append(Problem(
        rel, line, column,  # type: ignore[arg-type]
        f"more than {MAX_LINKS_PER_NOTE:,} links: the links from here on are not read, and the note is not "
        "served to visitors (its unread links could name private notes); split the note", "too-many-links",
    ))


#: (`frozenset()` is a new object each time since Python 3.10: the empty one is shared by hand)
_NO_BLOCKS: frozenset[str] = frozenset()


def read_note(rel: str, raw: bytes) -> Note:
    """Build a Note from a Markdown file's bytes (`rel` is its vault-relative POSIX path). Never raises."""
    parsed = parse_bytes(raw, rel, positions=False)
    entries, headings, blocks = scan_body(parsed.body, parsed.body_line)
    if len(entries) > MAX_LINKS_PER_NOTE:
        _cap_links(rel, entries, parsed.problems)
    if not blocks:
        blocks = _NO_BLOCKS  # type: ignore[assignment]  # one shared empty frozenset instead of a set per note (216 bytes)
    links: list[Link] | None = None
    if parsed.string_values:
        fm_entries = frontmatter_entries(parsed)
        if fm_entries is None:  # a link placed on a multi-line value: keep Link objects for this note
            links = frontmatter_links(parsed) + links_from_entries(entries)
        elif fm_entries:
            entries = fm_entries + entries
    fields = {
        "meta": parsed.meta,
        "body_line": parsed.body_line,
        "has_frontmatter": parsed.has_frontmatter,
        "headings": headings,
        "block_ids": blocks,
        "links": links,
        "link_entries": tuple(chain.from_iterable(entries)) if links is None else None,
        "problems": parsed.problems,
        "key_positions": parsed.key_positions,
        "item_positions": parsed.item_positions,
        "frontmatter_span": parsed.frontmatter_span,
    }
    text = parsed.text
    problems = parsed.problems
    lazy = _positions if parsed.positions_skipped else None
    if text and not raw.startswith(_UTF8_BOM) and not (problems and any(p.code in _BAD_BYTES for p in problems)):
        # the text is exactly raw.decode(): keep the bytes only (see Note), digest computed on demand
        head = text[: parsed.body_start]
        body_byte = len(head) if head.isascii() else len(head.encode("utf-8"))
        return Note._from_utf8(rel, raw, body_byte, fields, None, lazy)
    link_entries = fields.pop("link_entries")
    note = Note(rel, text, body=parsed.body, digest=hashlib.blake2b(raw, digest_size=16).hexdigest(), **fields)
    if link_entries is not None:
        note._links, note._link_entries = None, link_entries
    if lazy is not None:  # computed from the text on first access, as for the common case
        note._keys = note._items = None
        note._find_positions = lazy
    return note


class MarkdownReader:
    """Obsidian's notes: `.md` files (any case of the suffix)."""

    name = "markdown"
    suffixes: tuple[str, ...] = (".md",)

    def read(self, rel: str, raw: bytes) -> Note:
        return read_note(rel, raw)
