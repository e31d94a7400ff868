"""Links, headings and block ids of a note, and the resolver that follows a link as Obsidian would.

Extraction (DESIGN §4): wikilinks ``[[Target#Anchor|text]]``, embeds ``![[file.png|300]]``, markdown links
``[text](Some%20Note.md#H)`` / ``[text](<Some Note.md>)`` and images, ``\\|`` escaped pipes inside tables, and
``"[[x]]"`` strings in frontmatter values. Nothing inside fenced code blocks (also inside block quotes and
callouts) or inline code is a link, a heading or a block id.

Resolution rules (Obsidian's, made explicit):

* names are compared after Unicode NFC normalisation and lower-casing; ``.md`` is optional for notes, any
  other file needs its extension;
* ``./`` and ``../`` targets, and markdown-link targets, are first tried relative to the linking note;
* a target with ``/`` matches a file whose vault path equals it or ends with it (``[[b/Note]]`` finds
  ``a/b/Note.md``; an exact path from the vault root wins);
* a bare name matches by file name; when several files share it the nearest wins: same folder as the
  linking note, then the fewest folders, then the shortest path, then alphabetical order; the link is then
  AMBIGUOUS and the resolution lists every candidate;
* ``#Heading`` / ``#H1#H2`` / ``#^block`` anchors are checked against the target note's headings and block
  ids (headings compared as Obsidian does: case-insensitive, ignoring the characters it strips from
  headings in links and collapsing white space); anchors on non-note files (``#page=3``, image options)
  are not checked;
* aliases never make a link resolve, but a broken link whose text equals an alias records that note.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from collections.abc import Callable, Iterable
from urllib.parse import unquote

from grasbot.frontmatter import _SPAN_CACHE, _STR_CACHE, ParsedFile, make_span, share

from grasbot.notes import Heading, Link, LinkKind, LinkStatus, Resolution

_share = _STR_CACHE.setdefault
_SHORT_RAW = 160  # (sharing cache emptied after a load: see grasbot.frontmatter.clear_caches)
# Link, Heading and Resolution are named tuples: building them from a tuple skips a Python-level __new__
_new = tuple.__new__

__all__ = [
    "parse_body",
    "frontmatter_links",
    "mask_code",
    "name_key",
    "heading_key",
    "link_key",
    "AnchorTable",
    "Resolver",
]

# -- extraction ------------------------------------------------------------------------------------

# Every pattern starts with a literal so that `re` can skip ahead with a fast scan; what a lookbehind
# would check (a preceding backslash or `!`) is checked by hand on the few matches.
# (written "```*" and not "`{3,}": only a plain literal prefix gets the fast scan)
_BACKTICK_FENCE_RE = re.compile(r"(````*)([^\n]*)")
_TILDE_FENCE_RE = re.compile(r"(~~~~*)([^\n]*)")
_BACKTICKS_RE = re.compile(r"``*")
# [[...]]: the content holds no bracket and no line break.
_WIKI_RE = re.compile(r"\[\[([^\[\]\n]+)\]\]")
# [text](dest "title") / [text](<dest>); text may hold one level of brackets; dest may hold balanced ().
# (possessive runs instead of a per-character alternation: the same language, matched several times
# faster; giving characters back could never help, since what follows starts with a character they exclude)
_MD_RE = re.compile(
    r"\[([^\[\]\n]*+(?:\[[^\[\]\n]*+\][^\[\]\n]*+)*+)\]"
    r"\([ \t]*(?:<([^<>\n]*)>|((?:[^\s()<>]++|\([^\s()]*\))++))"
    r"(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?[ \t]*\)"
)
# run on "\n" + text: a line made of 1-6 `#`, then a blank or the end of the line
_HEADING_RE = re.compile(r"\n(#{1,6})(?=[ \t\n]|\Z)[^\n]*")
_HEADING_CLOSE_RE = re.compile(r"(?:^|[ \t]+)#+$")
# `^id` at the end of a line; what precedes it is checked by hand (see _BLOCK_BEFORE)
_BLOCK_RE = re.compile(r"\^([A-Za-z0-9-]+)[ \t]*$", re.MULTILINE)
# `^id` follows a blank, starts the line, or comes right after a link or embed: `![[img.png]]^id` is used
# as a block id in the help vault, and Obsidian embeds it.
_BLOCK_BEFORE = frozenset(" \t\n])")
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


def _blank_keep_lines(chunk: str) -> str:
    if "\n" not in chunk:
        return " " * len(chunk)
    return "\n".join(" " * len(part) for part in chunk.split("\n"))


def _fence_spans(body: str) -> list[tuple[int, int]]:
    """(start, end) of every fenced code block, fences included; an unclosed fence runs to the end."""
    spans: list[tuple[int, int]] = []
    open_char = ""
    open_len = 0
    open_at = 0
    matches: list[re.Match[str]] = []
    if "```" in body:
        matches.extend(_BACKTICK_FENCE_RE.finditer(body))
    if "~~~" in body:
        matches.extend(_TILDE_FENCE_RE.finditer(body))
        matches.sort(key=lambda m: m.start())
    for m in matches:
        start = m.start()
        line_start = body.rfind("\n", 0, start) + 1
        if start > line_start and body[line_start:start].strip(" \t>"):
            continue  # not at the start of a line (block quote markers and indentation allowed)
        fence, info = m.group(1), m.group(2)
        if not open_char:
            if fence[0] == "`" and "`" in info:
                continue  # ```foo` is inline code, not a fence
            open_char, open_len, open_at = fence[0], len(fence), line_start
        elif fence[0] == open_char and len(fence) >= open_len and not info.strip():
            spans.append((open_at, m.end()))
            open_char = ""
    if open_char:
        spans.append((open_at, len(body)))
    return spans


def _inline_code_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of inline code: a run of N backticks up to the next run of exactly N, within one
    paragraph (CommonMark); an unmatched run is literal text."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS_RE.finditer(text)]
    spans: list[tuple[int, int]] = []
    i = 0
    n = len(runs)
    while i < n:
        start, end = runs[i]
        size = end - start
        j = i + 1
        while j < n:
            s2, e2 = runs[j]
            if e2 - s2 == size:
                break
            j += 1
        if j < n and "\n\n" not in text[end : runs[j][0]]:
            spans.append((start, runs[j][1]))
            i = j + 1
        else:
            i += 1
    return spans


def mask_code(body: str) -> str:
    """`body` with fenced code blocks and inline code replaced by spaces (same length, line breaks kept),
    so that regexes run on the result find nothing inside code and keep exact offsets."""
    if "```" in body or "~~~" in body:
        spans = _fence_spans(body)
        if spans:
            pieces: list[str] = []
            last = 0
            for start, end in spans:
                pieces.append(body[last:start])
                pieces.append(_blank_keep_lines(body[start:end]))
                last = end
            pieces.append(body[last:])
            body = "".join(pieces)
    if "`" in body:
        spans = _inline_code_spans(body)
        if spans:
            pieces = []
            last = 0
            for start, end in spans:
                pieces.append(body[last:start])
                pieces.append(_blank_keep_lines(body[start:end]))
                last = end
            pieces.append(body[last:])
            body = "".join(pieces)
    return body


class _Cursor:
    """Turns increasing offsets of a body into file positions without a line table: matches come in order,
    so counting line breaks between two matches is enough."""

    __slots__ = ("text", "offset", "line")

    def __init__(self, text: str, first_line: int) -> None:
        self.text = text
        self.offset = 0
        self.line = first_line

    def at(self, offset: int) -> tuple[int, int]:
        text = self.text
        if offset < self.offset:  # out of order (never for one regex pass): count back
            self.line -= text.count("\n", offset, self.offset)
        else:
            self.line += text.count("\n", self.offset, offset)
        self.offset = offset
        return self.line, offset - text.rfind("\n", 0, offset)


def _split_wiki(content: str) -> tuple[str, str | None, str | None]:
    """'Target#Anchor|display' -> (target, anchor, display); `\\|` (table escape) counts as the pipe."""
    display: str | None = None
    bar = content.find("|")
    if bar != -1:
        display = content[bar + 1 :]
        content = content[:bar]
        if content.endswith("\\"):
            content = content[:-1]
    anchor: str | None = None
    hash_at = content.find("#")
    if hash_at != -1:
        anchor = content[hash_at + 1 :].strip()
        content = content[:hash_at]
    return content.strip(), anchor, display


def _split_markdown(dest: str) -> tuple[str, str | None]:
    hash_at = dest.find("#")
    anchor: str | None = None
    if hash_at != -1:
        anchor = dest[hash_at + 1 :]
        anchor = (unquote(anchor) if "%" in anchor else anchor).strip()
        dest = dest[:hash_at]
    return (unquote(dest) if "%" in dest else dest).strip(), anchor


def is_external(target: str) -> bool:
    """A URL (``https:``, ``mailto:``, ``obsidian:``...) or a protocol-relative ``//host`` address."""
    return bool(_SCHEME_RE.match(target)) or target.startswith("//")


