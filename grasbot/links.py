"""Links, headings and block ids of a note, and the resolver that follows a link as Obsidian would.

Extraction (docs/links.md): wikilinks ``[[Target#Anchor|text]]``, embeds ``![[file.png|300]]``, markdown links
``[text](Some%20Note.md#H)`` / ``[text](<Some Note.md>)`` and images, ``\\|`` escaped pipes inside tables, and
``"[[x]]"`` strings in frontmatter values. Nothing inside fenced code blocks (also inside block quotes and
callouts) or inline code is a link, a heading or a block id.

Resolution rules (Obsidian's, made explicit):

* names are compared after Unicode NFC normalisation and lower-casing; ``.md`` is optional for notes, any
  other file needs its extension;
* ``./`` and ``../`` targets, and markdown-link targets, are first tried relative to the linking note;
* a target with ``/`` matches a file whose vault path equals it or ends with it (``[[b/Note]]`` finds
  ``a/b/Note.md``; an exact path from the vault root wins);
* a bare name matches by file name; when several files share it, the file whose path from the vault root
  is that name wins (``[[index]]`` finds ``index.md`` before ``a/b/index.md``), else the nearest: same
  folder as the linking note, then the fewest folders, then the shortest path, then alphabetical order; the
  link is then AMBIGUOUS and the resolution lists every candidate;
* ``#Heading`` / ``#H1#H2`` / ``#^block`` anchors are checked against the target note's headings and block
  ids (headings compared as Obsidian does: case-insensitive, ignoring the characters it strips from
  headings in links and collapsing white space); anchors on non-note files (``#page=3``, image options)
  are not checked;
* aliases never make a link resolve, but a broken link whose text equals an alias records that note.
"""

from __future__ import annotations

import operator
import posixpath
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from itertools import chain

from grasbot.markdown.body import has_comment, mask_code, without_comments
from grasbot.markdown.frontmatter import ParsedFile, make_span
from grasbot.model import Heading, Link, LinkKind, LinkStatus, Resolution, Span, links_from_flat, wikilink_raw
from grasbot.text import name_key, name_key_fast, name_key_uncached, share, share_any

_share = share_any
# (the sharing caches are emptied after a load: see grasbot.markdown.frontmatter.clear_caches)
# Link, Heading and Resolution are named tuples: building them from a tuple skips a Python-level __new__
_new = tuple.__new__

__all__ = [
    "parse_body",
    "scan_body",
    "links_from_entries",
    "entry_of",
    "frontmatter_links",
    "frontmatter_entries",
    "unquote",
    "mask_code",
    "without_comments",
    "heading_key",
    "link_key",
    "cached_link_key",
    "cut_links",
    "text_link_targets",
    "local_target",
    "is_obsidian_uri",
    "MAX_LINKS_PER_NOTE",
    "AnchorTable",
    "Resolver",
]

# -- extraction ------------------------------------------------------------------------------------

# Every pattern starts with a literal so that `re` can skip ahead with a fast scan; what a lookbehind
# would check (a preceding backslash or `!`) is checked by hand on the few matches.
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
# a line made of 1-6 `#`, then a blank or the end of the line; the look-behind, placed after the first
# `#` so that `re` scans for that literal, checks that it starts its line (the text's first line too)
_HEADING_RE = re.compile(r"(#(?<![^\n]#)#{0,5})(?=[ \t\n]|\Z)[^\n]*")
_HEADING_CLOSE_RE = re.compile(r"(?:^|[ \t]+)#+$")
# `^id` at the end of a line; what precedes it is checked by hand (see _BLOCK_BEFORE)
_BLOCK_RE = re.compile(r"\^([A-Za-z0-9-]+)[ \t]*$", re.MULTILINE)
# `^id` follows a blank, starts the line, or comes right after a link or embed: `![[img.png]]^id` is used
# as a block id in the help vault, and Obsidian embeds it.
_BLOCK_BEFORE = frozenset(" \t\n])")
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")


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


# Runs of percent-escapes, decoded together as UTF-8 (invalid sequences become U+FFFD, a lone `%` stays):
# what urllib.parse.unquote does, without its per-call set-up (a markdown link is decoded per link).
_PERCENT_RUN_RE = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


def _percent_run(m: re.Match[str]) -> str:
    return bytes.fromhex(m[0].replace("%", "")).decode("utf-8", "replace")


def unquote(text: str) -> str:
    """`urllib.parse.unquote(text)` (UTF-8, errors replaced)."""
    return _PERCENT_RUN_RE.sub(_percent_run, text) if "%" in text else text


