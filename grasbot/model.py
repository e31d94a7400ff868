"""The data model of a vault: notes, their links, headings and the problems found while reading them.

Everything here is plain data (no I/O): `grasbot.vault` builds these objects, every other part reads them.
Positions are 1-based (line and column), counted in characters of the decoded file, as editors show them.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
from dataclasses import dataclass
from itertools import chain
from enum import Enum
from collections.abc import Callable
from typing import Any, NamedTuple

from grasbot.markdown.body import without_comments

#: Fields whose value is a list of strings in a GrasBot note.
LIST_FIELDS: tuple[str, ...] = ("domains", "tags", "aliases", "answers", "linked", "related")
#: Fields whose value is a single string.
STR_FIELDS: tuple[str, ...] = ("title", "slug", "type", "source", "visibility")


class Span(NamedTuple):
    """A range in a file: start line/column and end line/column (end exclusive), all 1-based.

    Span, Link, Heading and Resolution are named tuples (immutable, compared and hashed by value, as the
    frozen dataclasses they replace): a vault holds hundreds of thousands of them, and tuples are cheaper
    to build and, holding no mutable object, ignored by the cyclic garbage collector.
    """

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True, slots=True)
class Problem:
    """Something that stopped a file from being read as a well-formed note.

    `code` is one of: ``yaml-error``, ``not-utf8``, ``no-frontmatter``, ``not-mapping``, ``empty``,
    ``binary``, ``unreadable``, ``unclosed-frontmatter``, ``duplicate-key`` (the fields are read, the last
    value of the key wins), ``misplaced-frontmatter`` (a `---` block after blank lines or other text: no
    field is read, as in Obsidian), ``frontmatter-too-large`` (YAML aliases expanding beyond
    `grasbot.markdown.frontmatter.MAX_EXPANDED_VALUES`: no field is read), ``cr-line-endings`` (lines ending
    in a lone CR: no field is read), ``too-many-links`` (links beyond `grasbot.links.MAX_LINKS_PER_NOTE`
    are not read; the note is hidden), ``symlink-outside-vault`` (a vault-level problem: a symbolic link whose
    target is outside the vault, skipped). Lint reports every problem as `frontmatter-invalid` (or a more precise rule);
    retrieval skips or degrades the note.
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


class Link(NamedTuple):
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


class Heading(NamedTuple):
    text: str
    level: int
    line: int


class LinkStatus(str, Enum):
    OK = "ok"
    BROKEN = "broken"  # no file matches the target
    BROKEN_ANCHOR = "broken-anchor"  # file found, heading or block id not in it
    AMBIGUOUS = "ambiguous"  # resolved to the nearest of several same-named files
    EXTERNAL = "external"  # a URL (http:, mailto:, obsidian:, ...): not checked


class Resolution(NamedTuple):
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


def wikilink_raw(target: str, anchor: str | None, display: str | None, kind: LinkKind) -> str:
    """The text of a wikilink or embed written plainly (`[[target#anchor|display]]`, `![[...]]`): what a
    link entry stands for when its raw text is None (most links: a vault then keeps their texts once, in
    the note's own bytes)."""
    inner = target if anchor is None else f"{target}#{anchor}"
    if display is not None:
        inner = f"{inner}|{display}"
    return f"![[{inner}]]" if kind is LinkKind.EMBED else f"[[{inner}]]"


def entry_link(raw: str | None, target: str, anchor: str | None, display: str | None, kind: LinkKind, line: int,
               col: int, field: str | None) -> Link:
    """The `Link` of one link entry (see `links_from_flat`)."""
    if raw is None:
        raw = wikilink_raw(target, anchor, display, kind)
    return tuple.__new__(Link, (raw, target, anchor, display, kind, tuple.__new__(Span, (line, col, line, col + len(raw))), field))