def parse_body(body: str, first_line: int) -> tuple[list[Link], list[Heading], set[str]]:
    """Links, headings and block ids of a note body that starts on line `first_line` of its file."""
    links: list[Link] = []
    headings: list[Heading] = []
    blocks: set[str] = set()
    has_wiki = "[[" in body
    has_md = "](" in body
    has_heading = "#" in body
    has_block = "^" in body
    if not (has_wiki or has_md or has_heading or has_block):
        return links, headings, blocks
    masked = mask_code(body) if "`" in body or "~~~" in body else body

    wiki_ranges: list[tuple[int, int]] = []
    if has_wiki:
        # line numbers by counting line breaks since the previous match (matches come in order)
        line = first_line
        last = 0
        count = masked.count
        rfind = masked.rfind
        wiki, embed = LinkKind.WIKILINK, LinkKind.EMBED
        cache = _SPAN_CACHE
        for m in _WIKI_RE.finditer(masked):
            start, end = m.span()
            kind = wiki
            if start:
                before = masked[start - 1]
                if before == "\\":
                    continue  # \[[x]]: escaped, literal text
                if before == "!":
                    start -= 1
                    kind = embed
            content = m.group(1)
            if "|" in content or "#" in content:
                target, anchor, display = _split_wiki(content)
                if not target and anchor is None:
                    continue  # [[|x]]: not a link
            else:
                target = content.strip()
                if not target:
                    continue  # [[ ]]: not a link
                anchor = display = None
            line += count("\n", last, start)
            last = start
            col = start - rfind("\n", 0, start)
            key = (line, col, line, col + end - start)
            span = cache.get(key)
            if span is None:
                span = make_span(*key)
            raw = body[start:end]
            if end - start <= _SHORT_RAW:
                raw = _share(raw, raw)  # the same `[[name]]` recurs across notes
            links.append(_new(Link, (raw, _share(target, target), anchor, display, kind, span, None)))
            wiki_ranges.append((start, end))
    if has_md:
        line = first_line
        last = 0
        count = masked.count
        rfind = masked.rfind
        md = LinkKind.MARKDOWN
        md_links: list[Link] = []
        wi = 0
        n_wiki = len(wiki_ranges)
        for m in _MD_RE.finditer(masked):
            start, end = m.span()
            if start:
                before = masked[start - 1]
                if before == "\\":
                    continue
                if before == "!":
                    start -= 1
            while wi < n_wiki and wiki_ranges[wi][1] <= start:
                wi += 1
            if wi < n_wiki and wiki_ranges[wi][0] < end:
                continue  # `[[a]](b)` and the like: the wikilink wins
            text, angle, plain = m.groups()
            dest = angle if angle is not None else plain
            if dest is None or not dest.strip():
                continue
            if is_external(dest):
                target, anchor = dest.strip(), None
            else:
                target, anchor = _split_markdown(dest)
            line += count("\n", last, start)
            last = start
            col = start - rfind("\n", 0, start)
            span = make_span(line, col, line, col + end - start)
            raw = body[start:end]
            if end - start <= _SHORT_RAW:
                raw = _share(raw, raw)
            md_links.append(_new(Link, (raw, _share(target, target), anchor, text, md, span, None)))
        if md_links:
            if links:
                links.extend(md_links)
                links.sort(key=_link_order)
            else:
                links = md_links
    if has_heading and ("\n#" in masked or masked.startswith("#")):
        line = first_line - 1  # the "\n" put in front counts one line break too many
        last = 0
        prefixed = "\n" + masked
        count = prefixed.count
        for m in _HEADING_RE.finditer(prefixed):
            # offsets in the "\n"-prefixed copy are one past the body's; the text comes from the original
            # (the masked copy blanks inline code such as "### `hasTag()`")
            start, hashes_end = m.span(1)
            text = body[hashes_end - 1 : m.end() - 1].strip()
            if text.endswith("#"):
                text = _HEADING_CLOSE_RE.sub("", text).strip()
            line += count("\n", last, start)
            last = start
            if len(text) <= _SHORT_RAW:
                text = _share(text, text)  # the same section titles recur across notes
            headings.append(_new(Heading, (text, hashes_end - start, line)))
    if has_block:
        for m in _BLOCK_RE.finditer(masked):
            start = m.start()
            if not start or masked[start - 1] in _BLOCK_BEFORE:
                blocks.add(m.group(1))
    return links, headings, blocks


