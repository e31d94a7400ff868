"""Splitting a note into frontmatter + body and parsing the YAML, with positions and problems."""

from __future__ import annotations

import datetime as dt

import pytest

from grasbot.markdown.frontmatter import parse_bytes, parse_text, split_frontmatter
from grasbot.model import Span


def _slice(text: str, span: Span) -> str:
    """The characters of `text` covered by `span` (1-based, end exclusive, lines split on \\n)."""
    lines = text.split("\n")
    if span.line == span.end_line:
        return lines[span.line - 1][span.column - 1 : span.end_column - 1]
    parts = [lines[span.line - 1][span.column - 1 :]]
    parts += lines[span.line : span.end_line - 1]
    parts.append(lines[span.end_line - 1][: span.end_column - 1])
    return "\n".join(parts)


NOTE = """---
title: Mon parcours dans l’impression 3D
slug: impression-3d
domains: [3d, algorithmique]
aliases:
  - impression 3d
  - "3d printing"
linked:
  - "[[MOC-Competences]]"
priority: 7
updated: 2026-04-22
custom_field: {nested: true}
---
Body line 1
Body line 2
"""


def test_fields_and_unknown_fields_are_kept() -> None:
    parsed = parse_text(NOTE, "n.md")
    assert parsed.problems == []
    assert parsed.has_frontmatter
    assert parsed.meta["title"] == "Mon parcours dans l’impression 3D"
    assert parsed.meta["domains"] == ["3d", "algorithmique"]
    assert parsed.meta["priority"] == 7
    assert parsed.meta["updated"] == dt.date(2026, 4, 22)
    assert parsed.meta["custom_field"] == {"nested": True}
    assert parsed.body == "Body line 1\nBody line 2\n"
    assert parsed.body_line == 14
    assert parsed.frontmatter_span == Span(2, 1, 13, 1)


def test_key_and_item_positions_point_at_the_text() -> None:
    parsed = parse_text(NOTE, "n.md")
    for key, span in parsed.key_positions.items():
        assert _slice(NOTE, span) == key
    assert parsed.key_positions["slug"] == Span(3, 1, 3, 5)
    assert [_slice(NOTE, s) for s in parsed.item_positions["domains"]] == ["3d", "algorithmique"]
    assert [_slice(NOTE, s) for s in parsed.item_positions["aliases"]] == ["impression 3d", '"3d printing"']
    assert parsed.item_positions["aliases"][0] == Span(6, 5, 6, 18)
    # a scalar where a list is expected still gets a position (lint points at it)
    scalar = parse_text("---\ntags: solo\n---\n", "n.md")
    assert [_slice("---\ntags: solo\n---\n", s) for s in scalar.item_positions["tags"]] == ["solo"]


def test_columns_count_characters_not_bytes() -> None:
    text = "---\ntitle: été à l’œil\naliases: [café, «x»]\n---\n"
    parsed = parse_text(text, "n.md")
    assert [_slice(text, s) for s in parsed.item_positions["aliases"]] == ["café", "«x»"]
    assert parsed.item_positions["aliases"][1].column == len("aliases: [café, ") + 1


def test_positions_survive_unicode_line_separators() -> None:
    # libyaml also breaks lines on U+2028 and a lone \r; our lines are split on \n only
    text = '---\ntitle: "a\u2028b"\nslug: x\r\nnote: "c\rd"\ntags: [t]\n---\n'
    parsed = parse_text(text, "n.md")
    assert parsed.problems == []
    assert _slice(text, parsed.key_positions["slug"]) == "slug"
    assert _slice(text, parsed.key_positions["tags"]) == "tags"
    assert parsed.key_positions["tags"].line == 5


