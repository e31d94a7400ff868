"""Reading one note file: bytes -> text, text -> frontmatter mapping + body, with positions and problems.

Nothing here raises on bad input: every defect becomes a `Problem` and the caller still gets a usable
result (an empty mapping, the whole text as body). YAML is read with PyYAML's C loader (libyaml): the
node tree is composed first so that each top-level key and list item keeps its position, then constructed.

Positions are 1-based lines and columns in characters of the decoded text, lines being separated by
``\\n`` only (``\\r\\n`` files therefore keep the same line numbers; YAML's own line counter also breaks on
``\\r``, U+0085 and U+2028, so we never use it: marks are converted from their character index instead).
A UTF-8 byte-order mark is removed from the text before anything else, so column 1 is the first visible
character, as editors show it.
"""

from __future__ import annotations

import re
from bisect import bisect_right
import dataclasses
from dataclasses import dataclass, field
from typing import Any

import yaml

from grasbot.model import LIST_FIELDS, Problem, Span
from grasbot.text import SHARED_STRINGS as _STR_CACHE, share

__all__ = [
    "clear_caches",
    "make_span",
    "share",
    "ParsedFile",
    "LineIndex",
    "decode",
    "parse_text",
    "parse_bytes",
    "split_frontmatter",
]

_BOM = "\ufeff"
#: Bytes looked at to decide that a file is binary (a NUL byte never occurs in a text note).
_SNIFF = 8192
_LIST_FIELDS = frozenset(LIST_FIELDS)
# The closing fence: a line that is exactly `---` (trailing blanks tolerated, as Obsidian does).
# (searched from the line break before: a literal first lets `re` skip ahead to each "\n---" quickly)
_CLOSE_RE = re.compile(r"\n---[ \t]*\r?$", re.MULTILINE)
_OPEN_RE = re.compile(r"---[ \t]*\r?(?:\n|$)")


# Spans and short strings repeat across notes (every note has `title:` at 2:1, `visibility: public`,
# `"[[MOC-Projets]]"`...): sharing one immutable object per value saves a large part of a big vault's
# memory, and a dict look-up is cheaper than building a frozen dataclass. Both caches are bounded.
# (keyed by the Span itself: a Span equals and hashes as the plain tuple it is looked up with, so no
# separate key tuple is kept)
_SPAN_CACHE: dict[tuple[int, int, int, int], Span] = {}
_new = tuple.__new__  # Span is a named tuple: build it from its key without a Python-level __new__
_CACHE_LIMIT = 400_000
_SHORT = 48
_SHARE_VALUE = 16
# Frontmatter keys already checked (a plain string key, not `yes:` or `null:`), each once: a vault repeats
# the same dozen keys in every note.
_KEY_CACHE: dict[str, str] = {}


def clear_caches() -> None:
    """Empty the sharing caches of the parser (spans, short strings, typed scalars).

    They only make equal values share one object while many notes are read; `grasbot.vault` empties
    them once a whole vault has been read, so that their tables (several MiB on 10k notes) are returned
    before the link-resolution phase allocates its own, which lowers the peak memory of a load.
    """
    _SPAN_CACHE.clear()
    _STR_CACHE.clear()
    _TYPED_CACHE.clear()
    _FLOW_CACHE.clear()
    _KEY_CACHE.clear()


def make_span(line: int, column: int, end_line: int, end_column: int) -> Span:
    """A Span, shared with every equal one made before (Span is immutable)."""
    key = (line, column, end_line, end_column)
    span = _SPAN_CACHE.get(key)
    if span is None:
        if len(_SPAN_CACHE) >= _CACHE_LIMIT:
            _SPAN_CACHE.clear()
        span = _new(Span, key)
        _SPAN_CACHE[span] = span
    return span




class LineIndex:
    """Converts a character offset of a text into a 1-based (line, column), lines split on ``\\n``."""

    __slots__ = ("_text", "_starts", "length")

    def __init__(self, text: str, limit: int | None = None) -> None:
        # `limit`: only index text[:limit] (the frontmatter); the table is built on first use, since
        # most files never need it (libyaml's marks give positions directly).
        self._text: str | None = text
        self._starts: list[int] = []
        self.length = len(text) if limit is None else limit

    @property
    def starts(self) -> list[int]:
        if self._text is not None:
            text, end = self._text, self.length
            starts = [0]
            find = text.find
            i = find("\n", 0, end)
            while i != -1:
                starts.append(i + 1)
                i = find("\n", i + 1, end)
            self._starts = starts
            self._text = None
        return self._starts

    def position(self, offset: int) -> tuple[int, int]:
        if offset < 0:
            offset = 0
        elif offset > self.length:
            offset = self.length
        starts = self.starts
        row = bisect_right(starts, offset) - 1
        return row + 1, offset - starts[row] + 1

    def span(self, start: int, end: int, line_shift: int = 0) -> Span:
        line, col = self.position(start)
        end_line, end_col = self.position(end)
        return make_span(line + line_shift, col, end_line + line_shift, end_col)