def _split_markdown(dest: str) -> tuple[str, str | None]:
    hash_at = dest.find("#")
    anchor: str | None = None
    if hash_at != -1:
        anchor = dest[hash_at + 1 :]
        anchor = (unquote(anchor) if "%" in anchor else anchor).strip()
        dest = dest[:hash_at]
    return (unquote(dest) if "%" in dest else dest).strip(), anchor


# An HTML anchor `<a href="Note.md">text</a>` (the closing tag on the same line, when there is one): Obsidian
# renders it as a link and follows a relative href into the vault. Its raw text runs to `</a>`, so that
# redaction removes the text with the target.
_HTML_A_RE = re.compile(
    r"<a\s[^<>\n]*?\bhref[ \t]*=[ \t]*(?:\"([^\"\n]*)\"|'([^'\n]*)'|([^\s\"'<>`]+))[^<>\n]*>(?:[^<\n]*</a>)?",
    re.IGNORECASE,
)
# A link reference definition `[label]: Some%20Note.md "title"` at the start of a line (up to three spaces);
# `[^1]: text` is a footnote, not a definition.
_REF_DEF_RE = re.compile(
    r"^[ ]{0,3}\[(?!\^)([^\[\]\n]+)\]:[ \t]*(?:<([^<>\n]*)>|(\S+))(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?[ \t]*$",
    re.MULTILINE,
)
_OBSIDIAN_OPEN = "obsidian://open?"


def local_target(dest: str) -> tuple[str, str | None] | None:
    """`(target, anchor)` of a link destination that may point into the vault: a relative path (percent-
    decoded, `#anchor` split off), or the `file=` of an `obsidian://open?vault=…&file=…` URI (the note that
    URI opens; resolved as the other forms are). None for any other URL (`https:`, `mailto:`, `obsidian://`
    without `file=`)."""
    dest = dest.strip()
    if dest[:16].lower() == _OBSIDIAN_OPEN:
        for part in dest[16:].split("&"):
            name, _, value = part.partition("=")
            if name == "file" and value:
                return _split_markdown(value)
        return None
    if is_external(dest):
        return None
    return _split_markdown(dest)


def is_obsidian_uri(raw: str) -> bool:
    """Whether a link's raw text holds an `obsidian://open` URI (such a link that finds no file may name a
    note of another vault: it is EXTERNAL, not broken)."""
    return "obsidian://" in raw.lower()


def is_external(target: str) -> bool:
    """A URL (``https:``, ``mailto:``, ``obsidian:``...) or a protocol-relative ``//host`` address."""
    return bool(_SCHEME_RE.match(target)) or target.startswith("//")


def parse_body(body: str, first_line: int) -> tuple[list[Link], list[Heading], set[str]]:
    """Links, headings and block ids of a note body that starts on line `first_line` of its file."""
    entries, headings, blocks = scan_body(body, first_line)
    return links_from_entries(entries), headings, blocks


#: One link in the compact form a loaded vault keeps (see `grasbot.model.Note`, which stores the entries
#: of a note end to end in one flat tuple): the fields of `Link` with the span as its start line and
#: column (a link's text never spans lines, so the span ends on that line, `len(raw)` characters further).
LinkEntry = tuple  # (raw, target, anchor, display, kind, line, column, field); raw None: `wikilink_raw` gives it

_ENTRY_ORDER = operator.itemgetter(5, 6)  # (line, column): document order


def links_from_entries(entries: Iterable[LinkEntry]) -> list[Link]:
    """`Link`s (with their `Span`) from entries."""
    return links_from_flat(tuple(chain.from_iterable(entries)))


def entry_of(link: Link) -> LinkEntry | None:
    """The entry of a `Link`, or None when its span is not the one an entry implies (a frontmatter link
    placed on a multi-line value)."""
    span = link[5]
    raw = link[0]
    if span[0] != span[2] or span[3] != span[1] + len(raw):
        return None
    kind = link[4]
    if (kind is LinkKind.WIKILINK or kind is LinkKind.EMBED) and raw == wikilink_raw(link[1], link[2], link[3], kind):
        raw = None  # (as `scan_body` stores it)
    return (raw, link[1], link[2], link[3], kind, span[0], span[1], link[6])


#: The most links read from one note. Real notes hold a few hundred at most (the largest MOC of the corpora
#: a few thousand); a note beyond this is a generated or hostile file, and reading millions of links would
#: hold the vault for seconds and hundreds of MB. `scan_body` stops one link past it; `grasbot.vault` then
#: keeps this many, reports the note (`too-many-links`) and hides it from visitors (the links it did not
#: read could name private notes that redaction would then not see).
MAX_LINKS_PER_NOTE = 20_000