def _link_order(link: Link) -> tuple[int, int]:
    span = link[5]
    return span[0], span[1]


def frontmatter_links(parsed: ParsedFile) -> list[Link]:
    """`[[x]]` strings written as frontmatter values (``linked: ["[[a]]", "[[b]]"]``, ``up: "[[c]]"``)."""
    out: list[Link] = []
    kind = LinkKind.FRONTMATTER
    for key, value, span, source in parsed.string_values:
        if (
            value.startswith("[[")
            and value.endswith("]]")
            and value.count("[") == 2
            and value.count("]") == 2
            and "|" not in value
            and "#" not in value
            and "\n" not in value
            and len(source) in (len(value), len(value) + 2)
        ):
            # the usual `- "[[slug]]"`: no regex, no search
            target = value[2:-2].strip()
            if target:
                col = span.column + (len(source) - len(value)) // 2
                where = make_span(span.line, col, span.line, col + len(value))
                out.append(Link(share(value), share(target), None, None, kind, where, key))
            continue
        # exact columns when the value sits on one line as written (plain or simply quoted)
        found = source.find(value) if "\n" not in source else -1
        for m in _WIKI_RE.finditer(value):
            if m.start() and value[m.start() - 1] == "\\":
                continue
            target, anchor, display = _split_wiki(m.group(1))
            if not target and anchor is None:
                continue
            if found != -1:
                col = span.column + found + m.start()
                where = make_span(span.line, col, span.line, col + m.end() - m.start())
            else:
                where = span
            out.append(Link(share(m.group(0)), share(target), anchor, display, kind, where, key))
    return out