@dataclass(slots=True)
class ParsedFile:
    """Everything `grasbot.model.Note` needs from one file, before the vault resolves links."""

    text: str
    meta: dict[str, Any]
    body: str
    body_line: int
    has_frontmatter: bool
    problems: list[Problem] = field(default_factory=list)
    key_positions: dict[str, Span] = field(default_factory=dict)
    item_positions: dict[str, list[Span]] = field(default_factory=dict)
    frontmatter_span: Span | None = None
    #: Offset in `text` where the body starts.
    body_start: int = 0
    #: Each string holding `[[` found as a top-level value or list item: (key, value, span, source text as
    #: written, quotes included), so that `grasbot.links` can place `"[[x]]"` links exactly.
    string_values: list[tuple[str, str, Span, str]] = field(default_factory=list)
    #: Line table of `text`, built once and shared with the link extractor (None for an empty result).
    line_index: LineIndex | None = None
    #: True when `parse_text(..., positions=False)` skipped key_positions/item_positions (left empty).
    positions_skipped: bool = False


# -- YAML ------------------------------------------------------------------------------------------


_STR_TAG = "tag:yaml.org,2002:str"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MAP_TAG = "tag:yaml.org,2002:map"


def _construct_timestamp(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    # `updated: 2026-02-30` must not make the whole frontmatter unreadable: keep the text, lint flags it.
    try:
        return yaml.SafeLoader.construct_yaml_timestamp(loader, node)  # type: ignore[arg-type]
    except (ValueError, OverflowError):
        return loader.construct_scalar(node)  # type: ignore[arg-type]


def _implicit_table() -> dict[str, tuple[tuple[str, re.Pattern[str]], ...]]:
    table = {}
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items():
        table[first] = tuple(resolvers) + tuple(yaml.SafeLoader.yaml_implicit_resolvers.get(None, ()))
    return table


_IMPLICIT = _implicit_table()
_NO_IMPLICIT: tuple[tuple[str, re.Pattern[str]], ...] = tuple(yaml.SafeLoader.yaml_implicit_resolvers.get(None, ()))


class _Loader(yaml.CSafeLoader):  # type: ignore[misc, valid-type]
    """CSafeLoader with a forgiving timestamp constructor and a leaner tag resolver.

    libyaml calls `resolve` from C once per node; PyYAML's generic version (path resolvers, list
    concatenation per call) is most of the composing time on frontmatter-sized documents. This one gives
    exactly the same tags for the safe schema.
    """

    def resolve(self, kind: type, value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is yaml.ScalarNode:
            if implicit[0]:
                for tag, regexp in _IMPLICIT.get(value[:1], _NO_IMPLICIT) if value else _IMPLICIT.get("", ()):
                    if regexp.match(value):
                        return tag
            return _STR_TAG
        return _SEQ_TAG if kind is yaml.SequenceNode else _MAP_TAG

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        return None

    def ascend_resolver(self) -> None:
        return None


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp)


_SCALAR = yaml.ScalarNode
_SEQUENCE = yaml.SequenceNode
_MAPPING = yaml.MappingNode
_MERGE_TAG = "tag:yaml.org,2002:merge"
# Scalar constructors that return a fresh immutable value (no recursion, no anchors to track).
_SCALAR_CONSTRUCTORS = {
    tag: _Loader.yaml_constructors[tag]
    for tag in (
        "tag:yaml.org,2002:null",
        "tag:yaml.org,2002:bool",
        "tag:yaml.org,2002:int",
        "tag:yaml.org,2002:float",
        "tag:yaml.org,2002:timestamp",
    )
}


class _Fallback(Exception):
    """The fast builder met something only PyYAML's full constructor handles (merge keys, custom tags)."""


def _build(node: yaml.Node, loader: _Loader) -> Any:
    """Construct plain data from a composed node: the common cases inline, the rest through PyYAML.

    Same result as PyYAML's SafeConstructor; `_Fallback` hands anything unusual (merge keys, explicit
    tags such as !!set) back to it.
    """
    cls = node.__class__
    tag = node.tag
    if cls is _SCALAR:
        if tag == _STR_TAG:
            value = node.value
            return _STR_CACHE.setdefault(value, value) if len(value) <= _SHORT else value
        constructor = _SCALAR_CONSTRUCTORS.get(tag)
        if constructor is None:
            raise _Fallback
        return constructor(loader, node)
    if cls is _SEQUENCE and tag == _SEQ_TAG:
        out: list[Any] = []
        append = out.append
        for item in node.value:
            if item.__class__ is _SCALAR and item.tag == _STR_TAG:
                value = item.value
                append(_STR_CACHE.setdefault(value, value) if len(value) <= _SHORT else value)
            else:
                append(_build(item, loader))
        return out
    if cls is _MAPPING and tag == _MAP_TAG:
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                raise _Fallback
            mapping[_build(key_node, loader)] = _build(value_node, loader)
        return mapping
    raise _Fallback


#: The most values a frontmatter may hold once its YAML aliases (`*name`) are expanded. Nine aliases of
#: nine aliases of ... (a "billion laughs" bomb) make a few hundred bytes stand for 9⁸ values: a note whose
#: aliases expand beyond this is not read (`frontmatter-too-large`) rather than filling the memory of every
#: tool that walks its fields. Real frontmatters hold a few dozen values.
MAX_EXPANDED_VALUES = 10_000


class _TooLarge(Exception):
    """The frontmatter's aliases expand to more than MAX_EXPANDED_VALUES values."""


def _expanded_size(root: yaml.Node, limit: int) -> int:
    """How many values the node tree stands for once every alias is expanded, counted by node identity
    (an aliased node is the same object wherever it is used): linear in the tree's size, never in the
    expansion's. Stops counting past `limit`. A node met again inside itself (an alias cycle) counts once."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in sizes and not children_done:
            continue
        cls = node.__class__
        if cls is _SCALAR:
            sizes[key] = 1
            continue
        children = node.value if cls is _SEQUENCE else [n for pair in node.value for n in pair]
        if not children_done:
            sizes[key] = 1  # provisional: a cycle back to it counts once
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
            continue
        total = 1
        for child in children:
            total += sizes.get(id(child), 1)
            if total > limit:
                return total
        sizes[key] = total
    return sizes.get(id(root), 1)


def _construct(loader: _Loader, node: yaml.Node, fm: str = "") -> Any:
    if "*" in fm and _expanded_size(node, MAX_EXPANDED_VALUES) > MAX_EXPANDED_VALUES:
        raise _TooLarge
    if "&" not in fm:
        try:
            return _build(node, loader)
        except (_Fallback, RecursionError):  # RecursionError: absurd nesting, PyYAML reports it
            pass
    # An anchor: PyYAML's constructor builds an aliased node once and shares the object wherever the alias
    # is used (the fast builder would build it again at each use), and it handles cycles (`&a [*a]`).
    loader.constructed_objects = {}
    loader.recursive_objects = {}
    return loader.construct_document(node)


def _problem(path: str, index: LineIndex, offset: int, message: str, code: str) -> Problem:
    line, col = index.position(offset)
    return Problem(path, line, col, message, code)


def _yaml_message(exc: BaseException) -> str:
    if isinstance(exc, yaml.MarkedYAMLError):
        parts = [p for p in (exc.context, exc.problem) if p]
        if parts:
            return "invalid YAML in frontmatter: " + "; ".join(parts)
    if isinstance(exc, TypeError) and "unhashable" in str(exc):
        return "invalid YAML in frontmatter: a key is a list or a mapping"
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"invalid YAML in frontmatter: {text}"


def _yaml_counts_lines_like_us(fm: str) -> bool:
    """True when libyaml's line numbers equal ours (it also breaks lines on a lone \\r, U+0085, U+2028,
    U+2029): then marks give positions directly, without a line table."""
    if "\r" in fm and fm.count("\r") != fm.count("\r\n"):
        return False
    return not ("\x85" in fm or "\u2028" in fm or "\u2029" in fm)


def _parse_yaml(
    fm: str, path: str, fm_offset: int, fm_line: int, index: LineIndex, result: ParsedFile, positions: bool = True
) -> None:
    """Parse the frontmatter text `fm`, which starts at character `fm_offset`, line `fm_line`, column 1."""
    if _fast_yaml(fm, fm_line, result, positions):
        return
    _parse_yaml_libyaml(fm, path, fm_offset, fm_line, index, result)


def _parse_yaml_libyaml(
    fm: str, path: str, fm_offset: int, fm_line: int, index: LineIndex, result: ParsedFile
) -> None:
    """`_parse_yaml` by libyaml's node tree: any frontmatter, with exact error positions."""
    back = None
    if "\x85" in fm or "\u2028" in fm or "\u2029" in fm:
        # YAML 1.1 (libyaml) breaks lines on U+0085, U+2028 and U+2029; YAML 1.2, which Obsidian reads, does
        # not: `title: a<U+2028>b` is one title there, and a broken frontmatter here. Read them as 1.2 does:
        # stand-ins while libyaml reads (one character each: positions do not move), put back afterwards.
        back = _separators_back(fm)
        if back is not None:
            fm = fm.translate(_SEPARATORS_OUT)
    loader = _Loader(fm)
    try:
        node = loader.get_single_node()
        data = _construct(loader, node, fm) if node is not None else None
    except _TooLarge:
        result.problems.append(_problem(
            path, index, fm_offset,
            f"the frontmatter's YAML aliases (`*name`) expand to more than {MAX_EXPANDED_VALUES:,} values "
            "(an alias bomb?): none of its fields is read; write the values out instead of repeating aliases",
            "frontmatter-too-large",
        ))
        return
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        offset = fm_offset + (mark.index if mark is not None else 0)
        message = _yaml_message(exc)
        opened = exc.context_mark
        if opened is not None and mark is not None and opened.index < mark.index:
            # libyaml stops where it gave up (often the next key, or the closing `---`); the mistake is
            # usually where the construct it was reading began: an unclosed quote or bracket
            line, column = index.position(fm_offset + opened.index)
            message += f" (what it was reading starts at line {line}, column {column})"
        result.problems.append(_problem(path, index, offset, message, "yaml-error"))
        return
    except yaml.YAMLError as exc:  # reader errors (control characters) carry a position too
        pos = getattr(exc, "position", 0) or 0
        result.problems.append(_problem(path, index, fm_offset + pos, _yaml_message(exc), "yaml-error"))
        return
    except (RecursionError, MemoryError, ValueError, TypeError, OverflowError) as exc:
        # e.g. an unhashable key (`? [a]: b`), absurd nesting: report at the start of the frontmatter
        result.problems.append(_problem(path, index, fm_offset, _yaml_message(exc), "yaml-error"))
        return
    finally:
        loader.dispose()

    if data is None:  # empty or comments only: an empty mapping, not a defect
        return
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        kind = "a list" if isinstance(data, list) else "a single value"
        offset = fm_offset + node.start_mark.index
        result.problems.append(
            _problem(path, index, offset, f"frontmatter is {kind}, not a mapping of fields", "not-mapping")
        )
        return

    result.meta = data
    keys = result.key_positions
    items = result.item_positions
    strings = result.string_values
    scalar = yaml.ScalarNode
    sequence = yaml.SequenceNode
    if _yaml_counts_lines_like_us(fm):
        # the hot path: libyaml's marks are our positions; spans come from the shared cache
        shift = fm_line
        cache = _SPAN_CACHE
        if len(cache) >= _CACHE_LIMIT:
            cache.clear()

        def span_of(n: yaml.Node) -> Span:
            a = n.start_mark
            b = n.end_mark
            k = (a.line + shift, a.column + 1, b.line + shift, b.column + 1)
            found = cache.get(k)
            if found is None:
                found = _new(Span, k)
                cache[found] = found
            return found

    else:

        def span_of(n: yaml.Node) -> Span:
            return index.span(fm_offset + n.start_mark.index, fm_offset + n.end_mark.index)

    for key_node, value_node in node.value:
        value = key_node.value
        key = share(value) if isinstance(value, str) else str(value)
        span = span_of(key_node)
        if key in keys:
            # YAML wants unique keys (Obsidian refuses such properties); PyYAML keeps the last value and
            # drops the other without a word: say so, where the second one is
            result.problems.append(Problem(
                path, span[0], span[1],
                f"duplicate key `{key}` (also on line {keys[key][0]}): keys must be unique; the last one is "
                "read and the other is lost, keep one", "duplicate-key",
            ))
        keys[key] = span
        cls = value_node.__class__
        if cls is sequence:
            spans = [span_of(item) for item in value_node.value]
            items[key] = spans
            for item, span in zip(value_node.value, spans):
                if item.__class__ is scalar and "[[" in item.value:
                    strings.append((key, item.value, span, fm[item.start_mark.index : item.end_mark.index]))
        elif cls is scalar:
            text = value_node.value
            if key in _LIST_FIELDS:
                span = span_of(value_node)
                items[key] = [span]
                if "[[" in text:
                    strings.append((key, text, span, fm[value_node.start_mark.index : value_node.end_mark.index]))
            elif "[[" in text:
                raw = fm[value_node.start_mark.index : value_node.end_mark.index]
                strings.append((key, text, span_of(value_node), raw))
    if back is not None:
        _put_back(result, back)


