"""Applying fixes without losing a byte: targeted text edits inside the frontmatter, checked by re-parsing.

Why not dump the YAML again? Even ruamel.yaml's round-trip mode re-flows what it re-emits (indentation of
sequences, spacing inside `[a,  b]`, line width, some quotes): that is exactly the class of data-loss bugs
Obsidian Linter users report. So a fix here never re-emits YAML. It

1. re-reads the file's bytes (the state on disk now, not the state the lint saw), keeps a UTF-8 BOM and
   the line endings as they are, and splits off the frontmatter with the engine's own splitter;
2. parses the frontmatter with ruamel.yaml (round-trip, quotes preserved) only to *locate* values: the
   start of each key's value and of each list item;
3. turns each `Edit` into a replacement of the few characters that hold that value (the item `"#Docker"`
   becomes `"docker"` in the same quotes; `tags: foo` becomes `tags: [foo]`; a duplicate item's line or its
   `, item` is removed; `slug: x` is inserted as a new line), checking first that the value is still what
   the rule saw;
4. re-parses the edited frontmatter and compares it with the data it must now hold (the old data with the
   edits applied, same key order). If anything else differs, the file is left alone and the fix reported
   as skipped.

Everything outside the replaced characters, the body in particular, is copied unchanged, so byte equality
of the rest holds by construction (and is tested). Files are written atomically (temporary file in the
same folder + `os.replace`, file mode kept) and only if their digest is still the one read in step 1.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grasbot.files import write_atomic
from grasbot.markdown.frontmatter import split_frontmatter
from vaulttools.lint.diagnostics import Diagnostic, Edit

__all__ = [
    "FileFix",
    "FileChangedError",
    "apply_edits_to_text",
    "plan_file_fix",
    "fix_bytes",
    "write_fixed",
    "unified_diff",
    "digest_bytes",
    "render_flow_list",
    "read_frontmatter",
    "plain_value",
]

_BOM = "\ufeff"


class FileChangedError(Exception):
    """The file changed on disk between the moment it was read and the moment the fix would replace it."""


class FileNotWritableError(Exception):
    """The fix cannot be written without a loss elsewhere (a file with several hard links)."""


def digest_bytes(raw: bytes) -> str:
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


@dataclass(slots=True)
class FileFix:
    """The fixes for one file: its bytes before and after, what was fixed and what was not (and why)."""

    path: str  # vault-relative
    original: bytes
    fixed: bytes
    applied: list[Diagnostic] = field(default_factory=list)
    skipped: list[tuple[Diagnostic, str]] = field(default_factory=list)
    error: str | None = None  # why the fixed bytes were not written (file changed on disk, OS error)

    @property
    def changed(self) -> bool:
        return self.fixed != self.original

    def diff(self, prefix: str = "") -> str:
        """The change as a unified diff; `prefix` goes before the vault-relative path (the vault's folder seen
        from the current one, so that `git apply` and `patch -p1` take the diff from there)."""
        return unified_diff(prefix + self.path, self.original, self.fixed)


# -- YAML helpers ------------------------------------------------------------------------------------


def _ruamel():
    from ruamel.yaml import YAML

    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    return yaml


def _plain(value: Any) -> Any:
    """ruamel's round-trip objects as plain Python values (ordered), for comparisons."""
    if isinstance(value, dict):
        return [(str(k), _plain(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return str(value)


def plain_value(value: Any) -> Any:
    """A value read by `read_frontmatter` as plain Python data, for comparing values (the PDF import's
    re-import compares what a note holds with what it would write)."""
    return _plain(value)


def read_frontmatter(fm: str) -> Any:
    """Frontmatter text parsed the way the fixes parse it (ruamel round-trip, positions kept); raises on
    what ruamel refuses (a key written twice...)."""
    return _load(fm)


def _load(fm: str) -> Any:
    """Parse frontmatter text with ruamel round-trip; raises on anything ruamel refuses (duplicate keys...)."""
    return _ruamel().load(fm) if fm.strip() else None


def _parses_as_string(snippet: str, value: str, flow: bool) -> bool:
    """Does `snippet` read back as exactly the string `value`, written as a block value or a flow item?"""
    import yaml

    text = f"k: [{snippet}]\n" if flow else f"k: {snippet}\n"
    try:
        data = yaml.load(text, Loader=yaml.CSafeLoader)
    except yaml.YAMLError:
        return False
    got = data.get("k") if isinstance(data, dict) else None
    if flow:
        return isinstance(got, list) and len(got) == 1 and got[0] == value
    return got == value and isinstance(got, str)


def render_scalar(value: Any, style: str, flow: bool) -> str:
    """Write `value` as YAML in the quoting style of the text it replaces (`"`, `'` or plain)."""
    if isinstance(value, _dt.date):  # `updated`, written as YAML reads a date back
        return value.isoformat()
    if not isinstance(value, str):  # numbers (priority)
        return json.dumps(value, ensure_ascii=False)
    if style == "'" and "\n" not in value:
        return "'" + value.replace("'", "''") + "'"
    if style == '"':
        return json.dumps(value, ensure_ascii=False)
    if value and value == value.strip() and _parses_as_string(value, value, flow):
        return value
    return json.dumps(value, ensure_ascii=False)


# -- locating values in the frontmatter text ------------------------------------------------------


class _Text:
    """The frontmatter text with a line table, to turn ruamel's (line, column) into offsets."""

    def __init__(self, fm: str) -> None:
        self.fm = fm
        self.starts = [0]
        for i, ch in enumerate(fm):
            if ch == "\n":
                self.starts.append(i + 1)

    def offset(self, line: int, col: int) -> int:
        return self.starts[line] + col

    def line_of(self, offset: int) -> int:
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def line_end(self, offset: int) -> int:
        """Offset of the end of the line holding `offset`, before its `\\r\\n` / `\\n`."""
        end = self.fm.find("\n", offset)
        end = len(self.fm) if end < 0 else end
        if end > 0 and self.fm[end - 1 : end] == "\r":
            end -= 1
        return end

    def scalar_end(self, start: int, flow: bool) -> int | None:
        """End offset (exclusive) of the scalar token starting at `start`; None for block scalars."""
        fm = self.fm
        ch = fm[start : start + 1]
        if ch == '"':
            i = start + 1
            while i < len(fm):
                if fm[i] == "\\":
                    i += 2
                    continue
                if fm[i] == '"':
                    return i + 1
                i += 1
            return None
        if ch == "'":
            i = start + 1
            while i < len(fm):
                if fm[i] == "'":
                    if fm[i + 1 : i + 2] == "'":
                        i += 2
                        continue
                    return i + 1
                i += 1
            return None
        if ch in ("|", ">", "", "[", "{", "&", "*", "!"):
            return None  # block scalar, nested collection, anchor, alias, tag: not a simple scalar
        end = self.line_end(start)
        i = start
        while i < end:
            c = fm[i]
            if flow and c in ",]}":
                break
            if c == "#" and i > start and fm[i - 1] in " \t":
                break
            i += 1
        while i > start and fm[i - 1] in " \t":
            i -= 1
        return i


@dataclass(slots=True)
class _Replacement:
    start: int
    end: int
    text: str


def _style(token: str) -> str:
    return token[0] if token[:1] in ("'", '"') else ""


def _newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


class _SkipEdit(Exception):
    """This edit cannot be applied safely; the reason is the message."""


def _locate_scalar(t: _Text, start: int, flow: bool, expected: Any) -> tuple[int, int, str]:
    end = t.scalar_end(start, flow)
    if end is None:
        raise _SkipEdit("the value is a block scalar, a nested collection or an alias")
    token = t.fm[start:end]
    if t.line_of(start) != t.line_of(end):
        raise _SkipEdit("the value spans several lines")
    return start, end, token


def _edits_for_field(
    t: _Text, data: Any, name: str, edits: Sequence[Edit], expected: dict[str, Any], not_done: list[tuple[Edit, str]]
) -> list[_Replacement]:
    """Text replacements for the edits on one field, and the field's expected new value in `expected`.

    Raises _SkipEdit when the field as a whole cannot be edited; an edit that alone cannot be done (a
    repeated item sharing its line with a comment) goes to `not_done` and the others still apply."""
    fm = t.fm
    kinds = {e.kind for e in edits}
    if "insert-key" in kinds:
        (edit,) = [e for e in edits if e.kind == "insert-key"]
        return _insert_key(t, data, edit, expected)
    if name not in data:
        raise _SkipEdit(f"`{name}` is no longer in the frontmatter")
    value = data[name]
    if "replace-value" in kinds:
        (edit,) = [e for e in edits if e.kind == "replace-value"]
        if _plain(value) != _plain(edit.old):
            raise _SkipEdit(f"`{name}` changed since it was checked")
        if isinstance(value, list) and isinstance(edit.new, list):
            return [_replace_flow_list(t, data, name, value, edit.new, expected)]
        if isinstance(value, (list, dict)):
            raise _SkipEdit(f"`{name}` changed since it was checked")
        line, col = data.lc.value(name)
        start, end, token = _locate_scalar(t, t.offset(line, col), False, value)
        new_text = render_scalar(edit.new, _style(token) if isinstance(edit.new, str) else "", False)
        expected[name] = _plain(edit.new)
        return [_Replacement(start, end, new_text)]

    to_list = "to-list" in kinds
    if to_list:
        if isinstance(value, (list, dict)) or not isinstance(value, str):
            raise _SkipEdit(f"`{name}` is no longer a single string")
        line, col = data.lc.value(name)
        starts = [t.offset(line, col)]
        items = [value]
        flow = False
    else:
        if not isinstance(value, list):
            raise _SkipEdit(f"`{name}` is no longer a list")
        items = list(value)
        starts = [t.offset(*value.lc.item(i)) for i in range(len(value))]
        flow = bool(value.fa.flow_style())

    new_items: list[Any] = list(items)
    dropped: set[int] = set()
    replaced: dict[int, Any] = {}
    for edit in edits:
        if edit.kind == "to-list":
            continue
        i = edit.index if edit.index is not None else -1
        if not 0 <= i < len(items) or _plain(items[i]) != _plain(edit.old):
            raise _SkipEdit(f"item {i + 1} of `{name}` changed since it was checked")
        if edit.kind == "replace-item":
            replaced[i] = edit.new
        elif edit.kind == "drop-item":
            dropped.add(i)
        else:
            raise _SkipEdit(f"unknown edit {edit.kind}")
    if len(dropped) >= len(items):
        raise _SkipEdit(f"dropping every item of `{name}`")

    out: list[_Replacement] = []
    for i in dropped:
        replaced.pop(i, None)  # a dropped duplicate needs no rewording
    for i, start in enumerate(starts):
        if i not in replaced and not (to_list and i == 0):
            continue
        s, e, token = _locate_scalar(t, start, flow, items[i])
        if i in replaced:
            new_items[i] = replaced[i]
            inner = render_scalar(replaced[i], _style(token), flow or to_list)
        else:
            inner = token
            if not _style(token) and not _parses_as_string(token, str(items[i]), True):
                inner = json.dumps(str(items[i]), ensure_ascii=False)  # `a, b` or `x]` must be quoted in [ ]
        out.append(_Replacement(s, e, f"[{inner}]" if to_list else inner))

    kept_drops: set[int] = set()
    for i in sorted(dropped):
        start = starts[i]
        try:
            s, e, _ = _locate_scalar(t, start, flow, items[i])
            if flow:
                # Every comment of the items kept stays where it is: an item is removed with what follows
                # it up to the next item (its comma, and its own comment on its line), or, the last one,
                # with what precedes it back to the previous item, which must hold no comment (that one
                # would be the previous item's). A comment line of its own between items is left alone:
                # the fix is then not offered.
                if i + 1 < len(items):  # remove "item, # its comment\n  " up to the next item
                    tail = fm[e : starts[i + 1]]
                    own_line_end = t.line_end(e) - e
                    if "#" in tail[own_line_end:]:
                        raise _SkipEdit("a comment line sits between the repeated item and the next one: "
                                        "remove it by hand")
                    out.append(_Replacement(s, starts[i + 1], ""))
                else:  # the last item: remove ", item" back to the end of the previous item
                    if (i - 1) in dropped:
                        raise _SkipEdit("adjacent duplicates: fixed one at a time")
                    prev_s, prev_e, _ = _locate_scalar(t, starts[i - 1], flow, items[i - 1])
                    if "#" in fm[prev_e:s]:
                        raise _SkipEdit("the repeated item is the last of a list whose previous item has a "
                                        "comment after it: removing the item would remove that comment; remove "
                                        "it by hand")
                    out.append(_Replacement(prev_e, e, ""))
            else:
                line = t.line_of(s)
                line_start = t.starts[line]
                before = fm[line_start:s]
                after = fm[e : t.line_end(e)]
                if before.strip() != "-" or after.strip():
                    raise _SkipEdit("the repeated item shares its line with a comment or another value: "
                                    "remove it by hand")
                nxt = t.starts[line + 1] if line + 1 < len(t.starts) else len(fm)
                out.append(_Replacement(line_start, nxt, ""))
        except _SkipEdit as exc:
            new_items[i] = items[i]
            not_done.extend((edit, str(exc)) for edit in edits if edit.kind == "drop-item" and edit.index == i)
            continue
        kept_drops.add(i)
    expected[name] = [_plain(v) for i, v in enumerate(new_items) if i not in kept_drops]
    return out


def _flow_end(fm: str, start: int) -> int | None:
    """End (exclusive) of the flow collection opening at `start` (`[`), or None when it is not closed on
    its line (quotes respected)."""
    depth = 0
    quote = ""
    i = start
    while i < len(fm) and fm[i] != "\n":
        c = fm[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                if quote == "'" and fm[i + 1 : i + 2] == "'":
                    i += 2
                    continue
                quote = ""
        elif c in "\"'":
            quote = c
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return None


def _replace_flow_list(t: _Text, data: Any, name: str, value: Any, new: list[Any], expected: dict[str, Any]) -> _Replacement:
    """`name: [a, b]` written on one line -> `name: [new...]` (strings quoted only when they must be, so
    `"13"` stays a string). A block list or one that spans lines is not rewritten (the caller says so)."""
    if not value.fa.flow_style():
        raise _SkipEdit(f"`{name}` is written as a block list; rewrite it on one line as [..] to let it be updated")
    start = t.offset(*data.lc.value(name))
    if t.fm[start : start + 1] != "[":
        raise _SkipEdit(f"`{name}` does not start with [ where it was read")
    end = _flow_end(t.fm, start)
    if end is None:
        raise _SkipEdit(f"`{name}` spans several lines")
    if any(isinstance(item, bool) or not isinstance(item, (str, int, float)) for item in new):
        raise _SkipEdit(f"`{name}`: only strings and numbers can be written in a list")
    expected[name] = _plain(new)
    return _Replacement(start, end, render_flow_list(new))


def render_flow_list(items: Sequence[Any]) -> str:
    """`[a, "13", 2]`: strings plain when each reads back alone and the whole list reads back as `items`
    (`? ,` inside a flow list is YAML syntax), else every string in double quotes."""
    import yaml

    plain = "[" + ", ".join(render_scalar(v, "", True) for v in items) + "]"
    try:
        # libyaml and PyYAML's own parser disagree on `[a ?, b]`: plain only when both read it back
        if all(yaml.load(f"k: {plain}\n", Loader=loader) == {"k": list(items)} for loader in (yaml.CSafeLoader, yaml.SafeLoader)):
            return plain
    except yaml.YAMLError:
        pass
    return "[" + ", ".join(json.dumps(v, ensure_ascii=False) for v in items) + "]"


def _insert_key(t: _Text, data: Any, edit: Edit, expected: dict[str, Any]) -> list[_Replacement]:
    name = edit.field
    if name in data:
        raise _SkipEdit(f"`{name}` is already present")
    fm = t.fm
    nl = _newline(fm)
    keys = list(data.keys())
    value_text = render_scalar(edit.new, "", False)
    line_text = f"{name}: {value_text}{nl}"
    if edit.after and edit.after in data:
        at = keys.index(edit.after)
        n_lines = len(t.starts)  # the frontmatter always ends with a newline: the last start is len(fm)
        stop_line = data.lc.key(keys[at + 1])[0] if at + 1 < len(keys) else n_lines
        first = data.lc.key(edit.after)[0]
        last = first
        # the value of `after` may continue on following lines; comments and blank lines before the next key
        # belong to that key, so the new line goes right after the last content line of `after`
        for ln in range(first, min(stop_line, n_lines)):
            start = t.starts[ln]
            content = fm[start : t.line_end(start)]
            if content.strip() and not content.startswith("#"):
                last = ln
        insert_at = t.starts[last + 1] if last + 1 < n_lines else len(fm)
        position = at + 1
    else:
        insert_at = 0
        position = 0
    new_keys = keys[:position] + [name] + keys[position:]
    expected["__order__"] = new_keys
    expected[name] = _plain(edit.new)
    return [_Replacement(insert_at, insert_at, line_text)]


def apply_edits_to_text(text: str, edits: Iterable[Edit]) -> tuple[str, list[Edit], list[tuple[Edit, str]]]:
    """Apply `edits` to the frontmatter of a decoded note `text` (BOM removed).

    Returns ``(new_text, applied, skipped)``; `skipped` pairs each edit not applied with the reason.
    Everything outside the edited characters is kept as is; the result is verified by re-parsing.
    """
    edits = list(edits)
    if not edits:
        return text, [], []
    where = split_frontmatter(text)
    if where is None or where[1] < 0:
        return text, [], [(e, "the file has no complete frontmatter") for e in edits]
    fm_start, fm_end, _ = where
    fm = text[fm_start:fm_end]
    try:
        data = _load(fm)
    except Exception as exc:  # ruamel refuses more than PyYAML (duplicate keys...): never fix then
        reason = f"the frontmatter cannot be edited safely ({type(exc).__name__})"
        return text, [], [(e, reason) for e in edits]
    if data is None or not hasattr(data, "lc") or not isinstance(data, dict):
        return text, [], [(e, "the frontmatter is not a mapping") for e in edits]
    t = _Text(fm)

    by_field: dict[str, list[Edit]] = {}
    for edit in edits:
        by_field.setdefault(edit.field, []).append(edit)
    replacements: list[_Replacement] = []
    applied: list[Edit] = []
    skipped: list[tuple[Edit, str]] = []
    expected: dict[str, Any] = {}
    for name in sorted(by_field):
        group = by_field[name]
        field_expected: dict[str, Any] = {}
        not_done: list[tuple[Edit, str]] = []
        try:
            reps = _edits_for_field(t, data, name, group, field_expected, not_done)
        except _SkipEdit as exc:
            skipped += [(e, str(exc)) for e in group]
            continue
        except Exception as exc:  # a position ruamel did not give as expected: never guess
            skipped += [(e, f"cannot locate the value ({type(exc).__name__})") for e in group]
            continue
        if "__order__" in field_expected and "__order__" in expected:
            skipped += [(e, "one insertion at a time") for e in group]
            continue
        replacements += reps
        expected.update(field_expected)
        skipped += not_done
        left_out = {id(e) for e, _ in not_done}
        applied += [e for e in group if id(e) not in left_out]

    if not replacements:
        return text, [], skipped
    replacements.sort(key=lambda r: (r.start, r.end))
    for a, b in zip(replacements, replacements[1:]):
        if b.start < a.end:
            return text, [], skipped + [(e, "overlapping edits") for e in applied]
    new_fm = fm
    for rep in reversed(replacements):
        new_fm = new_fm[: rep.start] + rep.text + new_fm[rep.end :]

    # Verify: the new frontmatter must hold exactly the old data with the edits applied, in the same order.
    want = dict(_plain(data))
    order = expected.pop("__order__", list(want.keys()))
    want.update(expected)
    want_items = [(k, want[k]) for k in order]
    try:
        got = _plain(_load(new_fm))
    except Exception:
        got = None
    if got != want_items:
        return text, [], skipped + [(e, "the edited frontmatter did not read back as intended") for e in applied]
    return text[:fm_start] + new_fm + text[fm_end:], applied, skipped


# -- files ---------------------------------------------------------------------------------------------


def plan_file_fix(root: Path, path: str, diagnostics: Sequence[Diagnostic]) -> FileFix:
    """Read `root/path` now and compute its fixed bytes from the fixable `diagnostics` (nothing written)."""
    return fix_bytes(path, (root / path).read_bytes(), diagnostics)


def fix_bytes(path: str, raw: bytes, diagnostics: Sequence[Diagnostic]) -> FileFix:
    """The fixed version of a note's bytes `raw` (BOM and line endings kept); nothing is written."""
    result = FileFix(path=path, original=raw, fixed=raw)
    fixable = [d for d in diagnostics if d.fix is not None]
    if not fixable:
        return result
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        result.skipped = [(d, "the file is not valid UTF-8") for d in fixable]
        return result
    bom = decoded.startswith(_BOM)
    text = decoded[1:] if bom else decoded
    edits: list[Edit] = []
    owner: dict[int, Diagnostic] = {}
    for diag in fixable:
        for edit in diag.fix.edits:  # type: ignore[union-attr]
            owner[id(edit)] = diag
            edits.append(edit)
    new_text, applied, skipped = apply_edits_to_text(text, edits)
    applied_diags = {id(owner[id(e)]): owner[id(e)] for e in applied}
    skipped_diags = {id(owner[id(e)]): (owner[id(e)], reason) for e, reason in skipped}
    for key in list(applied_diags):
        if key in skipped_diags:  # a diagnostic is fixed only if all its edits were applied
            del applied_diags[key]
    result.applied = sorted(applied_diags.values(), key=lambda d: d.sort_key)
    result.skipped = sorted(skipped_diags.values(), key=lambda p: p[0].sort_key)
    if new_text != text:
        result.fixed = ((_BOM if bom else "") + new_text).encode("utf-8")
    return result


def write_fixed(root: Path, fix: FileFix) -> None:
    """Replace the file with `fix.fixed`, atomically, only if it still holds `fix.original`.

    A note that is a symbolic link is written where the link points (the link stays a link), only when that
    is inside the vault (the rule of `grasbot.vault`: a link out of the vault is not a note, and a fix never
    writes outside the vault, even if a link was changed since the vault was read). A file with
    several hard links is not written: a rename gives it a new inode, so the other names would keep the old
    content without a word; raises FileNotWritableError saying so.

    Raises FileChangedError when the file changed since it was read (an editor saved meanwhile).
    """
    target = Path(os.path.realpath(root / fix.path))
    real_root = os.path.realpath(root)
    if not str(target).startswith(real_root.rstrip(os.sep) + os.sep):
        raise FileNotWritableError(
            f"{fix.path}: a symbolic link to a file outside the vault (symlink-outside-vault); not fixed"
        )
    if digest_bytes(target.read_bytes()) != digest_bytes(fix.original):
        raise FileChangedError(f"{fix.path}: changed on disk since it was read; not overwritten (run again)")
    st = os.stat(target)
    if not st.st_mode & 0o222:  # made read-only on purpose: root could write it, the owner said no
        raise FileNotWritableError(f"{fix.path}: read-only file (no write permission bit); not fixed")
    if st.st_nlink > 1:
        raise FileNotWritableError(
            f"{fix.path}: has {st.st_nlink} hard links; an atomic rewrite would leave the other names with the "
            "old content, so it is not fixed (apply the diff of --diff by hand)"
        )
    def unchanged_since_read() -> None:
        # last check as close to the rename as possible: never overwrite an editor's save
        if digest_bytes(target.read_bytes()) != digest_bytes(fix.original):
            raise FileChangedError(f"{fix.path}: changed on disk since it was read; not overwritten (run again)")

    write_atomic(
        target, fix.fixed, mode=st.st_mode & 0o7777, durable=True, suffix=".vaulttools-tmp",
        before_replace=unchanged_since_read,
    )  # fmt: skip


def _lines(text: str) -> list[str]:
    """Lines ended by `\n` only, as `patch` counts them (`splitlines` also ends one at `\r`, `\f`, U+2028...)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def unified_diff(path: str, before: bytes, after: bytes) -> str:
    """A unified diff of one file, as `git diff` would show it (`a/path`, `b/path`)."""
    a = _lines(before.decode("utf-8", errors="replace"))
    b = _lines(after.decode("utf-8", errors="replace"))
    lines = list(difflib.unified_diff(a, b, fromfile=_diff_name("a/" + path), tofile=_diff_name("b/" + path)))
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


#: Characters that make a file name of a diff header quoted, as git quotes them: GNU patch reads a plain name up
#: to a blank, and both it and `git apply` read a C-style quoted name (`"a/Une note.md"`) whole.
_DIFF_QUOTED = {"\\": "\\\\", '"': '\\"', "\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _diff_name(name: str) -> str:
    """`name` as a diff header writes it: as it is, or C-quoted when it holds a blank, a quote or a backslash
    (no trailing tab: the quotes say where the name ends)."""
    if not any(ch in name for ch in ' \t\n\r"\\'):
        return name
    return '"' + "".join(_DIFF_QUOTED.get(ch, ch) for ch in name) + '"'