def scan_body(
    body: str, first_line: int, max_links: int = MAX_LINKS_PER_NOTE, keep: bool = True
) -> tuple[list[LinkEntry], list[Heading], set[str]]:
    """`parse_body` with the links as entries (`LinkEntry`), in document order: what the vault stores.
    `keep` False: for a caller that drops the entries soon (`cut_links`): their texts are not shared with
    equal ones (the sharing table would keep them until the vault empties it).

    Each kind of link is read up to `max_links` + 1 (more than `max_links` tells the caller there were too
    many); the scan is linear in the body's length, also on one very long line."""
    links: list[LinkEntry] = []
    headings: list[Heading] = []
    has_wiki = "[[" in body
    has_md = "](" in body
    has_heading = "#" in body
    has_block = "^" in body
    has_other = "<" in body or "]:" in body  # an HTML anchor, a reference definition (`_other_links`)
    if not (has_wiki or has_md or has_heading or has_block or has_other):
        return links, headings, set()
    masked = mask_code(body) if "`" in body or "~~~" in body or "$$" in body or has_comment(body) else body
    # A vault holds one entry per link: this loop runs some hundred thousand times on a load, so it keeps
    # to local names and does no more than the entry needs.
    count = masked.count
    rfind = masked.rfind
    share = _share if keep else {}.setdefault  # type: ignore[attr-defined]
    wiki_starts: list[int] = []
    wiki_ends: list[int] = []
    if has_wiki:
        # line numbers by counting line breaks since the previous match (matches come in order), and the
        # start of the current line likewise: searching back from each match to its line's start would be
        # quadratic on one long line of links (a 3.8 MB line took 30 s)
        line = first_line
        last = 0
        line_start = 0
        append = links.append
        start_append = wiki_starts.append
        end_append = wiki_ends.append
        wiki, embed = LinkKind.WIKILINK, LinkKind.EMBED
        for m in _WIKI_RE.finditer(masked):
            if len(links) > max_links:
                break
            start, end = m.span()
            kind = wiki
            if start:
                before = masked[start - 1]
                if before == "\\":
                    continue  # \[[x]]: escaped, literal text
                if before == "!":
                    start -= 1
                    kind = embed
            content = m[1]
            if "|" in content or "#" in content:
                target, anchor, display = _split_wiki(content)
                if not target and anchor is None:
                    continue  # [[|x]]: not a link
                # (headings and link texts recur across notes as names do: shared too)
                if anchor:
                    anchor = share(anchor, anchor)
                if display:
                    display = share(display, display)
            else:
                target = content.strip()
                if not target:
                    continue  # [[ ]]: not a link
                anchor = display = None
            breaks = count("\n", last, start)
            if breaks:
                line += breaks
                line_start = rfind("\n", last, start) + 1
            last = start
            raw = body[start:end]
            # (a raw text that `wikilink_raw` gives back is not kept: None; others are shared with equal ones,
            # as targets are: the same `[[name]]` recurs across notes, and the resolver hashes each target once)
            kept = None if raw == wikilink_raw(target, anchor, display, kind) else share(raw, raw)
            append((kept, share(target, target), anchor, display, kind, line, start - line_start + 1, None))
            start_append(start)
            end_append(end)
    if has_md:
        line = first_line
        last = 0
        line_start = 0
        md = LinkKind.MARKDOWN
        md_links: list[LinkEntry] = []
        append = md_links.append
        wi = 0
        n_wiki = len(wiki_ends)
        for m in _MD_RE.finditer(masked):
            if len(md_links) > max_links:
                break
            start, end = m.span()
            if start:
                before = masked[start - 1]
                if before == "\\":
                    continue
                if before == "!":
                    start -= 1
            if n_wiki:
                while wi < n_wiki and wiki_ends[wi] <= start:
                    wi += 1
                if wi < n_wiki and wiki_starts[wi] < end:
                    continue  # `[[a]](b)` and the like: the wikilink wins
            text, angle, plain = m.groups()
            dest = angle if angle is not None else plain
            if dest is None or not dest.strip():
                continue
            if is_external(dest):
                local = local_target(dest) if dest[:1] in "oO" else None  # (an obsidian://open URI)
                target, anchor = local if local is not None else (dest.strip(), None)
            else:
                target, anchor = _split_markdown(dest)
            breaks = count("\n", last, start)
            if breaks:
                line += breaks
                line_start = rfind("\n", last, start) + 1
            last = start
            # (shared as a wikilink's are: a vault repeats the same link to a note, `[x](../y.md)`, in many notes)
            col = start - line_start + 1
            raw = body[start:end]
            if anchor:
                anchor = share(anchor, anchor)
            append((share(raw, raw), share(target, target), anchor, share(text, text) if text else text, md, line, col, None))
        if md_links:
            if links:
                links.extend(md_links)
                links.sort(key=_ENTRY_ORDER)
            else:
                links = md_links
    if has_other and ("<" in masked or "]:" in masked):
        other = _other_links(body, masked, first_line, max_links, wiki_starts, wiki_ends)
        if other:
            links.extend(other)
            links.sort(key=_ENTRY_ORDER)
    if has_heading and ("\n#" in masked or masked.startswith("#")):
        line = first_line
        last = 0
        append = headings.append
        for m in _HEADING_RE.finditer(masked):
            # the text comes from the original (the masked copy blanks inline code such as "### `hasTag()`")
            start, hashes_end = m.span(1)
            text = body[hashes_end : m.end()].strip()
            if text.endswith("#"):
                text = _HEADING_CLOSE_RE.sub("", text).strip()
            line += count("\n", last, start)
            last = start
            append(_new(Heading, (share(text, text), hashes_end - start, line)))  # section titles recur
    blocks: set[str] = set()
    if has_block:
        for m in _BLOCK_RE.finditer(masked):
            start = m.start()
            if not start or masked[start - 1] in _BLOCK_BEFORE:
                blocks.add(m[1])
    return links, headings, blocks