# The three characters YAML 1.1 counts as line breaks and YAML 1.2 does not, and their stand-ins (private
# use characters; a frontmatter that holds one of those already is read as libyaml reads it).
_SEPARATORS = "\x85\u2028\u2029"
_STAND_INS = "\ue085\ue028\ue029"
_SEPARATORS_OUT = str.maketrans(_SEPARATORS, _STAND_INS)


def _separators_back(fm: str) -> dict[int, int] | None:
    if any(c in fm for c in _STAND_INS):
        return None
    return str.maketrans(_STAND_INS, _SEPARATORS)


def _put_back(result: ParsedFile, back: dict[int, int]) -> None:
    """The separators in place of their stand-ins, in every key and string `_parse_yaml_libyaml` stored."""

    def restore(value: Any) -> Any:
        if isinstance(value, str):
            return value.translate(back)
        if isinstance(value, list):
            return [restore(v) for v in value]
        if isinstance(value, dict):
            return {restore(k): restore(v) for k, v in value.items()}
        return value

    result.meta = restore(result.meta)
    result.key_positions = {restore(k): v for k, v in result.key_positions.items()}
    result.item_positions = {restore(k): v for k, v in result.item_positions.items()}
    result.string_values = [(restore(k), restore(t), span, raw.translate(back)) for k, t, span, raw in result.string_values]
    for i, problem in enumerate(result.problems):
        if problem.code == "duplicate-key":
            result.problems[i] = dataclasses.replace(problem, message=problem.message.translate(back))