def links_from_flat(flat: tuple[Any, ...]) -> list[Link]:
    """The `Link`s of a note's compact link storage: the entries of `grasbot.links.scan_body` end to end,
    eight fields each (raw, target, anchor, display, kind, line, column, field); a raw text None is the
    one `wikilink_raw` gives."""
    new = tuple.__new__
    it = iter(flat)
    return [
        new(Link, (raw, target, anchor, display, kind, new(Span, (line, col, line, col + len(raw))), field))
        if raw is not None else entry_link(raw, target, anchor, display, kind, line, col, field)
        for raw, target, anchor, display, kind, line, col, field in zip(it, it, it, it, it, it, it, it)
    ]


#: How a reader computes, when first asked, the frontmatter positions it skipped while reading a note:
#: (key positions, item positions) of `Note.key_positions` / `Note.item_positions`.
PositionFinder = Callable[["Note"], tuple[dict[str, Span], dict[str, list[Span]]]]


class Note:
    """One Markdown file of the vault.

    `meta` is the frontmatter mapping exactly as parsed (unknown fields kept). The typed accessors below
    never raise: a field of the wrong type reads as empty, and lint reports it.
    `key_positions` maps each top-level frontmatter key to the span of the key; `item_positions` maps a
    list field to the spans of its items (or of its scalar value, for a scalar where a list is expected).

    Constructed with the same keyword (or positional) arguments as the dataclass it used to be. Storage is
    compact, because a 10k-note vault holds every note at once: `text` is kept once, as the file's UTF-8
    bytes when the vault read it (half the size of a str holding any non-Latin-1 character such as `’`),
    and `text`/`body` are decoded from it on access (a few microseconds: read them once per use, not in a
    loop). `body` is stored separately only when it is not the tail of `text`. `digest` is computed on
    first access when the note was read from bytes. `links` of a note the vault read are kept as one flat
    tuple and built on access (see the property).

    A note from the persistent snapshot (grasbot/snapshot.py) starts as a *shell*: its path, id, privacy
    verdict (`withheld`), problems and digest are set, and `_pending` holds what reads the rest; the first
    access to any other field fills them all at once (`__getattr__`, called only for a field not set yet:
    no cost for a note read from its file). A command that reads a few notes' bodies then decodes only
    those.
    """

    __slots__ = (
        "path",
        "_src",
        "_body_at",
        "_body",
        "meta",
        "body_line",
        "has_frontmatter",
        "_headings",
        "block_ids",
        "_links",
        "_link_entries",
        "problems",
        "_keys",
        "_items",
        "_find_positions",
        "frontmatter_span",
        "_digest",
        "id",
        "withheld",
        "_pending",
        "__weakref__",
    )

    #: The fields a snapshot's shell leaves unset until first read (see `__getattr__`); the others
    #: (path, id, withheld, problems, _digest) are set in the shell.
    LAZY_FIELDS = (
        "_src", "_body_at", "_body", "meta", "body_line", "has_frontmatter", "_headings", "block_ids", "_links",
        "_link_entries", "_keys", "_items", "_find_positions", "frontmatter_span",
    )  # fmt: skip

    path: str  # vault-relative, POSIX separators, original case and normalisation
    meta: dict[str, Any]
    body_line: int  # line of the file where the body starts
    has_frontmatter: bool
    block_ids: set[str]
    problems: list[Problem]
    frontmatter_span: Span | None  # the lines between the two `---`, when present
    id: str  # stable id assigned by the vault: slug, else file name, else path where names collide
    #: Why the vault's privacy settings (`PrivacyPolicy`: a private folder or tag) hide the note, or None.
    withheld: str | None

    def __init__(
        self,
        path: str,
        text: str,
        meta: dict[str, Any],
        body: str,
        body_line: int,
        has_frontmatter: bool,
        headings: list[Heading] | None = None,
        block_ids: set[str] | None = None,
        links: list[Link] | None = None,
        problems: list[Problem] | None = None,
        key_positions: dict[str, Span] | None = None,
        item_positions: dict[str, list[Span]] | None = None,
        frontmatter_span: Span | None = None,
        digest: str = "",
        id: str = "",
    ) -> None:
        self.path = path
        self._src: str | bytes = text
        self._body_at = 0
        self._body: str | None = None
        self.body = body  # after _src: the setter stores an offset when body is the tail of text
        self.meta = meta
        self.body_line = body_line
        self.has_frontmatter = has_frontmatter
        self.headings = [] if headings is None else headings
        self.block_ids = set() if block_ids is None else block_ids
        self.links = [] if links is None else links
        self.problems = [] if problems is None else problems
        # None (only from `_from_utf8`): computed from the text on first access
        self._keys: dict[str, Span] | None = {} if key_positions is None else key_positions
        self._items: dict[str, list[Span]] | None = {} if item_positions is None else item_positions
        self._find_positions: PositionFinder | None = None
        self.frontmatter_span = frontmatter_span
        self._digest: str | None = digest
        self.id = id
        self.withheld = None

    @classmethod
    def _from_utf8(
        cls,
        path: str,
        raw: bytes,
        body_byte: int,
        fields: dict[str, Any],
        digest: str | None,
        lazy_positions: PositionFinder | None,
    ) -> Note:
        """A note whose text is `raw.decode("utf-8")` and whose body starts at byte `body_byte` (for
        `grasbot.vault`, which already holds the bytes: no str copy is kept). `digest` None: computed
        from `raw` on first access. `lazy_positions`: key and item positions are computed when first
        read (only lint reads them), by this function of the reader that made the note."""
        # (slots set directly, not through __init__ and the body setter: a load builds one per file)
        note = cls.__new__(cls)
        note.path = path
        note._src = raw
        note._body_at = body_byte
        note._body = None
        note.meta = fields["meta"]
        note.body_line = fields["body_line"]
        note.has_frontmatter = fields["has_frontmatter"]
        headings = fields["headings"]
        # (flat: a Heading per section title is a tuple of its own, ~64 bytes, which a 10k-note vault holds
        # some tens of thousands of; `headings` builds them on access)
        note._headings = tuple(chain.from_iterable(headings)) if headings else ()
        note.block_ids = fields["block_ids"]
        note._links = fields["links"]
        note._link_entries = fields["link_entries"]
        note.problems = fields["problems"]
        if lazy_positions is not None:
            note._keys = note._items = None
        else:
            note._keys = fields["key_positions"]
            note._items = fields["item_positions"]
        note._find_positions = lazy_positions
        note.frontmatter_span = fields["frontmatter_span"]
        note._digest = digest
        note.id = ""
        note.withheld = None
        return note

    def __getattr__(self, name: str) -> Any:
        """Only for a field not set: a shell's (see the class docstring) are filled on first read by its
        `_pending` filler (`fill(note)` sets every field of `LAZY_FIELDS` and deletes `_pending`)."""
        if name in _LAZY:
            try:
                pending = object.__getattribute__(self, "_pending")
            except AttributeError:
                pending = None
            if pending is not None:
                pending[0].fill(self)
                return object.__getattribute__(self, name)
        raise AttributeError(f"'Note' object has no attribute {name!r}")

    # -- links ---------------------------------------------------------------------------------------
    @property
    def links(self) -> list[Link]:
        """Every link, as written: the frontmatter's `"[[x]]"` values first, then the body's in order.

        A note read by the vault keeps its links compactly (one flat tuple, a third of the size of the
        Link and Span objects, which a 10k-note vault would hold some hundred thousand of) and builds the
        list on each access (about a microsecond per link): read it once per use, not in a loop.
        """
        links = self._links
        if links is None:
            return links_from_flat(self._link_entries)  # type: ignore[arg-type]
        return links

    @links.setter
    def links(self, value: list[Link]) -> None:
        self._links = value
        self._link_entries = None

    def link_targets(self) -> list[str] | tuple[str, ...]:
        """`[link.target for link in self.links]`, without building the links."""
        entries = self._link_entries
        if entries is not None:
            return entries[1::8]
        return [link[1] for link in self._links]  # type: ignore[union-attr]

    def body_link_targets(self) -> list[str] | tuple[str, ...]:
        """The targets of the links written in the body (not the frontmatter's `"[[x]]"` values)."""
        entries = self._link_entries
        if entries is not None:
            kinds = entries[4::8]
            if LinkKind.FRONTMATTER not in kinds:
                return entries[1::8]
            return [target for target, kind in zip(entries[1::8], kinds) if kind is not LinkKind.FRONTMATTER]
        return [link[1] for link in self._links if link[4] is not LinkKind.FRONTMATTER]  # type: ignore[union-attr]

    # -- headings ----------------------------------------------------------------------------------------
    @property
    def headings(self) -> list[Heading]:
        """The section titles, in order. A note read by the vault keeps them as one flat tuple (text,
        level, line, text, ...) and builds the list on each access: read it once per use, not in a loop."""
        headings = self._headings
        if headings.__class__ is tuple:
            new = tuple.__new__
            it = iter(headings)
            return [new(Heading, fields) for fields in zip(it, it, it)]
        return headings  # type: ignore[return-value]

    @headings.setter
    def headings(self, value: list[Heading]) -> None:
        self._headings = value if value.__class__ is list else list(value)

    # -- frontmatter positions -------------------------------------------------------------------------
    def _positions(self) -> None:
        # (the reader that skipped them computes them: this module knows no file format)
        self._keys, self._items = self._find_positions(self)  # type: ignore[misc]
        self._find_positions = None

    @property
    def key_positions(self) -> dict[str, Span]:
        """Each top-level frontmatter key -> the span of the key."""
        keys = self._keys
        if keys is None:
            self._positions()
            keys = self._keys
        return keys  # type: ignore[return-value]

    @key_positions.setter
    def key_positions(self, value: dict[str, Span]) -> None:
        self._keys = value

    @property
    def item_positions(self) -> dict[str, list[Span]]:
        """Each list field -> the spans of its items (of its value, for a scalar where a list is expected)."""
        items = self._items
        if items is None:
            self._positions()
            items = self._items
        return items  # type: ignore[return-value]

    @item_positions.setter
    def item_positions(self, value: dict[str, list[Span]]) -> None:
        self._items = value

    # -- text storage ----------------------------------------------------------------------------------
    @property
    def text(self) -> str:
        """The whole decoded file ("" when unreadable)."""
        src = self._src
        return src if src.__class__ is str else src.decode("utf-8")  # type: ignore[union-attr]

    @text.setter
    def text(self, value: str) -> None:
        body = self.body
        self._src = value
        self._body = None
        self.body = body

    @property
    def body(self) -> str:
        """The text after the frontmatter (the whole text when there is none)."""
        body = self._body
        if body is not None:
            return body
        src = self._src
        if src.__class__ is str:
            return src[self._body_at :]  # type: ignore[index]
        return src[self._body_at :].decode("utf-8")  # type: ignore[union-attr]

    @property
    def reader_body(self) -> str:
        """The body as a reader of the rendered or published note sees it: without its comments
        (`%% … %%`, `<!-- … -->`; code is kept). What retrieval indexes and what the prompt quotes: the
        author's notes to self inside comments never reach a visitor."""
        return without_comments(self.body)

    @body.setter
    def body(self, value: str) -> None:
        src = self._src
        text = src if src.__class__ is str else src.decode("utf-8")  # type: ignore[union-attr]
        if text.endswith(value):
            self._src = text
            self._body_at = len(text) - len(value)
            self._body = None
        else:
            self._body = value

    @property
    def digest(self) -> str:
        """Hash of the raw bytes, for caches keyed by content ("" when not given)."""
        digest = self._digest
        if digest is None:
            digest = self._digest = hashlib.blake2b(self._src, digest_size=16).hexdigest()  # type: ignore[arg-type]
        return digest

    @digest.setter
    def digest(self, value: str) -> None:
        self._digest = value

    # -- dataclass-like behaviour ----------------------------------------------------------------------
    _FIELDS = (
        "path", "text", "meta", "body", "body_line", "has_frontmatter", "headings", "block_ids", "links",
        "problems", "key_positions", "item_positions", "frontmatter_span", "digest", "id",
    )

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self._FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable, like the dataclass it replaces

    def __repr__(self) -> str:
        links = len(self.link_targets())
        return f"Note(path={self.path!r}, id={self.id!r}, has_frontmatter={self.has_frontmatter!r}, links={links})"

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
        """Whether the note is kept from visitors: `not visible_to_visitors(note)`, the one privacy rule
        (the bot, lint, the TUI and watch all read this one answer)."""
        return not visible_to_visitors(self)

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