def _other_links(
    body: str, masked: str, first_line: int, max_links: int, wiki_starts: list[int], wiki_ends: list[int]
) -> list[LinkEntry]:
    """The rarer forms, as MARKDOWN links (resolved relative-first, as a markdown link is): HTML anchors
    `<a href="Note.md">` and reference definitions `[x]: Note.md`, whose destination points into the vault
    (`local_target`). Kept, as every form the resolver follows must be, so that `private-link` and
    redaction see them."""
    found: list[tuple[int, int, str, str | None, str | None]] = []  # (start, end, target, anchor, display)
    if "<" in masked:
        for m in _HTML_A_RE.finditer(masked):
            if len(found) > max_links:
                break
            dest = next(g for g in m.groups() if g is not None)
            local = local_target(dest) if dest.strip() else None
            if local is not None:
                found.append((m.start(), m.end(), local[0], local[1], None))
    if "]:" in masked:
        for m in _REF_DEF_RE.finditer(masked):
            if len(found) > max_links:
                break
            dest = m[2] if m[2] is not None else m[3]
            local = local_target(dest) if dest and dest.strip() else None
            if local is not None:
                start = m.start() + len(m[0]) - len(m[0].lstrip(" "))
                found.append((start, m.end(), local[0], local[1], m[1]))
    if not found:
        return []
    found.sort()
    out: list[LinkEntry] = []
    md = LinkKind.MARKDOWN
    line, last, line_start = first_line, 0, 0
    wi, n_wiki = 0, len(wiki_ends)
    for start, end, target, anchor, display in found:
        while wi < n_wiki and wiki_ends[wi] <= start:
            wi += 1
        if wi < n_wiki and wiki_starts[wi] < end:
            continue  # a wikilink inside it is the link
        breaks = masked.count("\n", last, start)
        if breaks:
            line += breaks
            line_start = masked.rfind("\n", last, start) + 1
        last = start
        raw = body[start:end].rstrip(" \t")
        out.append((raw, _share(target, target), anchor, display, md, line, start - line_start + 1, None))
    return out


# Links written as text inside code (which the link parser skips on purpose), for `Vault.visitor_text`.
_TEXT_WIKILINK_RE = re.compile(r"!?\[\[([^\[\]\n]*?)\]\]")
_TEXT_MDLINK_RE = re.compile(r"!?\[([^\[\]\n]*)\]\(<?([^()<>\n]*)>?\)")
# The same without the optional `!`: the same matches, one character later for an embed, so the same
# contents; a pattern that starts with a literal is scanned for much faster (for `text_link_targets`).
_TEXT_WIKILINK_FIND = re.compile(_TEXT_WIKILINK_RE.pattern[2:])
_TEXT_MDLINK_FIND = re.compile(_TEXT_MDLINK_RE.pattern[2:])