# -- fast path ---------------------------------------------------------------------------------------
#
# Almost every real frontmatter is a flat block mapping of `key: scalar`, `key: [a, b]` and `key:` followed
# by `- item` lines. For those, one regex pass (a tuple of groups per line) and a short loop give exactly
# what CSafeLoader gives (plain scalars typed by PyYAML's own implicit resolvers and SafeConstructor) plus
# positions, at a fraction of the cost of composing libyaml's node tree and constructing from it. Anything outside that subset (anchors, tags, block scalars,
# nested mappings, multi-line scalars, escapes, tabs, \r, exotic line breaks, odd indentation, errors...)
# makes `_fast_yaml` return False and the C loader reads the frontmatter as before:
# tests/test_frontmatter_fastpath.py checks with hypothesis that both agree on data and positions.

# Characters allowed by the fast path: libyaml's printable set minus tab, \r, U+0085, U+2028/9 and BOM.
_NOT_SIMPLE_RE = re.compile("[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")
# one item of a one-line flow sequence: "double" (no escape), 'single', or a plain scalar without any
# character that could make it something else; then `,` or `]`
_FLOW_ITEM_RE = re.compile(
    r" *(?:\"([^\"\\]*)\"|'((?:[^']|'')*)'|([^ ,\[\]{}#'\"?:!&*|>%@`-][^,\[\]{}#:]*?)) *([,\]])"
)
_EMPTY_FLOW_RE = re.compile(r"\[ *\]")
_KEY_MAYBE_TYPED = frozenset("yYnNtTfFoO")
_SAFE = yaml.constructor.SafeConstructor()
_TYPED_CACHE: dict[str, Any] = {}