_LAZY = frozenset(Note.LAZY_FIELDS)  # (see Note.__getattr__)


_VISIBILITY = "visibility"
#: Most edits between a key and `visibility` for the key to count as a misspelt `visibility`
#: (`visibilty`, `visiblity`, `visibiltiy`, `Visability`: one edit each).
VISIBILITY_TYPO_EDITS = 2


def _edit_distance(a: str, b: str, limit: int) -> int:
    # (the project's one edit distance, with swaps of neighbours as one edit: `visibiltiy`; imported on the
    # rare key that may be a misspelling)
    from grasbot.text import edit_distance

    return edit_distance(a, b, limit, transpositions=True)


def is_visibility_key(key: object) -> bool:
    """Whether `key` is `visibility` written another way: another case or blanks (`Visibility`,
    `"visibility "`) or misspelt by up to VISIBILITY_TYPO_EDITS edits (`visibilty`, `Visiblity`)."""
    if key.__class__ is not str or key == _VISIBILITY:
        return False
    # (a key more than two characters shorter or longer cannot be it: most keys are dismissed on length)
    if not 8 <= len(key) <= 40:  # type: ignore[arg-type]
        return False
    folded = key.strip().lower()  # type: ignore[attr-defined]
    if folded == _VISIBILITY:
        return True
    if not 8 <= len(folded) <= 12:
        return False
    # (a cheap necessary condition first: each edit brings at most one letter that `visibility` has not,
    # so a key with more than two such letters is not within two edits: `priority`, `category` stop here)
    if sum(c not in _VISIBILITY_LETTERS for c in folded) > VISIBILITY_TYPO_EDITS:
        return False
    return _edit_distance(folded, _VISIBILITY, VISIBILITY_TYPO_EDITS) <= VISIBILITY_TYPO_EDITS


