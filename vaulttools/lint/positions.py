"""Where a frontmatter key and the items of its value are, found cheaply for lint findings.

The engine gives every note `key_positions` and `item_positions`, computed on first access by parsing the
whole frontmatter again (a second on the 9k notes with findings of the 10k benchmark vault:
benchmarks/README.md, "Figures behind the code"; most of them asked only where their `aliases` are). A finding
needs one key, or the items of one list. For the usual frontmatter — a flat block mapping of `key: scalar`,
`key: [a, b]`, and `key:` followed by `- item` lines — this module reads just that key's lines, with the same
patterns as the engine's own fast path (`grasbot.markdown.frontmatter`), and accepts what it read only when it
reads back as the value the engine parsed (`note.meta`): same number of items, each the same string. Anything
else (tabs, `\\r`, a quoted, indented, repeated or merged key, a comment or anchor after the key,
single-quoted or multi-line items, a typed scalar that does not print back as written, ...) returns None, and
the caller asks the engine. So a span from here is always the engine's span; `tests/test_lint_positions.py`
compares both on every key and item of the bundled vault, the fixtures, the corpora and the synthetic vault.

The answers are memoised per note object for one lint run (`reset` at the start and end of a run):
`alias-duplicate` asks for the same note's aliases once per shared alias.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

from grasbot.markdown.frontmatter import PLAIN_SCALAR, SCALAR_TAIL, split_frontmatter
from grasbot import LIST_FIELDS, Note, Span

__all__ = ["Column", "key_span", "item_spans", "item_layout", "reset"]

_LIST_FIELDS = frozenset(LIST_FIELDS)

# Anything that may make the line-by-line reading below differ from YAML's: characters that change line
# or column counting (tab, \r, NEL, LS, PS, BOM), and lines starting with an indicator that may begin a
# quoted or complex key, a flow mapping, an anchor or alias, a tag, a block scalar or a directive, or a
# merge key (`<<`). A key found in such a frontmatter is left to the engine. (Plain `in` tests and a
# pattern that starts with a literal line break: both skip through the text at C speed.)
_ODD_CHARS = ("\t", "\r", "\x85", "\u2028", "\u2029", "\ufeff", "<<")
_ODD_LINE_RE = re.compile(r"\n[\"'?{\[&*!|>%@`]")
_ODD_FIRST = frozenset("\"'?{[&*!|>%@`")


def _odd(fm: str) -> bool:
    if fm[:1] in _ODD_FIRST:
        return True
    for char in _ODD_CHARS:
        if char in fm:
            return True
    return _ODD_LINE_RE.search(fm) is not None


# The engine's own patterns, so that a scalar ends where the engine ends it. A plain scalar: no indicator
# first; `:` only before a non-blank; blanks only before a character that cannot start a comment or be a
# `:`; `#` only right after a non-blank.
_PLAIN = PLAIN_SCALAR
_TAIL = SCALAR_TAIL

# What follows `key:` on its line: blanks then a "double" / 'single' / [flow / plain value, or nothing.
_VALUE_RE = re.compile(
    r"""(?:(\ +)(?:("[^"\\\n]*+")|('(?:[^'\n]++|'')*+')|(\[[^\n]*)|(""" + _PLAIN + r"""))""" + _TAIL + r"""|\ *)\n""",
    re.VERBOSE,
)
# One line after `key:`: a `- item` ("double" or plain, or nothing after the dash), a blank or comment
# line (no group set), or anything else (the last group). findall gives one tuple of groups per line.
_ITEM_RE = re.compile(
    r"""(?:(\ *-)(?:(\ +)(?:("[^"\\\n]*+")|(""" + _PLAIN + r"""))""" + _TAIL + r"""|\ *)|\ *(?:\#[^\n]*)?|([^\n]+))\n""",
    re.VERBOSE,
)
# The start of the next line that begins with something else than a blank, a dash, a comment or a break.
_NEXT_KEY_RE = re.compile(r"\n[^ \-#\n]")
# What may not start a plain scalar (`_PLAIN`'s first class: the indicators, a blank, a line break).
_NOT_PLAIN_FIRST = frozenset("-?:,[]{}#&*!|>'\"%@` \n")
_FLOW_ITEM_RE = re.compile(
    r" *(?:\"([^\"\\]*)\"|'((?:[^']|'')*)'|([^ ,\[\]{}#'\"?:!&*|>%@`-][^,\[\]{}#:]*?)) *([,\]])"
)
_EMPTY_FLOW_RE = re.compile(r"\[ *\]")
_AFTER_FLOW_RE = re.compile(r"(?: *| +#.*)")


class Column(NamedTuple):
    """Where the items of the commonest block list are, without a `Span` per item: one item per line from line
    `line` on, each starting at `column` and running for its length plus `extra` (2 when every item is in
    double quotes). `alias-duplicate` reports 31k of the 10k benchmark vault's 56k aliases: it computes their
    positions from this, where building a `Span` for every alias of every note cost more
    (benchmarks/README.md, "Figures behind the code")."""

    line: int  # line of the first item
    column: int
    extra: int
    items: list[str]  # the parsed items (`note.meta[key]`)

    def span(self, index: int) -> Span:
        line = self.line + index
        column = self.column
        return _new(Span, (line, column, line, column + len(self.items[index]) + self.extra))

    def spans(self) -> list[Span]:
        return [self.span(i) for i in range(len(self.items))]


#: One lint run's answers: id(note) -> (note, frontmatter or None, first line of it, {key: answer}).
_MEMO: dict[int, tuple[Note, str | None, int, dict[str, Any]]] = {}
_MEMO_MAX = 50_000
_NO = object()  # memo entry: the engine must answer
_new = tuple.__new__  # Span is a named tuple: built without its Python-level __new__


def reset() -> None:
    """Forget the memo (called at the start and end of each lint run: notes may be replaced between runs)."""
    _MEMO.clear()


def _entry(note: Note) -> tuple[Note, str | None, int, dict[str, Any]]:
    entry = _MEMO.get(id(note))
    if entry is not None and entry[0] is note:
        return entry
    fm: str | None = None
    meta = note.meta
    if note.has_frontmatter and isinstance(meta, dict) and meta:
        text = note.text
        where = split_frontmatter(text)
        if where is not None and where[1] > where[0]:
            fm = text[where[0] : where[1]]
            if not fm.endswith("\n") or _odd(fm):
                fm = None
    if len(_MEMO) >= _MEMO_MAX:
        _MEMO.clear()
    # the YAML starts on line 2 (after the opening `---`), as grasbot.markdown.frontmatter.parse_text counts
    entry = (note, fm, 2, {})
    _MEMO[id(note)] = entry
    return entry


def _key_line(fm: str, key: str) -> int | None:
    """Offset in `fm` of the one line `key:` (at column 1, nothing between key and colon), else None (the
    key absent, written twice, or written `key :`). `key` is printable ASCII."""
    found = -1
    size = len(key)
    start = 0 if fm.startswith(key) else fm.find("\n" + key) + 1 or -1
    while start >= 0:
        after = fm[start + size : start + size + 2]
        if after[:1] in (":", " "):  # `key:` or `key :` is this key (`key-more:` is another one)
            if found >= 0 or after[:1] == " " or after[1:2] not in (" ", "\n"):
                return None
            found = start
        start = fm.find("\n" + key, start) + 1 or -1
    return found if found >= 0 else None


def key_span(note: Note, key: str) -> Span | None:
    """The span of top-level `key` as the engine gives it, or None when the engine must say."""
    _, fm, first, answers = _entry(note)
    if fm is None or key not in note.meta:  # type: ignore[operator]
        return None
    cached = answers.get(("key", key), None)
    if cached is not None:
        return None if cached is _NO else cached
    at = _key_line(fm, key) if key.isascii() and key.isprintable() else None
    span: Any = _NO
    if at is not None:
        line = fm.count("\n", 0, at) + first
        span = _new(Span, (line, 1, line, len(key) + 1))
    answers[("key", key)] = span
    return None if span is _NO else span


def item_spans(note: Note, key: str) -> list[Span] | None:
    """`note.item_positions.get(key)` as the engine gives it ([] when it has none), or None when the
    engine must say."""
    layout = item_layout(note, key)
    if isinstance(layout, Column):
        layout = layout.spans()
        _entry(note)[3][key] = layout  # built once per note
    return layout


def item_layout(note: Note, key: str) -> Column | list[Span] | None:
    """What `item_spans` gives, except that the commonest block list comes as a `Column`, from which a
    caller that needs only some items' positions computes them."""
    _, fm, first, answers = _entry(note)
    if fm is None or key not in note.meta:  # type: ignore[operator]
        return None
    value = note.meta[key]  # type: ignore[index]
    cached = answers.get(key, None)
    if cached is None and key not in _LIST_FIELDS and not isinstance(value, list):
        # the engine keeps item positions only of sequences and of the list fields: none here, once the key
        # is known to be written once (a repeated key may have left the positions of an earlier list)
        ok = key.isascii() and key.isprintable() and _key_line(fm, key) is not None
        cached = answers[key] = [] if ok else _NO
    if cached is None:
        cached = answers[key] = _items(fm, first, key, value)
    return None if cached is _NO else cached


def _same(value: Any, text: str, quoted: bool) -> bool:
    """Whether the parsed `value` is what the scalar `text` reads as (plain scalars are typed by YAML:
    only a string equal to the text, or a number that prints back as the text, is taken)."""
    if value.__class__ is str:
        return value == text
    if quoted or isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return str(value) == text


def _items(fm: str, first: int, key: str, value: Any) -> Any:
    if not (key.isascii() and key.isprintable()):
        return _NO
    at = _key_line(fm, key)
    if at is None:
        return _NO
    line = fm.count("\n", 0, at) + first
    col = len(key) + 2  # column (1-based) right after the colon
    head = _VALUE_RE.match(fm, at + len(key) + 1)
    if head is None:
        return _NO  # a comment, an anchor or a tag after the key, ...
    blank, dq, sq, flow, plain = head.groups()
    if flow:
        return _flow(flow, line, col + len(blank), value)
    if dq or sq or plain:
        source = dq or sq or plain
        text = source[1:-1] if (dq or sq) else source
        if sq and "''" in text:
            text = text.replace("''", "'")
        if not _same(value, text, bool(dq or sq)):
            return _NO
        if key not in _LIST_FIELDS:
            return []  # a scalar where no list is expected: the engine keeps no item position
        start = col + len(blank)
        return [_new(Span, (line, start, line, start + len(source)))]
    # `key:` and nothing else on its line: a block sequence follows, or the value is null
    return _block(fm, head.end(), line, key, value)


def _flow(rest: str, line: int, col: int, value: Any) -> Any:
    """The items of a one-line flow sequence `[a, "b", 'c']` starting at column `col`."""
    if not isinstance(value, list):
        return _NO
    if _EMPTY_FLOW_RE.match(rest):
        end = rest.index("]") + 1
        return [] if not value and _AFTER_FLOW_RE.fullmatch(rest, end) else _NO
    spans: list[Span] = []
    pos = 1
    while True:
        m = _FLOW_ITEM_RE.match(rest, pos)
        if m is None or len(spans) >= len(value):
            return _NO
        dq, sq, plain, sep = m.groups()
        if plain is not None:
            begin, end, ok = m.start(3), m.end(3), _same(value[len(spans)], plain, False)
        elif dq is not None:
            begin, end, ok = m.start(1) - 1, m.end(1) + 1, value[len(spans)] == dq
        else:
            text = sq.replace("''", "'") if "''" in sq else sq
            begin, end, ok = m.start(2) - 1, m.end(2) + 1, value[len(spans)] == text
        if not ok:
            return _NO
        spans.append(_new(Span, (line, col + begin, line, col + end)))
        pos = m.end()
        if sep == "]":
            break
    if len(spans) != len(value) or not _AFTER_FLOW_RE.fullmatch(rest, pos):
        return _NO
    return spans


def _block(fm: str, pos: int, key_line: int, key: str, value: Any) -> Any:
    """The `- item` lines after `key:` (at `pos`), or the null value's position."""
    # the lines up to the next one that starts with anything but a blank, a dash, a comment or a line break
    stop = _NEXT_KEY_RE.search(fm, pos - 1)
    end = stop.start() + 1 if stop is not None else len(fm)
    if end <= pos:
        return _null(key_line, key, value)
    if not isinstance(value, list):
        return _NO
    found = _exact_block(fm[pos : end - 1], key_line, value)
    if found is None:
        found = _simple_block(fm[pos : end - 1].split("\n"), key_line, value)
    if found is None:  # a line outside the usual shape: the engine's line pattern decides
        found = _block_lines(_ITEM_RE.findall(fm, pos, end), key_line, value)
    if found == []:
        return _null(key_line, key, value)
    return found


def _exact_block(block: str, key_line: int, value: list[Any]) -> Column | None:
    """The commonest case, compared in one go: one line per item, each the same `- ` prefix then the item
    as parsed, all plain or all in double quotes; None otherwise.

    A line whose rest reads back as the parsed item is that item's whole source: a comment, a tag, an
    anchor, an escape, trailing blanks or a continuation would make the parsed item differ from it."""
    if not value or block[:1] not in (" ", "-") or block.count("\n") != len(value) - 1:
        return None
    indent = len(block) - len(block.lstrip(" "))
    prefix = block[:indent] + "- "
    try:
        if block == prefix + ("\n" + prefix).join(value):
            extra = 0
        elif block == prefix + '"' + ('"\n' + prefix + '"').join(value) + '"':
            extra = 2
        else:
            return None
    except TypeError:  # an item that is no string
        return None
    return _new(Column, (key_line + 1, indent + 3, extra, value))


def _simple_block(lines: list[str], key_line: int, value: list[Any]) -> Any:
    """The usual block list — `  - plain words` or `  - "quoted"`, same indent, maybe blank or comment lines
    — read with string methods; None at the first line of another shape (then `_block_lines` reads them)."""
    spans: list[Span] = []
    indent = -1
    line = key_line
    count = len(value)
    not_plain = _NOT_PLAIN_FIRST
    for raw in lines:
        line += 1
        body = raw.lstrip(" ")
        if not body or body[0] == "#":
            continue  # a blank or comment line: YAML skips it
        if body[0] != "-" or len(body) < 3 or body[1] != " ":
            return None
        if indent < 0:
            indent = len(raw) - len(body)
        elif len(raw) - len(body) != indent:
            return _NO  # a nested list, or odd indentation
        text = body[2:].lstrip(" ")
        if not text or text[-1] == " " or "#" in text or ":" in text:
            return None
        if len(spans) >= count:
            return _NO
        item = value[len(spans)]
        first = text[0]
        if first == '"':
            if len(text) < 2 or text[-1] != '"' or '"' in text[1:-1] or "\\" in text:
                return None
            if item != text[1:-1]:
                return _NO
        elif first in not_plain:
            return None
        elif not _same(item, text, False):
            return _NO
        start = len(raw) - len(text) + 1
        spans.append(_new(Span, (line, start, line, start + len(text))))
    if not spans:
        return []
    return spans if len(spans) == count else _NO


def _block_lines(rows: list[tuple[str, ...]], key_line: int, value: list[Any]) -> Any:
    """The `- item` lines as the engine's line pattern reads them (one tuple of groups per line)."""
    if len(rows) < len(value):
        return _NO
    spans: list[Span] = []
    indent = -1
    line = key_line
    count = len(value)
    for dash, blank, dq, plain, other in rows:
        line += 1
        if other:
            return _NO  # an indented line that is no item (a continuation, a nested mapping), `-x`...
        if not dash:
            continue  # a blank or comment line: YAML skips it
        if indent < 0:
            indent = len(dash) - 1
        elif len(dash) - 1 != indent:
            return _NO  # a nested list, or odd indentation
        if len(spans) >= count:
            return _NO
        item = value[len(spans)]
        if dq or plain:
            source = dq or plain
            if not _same(item, source[1:-1] if dq else source, bool(dq)):
                return _NO
            start = len(dash) + len(blank) + 1
            spans.append(_new(Span, (line, start, line, start + len(source))))
        else:  # `-` alone: a null item, placed right after its dash
            if item is not None:
                return _NO
            start = indent + 2
            spans.append(_new(Span, (line, start, line, start)))
    if not spans:
        return []
    return spans if len(spans) == count else _NO


def _null(key_line: int, key: str, value: Any) -> Any:
    """`key:` with no item after it: a null value, placed right after the colon (by the engine and libyaml)."""
    if value is not None:
        return _NO
    if key not in _LIST_FIELDS:
        return []
    col = len(key) + 2
    return [_new(Span, (key_line, col, key_line, col))]