class _NotSimple(Exception):
    """The frontmatter is outside the fast path's subset: let libyaml read it."""


_MISS: Any = object()


def _typed(value: str) -> Any:
    """A plain scalar as SafeConstructor builds it: str, or null/bool/int/float/date by PyYAML's rules."""
    found = _TYPED_CACHE.get(value, _MISS)
    if found is not _MISS:
        return found
    resolvers = _IMPLICIT.get(value[:1], _NO_IMPLICIT) if value else _IMPLICIT.get("", ())
    if not resolvers:  # most words: a string whatever follows its first character (not cached twice)
        return _STR_CACHE.setdefault(value, value) if len(value) <= _SHORT else value
    for tag, regexp in resolvers:
        if regexp.match(value):
            constructor = _SCALAR_CONSTRUCTORS.get(tag)
            if constructor is None:  # merge key, `=`, and other tags only the full loader knows
                raise _NotSimple
            try:
                found = constructor(_SAFE, yaml.ScalarNode(tag, value))
            except Exception:  # let the full loader report it exactly as before
                raise _NotSimple from None
            break
    else:
        found = _STR_CACHE.setdefault(value, value) if len(value) <= _SHORT else value
    if len(value) <= _SHORT:
        if len(_TYPED_CACHE) >= _CACHE_LIMIT:
            _TYPED_CACHE.clear()
        _TYPED_CACHE[value] = found  # immutable values only (str, None, bool, int, float, date, datetime)
    return found


def _after_quote(tail: str) -> None:
    """What may follow a closing quote: blanks, then maybe a comment."""
    if tail:
        rest = tail.lstrip(" ")
        if rest and (rest[0] != "#" or len(rest) == len(tail)):
            raise _NotSimple


def _fast_yaml(fm: str, fm_line: int, result: ParsedFile, positions: bool = True) -> bool:
    """Read `fm` if it is in the simple subset (see above) and fill `result`; False (and `result`
    untouched) otherwise. `positions` False: skip key and item positions (not string_values)."""
    if _NOT_SIMPLE_RE.search(fm) is not None:
        return False
    try:
        meta, keys, items, strings = _fast_parts(fm, fm_line, positions)
    except _NotSimple:
        return False
    result.meta = meta
    result.key_positions = keys
    result.item_positions = items
    result.string_values = strings
    result.positions_skipped = not positions
    return True


# One line of the subset, as groups (findall gives one tuple per line, at C speed). Quoted groups keep
# their quotes and the item group keeps its dash, so that a group is empty exactly when it did not match.
# A plain scalar: no indicator first; `:` only before a non-blank; blanks only before a character that
# cannot start a comment or be a `:`; `#` only right after a non-blank. Anything else lands in BAD.
# (Only spaces count as blanks, as for libyaml; explicit classes, as Unicode ones are slow on UCS-2 text.
# Keys are ASCII words: any other key goes to libyaml.)
# (PLAIN_SCALAR and SCALAR_TAIL are public: `vaulttools.lint.positions` finds a key's lines with them, so
# that a scalar ends exactly where this parser ends it)
PLAIN_SCALAR = _PLAIN = r"""[^\ \n\-?:,\[\]{}#&*!|>'"%@`](?:[^\ \n:#]++|:(?=[^\ \n])|\#|\ ++(?=[^\ \n\#:]))*+"""
SCALAR_TAIL = _TAIL = r"""\ *(?:(?<=\ )\#[^\n]*)?"""
# Each match ends with its line break, so findall tries the pattern at line starts only.
_LINES_RE = re.compile(
    r"""(?:
      ([A-Za-z_][A-Za-z0-9_-]*+):(?:(\ +)(?:("[^"\\\n]*+")|('(?:[^'\n]++|'')*+')|(\[[^\n]*)|(""" + _PLAIN + r"""))""" + _TAIL + r"""|\ *)
    | (\ *-)(?:(\ +)(?:("[^"\\\n]*+")|(""" + _PLAIN + r"""))""" + _TAIL + r"""|\ *)
    | \ *(?:\#[^\n]*)?
    | ([^\n]+)
    )\n""",
    re.VERBOSE,
)