_VISIBILITY_LETTERS = frozenset(_VISIBILITY)


def other_visibility_keys(meta: dict[str, Any]) -> list[str]:
    """The keys of `meta` that are `visibility` written another way (`Visibility`, `"visibility "`,
    `visibilty`): see `is_visibility_key`."""
    return [k for k in meta if is_visibility_key(k)]


def says_public(value: object) -> bool:
    """`public`, in any case and with blanks around (`Public`, ` public `): what the bot serves."""
    return isinstance(value, str) and value.strip().lower() == "public"


def says_true(value: object) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() in ("true", "yes"))


def nested_visibility(meta: dict[str, Any]) -> list[tuple[str, object]]:
    """`(top-level key, value)` of every `visibility` key (or a misspelling of it) found *inside* another
    field's value (`publish: {visibility: private}`, `- visibility: private` under a list): not the field,
    but its author meant it. Walks each object once (aliases share objects, and may make cycles)."""
    found: list[tuple[str, object]] = []
    for top, value in meta.items():
        if not isinstance(value, (dict, list)):
            continue
        seen: set[int] = set()
        stack: list[object] = [value]
        while stack:
            item = stack.pop()
            if id(item) in seen:
                continue
            seen.add(id(item))
            if isinstance(item, dict):
                for key, inner in item.items():
                    if key == _VISIBILITY or is_visibility_key(key):
                        found.append((str(top), inner))
                    if isinstance(inner, (dict, list)):
                        stack.append(inner)
            elif isinstance(item, list):
                stack.extend(v for v in item if isinstance(v, (dict, list)))
    return found


