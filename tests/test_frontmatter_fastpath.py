"""The frontmatter fast path (grasbot.markdown.frontmatter._fast_yaml) must give exactly what libyaml gives.

For random frontmatters built from the pieces real notes use (and the pieces that break the simple
subset), whenever the fast path accepts a frontmatter, its data (types included), key and item positions
and `[[...]]` strings must equal those of the libyaml path, and plain `yaml.load(CSafeLoader)` must agree
on the data. When it declines, the libyaml path reads the frontmatter, as before.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from grasbot.markdown import frontmatter as fmod
from grasbot.markdown.frontmatter import LineIndex, ParsedFile, parse_bytes, split_frontmatter
from tests.conftest import SAMPLE_VAULT


def _strict(value: Any) -> Any:
    """A comparable form that tells 1, 1.0, True and "1" apart (and nan from nan)."""
    if isinstance(value, dict):
        return ("dict", [(_strict(k), _strict(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_strict(v) for v in value])
    if isinstance(value, float):
        return ("float", repr(value))
    return (type(value).__name__, value)


def _both(fm: str) -> tuple[ParsedFile | None, ParsedFile]:
    """(fast result or None when declined, libyaml result) for a frontmatter text."""
    text = "---\n" + fm + "---\nbody\n"
    fast = ParsedFile(text=text, meta={}, body="", body_line=1, has_frontmatter=True)
    accepted = fmod._fast_yaml(fm, 2, fast)
    slow = ParsedFile(text=text, meta={}, body="", body_line=1, has_frontmatter=True)
    fmod._parse_yaml_libyaml(fm, "n.md", 4, 2, LineIndex(text, 4 + len(fm)), slow)
    return (fast if accepted else None), slow


def _assert_same(fm: str) -> bool:
    fast, slow = _both(fm)
    if fast is None:
        return False
    assert slow.problems == [], (fm, slow.problems)
    assert _strict(fast.meta) == _strict(slow.meta), fm
    try:
        plain = yaml.load(fm, Loader=yaml.CSafeLoader) or {}
    except ValueError:  # `2026-02-30`: PyYAML raises, grasbot keeps the text (lint reports it)
        pass
    else:
        assert _strict(fast.meta) == _strict(plain), fm
    assert list(fast.key_positions.items()) == list(slow.key_positions.items()), fm
    assert fast.item_positions == slow.item_positions, fm
    assert fast.string_values == slow.string_values, fm
    return True


KEYS = ["title", "slug", "tags", "aliases", "linked", "related", "priority", "updated", "x-y", "é", "yes",
        "null", "On", "Nope", "_k", "a b", "2k", "key.dot"]
PLAIN = ["word", "deux mots", "l'algo", "été — x", "42", "-3", "0x1F", "0o7", "010", "1_000", "3.14", "1e3",
         ".inf", ".NaN", "yes", "No", "on", "OFF", "true", "null", "~", "Null", "2026-04-22", "2026-02-30",
         "2026-04-22 10:30:00", "2026-04-22T10:30:00Z", "a: b", "a:b", "a:", "a #c", "a#c", "[[x]]",
         "x [[y]] z", "#c", "- x", "-x", "?x", ":x", "&a", "*a", "!t", "|", ">", "%", "@x", "`x", "=",
         "<<", "a, b", "{a}", "a]", "a\"b", "", " ", "  lead", "trail  "]
QUOTED = ['"q"', '"[[MOC-A]]"', '"a \\" b"', '"tab\\t"', "'s'", "'it''s'", "'[[b|c]]'", '"unclosed', "'x' y",
          '"x" # c', '"x"#c', '""', "''", '"a: b"', '"é’"']


@st.composite
def scalar(draw: st.DrawFn) -> str:
    return draw(st.sampled_from(PLAIN + QUOTED))


@st.composite
def flow(draw: st.DrawFn) -> str:
    items = draw(st.lists(st.sampled_from(PLAIN[:30] + QUOTED[:8] + ["a b", "[x]", ""]), max_size=4))
    sep = draw(st.sampled_from([", ", ",", " , "]))
    inner = sep.join(items)
    return draw(st.sampled_from(["[", "[ "])) + inner + draw(st.sampled_from(["]", " ]", ",]", "] # c", "]x", ""]))


@st.composite
def entry(draw: st.DrawFn) -> str:
    key = draw(st.sampled_from(KEYS))
    kind = draw(st.sampled_from(["scalar", "scalar", "flow", "block", "empty", "comment", "blank", "odd"]))
    if kind == "scalar":
        return f"{key}:{draw(st.sampled_from([' ', '  ', '']))}{draw(scalar())}\n"
    if kind == "flow":
        return f"{key}: {draw(flow())}\n"
    if kind == "block":
        indent = draw(st.sampled_from(["", "  ", "    "]))
        items = draw(st.lists(st.one_of(scalar(), st.just("")), min_size=1, max_size=4))
        lines = []
        for item in items:
            dash = draw(st.sampled_from(["- ", "-  ", "-"])) if item else draw(st.sampled_from(["-", "- "]))
            lines.append(indent + dash + item + draw(st.sampled_from(["", "", " # c", "\n" + indent + "# c"])))
            if draw(st.integers(0, 9)) == 0:
                lines.append(draw(st.sampled_from(["", " " + indent + "- odd", indent + "  cont", "   "])))
        return f"{key}:{draw(st.sampled_from(['', ' ', ' # c']))}\n" + "\n".join(lines) + "\n"
    if kind == "empty":
        return f"{key}:{draw(st.sampled_from(['', '   ']))}\n"
    if kind == "comment":
        return draw(st.sampled_from(["# c\n", "  # c\n", "#\n"]))
    if kind == "blank":
        return draw(st.sampled_from(["\n", "   \n"]))
    return draw(st.sampled_from(["  indented: x\n", "k: |\n  block\n", "k: &a x\n", "k: !!str 1\n", "k:\tv\n",
                                 "k: v\r\n", "k: {a: 1}\n", "? k\n", "k: a\n  cont\n", "...\n", "k: \u2028\n",
                                 "k: \ufeffx\n", "nested:\n  a: 1\n", "- top\n", "k: [a,\n  b]\n"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(entry(), max_size=8).map("".join))
def test_fast_path_agrees_with_libyaml(fm: str) -> None:
    _assert_same(fm)


def test_fast_path_takes_the_common_notes() -> None:
    """The GrasBot-style frontmatters of the sample vault go through the fast path, and agree."""
    taken = 0
    total = 0
    for path in sorted(SAMPLE_VAULT.rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        where = split_frontmatter(text)
        if where is None or where[1] <= where[0]:
            continue
        fm = text[where[0] : where[1]]
        if "\r" in fm:
            continue
        total += 1
        taken += _assert_same(fm)
    assert total > 5
    assert taken >= total * 0.9, (taken, total)


def test_typical_note_through_the_fast_path() -> None:
    fm = (
        "title: Mon parcours dans l’impression 3D\n"
        "domains: [3d, 'algo', \"web\"]\n"
        "aliases:\n  - impression 3d\n  - \"3d printing\"\n"
        "linked:\n- \"[[MOC-Competences]]\"\n"
        "related:\n"
        "priority: 7\nupdated: 2026-04-22\nflag: yes\nempty: ~\n"
    )
    fast, _slow = _both(fm)
    assert fast is not None
    assert fast.meta == {
        "title": "Mon parcours dans l’impression 3D",
        "domains": ["3d", "algo", "web"],
        "aliases": ["impression 3d", "3d printing"],
        "linked": ["[[MOC-Competences]]"],
        "related": None,
        "priority": 7,
        "updated": dt.date(2026, 4, 22),
        "flag": True,
        "empty": None,
    }
    assert _assert_same(fm)


def test_declined_frontmatter_still_reports_errors_at_the_right_line(tmp_path: Path) -> None:
    raw = b"---\ntitle: ok\ntags: [a, b\n---\nbody\n"
    parsed = parse_bytes(raw, "n.md")
    assert [p.code for p in parsed.problems] == ["yaml-error"]
    assert parsed.problems[0].line >= 3