def _fast_parts(
    fm: str, fm_line: int, positions: bool = True
) -> tuple[dict[str, Any], dict[str, Span], dict[str, list[Span]], list[tuple[str, str, Span, str]]]:
    rows = _LINES_RE.findall(fm)
    if len(rows) != fm.count("\n") or not fm.endswith("\n"):
        raise _NotSimple
    meta: dict[str, Any] = {}
    keys: dict[str, Span] = {}
    items: dict[str, list[Span]] = {}
    strings: list[tuple[str, str, Span, str]] = []
    new = _new
    typed_get = _TYPED_CACHE.get
    str_share = _STR_CACHE.setdefault
    miss = _MISS
    typed_first = _TYPED_FIRST
    # Values are shared up to this length: tags, types, sources, visibility recur across notes; titles,
    # slugs, aliases and questions seldom do, and sharing them would only grow the table. (A `"[[x]]"`
    # value is shared whatever its length: it recurs, and becomes the text of a link.)
    short = _SHARE_VALUE
    list_fields = _LIST_FIELDS
    maybe_typed = _KEY_MAYBE_TYPED
    known_key = _KEY_CACHE.get
    # the key whose value is still open (`key:` then nothing on its line), and its block sequence
    open_key: str | None = None
    open_line = 0
    seq: list[Any] | None = None
    seq_spans: list[Span] = []
    seq_indent = -1
    line_no = fm_line - 1
    # (this loop runs once per frontmatter line of every note: a plain scalar is typed only when its first
    # character can start something else than a string, and only short values are shared)
    for key, ksp, dq, sq, flow, plain, dash, isp, idq, iplain, bad in rows:
        line_no += 1
        if dash:
            if seq is None:
                if open_key is None:
                    raise _NotSimple
                seq = []
                seq_spans = []
                seq_indent = len(dash)
            elif len(dash) != seq_indent:
                raise _NotSimple
            if idq:
                text = idq[1:-1]
                value = str_share(text, text) if len(text) <= short or text[:2] == "[[" else text
                size = len(idq)
            elif iplain:
                text = iplain
                if text[0] in typed_first:
                    value = typed_get(text, miss)
                    if value is miss:
                        value = _typed(text)
                else:
                    value = str_share(text, text) if len(text) <= short else text
                size = len(text)
            else:
                seq.append(None)
                if positions:
                    start = seq_indent + 1  # libyaml puts an empty item right after its dash
                    seq_spans.append(new(Span, (line_no, start, line_no, start)))
                continue
            seq.append(value)
            if positions:
                start = seq_indent + len(isp) + 1
                span = new(Span, (line_no, start, line_no, start + size))
                seq_spans.append(span)
                if "[[" in text:
                    strings.append((open_key, text, span, iplain or idq))  # type: ignore[arg-type]
            elif "[[" in text:
                start = seq_indent + len(isp) + 1
                span = new(Span, (line_no, start, line_no, start + size))
                strings.append((open_key, text, span, iplain or idq))  # type: ignore[arg-type]
            continue
        if not key:
            if bad:
                raise _NotSimple
            continue  # blank or comment line
        # a top-level key
        if open_key is not None:
            _close(open_key, open_line, seq, seq_spans, meta, items)
            open_key = seq = None
        known = known_key(key)
        if known is None:  # first time this key is seen (since the caches were last emptied)
            if key[0] in maybe_typed and _typed(key).__class__ is not str:
                raise _NotSimple  # `yes:`, `null:`... are not string keys
            if len(_KEY_CACHE) >= _CACHE_LIMIT:
                _KEY_CACHE.clear()
            known = _KEY_CACHE[key] = key
        key = known
        if key in meta:
            raise _NotSimple  # a duplicate key: libyaml's reader reports it with both places
        size = len(key)
        if positions:
            keys[key] = new(Span, (line_no, 1, line_no, size + 1))
        if not ksp:
            open_key = key
            open_line = line_no
            continue
        col = size + len(ksp) + 2
        if plain:
            text = source = plain
            if text[0] in typed_first:
                value = typed_get(text, miss)
                if value is miss:
                    value = _typed(text)
            else:
                value = str_share(text, text) if len(text) <= short else text
        elif dq:
            text = dq[1:-1]
            source = dq
            value = str_share(text, text) if len(text) <= short else text
        elif sq:
            source = sq
            text = sq[1:-1]
            if "''" in text:
                text = text.replace("''", "'")
            value = str_share(text, text) if len(text) <= short else text
        else:
            _flow(flow, key, line_no, col, positions, meta, items, strings)
            continue
        meta[key] = value
        if "[[" in text or (positions and key in list_fields):
            span = new(Span, (line_no, col, line_no, col + len(source)))
            if positions and key in list_fields:
                items[key] = [span]
            if "[[" in text:
                strings.append((key, text, span, source))
    if open_key is not None:
        _close(open_key, open_line, seq, seq_spans, meta, items)
    if not positions:
        items.clear()  # `_close` may have put some
    return meta, keys, items, strings


#: First characters of the plain scalars that PyYAML's implicit resolvers may turn into something else
#: than a string (null, bool, int, float, timestamp, merge, value).
_TYPED_FIRST = frozenset(k for k in _IMPLICIT if k)
# One-line flow sequences already read (`tags: [cv, rust]` recurs across notes): text -> items.
_FLOW_CACHE: dict[str, tuple[Any, ...]] = {}
# A flow sequence whose items are all plain, with nothing that needs the item-by-item reader.
_SIMPLE_FLOW_RE = re.compile(r"\[([^\[\]{}#:\"'\n]*)\]")
_FLOW_PLAIN_BAD_FIRST = frozenset(" ,[]{}#'\"?:!&*|>%@`-")