def test_unicode_separators_are_characters_as_in_yaml_1_2() -> None:
    # Text pasted from a PDF or a web page: PyYAML (YAML 1.1) would end the line at U+2028 and fail on
    # "sep"; Obsidian (YAML 1.2) reads one title. So do we, positions unmoved.
    text = '---\ntitle: Line\u2028sep\nslug: a\ntags: [x\u2029y, z]\nlinked:\n  - "[[a\u0085b]]"\n---\nbody\n'
    parsed = parse_text(text, "n.md")
    assert parsed.problems == []
    assert parsed.meta == {"title": "Line\u2028sep", "slug": "a", "tags": ["x\u2029y", "z"], "linked": ["[[a\u0085b]]"]}
    assert _slice(text, parsed.key_positions["slug"]) == "slug"
    assert _slice(text, parsed.item_positions["tags"][0]) == "x\u2029y"
    assert parsed.string_values == [("linked", "[[a\u0085b]]", parsed.item_positions["linked"][0], '"[[a\u0085b]]"')]


def test_bom_and_crlf() -> None:
    raw = "\ufeff---\r\ntitle: T\r\ntags:\r\n  - x\r\n---\r\nBody [[a]]\r\n".encode()
    parsed = parse_bytes(raw, "n.md")
    assert parsed.problems == []
    assert parsed.meta == {"title": "T", "tags": ["x"]}
    assert parsed.text.startswith("---")  # the BOM is not part of the text
    assert parsed.key_positions["title"] == Span(2, 1, 2, 6)
    assert parsed.item_positions["tags"] == [Span(4, 5, 4, 6)]
    assert parsed.body_line == 6
    assert parsed.body.startswith("Body")


@pytest.mark.parametrize(
    ("text", "code", "line"),
    [
        ("---\ntitle: x\ntags: [a, b\npriority: 3\n---\nbody\n", "yaml-error", 4),
        ("---\ntitle: x\n  bad: indent\n---\n", "yaml-error", 3),
        ("---\ntitle: 'unterminated\n---\n", "yaml-error", 3),
        ("---\n- a\n- b\n---\nbody\n", "not-mapping", 2),
        ("---\njust a sentence\n---\nbody\n", "not-mapping", 2),
        ("---\n42\n---\n", "not-mapping", 2),
        ("---\ntitle: never closed\nbody\n", "unclosed-frontmatter", 1),
        ("no frontmatter here\n", "no-frontmatter", 1),
        ("", "empty", 1),
        ("  \n\n", "empty", 1),
        ("---\n? [a, b]\n: value\n---\n", "yaml-error", 2),
    ],
)
def test_bad_frontmatter_becomes_a_problem(text: str, code: str, line: int) -> None:
    parsed = parse_text(text, "bad.md")
    assert [p.code for p in parsed.problems] == [code]
    problem = parsed.problems[0]
    assert problem.path == "bad.md"
    assert problem.line == line
    assert problem.message
    assert parsed.meta == {}


@pytest.mark.parametrize("positions", [True, False])
@pytest.mark.parametrize("text", [
    "---\ntitle: Dup\ntags: [a]\nslug: d\ntags: [b]\n---\nbody\n",  # the fast path's subset
    "---\ntitle: Dup\ntags: &t [a]\nslug: d\ntags: [b]\n---\nbody\n",  # libyaml's (an anchor)
    "---\ntitle: Dup\ntags:\n  - a\nslug: d\ntags:\n  - b\n---\nbody\n",  # a block list, then the same key
])
def test_a_duplicate_key_is_a_problem_where_the_second_one_is(text: str, positions: bool) -> None:
    parsed = parse_text(text, "dup.md", positions=positions)
    assert [(p.code, p.line, p.column) for p in parsed.problems] == [("duplicate-key", 6 if "- b" in text else 5, 1)]
    assert "`tags` (also on line 3)" in parsed.problems[0].message
    assert parsed.meta == {"title": "Dup", "tags": ["b"], "slug": "d"}  # what PyYAML reads: the last one


def test_yaml_error_keeps_the_body() -> None:
    parsed = parse_text("---\ntags: [a\n---\nBody [[x]]\n", "n.md")
    assert parsed.problems[0].code == "yaml-error"
    assert parsed.body == "Body [[x]]\n"
    assert parsed.body_line == 4


def test_unclosed_frontmatter_is_read_as_body() -> None:
    parsed = parse_text("---\ntitle: x\n\nBody\n", "n.md")
    assert not parsed.has_frontmatter
    assert parsed.body.endswith("Body\n")


