"""The data model of a vault: notes, their links, headings and the problems found while reading them.

Everything here is plain data (no I/O): `grasbot.vault` builds these objects, every other part reads them.
Positions are 1-based (line and column), counted in characters of the decoded file, as editors show them.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

#: Fields whose value is a list of strings in a GrasBot note.
LIST_FIELDS: tuple[str, ...] = ("domains", "tags", "aliases", "answers", "linked", "related")
#: Fields whose value is a single string.
STR_FIELDS: tuple[str, ...] = ("title", "slug", "type", "source", "visibility")


@dataclass(frozen=True, slots=True)
class Span:
    """A range in a file: start line/column and end line/column (end exclusive), all 1-based."""

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True, slots=True)
class Problem:
    """Something that stopped a file from being read as a well-formed note.

    `code` is one of: ``yaml-error``, ``not-utf8``, ``no-frontmatter``, ``not-mapping``, ``empty``,
    ``binary``, ``unreadable``, ``unclosed-frontmatter``. Lint reports every problem as `frontmatter-invalid`
    (or a more precise rule); retrieval skips or degrades the note.
    """

    path: str
    line: int
    column: int
    message: str
    code: str


class LinkKind(str, Enum):
    WIKILINK = "wikilink"  # [[Target]]
    EMBED = "embed"  # ![[Target]]
    MARKDOWN = "markdown"  # [text](Target.md)
    FRONTMATTER = "frontmatter"  # "[[Target]]" inside a frontmatter list (linked, related, ...)


@dataclass(frozen=True, slots=True)
class Link:
    """One link as written in a note.

    `target` is the decoded path part (percent-decoding and `<...>` removed, no anchor, no display text);
    it is empty for a same-note link such as `[[#Heading]]`. `anchor` is what follows the first `#`
    (`"H1#H2"` for nested headings, `"^block-id"` for a block), or None.
    """

    raw: str
    target: str
    anchor: str | None
    display: str | None
    kind: LinkKind
    span: Span
    field: str | None = None  # frontmatter key holding the link, for LinkKind.FRONTMATTER


@dataclass(frozen=True, slots=True)
class Heading:
    text: str
    level: int
    line: int


class LinkStatus(str, Enum):
    OK = "ok"
    BROKEN = "broken"  # no file matches the target
    BROKEN_ANCHOR = "broken-anchor"  # file found, heading or block id not in it
    AMBIGUOUS = "ambiguous"  # resolved to the nearest of several same-named files
    EXTERNAL = "external"  # a URL (http:, mailto:, obsidian:, ...): not checked


@dataclass(frozen=True, slots=True)
class Resolution:
    """What a link points to, as the bot (and Obsidian) would follow it.

    `target_path` is the vault-relative path of the file it resolves to (None when broken). For an
    AMBIGUOUS link it is the nearest candidate, and `candidates` lists all same-named files. For a BROKEN
    link whose text equals another note's alias, `alias_of` is that note's path (the likely intended target).
    """

    link: Link
    status: LinkStatus
    target_path: str | None = None
    candidates: tuple[str, ...] = ()
    alias_of: str | None = None


@dataclass(slots=True)
class Note:
    """One Markdown file of the vault.

    `meta` is the frontmatter mapping exactly as parsed (unknown fields kept). The typed accessors below
    never raise: a field of the wrong type reads as empty, and lint reports it.
    `key_positions` maps each top-level frontmatter key to the span of the key; `item_positions` maps a
    list field to the spans of its items (or of its scalar value, for a scalar where a list is expected).
    """

    path: str  # vault-relative, POSIX separators, original case and normalisation
    text: str  # the whole decoded file ("" when unreadable)
    meta: dict[str, Any]
    body: str
    body_line: int  # line of the file where the body starts
    has_frontmatter: bool
    headings: list[Heading] = field(default_factory=list)
    block_ids: set[str] = field(default_factory=set)
    links: list[Link] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    key_positions: dict[str, Span] = field(default_factory=dict)
    item_positions: dict[str, list[Span]] = field(default_factory=dict)
    frontmatter_span: Span | None = None  # the lines between the two `---`, when present
    digest: str = ""  # hash of the raw bytes, for caches keyed by content
    id: str = ""  # stable id assigned by the vault: slug, else file name, else path where names collide

    # -- typed accessors (never raise) -------------------------------------------------------------
    @property
    def stem(self) -> str:
        name = self.path.rsplit("/", 1)[-1]
        return name[:-3] if name.lower().endswith(".md") else name

    @property
    def folder(self) -> str:
        return self.path.rsplit("/", 1)[0] if "/" in self.path else ""

    def get_str(self, key: str) -> str | None:
        value = self.meta.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        return None

    def get_list(self, key: str) -> list[str]:
        """A list field as strings; a lone string counts as a one-item list (lint flags it)."""
        value = self.meta.get(key)
        if isinstance(value, list):
            return [str(v) for v in value if isinstance(v, (str, int, float)) and not isinstance(v, bool)]
        if isinstance(value, str) and value.strip():
            return [value]
        return []

    @property
    def title(self) -> str:
        return self.get_str("title") or self.stem

    @property
    def slug(self) -> str | None:
        return self.get_str("slug")

    @property
    def type(self) -> str | None:
        return self.get_str("type")

    @property
    def visibility(self) -> str:
        return (self.get_str("visibility") or "public").strip().lower()

    @property
    def is_private(self) -> bool:
        """No field means public (plain Obsidian vaults have none); any value but `public` is private:
        a typo such as `privte` must fail closed, never leak."""
        value = self.meta.get("visibility")
        if value is None:
            return False
        return not (isinstance(value, str) and value.strip().lower() == "public")

    @property
    def priority(self) -> int | None:
        value = self.meta.get("priority")
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value.strip())
        return None

    @property
    def updated(self) -> _dt.date | None:
        value = self.meta.get("updated")
        if isinstance(value, _dt.datetime):
            return value.date()
        if isinstance(value, _dt.date):
            return value
        if isinstance(value, str):
            try:
                return _dt.date.fromisoformat(value.strip()[:10])
            except ValueError:
                return None
        return None

    @property
    def domains(self) -> list[str]:
        return self.get_list("domains")

    @property
    def tags(self) -> list[str]:
        return self.get_list("tags")

    @property
    def aliases(self) -> list[str]:
        return self.get_list("aliases")

    @property
    def answers(self) -> list[str]:
        return self.get_list("answers")

    @property
    def is_moc(self) -> bool:
        return (self.type or "").lower() == "moc" or self.stem.lower().startswith("moc-")