def _flow(
    rest: str,
    key: str,
    line_no: int,
    col: int,
    positions: bool,
    meta: dict[str, Any],
    items: dict[str, list[Span]],
    strings: list[tuple[str, str, Span, str]],
) -> None:
    """A one-line flow sequence `[a, "b", 'c']` (`rest` runs from `[` to the end of the line)."""
    if not positions:
        cached = _FLOW_CACHE.get(rest)
        if cached is not None:
            meta[key] = list(cached)
            return
        m = _SIMPLE_FLOW_RE.fullmatch(rest)
        if m is not None:
            # plain items separated by commas, no `[[` possible: what the item regex below reads, by split
            out: list[Any] = []
            for piece in m[1].split(","):
                text = piece.strip(" ")
                if not text or text[0] in _FLOW_PLAIN_BAD_FIRST:
                    break
                if text[0] in _TYPED_FIRST:
                    value = _TYPED_CACHE.get(text, _MISS)
                    if value is _MISS:
                        value = _typed(text)
                else:
                    value = _STR_CACHE.setdefault(text, text) if len(text) <= _SHORT else text
                out.append(value)
            else:
                if len(_FLOW_CACHE) >= _CACHE_LIMIT:
                    _FLOW_CACHE.clear()
                _FLOW_CACHE[rest] = tuple(out)
                meta[key] = out
                return
    _flow_items(rest, key, line_no, col, positions, meta, items, strings)


def _flow_items(
    rest: str,
    key: str,
    line_no: int,
    col: int,
    positions: bool,
    meta: dict[str, Any],
    items: dict[str, list[Span]],
    strings: list[tuple[str, str, Span, str]],
) -> None:
    """`_flow`, item by item: any one-line flow sequence of the subset, with positions."""
    cache = _SPAN_CACHE
    if _EMPTY_FLOW_RE.match(rest):
        _after_quote(rest[rest.index("]") + 1 :])
        meta[key] = []
        if positions:
            items[key] = []
        return
    out: list[Any] = []
    spans: list[Span] = []
    pos = 1
    flow_match = _FLOW_ITEM_RE.match
    while True:
        m = flow_match(rest, pos)
        if m is None:
            raise _NotSimple
        dq, sq, plain, sep = m.groups()
        if plain is not None:
            value = _TYPED_CACHE.get(plain, _MISS)
            if value is _MISS:
                value = _typed(plain)
            begin, text = m.start(3), plain
            end = begin + len(plain)
        elif dq is not None:
            value = _STR_CACHE.setdefault(dq, dq) if len(dq) <= _SHORT else dq
            begin, text = m.start(1) - 1, dq
            end = m.end(1) + 1
        else:
            text = sq.replace("''", "'") if "''" in sq else sq
            value = _STR_CACHE.setdefault(text, text) if len(text) <= _SHORT else text
            begin = m.start(2) - 1
            end = m.end(2) + 1
        out.append(value)
        if positions or "[[" in text:
            k = (line_no, col + begin, line_no, col + end)
            span = cache.get(k)
            if span is None:
                span = _new(Span, k)
                cache[span] = span
            spans.append(span)
            if "[[" in text:
                strings.append((key, text, span, rest[begin:end]))
        pos = m.end()
        if sep == "]":
            break
    if pos < len(rest):
        _after_quote(rest[pos:])
    meta[key] = out
    if positions:
        items[key] = spans


def _close(
    key: str,
    line_no: int,
    seq: list[Any] | None,
    spans: list[Span],
    meta: dict[str, Any],
    items: dict[str, list[Span]],
) -> None:
    """Store the value of a `key:` line: the block sequence that followed it, or null."""
    if seq is not None:
        # (a copy of its exact size: a list grown item by item keeps spare room, and a vault keeps every one)
        meta[key] = seq[:]
        items[key] = spans
        return
    meta[key] = None
    if key in _LIST_FIELDS:
        # libyaml places an empty value right after the colon
        col = len(key) + 2
        items[key] = [_new(Span, (line_no, col, line_no, col))]


# -- splitting -------------------------------------------------------------------------------------


def split_frontmatter(text: str) -> tuple[int, int, int] | None:
    """Locate the frontmatter of `text` (BOM already removed).

    Returns ``(fm_start, fm_end, body_start)`` character offsets: the YAML is ``text[fm_start:fm_end]`` and
    the body starts at ``body_start``. Returns None when the file has no frontmatter, and
    ``(fm_start, -1, -1)`` when it opens one and never closes it.
    """
    if not text.startswith("---"):
        return None
    opening = _OPEN_RE.match(text)
    if opening is None:  # `----` or `--- title`: a rule or text, not a frontmatter
        return None
    fm_start = opening.end()
    # the opening line ends with "\n" (else fm_start is the end of the text and nothing is found)
    closing = _CLOSE_RE.search(text, fm_start - 1)
    if closing is None:
        return (fm_start, -1, -1)
    body_start = closing.end()
    if body_start < len(text) and text[body_start] == "\n":
        body_start += 1
    return (fm_start, closing.start() + 1, body_start)