def test_not_utf8_is_reported_at_the_first_bad_byte_and_the_rest_is_read() -> None:
    raw = b"---\ntitle: caf\xe9\n---\nBody\n"
    parsed = parse_bytes(raw, "n.md")
    assert [(p.code, p.line, p.column) for p in parsed.problems] == [("not-utf8", 2, 11)]
    assert parsed.meta["title"] == "caf\ufffd"
    assert parsed.body == "Body\n"


def test_binary_file() -> None:
    parsed = parse_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "img.md")
    assert [p.code for p in parsed.problems] == ["binary"]
    assert parsed.text == "" and parsed.meta == {}


def test_invalid_date_stays_text() -> None:
    parsed = parse_text("---\nupdated: 2026-02-30\nother: 2026-02-03\n---\n", "n.md")
    assert parsed.problems == []
    assert parsed.meta["updated"] == "2026-02-30"
    assert parsed.meta["other"] == dt.date(2026, 2, 3)


def test_yaml_features_handled_by_the_full_constructor() -> None:
    text = "---\nbase: &b {x: 1}\nmerged:\n  <<: *b\n  y: 2\ncycle: &c [*c]\nflags: !!set {a, b}\n---\n"
    parsed = parse_text(text, "n.md")
    assert parsed.problems == []
    assert parsed.meta["merged"] == {"x": 1, "y": 2}
    assert parsed.meta["cycle"][0] is parsed.meta["cycle"]
    assert parsed.meta["flags"] == {"a", "b"}


def test_scalar_types_match_pyyaml_safe_load() -> None:
    import yaml

    text = "a: yes\nb: null\nc: 1_000\nd: 0x1F\ne: 1.5e3\nf: .inf\ng: ~\nh: '007'\ni: 2026-01-02 10:00:00\nj: [1, two, 3.0]\n"
    parsed = parse_text(f"---\n{text}---\n", "n.md")
    assert parsed.meta == yaml.safe_load(text)


def test_empty_frontmatter_and_comments_only() -> None:
    for text in ("---\n---\nbody\n", "---\n# just a comment\n---\nbody\n"):
        parsed = parse_text(text, "n.md")
        assert parsed.problems == []
        assert parsed.has_frontmatter
        assert parsed.meta == {}
        assert parsed.body == "body\n"


def test_split_frontmatter_rules() -> None:
    assert split_frontmatter("--- \ntitle: x\n---   \nbody") == (5, 14, 21)
    assert split_frontmatter("----\ntitle: x\n---\n") is None  # a rule, not a frontmatter
    assert split_frontmatter("text\n---\n") is None
    assert split_frontmatter("---\ntitle: x\n") == (4, -1, -1)
    start, end, body = split_frontmatter("---\na: 1\n---")  # type: ignore[misc]
    assert (start, end, body) == (4, 9, 12)


def test_frontmatter_link_strings_are_collected() -> None:
    parsed = parse_text('---\nlinked:\n  - "[[a]]"\nup: "[[b]]"\nplain: no link\n---\n', "n.md")
    assert [(k, v) for k, v, _span, _src in parsed.string_values] == [("linked", "[[a]]"), ("up", "[[b]]")]


@pytest.mark.parametrize(("text", "code"), [
    ("\n---\ntitle: A\nvisibility: private\n---\nx\n", "misplaced-frontmatter"),  # a blank line first
    ("\u200b---\ntitle: A\n---\nx\n", "misplaced-frontmatter"),  # an invisible space first
    ("----\nvisibility: private\n----\nx\n", "misplaced-frontmatter"),  # four dashes
    ("\n---\nJust a thematic break, then prose.\n", "no-frontmatter"),  # a rule, not a frontmatter
    ("Texte\n---\ntitle: x\n---\n", "no-frontmatter"),  # text first: a rule and a paragraph
])
def test_a_frontmatter_obsidian_does_not_read_is_said(text: str, code: str) -> None:
    parsed = parse_text(text, "n.md")
    assert [p.code for p in parsed.problems] == [code] and parsed.meta == {} and parsed.body == text