def cut_links(text: str, hides: Callable[[Link], bool]) -> str:
    """`text` without the links for which `hides(link)` is true (`grasbot.vault.Vault.visitor_text` decides by
    where each resolves): first every link the parser finds (each
    form the resolver follows, exact spans), then the `[[x]]`/`[x](y)` left in code, read as links."""
    links = scan_body(text, 1, keep=False)[0]
    cut = [entry for entry in links_from_entries(links) if hides(entry)]
    if cut:
        starts = [0]
        find = text.find
        i = find("\n")
        while i != -1:
            starts.append(i + 1)
            i = find("\n", i + 1)
        pieces: list[str] = []
        last = 0
        for link in cut:
            span = link.span
            start = starts[span.line - 1] + span.column - 1
            end = starts[span.end_line - 1] + span.end_column - 1
            if start >= last:
                pieces.append(text[last:start])
                last = end
        pieces.append(text[last:])
        text = "".join(pieces)
    if "[" not in text:
        return text
    wiki, md = LinkKind.WIKILINK, LinkKind.MARKDOWN
    no_span = Span(0, 0, 0, 0)

    def wikilink(match: re.Match[str]) -> str:
        target, anchor, display = _split_wiki(match[1])
        link = Link(match[0], target, anchor, display, wiki, no_span)
        return "" if target and hides(link) else match[0]

    def markdown(match: re.Match[str]) -> str:
        local = _text_md_target(match[2])
        if local is None:
            return match[0]
        link = Link(match[0], local[0], local[1], match[1], md, no_span)
        return "" if local[0] and hides(link) else match[0]

    text = _TEXT_WIKILINK_RE.sub(wikilink, text) if "[[" in text else text
    return _TEXT_MDLINK_RE.sub(markdown, text) if "](" in text else text


def _text_md_target(dest: str) -> tuple[str, str | None] | None:
    """(target, anchor) of the destination of a `[x](y)` read by `cut_links`'s plain pass, or None."""
    return local_target(dest) if dest.strip() else None


def text_link_targets(text: str) -> list[str]:
    """The non-empty targets of the `[[x]]` and `[x](y)` that `cut_links`'s plain pass reads in `text` (the
    only ones it may cut there), found without a call per match: for a caller that tells, from the targets
    alone, that nothing would be cut (`grasbot.vault.Vault.visitor_text`)."""
    out: list[str] = []
    if "[[" in text:
        out += [target for target in (_split_wiki(content)[0] for content in _TEXT_WIKILINK_FIND.findall(text)) if target]
    if "](" in text:
        for _text, dest in _TEXT_MDLINK_FIND.findall(text):
            local = _text_md_target(dest)
            if local is not None and local[0]:
                out.append(local[0])
    return out


# A frontmatter value that is one link and nothing else, without anchor or display text.
_PLAIN_VALUE_LINK_RE = re.compile(r"\[\[([^\[\]|#\n]*)\]\]")


def _frontmatter_found(parsed: ParsedFile) -> Iterator[tuple[str, str, str | None, str | None, str, Span, int]]:
    """Every `[[x]]` string of the frontmatter values: (raw, target, anchor, display, key, the value's span,
    the link's column), the column -1 when the link cannot be placed inside its value (the value spans
    lines, or is not written as is in its source: escapes): the link then takes the value's span."""
    share = _share
    plain = _PLAIN_VALUE_LINK_RE.fullmatch
    for key, value, span, source in parsed.string_values:
        m = plain(value)
        if m is not None and len(source) in (len(value), len(value) + 2):
            # the usual `- "[[slug]]"`: one match, no search
            target = m[1].strip()
            if target:
                yield value, share(target, target), None, None, key, span, span[1] + (len(source) - len(value)) // 2
            continue
        # exact columns when the value sits on one line as written (plain or simply quoted)
        found = source.find(value) if "\n" not in source else -1
        for m in _WIKI_RE.finditer(value):
            if m.start() and value[m.start() - 1] == "\\":
                continue
            target, anchor, display = _split_wiki(m.group(1))
            if not target and anchor is None:
                continue
            raw = m.group(0)
            yield share(raw, raw), share(target, target), anchor, display, key, span, -1 if found == -1 else span[1] + found + m.start()


def frontmatter_links(parsed: ParsedFile) -> list[Link]:
    """`[[x]]` strings written as frontmatter values (``linked: ["[[a]]", "[[b]]"]``, ``up: "[[c]]"``)."""
    kind = LinkKind.FRONTMATTER
    new = _new
    out: list[Link] = []
    for raw, target, anchor, display, key, span, col in _frontmatter_found(parsed):
        line = span[0]
        where = span if col == -1 else make_span(line, col, line, col + len(raw))
        out.append(new(Link, (raw, target, anchor, display, kind, where, key)))
    return out