def decode(raw: bytes, path: str) -> tuple[str | None, list[Problem]]:
    """Decode a file's bytes. Returns (text, problems); text is None for a binary file.

    Invalid UTF-8 is replaced by U+FFFD (so the rest of the note is still usable) and reported at the
    first bad byte.
    """
    if raw.find(b"\x00", 0, _SNIFF) != -1:  # (not `in raw[:_SNIFF]`: no copy)
        if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):  # Windows editors' "Unicode": readable, in the wrong encoding
            return None, [Problem(path, 1, 1, "UTF-16 encoded (a byte order mark FF FE or FE FF): save it as UTF-8", "binary")]
        return None, [Problem(path, 1, 1, "binary file with a .md name (contains NUL bytes)", "binary")]
    try:
        text = raw.decode("utf-8")
        problems: list[Problem] = []
    except UnicodeDecodeError as exc:
        good = raw[: exc.start].decode("utf-8", errors="replace")
        text = raw.decode("utf-8", errors="replace")
        if good.startswith(_BOM):
            good = good[1:]
        line = good.count("\n") + 1
        column = len(good) - (good.rfind("\n") + 1) + 1
        problems = [
            Problem(path, line, column, f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})", "not-utf8")
        ]
    if text.startswith(_BOM):
        text = text[1:]
    return text, problems


#: What may come before a frontmatter that Obsidian then does not read: blanks, a BOM or an invisible space.
_LEAD = " \t\r\n\ufeff\u200b\u200c\u200d\u2060"
# A `---` line (or `----`, `--- x`) whose next line is a `key:`: a frontmatter meant as one, not a rule.
_MISPLACED_RE = re.compile(r"---[^\n]*\r?\n[ \t]*[\"']?[A-Za-z_][\w \t-]*[\"']?[ \t]*:")


# A first line `---` ended by a carriage return that no line feed follows.
_CR_OPEN_RE = re.compile(r"---[ \t]*\r(?!\n)")


def parse_text(text: str, path: str, positions: bool = True) -> ParsedFile:
    """Split and parse an already decoded note (BOM removed).

    `positions` False lets the common case skip `key_positions`/`item_positions` (then
    `positions_skipped` is True and they are empty): `grasbot.model.Note` computes them on first access.
    """
    result = ParsedFile(text=text, meta={}, body=text, body_line=1, has_frontmatter=False)
    if not text or text.isspace():  # (not `text.strip()`: that copies the whole text)
        result.problems.append(Problem(path, 1, 1, "empty file", "empty"))
        return result
    where = split_frontmatter(text)
    if where is None:
        if _CR_OPEN_RE.match(text):
            # `---` then a lone CR (old Mac line endings): nothing here splits such lines, so no field is
            # read; `grasbot.model.visible_to_visitors` reads its raw `visibility:` lines (fail closed)
            result.problems.append(Problem(
                path, 1, 1, "the lines end in a lone carriage return (CR, old Mac line endings): no frontmatter "
                "field is read; save the file with LF (or CRLF) line endings", "cr-line-endings",
            ))
            return result
        lead = len(text) - len(text.lstrip(_LEAD))
        if text.startswith("---", lead) and _MISPLACED_RE.match(text, lead):
            # a frontmatter after a blank line, a space, an invisible character, or as `----`/`--- x`:
            # Obsidian reads no property from it, but its author meant them (privacy reads its lines)
            line = text.count("\n", 0, lead) + 1
            column = lead - (text.rfind("\n", 0, lead) + 1) + 1
            result.problems.append(Problem(
                path, line, column, "the frontmatter does not start on line 1 with a `---` line of its own: "
                "Obsidian reads none of its fields; remove what comes before it", "misplaced-frontmatter",
            ))
            return result
        result.problems.append(Problem(path, 1, 1, "no frontmatter (the file does not start with `---`)", "no-frontmatter"))
        return result
    fm_start, fm_end, body_start = where
    if fm_end < 0:
        result.problems.append(
            Problem(path, 1, 1, "frontmatter opened with `---` on line 1 is never closed", "unclosed-frontmatter")
        )
        return result
    index = LineIndex(text, body_start)
    result.line_index = index
    result.has_frontmatter = True
    result.body = text[body_start:]
    result.body_start = body_start
    # the YAML starts on line 2; fm_end is the start of the closing `---` line
    fm_lines = text.count("\n", 0, fm_end)
    result.frontmatter_span = make_span(2, 1, fm_lines + 1, 1)  # (shared: notes of a vault have a few sizes)
    result.body_line = fm_lines + text.count("\n", fm_end, body_start) + 1
    if fm_end > fm_start:
        _parse_yaml(text[fm_start:fm_end], path, fm_start, 2, index, result, positions)
    return result


def parse_bytes(raw: bytes, path: str, positions: bool = True) -> ParsedFile:
    """Decode and parse a note file's bytes; never raises (`positions`: see `parse_text`)."""
    text, problems = decode(raw, path)
    if text is None:
        result = ParsedFile(text="", meta={}, body="", body_line=1, has_frontmatter=False, problems=problems)
        return result
    result = parse_text(text, path, positions)
    if problems:
        result.problems[:0] = problems
    return result