def private_by_fields(meta: dict[str, Any]) -> str | None:
    """Why the frontmatter fields keep the note from visitors (`visibility: private`), or None. Every way an author says "not
    public" (docs/service.md, "What private means"):

    - `visibility` with any value but `public` (also none: `visibility:`); a typo such as `privte` must fail
      closed, never leak. No field at all means public (plain Obsidian vaults have none);
    - `visibility` written another way (`Visibility`, `visibilty`: see `is_visibility_key`) with a value that
      is not `public`, beside the field or without it;
    - `publish` with any value but true (Obsidian Publish's `publish: false`);
    - `private: true`;
    - a `visibility` nested inside another field (`meta: {visibility: private}`) that is not `public`.
    """
    if _VISIBILITY in meta and not says_public(meta[_VISIBILITY]):
        return _shown(_VISIBILITY, meta[_VISIBILITY])
    for key in meta:
        if key.__class__ is str and is_visibility_key(key) and not says_public(meta[key]):
            return _shown(key, meta[key])
    if "publish" in meta and not says_true(meta["publish"]):
        return _shown("publish", meta["publish"])
    if "private" in meta and says_true(meta["private"]):
        return _shown("private", meta["private"])
    for top, value in nested_visibility(meta):
        if not says_public(value):
            return f"a visibility inside `{top}`"
    return None