# -- keys --------------------------------------------------------------------------------------------

_nfc = unicodedata.normalize
_is_nfc = unicodedata.is_normalized


_KEY_CACHE: dict[str, str] = {}
_HEADING_CACHE: dict[str, str] = {}
_LINK_KEY_CACHE: dict[str, str] = {}
_CACHE_LIMIT = 200_000


def _remember(cache: dict[str, str], text: str, value: str) -> str:
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[text] = value
    return value


def name_key(text: str) -> str:
    """The comparison form of a name or path: NFC, lower-case."""
    found = _KEY_CACHE.get(text)
    if found is not None:
        return found
    key = text
    if not key.isascii() and not _is_nfc("NFC", key):
        key = _nfc("NFC", key)
    lower = key.lower()
    if lower == key:
        lower = key  # most names are already lower-case: keep the caller's string, not an equal copy
    return _remember(_KEY_CACHE, text, share(lower))


# Obsidian matches heading anchors loosely: punctuation is ignored on both sides (the help vault links
# `[[Functions#hasTag]]` to "### `hasTag()`" and `#How large can each remote vault be` to the heading
# ending in "?"), and so are the characters it strips when it writes a heading link (`# | ^ : [ ]`) and
# markdown emphasis/code markers. Apostrophes and dashes stay: they tell French headings apart.
_HEADING_STRIP_RE = re.compile(r"[!\"#$%&()*+,.:;<=>?@^`{|}~/\[\]\\_]+")
_SPACES_RE = re.compile(r"\s+")
_MD_LINK_IN_HEADING_RE = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def heading_key(text: str) -> str:
    """The form in which a heading and a link anchor are compared."""
    found = _HEADING_CACHE.get(text)
    if found is not None:
        return found
    key = text
    if "](" in key:
        key = _MD_LINK_IN_HEADING_RE.sub(r"\1", key)
    key = _HEADING_STRIP_RE.sub(" ", name_key(key))
    return _remember(_HEADING_CACHE, text, share(_SPACES_RE.sub(" ", key).strip()))


def link_key(target: str) -> str:
    """The reverse-index key of a link target: its file name, normalised, without `.md`."""
    found = _LINK_KEY_CACHE.get(target)
    if found is not None:
        return found
    name = name_key(target.rsplit("/", 1)[-1])
    return _remember(_LINK_KEY_CACHE, target, share(name[:-3] if name.endswith(".md") else name))


# -- resolution --------------------------------------------------------------------------------------


_NO_BLOCKS: frozenset[str] = frozenset()