def frontmatter_entries(parsed: ParsedFile) -> list[LinkEntry] | None:
    """`frontmatter_links` as entries (`LinkEntry`), or None when a link has no entry form (one placed on
    a multi-line value takes that value's span): then the caller uses `frontmatter_links`."""
    kind = LinkKind.FRONTMATTER
    out: list[LinkEntry] = []
    for raw, target, anchor, display, key, span, col in _frontmatter_found(parsed):
        if col == -1:
            return None
        out.append((raw, target, anchor, display, kind, span[0], col, key))
    return out


# -- keys --------------------------------------------------------------------------------------------

_HEADING_CACHE: dict[str, str] = {}
_LINK_KEY_CACHE: dict[str, str] = {}
_CACHE_LIMIT = 200_000


def _remember(cache: dict[str, str], text: str, value: str) -> str:
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[text] = value
    return value


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


#: `link_key(target)` when already computed, else None: the vault's loop over every link of a load asks this
#: first and calls `link_key` only for a target it has not met (a function call saved per link).
cached_link_key: Callable[[str], str | None] = _LINK_KEY_CACHE.get


def link_key(target: str) -> str:
    """The reverse-index key of a link target: its file name, normalised, without `.md`."""
    found = _LINK_KEY_CACHE.get(target)
    if found is not None:
        return found
    name = name_key(target.rsplit("/", 1)[-1])
    return _remember(_LINK_KEY_CACHE, target, share(name[:-3] if name.endswith(".md") else name))


def _uncached_link_key(target: str) -> str:
    """`link_key(target)`, without filling its cache (an answer already there is taken)."""
    found = _LINK_KEY_CACHE.get(target)
    if found is not None:
        return found
    name = name_key_uncached(target.rsplit("/", 1)[-1])
    return name[:-3] if name.endswith(".md") else name


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
        if "#" not in anchor:
            # one part (nearly every anchor): present anywhere is enough, no ordered scan
            key = _HEADING_CACHE.get(anchor)
            if key is None:
                key = heading_key(anchor)
            return not key or key in self.headings
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