def _shown(key: str, value: object) -> str:
    """`key: value` as a reason (a value that is not a short scalar is not quoted)."""
    if value is None:
        return f"{key} with no value"
    if isinstance(value, bool):
        return f"{key}: {str(value).lower()}"
    if isinstance(value, (str, int, float)) and len(str(value)) <= 40:
        return f"{key}: {value}"
    return f"{key} not public"


@dataclass(frozen=True, slots=True)
class PrivacyPolicy:
    """What a vault's configuration adds to the fields: folders and tags whose notes are private
    (`[privacy]` in `VAULT/vaulttools.toml`, and the service's settings; none by default).

    `folders` are vault-relative folder paths (`journal`, `perso/famille`), compared without case;
    `tags` are tag names without `#` (`private`, `perso`), compared without case, matched on the note's
    `tags` field and on its body's `#tag`s (and their sub-tags: `#perso/santé` for `perso`).
    """

    folders: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    #: Every note hidden: the configuration could not be read (fail closed).
    everything: bool = False

    def __bool__(self) -> bool:
        return bool(self.folders or self.tags or self.everything)

    def merged(self, other: PrivacyPolicy | None) -> PrivacyPolicy:
        """Both policies at once (what either hides stays hidden)."""
        if not other:
            return self
        return PrivacyPolicy(
            tuple(sorted(set(self.folders) | set(other.folders))),
            tuple(sorted(set(self.tags) | set(other.tags))),
            self.everything or other.everything,
        )

    def digest(self) -> str:
        return hashlib.blake2b(repr((self.folders, self.tags, self.everything)).encode(), digest_size=8).hexdigest()

    def withheld(self, note: Note) -> str | None:
        """Why this policy hides `note` (`folder journal`, `tag #private`), or None."""
        if self.everything:
            return "the [privacy] configuration could not be read"
        path = note.path.lower()
        for folder in self.folders:
            prefix = folder.strip("/").lower()
            if prefix and path.startswith(prefix + "/"):
                return f"folder {folder.strip('/')}"
        if self.tags:
            wanted = {t.lstrip("#").strip().lower() for t in self.tags}
            for tag in note.tags:
                name = tag.lstrip("#").strip().lower()
                if name in wanted or name.split("/", 1)[0] in wanted:
                    return f"tag #{name}"
            body = note.body
            if "#" in body:
                for m in _BODY_TAG_RE.finditer(body):
                    name = m[1].lower()
                    if name in wanted or name.split("/", 1)[0] in wanted:
                        return f"tag #{name}"
        return None