class AnchorTable:
    """A note's headings and block ids in comparison form."""

    __slots__ = ("headings", "blocks")

    def __init__(self, headings: Iterable[Heading], blocks: Iterable[str]) -> None:
        # (the comparison keys only, in order: levels play no part in matching, and a vault keeps one
        # table per linked note)
        self.headings: tuple[str, ...] = tuple([heading_key(h.text) for h in headings])
        self.blocks: frozenset[str] = frozenset([b.lower() for b in blocks]) if blocks else _NO_BLOCKS

    def has(self, anchor: str) -> bool:
        if anchor.startswith("^"):
            return anchor[1:].strip().lower() in self.blocks
        parts = [heading_key(p) for p in anchor.split("#")]
        parts = [p for p in parts if p]
        if not parts:
            return True  # `[[Note#]]` points at the note itself
        headings = self.headings
        pos = 0
        for part in parts:
            while pos < len(headings) and headings[pos] != part:
                pos += 1
            if pos == len(headings):
                return False
            pos += 1
        return True


def _nearest_order(source_folder: str) -> Callable[[str], tuple[int, int, int, str]]:
    def order(path: str) -> tuple[int, int, int, str]:
        folder = path.rsplit("/", 1)[0] if "/" in path else ""
        return (0 if folder == source_folder else 1, path.count("/"), len(path), path)

    return order