#: Last parts of a path that normalising it removes (the file found is then named by an earlier part), as
#: `link_key` gives them.
_NOT_A_NAME = frozenset(("", ".", ".."))


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
        # (path, aliases) of every note, in path order, still to be put in `alias_owners` (see defer_aliases)
        self._alias_source: Callable[[], Iterable[tuple[str, list[str]]]] | None = None
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
        _insert(self.by_name, name, path)
        _insert(self.by_path, key, path)

    def remove(self, path: str) -> None:
        is_note = self.is_note.pop(path, None)
        if is_note is None:
            return
        self._found.clear()
        self._unique.clear()
        name, key = self.keys_of(path, is_note)
        _discard(self.by_name, name, path)
        _discard(self.by_path, key, path)

    def forget_lookups(self) -> None:
        """Drop the look-up caches the resolution filled (they are rebuilt on demand, a few entries per
        update): a load returns their memory before its last allocations."""
        self._found.clear()
        self._unique = {}

    def add_many(self, entries: Iterable[tuple[str, bool]]) -> None:
        """`add` for many files at once (a whole vault): the same indexes, built by appending in path
        order instead of re-sorting a list per insertion."""
        is_note = self.is_note
        fresh = sorted({path: flag for path, flag in entries if path not in is_note}.items())
        if not fresh:
            return
        self._found.clear()
        self._unique.clear()
        by_name = self.by_name
        by_path = self.by_path
        keys_of = self.keys_of
        grown: list[tuple[dict[str, list[str]], str]] = []
        for path, flag in fresh:
            is_note[path] = flag
            name, key = keys_of(path, flag)
            _add_in_order(by_name, name, path, grown, one_as_str=True)
            _add_in_order(by_path, key, path, grown, one_as_str=True)
        _freeze(grown)

    def defer_aliases(self, source: Callable[[], Iterable[tuple[str, list[str]]]]) -> None:
        """Index the aliases `source()` gives ((path, aliases) in path order, see `add_aliases_many`) only
        when something first needs them (`owners`, `add_aliases`, `remove_aliases`). Aliases only name the
        likely target of a broken link: a load finds those for its few broken links with `likely_owner`
        over a small index of their keys, and a one-shot command never builds the whole one."""
        self._alias_source = source

    def owners(self) -> dict[str, list[str]]:
        """The alias index (alias key -> the notes that have that alias, sorted), built now if deferred."""
        source = self._alias_source
        if source is not None:
            self._alias_source = None
            self.add_aliases_many(source())
        return self.alias_owners

    def add_aliases_many(self, owners: Iterable[tuple[str, list[str]]]) -> None:
        """`add_aliases` for many notes at once, given in path order (a load): appended, not re-sorted."""
        index = self.alias_owners
        grown: list[tuple[dict[str, list[str]], str]] = []
        for path, aliases in owners:
            for alias in aliases:
                _add_in_order(index, name_key_fast(alias.strip()), path, grown)
        _freeze(grown)

    def add_aliases(self, path: str, aliases: Iterable[str]) -> None:
        index = self.owners()
        for alias in aliases:
            _insert(index, name_key(alias.strip()), path)

    def remove_aliases(self, path: str, aliases: Iterable[str]) -> None:
        index = self.owners()
        for alias in aliases:
            _discard(index, name_key(alias.strip()), path)

    @staticmethod
    def likely_owner(target: str, source: str, owners: Mapping[str, Sequence[str]]) -> str | None:
        """The note a broken link to `target`, written in `source`, most likely means: one whose alias is
        `target` (another note than `source` if there is one), the nearest to `source`; None if none."""
        found = owners.get(name_key(target))
        if not found:
            return None
        others = [o for o in found if o != source] or found
        return sorted(others, key=_nearest_order(source.rsplit("/", 1)[0] if "/" in source else ""))[0]

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
            rel = f"{base}/{key}" if base else key
            if "/." in "/" + rel or "//" in rel or rel.endswith("/") or not rel:
                # (otherwise there is nothing for normpath to collapse; `key` is relative, so `rel` is
                # what posixpath.join(base, key) gives, up to the "//" that normpath collapses anyway)
                rel = posixpath.normpath(rel)
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
            if "/" not in key:
                # A bare name that is also a file's exact path from the vault root (`[[index]]` and
                # `index.md`) means that file, wherever the link is written: Obsidian's link writer puts the
                # bare name for it (docs/links.md, "How a link is followed"). Still ambiguous: others share it.
                root = self._exact(key)
                if root and root[0] != cands[0]:
                    cands = (*root, *(c for c in cands if c not in root))
        return cands, exact

    def names_of(self, paths: Iterable[str]) -> frozenset[str]:
        """What `may_find` compares targets with, for the files at `paths`: each one's name key (its file
        name, normalised, a note's without `.md`), that key without `.md` when it ends so, and the last
        parts of a path that normalising it drops (`.`, `..`, empty)."""
        names = {self.keys_of(path, self.is_note.get(path, path.lower().endswith(".md")))[0] for path in paths}
        return frozenset(names | {name[:-3] for name in names if name.endswith(".md")} | _NOT_A_NAME)

    @staticmethod
    def may_find(targets: Iterable[str], names: frozenset[str]) -> bool:
        """Whether `find(target, source, …)` could answer, for one of the non-empty `targets` and some
        `source`, a file among those whose `names_of` are `names`: False only when it surely cannot.
        `find` looks a target up by the last part of its key, with or without `.md` (a bare name, a
        path's tail, a path from the root or from the linking note's folder), and every file it answers
        has that part as its name key. A path normalised against the linking note's folder (`../x`,
        `a/./x`) keeps its last part, unless that part is `.`, `..` or empty (`..`, `a/`), which `names`
        holds: a maybe. So a target whose `link_key` is not in `names` finds none of those files.
        (`link_key` computed without its cache: a text's targets would fill it, and keep the memory.)"""
        return not names.isdisjoint(map(_uncached_link_key, targets))

    def _find_global(self, key: str) -> tuple[tuple[str, ...], bool]:
        if "/" not in key and not key.endswith(".md"):
            # a bare name (most links): its files, already sorted in the index
            return tuple(_paths(self.by_name.get(key))), False
        name = key.rsplit("/", 1)[-1]
        cands = list(_paths(self.by_name.get(name)))
        stripped = ""
        if name.endswith(".md"):
            stripped = key[:-3]
            cands += [p for p in _paths(self.by_name.get(name[:-3])) if self.is_note[p] and p not in cands]
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
            return tuple(_paths(hit))
        if key.endswith(".md"):
            hit = self.by_path.get(key[:-3])
            if hit:
                is_note = self.is_note
                return tuple([p for p in _paths(hit) if is_note[p]])
        return ()

    def resolve(
        self, link: Link, source: str, anchors: Callable[[str], AnchorTable | None], likely: bool = True
    ) -> Resolution:
        """Follow `link` written in the note at vault path `source`. `likely` False: a broken link's likely
        target (`likely_owner`) is left for the caller to fill."""
        # (Resolutions built from tuples, as named tuples allow: skips a Python-level __new__ per link)
        target = link.target
        kind = link.kind
        if kind is LinkKind.MARKDOWN and is_external(target):
            return _new(Resolution, (link, LinkStatus.EXTERNAL, None, (), None))
        if not target:
            path: str = source
            cands: tuple[str, ...] = (source,)
            exact = True
        else:
            cands, exact = self.find(target, source, kind is LinkKind.MARKDOWN)
            if not cands and kind is LinkKind.MARKDOWN and is_obsidian_uri(link.raw):
                return _new(Resolution, (link, LinkStatus.EXTERNAL, None, (), None))  # a note of another vault
            if not cands:
                alias_of = self.likely_owner(target, source, self.owners()) if likely else None
                return _new(Resolution, (link, LinkStatus.BROKEN, None, (), alias_of))
            path = cands[0]
        anchor = link.anchor
        if anchor and self.is_note.get(path, False):
            table = anchors(path)
            if table is not None and not table.has(anchor):
                return _new(Resolution, (link, LinkStatus.BROKEN_ANCHOR, path, cands if len(cands) > 1 else (), None))
        if len(cands) > 1 and not exact:
            return _new(Resolution, (link, LinkStatus.AMBIGUOUS, path, cands, None))
        return _new(Resolution, (link, LinkStatus.OK, path, (), None))

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
        self, links: list[Link], source: str, anchors: Callable[[str], AnchorTable | None], likely: bool = True
    ) -> list[str | Resolution]:
        """`resolve_all` in the form the vault stores: the target path (a shared str) for an OK link,
        the full Resolution otherwise. A vault holds one per link: a pointer instead of a tuple each.
        `likely`: as for `resolve`."""
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
            res = self.resolve(link, source, anchors, likely)
            append(res.target_path if res.status is ok and not res.candidates else res)  # type: ignore[arg-type]
        return out