# An Obsidian tag in the body: `#` after a blank or the line start, then a name that is not only digits.
# (a tag inside code is matched too: a false positive only hides a note, never shows one)
_BODY_TAG_RE = re.compile(r"(?<![^\s])#([\w/-]*[^\W\d][\w/-]*)")


#: Problems after which the parsed frontmatter says nothing reliable about `visibility` (a duplicate key:
#: the value read is the last one, and an earlier `visibility: private` must not lose to it; a misplaced
#: frontmatter: Obsidian reads none of it, but its author meant every line; aliases expanding too far: no
#: field is read; lines ending in a lone CR: no frontmatter is opened).
FRONTMATTER_UNREADABLE: frozenset[str] = frozenset({
    "yaml-error", "not-mapping", "unclosed-frontmatter", "not-utf8", "duplicate-key", "misplaced-frontmatter",
    "frontmatter-too-large", "cr-line-endings",
})
#: Problems that keep a note from visitors whatever its fields say: links not read (they could name
#: private notes that redaction would then miss); a file that could not be read or decoded at all (a NUL
#: byte, UTF-16, no permission: what it says about its visibility is unknown, and its path is not shown).
HIDING_PROBLEMS: frozenset[str] = frozenset({"too-many-links", "binary", "unreadable"})
# A `visibility` key (maybe quoted) whose value is not `public`: at the start of a line, as a list item's key
# (`- visibility: private`), or inside a flow mapping (`{title: A, visibility: private`). The lookahead holds
# its own blanks: with `\s*` before it, backtracking to zero blanks made " public" a hint.
_NON_PUBLIC_VISIBILITY_LINE = re.compile(
    r"(?:^|[{,])[ \t]*(?:-[ \t]+)?([\"']?)visibility\1[ \t]*:(?![ \t]*[\"']?public[\"']?[ \t]*(?:[,}#].*)?$)",
    re.MULTILINE | re.IGNORECASE,
)


def private_by_raw_text(note: Note) -> bool:
    """When the frontmatter could not be read: whether its raw text has a `visibility:` line other than
    `public` (the frontmatter's lines, or the whole file when no frontmatter could be split from it)."""
    text, body = note.text, note.body
    head = text[: len(text) - len(body)] if body and len(body) < len(text) and text.endswith(body) else text
    if "\r" in head:
        head = head.replace("\r\n", "\n").replace("\r", "\n")  # lines ending in a lone CR are lines too
    return _NON_PUBLIC_VISIBILITY_LINE.search(head) is not None


def privacy_reason(note: Note) -> str | None:
    """Why the note is kept from visitors (`visibility: private`, `publish: false`, `folder journal`,
    `unreadable file`...), or None when a visitor may see it: the one privacy rule every part applies
    (retrieval, prompt, API, lint, TUI, watch), through `visible_to_visitors` and `Note.is_private`.

    A note is public when none of its fields says otherwise (`private_by_fields`: `visibility` other than
    `public`, misspelt, nested, `publish: false`, `private: true`), the vault's `PrivacyPolicy` does not
    withhold it (a private folder or tag), and nothing in it went unread (`HIDING_PROBLEMS`). When the
    frontmatter could not be read, the raw text decides: any `visibility:` line other than `public` keeps
    the note hidden (fail closed), since a typo in the YAML must never publish a private note.
    """
    if note.withheld is not None:
        return note.withheld
    meta = note.meta
    if meta:
        reason = private_by_fields(meta)
        if reason is not None:
            return reason
    problems = note.problems
    if problems:
        for problem in problems:
            if problem.code in HIDING_PROBLEMS:
                return "too many links" if problem.code == "too-many-links" else "unreadable file"
        if any(problem.code in FRONTMATTER_UNREADABLE for problem in problems) and private_by_raw_text(note):
            return "a visibility line in a frontmatter that could not be read"
    return None


def visible_to_visitors(note: Note) -> bool:
    """Whether a visitor may see the note: `privacy_reason(note) is None`."""
    return privacy_reason(note) is None