class Resolver:
    """Indexes of the vault's files by name and path, and the link-following rules.

    Keys are in `name_key` form. Notes are indexed without `.md` (``a/note``), other files with their
    extension (``a/img.png``).
    """

    def __init__(self) -> None:
        self.by_name: dict[str, list[str]] = {}
        self.by_path: dict[str, list[str]] = {}
        self.is_note: dict[str, bool] = {}
        self.alias_owners: dict[str, list[str]] = {}
        # target key -> (candidates sorted by path, exact): what does not depend on the linking note.
        # Cleared whenever a file is added or removed.
        self._found: dict[str, tuple[tuple[str, ...], bool]] = {}
        # link target as written -> the one file it finds from anywhere ("" if none or several)
        self._unique: dict[str, str] = {}

    # -- index maintenance
    @staticmethod
    def keys_of(path: str, is_note: bool) -> tuple[str, str]:
        key = name_key(path)
        if is_note and key.endswith(".md"):
            key = key[:-3]
        return key.rsplit("/", 1)[-1], key

    def add(self, path: str, is_note: bool) -> None:
        if path in self.is_note:
            return
        self.is_note[path] = is_note
        self._found.clear()
        self._unique.clear()
        name, key = self.keys_of(path, is_note)
        _insert(self.by_name.setdefault(name, []), path)
        _insert(self.by_path.setdefault(key, []), path)

    def remove(self, path: str) -> None:
        is_note = self.is_note.pop(path, None)
        if is_note is None:
            return
        self._found.clear()
        self._unique.clear()
        name, key = self.keys_of(path, is_note)
        _discard(self.by_name, name, path)
        _discard(self.by_path, key, path)

    def add_aliases(self, path: str, aliases: Iterable[str]) -> None:
        for alias in aliases:
            _insert(self.alias_owners.setdefault(name_key(alias.strip()), []), path)

    def remove_aliases(self, path: str, aliases: Iterable[str]) -> None:
        for alias in aliases:
            _discard(self.alias_owners, name_key(alias.strip()), path)

    # -- resolution
    def find(self, target: str, source: str, relative_first: bool) -> tuple[tuple[str, ...], bool]:
        """Candidate files for `target` seen from the note `source`, nearest first, and whether the
        match is exact (a path, so never ambiguous)."""
        key = name_key(target)
        if key.startswith("/"):
            key = key.lstrip("/")
            relative_first = False
        source_folder = source.rsplit("/", 1)[0] if "/" in source else ""
        dotted = key.startswith("./") or key.startswith("../")
        if relative_first or dotted:
            base = name_key(source_folder)
            rel = posixpath.normpath(posixpath.join(base, key)) if base else posixpath.normpath(key)
            hit = self._exact(rel)
            if hit:
                return hit, True
            if dotted:
                if rel.startswith("../") or rel == "..":
                    return (), False
                key = rel
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = self._find_global(key)
        cands, exact = found
        if len(cands) > 1 and not exact:
            cands = tuple(sorted(cands, key=_nearest_order(source_folder)))
        return cands, exact

    def _find_global(self, key: str) -> tuple[tuple[str, ...], bool]:
        name = key.rsplit("/", 1)[-1]
        cands = list(self.by_name.get(name, ()))
        stripped = ""
        if name.endswith(".md"):
            stripped = key[:-3]
            cands += [p for p in self.by_name.get(name[:-3], ()) if self.is_note[p] and p not in cands]
        if "/" in key:
            exact = self._exact(key)
            if exact:
                return exact, True
            tail = "/" + key
            tail2 = "/" + stripped if stripped else None
            kept = []
            for p in cands:
                pk = self.keys_of(p, self.is_note[p])[1]
                if pk.endswith(tail) or (tail2 and pk.endswith(tail2)):
                    kept.append(p)
            cands = kept
        return tuple(sorted(cands)), False

    def _exact(self, key: str) -> tuple[str, ...]:
        hit = self.by_path.get(key)
        if hit:
            return tuple(hit)
        if key.endswith(".md"):
            return tuple(p for p in self.by_path.get(key[:-3], ()) if self.is_note[p])
        return ()

    def resolve(self, link: Link, source: str, anchors: Callable[[str], AnchorTable | None]) -> Resolution:
        """Follow `link` written in the note at vault path `source`."""
        target = link.target
        kind = link.kind
        if kind is LinkKind.MARKDOWN and is_external(target):
            return Resolution(link, LinkStatus.EXTERNAL)
        if not target:
            path: str = source
            cands: tuple[str, ...] = (source,)
            exact = True
        else:
            cands, exact = self.find(target, source, kind is LinkKind.MARKDOWN)
            if not cands:
                owners = self.alias_owners.get(name_key(target))
                alias_of = None
                if owners:
                    others = [o for o in owners if o != source] or owners
                    alias_of = sorted(others, key=_nearest_order(source.rsplit("/", 1)[0] if "/" in source else ""))[0]
                return Resolution(link, LinkStatus.BROKEN, alias_of=alias_of)
            path = cands[0]
        anchor = link.anchor
        if anchor and self.is_note.get(path, False):
            table = anchors(path)
            if table is not None and not table.has(anchor):
                return Resolution(link, LinkStatus.BROKEN_ANCHOR, path, cands if len(cands) > 1 else ())
        if len(cands) > 1 and not exact:
            return Resolution(link, LinkStatus.AMBIGUOUS, path, cands)
        return Resolution(link, LinkStatus.OK, path)

    def _learn_unique(self, target: str) -> str:
        """The one file a wikilink `target` finds wherever it is written, or "" when that depends on the
        linking note (relative, ambiguous) or nothing matches; remembered in `_unique`."""
        key = name_key(target)
        path = ""
        if key[:1] not in "/." and not key.startswith("../"):
            found = self._found.get(key)
            if found is None:
                found = self._found[key] = self._find_global(key)
            if len(found[0]) == 1:
                path = found[0][0]
        self._unique[target] = path
        return path

    def resolve_all(
        self, links: list[Link], source: str, anchors: Callable[[str], AnchorTable | None]
    ) -> list[Resolution]:
        """`resolve` for every link of one note: the same answers, with the common case (a wikilink to a
        name or path, found once, no anchor) kept free of per-link function calls."""
        ok = LinkStatus.OK
        return [
            _new(Resolution, (link, ok, r, (), None)) if r.__class__ is str else r  # type: ignore[misc]
            for link, r in zip(links, self.resolve_compact(links, source, anchors))
        ]

    def resolve_compact(
        self, links: list[Link], source: str, anchors: Callable[[str], AnchorTable | None]
    ) -> list[str | Resolution]:
        """`resolve_all` in the form the vault stores: the target path (a shared str) for an OK link,
        the full Resolution otherwise. A vault holds one per link: a pointer instead of a tuple each."""
        out: list[str | Resolution] = []
        append = out.append
        unique = self._unique
        markdown = LinkKind.MARKDOWN
        ok = LinkStatus.OK
        broken_anchor = LinkStatus.BROKEN_ANCHOR
        is_note = self.is_note
        for link in links:
            target = link[1]
            if target and link[4] is not markdown:
                path = unique.get(target)
                if path is None:
                    path = self._learn_unique(target)
                if path:
                    anchor = link[2]
                    if anchor and is_note[path]:
                        table = anchors(path)
                        if table is not None and not table.has(anchor):
                            append(_new(Resolution, (link, broken_anchor, path, (), None)))
                            continue
                    append(path)
                    continue
            res = self.resolve(link, source, anchors)
            append(res.target_path if res.status is ok and not res.candidates else res)  # type: ignore[arg-type]
        return out


def _insert(items: list[str], path: str) -> None:
    # lists stay sorted so that every answer is independent of insertion order
    if path not in items:
        items.append(path)
        items.sort()


def _discard(index: dict[str, list[str]], key: str, path: str) -> None:
    items = index.get(key)
    if items and path in items:
        items.remove(path)
        if not items:
            del index[key]