def _paths(items: str | Sequence[str] | None) -> Sequence[str]:
    """The paths an index entry holds: a bulk load stores a lone path of `by_name`/`by_path` as the str
    itself (`_add_in_order`), no tuple around it (a vault holds two per file)."""
    if items is None:
        return ()
    return (items,) if items.__class__ is str else items  # type: ignore[return-value]


def _insert(index: dict[str, list[str]], key: str, path: str) -> None:
    # lists stay sorted so that every answer is independent of insertion order
    items = index.get(key)
    if items is None:
        index[key] = [path]
        return
    if items.__class__ is str:  # (a lone path of a bulk load)
        if items == path:
            return
        items = index[key] = [items]  # type: ignore[list-item]
    if path in items:
        return
    if items.__class__ is tuple:  # frozen by a bulk load (see _freeze): a list again once it changes
        items = index[key] = list(items)
    items.append(path)
    items.sort()


def _add_in_order(
    index: dict[str, list[str]], key: str, path: str, grown: list[tuple[dict[str, list[str]], str]], one_as_str: bool = False
) -> None:
    """`_insert` for a bulk load, which adds paths in order: appended (no sort) after the paths `key` holds.

    A new key gets a one-path tuple (what `_freeze` would make of it: nearly every key of a vault holds one
    path), or with `one_as_str` the path itself (read through `_paths`), which becomes a list, recorded in
    `grown` for `_freeze`, when a second path comes."""
    items = index.get(key)
    if items is None:
        index[key] = path if one_as_str else (path,)  # type: ignore[assignment]
    elif items.__class__ is str:
        if items < path:
            index[key] = [items, path]  # type: ignore[list-item]
            grown.append((index, key))
        elif items != path:
            _insert(index, key, path)
    elif items[-1] < path:
        if items.__class__ is tuple:
            index[key] = [*items, path]
            grown.append((index, key))
        else:
            items.append(path)
    else:  # the index already held later paths (not the case during a load), or this one
        _insert(index, key, path)


def _freeze(entries: list[tuple[dict[str, list[str]], str]]) -> None:
    """Turn the lists a bulk load grew into tuples (one allocation instead of two, no spare room: a vault
    holds one per file name, path and alias); `_insert`/`_discard` make a list again on change."""
    for index, key in entries:
        items = index.get(key)
        if items.__class__ is list:
            index[key] = tuple(items)  # type: ignore[assignment]


def _discard(index: dict[str, list[str]], key: str, path: str) -> None:
    items = index.get(key)
    if items.__class__ is str:  # (a lone path of a bulk load)
        if items == path:
            del index[key]
        return
    if items and path in items:
        if items.__class__ is tuple:
            items = index[key] = list(items)
        items.remove(path)
        if not items:
            del index[key]
