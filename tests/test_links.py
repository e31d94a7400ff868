"""Link extraction (every form of docs/links.md), headings, block ids, and the resolver's rules."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from grasbot.markdown.frontmatter import parse_text
from grasbot.links import (
    AnchorTable,
    Resolver,
    frontmatter_links,
    heading_key,
    mask_code,
    scan_body,
    without_comments,
    parse_body,
)
from grasbot.model import Heading, Link, LinkKind, LinkStatus, Span


def _links(body: str, first_line: int = 1) -> list[Link]:
    return parse_body(body, first_line)[0]


def _one(body: str) -> Link:
    links = _links(body)
    assert len(links) == 1, links
    return links[0]


# -- extraction ----------------------------------------------------------------------------------------


def test_wikilink_forms() -> None:
    cases = {
        "[[Target]]": ("Target", None, None),
        "[[Target.md]]": ("Target.md", None, None),
        "[[folder/Target]]": ("folder/Target", None, None),
        "[[Target#Heading]]": ("Target", "Heading", None),
        "[[Target#H1#H2]]": ("Target", "H1#H2", None),
        "[[#Heading]]": ("", "Heading", None),
        "[[Target#^block-id]]": ("Target", "^block-id", None),
        "[[Target|shown text]]": ("Target", None, "shown text"),
        "[[Target#H|shown]]": ("Target", "H", "shown"),
        "[[ Target ]]": ("Target", None, None),
    }
    for raw, expected in cases.items():
        link = _one(f"see {raw} here")
        assert (link.target, link.anchor, link.display) == expected, raw
        assert link.kind is LinkKind.WIKILINK
        assert link.raw == raw


def test_embed() -> None:
    link = _one("x ![[embed.png|300]] y")
    assert link.kind is LinkKind.EMBED
    assert (link.target, link.display, link.raw) == ("embed.png", "300", "![[embed.png|300]]")
    assert link.span == Span(1, 3, 1, 21)


def test_escaped_pipe_in_a_table() -> None:
    body = "| a | b |\n|---|---|\n| [[Target\\|text]] | ![[img.png\\|100]] |\n"
    links = _links(body)
    assert [(l.target, l.display, l.kind) for l in links] == [
        ("Target", "text", LinkKind.WIKILINK),
        ("img.png", "100", LinkKind.EMBED),
    ]
    assert _one("[[Target#Head\\|text]]").anchor == "Head"


def test_markdown_links() -> None:
    link = _one("[text](Some%20Note.md#My%20Heading)")
    assert (link.kind, link.target, link.anchor, link.display) == (
        LinkKind.MARKDOWN,
        "Some Note.md",
        "My Heading",
        "text",
    )
    assert _one("[t](<Some Note.md>)").target == "Some Note.md"
    assert _one('[t](Note.md "a title")').target == "Note.md"
    assert _one("[t](#Local)").target == ""
    assert _one("[t](#Local)").anchor == "Local"
    assert _one("![alt](img/pic.png)").raw == "![alt](img/pic.png)"
    assert _one("[w](https://en.wikipedia.org/wiki/Foo_(bar))").target == "https://en.wikipedia.org/wiki/Foo_(bar)"
    assert _one("[**[x]** y](n.md)").target == "n.md"


def test_not_links() -> None:
    body = "\n".join(
        [
            "inline `[[Code]]` and ``[[Double `tick` code]]``",
            "```md",
            "[[Fenced]] [x](fenced.md)",
            "```",
            "~~~",
            "[[Tilde]]",
            "~~~",
            "> ```md",
            "> [[In a quoted fence]]",
            "> ```",
            "escaped \\[[Escaped]] and \\[x](y.md)",
            "empty [[]] and [[ ]] and [x]()",
            "Use \\[\\[Wikilinks\\]\\]",
        ]
    )
    assert _links(body) == []


def test_unclosed_fence_runs_to_the_end() -> None:
    assert _links("[[before]]\n```\n[[inside]]\n") == [_one("[[before]]")]


def test_wikilink_then_parenthesis_is_one_wikilink() -> None:
    link = _one("[[a]](b)")
    assert link.kind is LinkKind.WIKILINK and link.target == "a"


def test_positions_are_file_positions() -> None:
    body = "first line\nsecond [[A]] and [m](b.md)\n\n  ![[c.png]]"
    links = _links(body, first_line=10)
    assert [(l.raw, l.span) for l in links] == [
        ("[[A]]", Span(11, 8, 11, 13)),
        ("[m](b.md)", Span(11, 18, 11, 27)),
        ("![[c.png]]", Span(13, 3, 13, 13)),
    ]


def test_links_are_in_document_order_across_forms() -> None:
    links = _links("[m](one.md) [[two]]\n[[three]] [m](four.md)")
    assert [l.target for l in links] == ["one.md", "two", "three", "four.md"]


def test_headings_and_blocks() -> None:
    body = (
        "# Title\n"
        "text ^para-1\n"
        "## Sub heading ##\n"
        "### `code()` heading\n"
        "#not-a-heading\n"
        "```\n# not a heading in code ^not-a-block\n```\n"
        "- item\n  ^list-block\n"
        "![[img.png]]^after-embed\n"
        "####### seven is too many\n"
        "x^2 is maths, not a block\n"
    )
    _links_, headings, blocks = parse_body(body, 5)
    assert headings == [Heading("Title", 1, 5), Heading("Sub heading", 2, 7), Heading("`code()` heading", 3, 8)]
    assert blocks == {"para-1", "list-block", "after-embed"}


def test_mask_code_keeps_offsets() -> None:
    body = "a `b` c\n```\ncode\n```\nd"
    masked = mask_code(body)
    assert len(masked) == len(body)
    assert masked.count("\n") == body.count("\n")
    assert "b" not in masked and "code" not in masked and masked.endswith("d")


def test_comments_hold_no_link_heading_or_block_and_keep_offsets() -> None:
    body = "\n".join([
        "before [[a]] %% inline [[hidden1]] %% after [[b]]",
        "%%",
        "## Hidden heading",
        "[[hidden2]] ^hiddenblock",
        "%%",
        "<!-- [[hidden3]] -->",
        "`%% in code %%` [[c]] <!--",
        "## Also hidden, the HTML comment never closes",
        "[[hidden4]]",
    ])
    assert [l.target for l in _links(body)] == ["a", "b", "c"]
    masked = mask_code(body)
    assert len(masked) == len(body) and masked.count("\n") == body.count("\n")
    entries, headings, blocks = scan_body(body, 1)
    assert headings == [] and blocks == set()
    # an unclosed `%%` runs to the end too; `%%` inside code is text
    assert [l.target for l in _links("[[x]] %% [[y]]\n[[z]]")] == ["x"]
    assert [l.target for l in _links("```\n%%\n```\n[[z]]")] == ["z"]


def test_math_blocks_hold_no_link() -> None:
    body = "[[a]] $$\\text{[[not-a-link]]}$$ [[b]]\n$$\n[[nor-this]]\n$$\ncosts 5$ and [[c]] `$$` [[d]]"
    assert [l.target for l in _links(body)] == ["a", "b", "c", "d"]


def test_without_comments_keeps_code_and_drops_comments() -> None:
    body = "Alpha %%salaire 95k%% beta\n<!-- brouillon -->\n`%% code %%` gamma\n%%\nfin cachée"
    assert without_comments(body) == "Alpha  beta\n\n`%% code %%` gamma\n"
    assert without_comments("sans commentaire") == "sans commentaire"


def test_frontmatter_links() -> None:
    text = '---\nlinked:\n  - "[[MOC-A]]"\nrelated: ["[[b|B]]", plain]\nup: "[[c#Head]]"\n---\n'
    links = frontmatter_links(parse_text(text, "n.md"))
    assert [(l.field, l.target, l.anchor, l.display, l.kind) for l in links] == [
        ("linked", "MOC-A", None, None, LinkKind.FRONTMATTER),
        ("related", "b", None, "B", LinkKind.FRONTMATTER),
        ("up", "c", "Head", None, LinkKind.FRONTMATTER),
    ]
    assert links[0].span == Span(3, 6, 3, 15)
    assert text.split("\n")[2][5:14] == "[[MOC-A]]"


# -- keys ----------------------------------------------------------------------------------------------


def test_heading_key_is_loose_like_obsidian() -> None:
    assert heading_key("How large can each remote vault be?") == heading_key("How large can each remote vault be")
    assert heading_key("`hasTag()`") == heading_key("hasTag")
    assert heading_key("Goals: first") == heading_key("goals  FIRST")
    assert heading_key("Vue d'édition") != heading_key("Mode d'édition")
    assert heading_key("Cafe\u0301") == heading_key("Café")  # NFD vs NFC


def test_anchor_table() -> None:
    table = AnchorTable(
        [Heading("A", 1, 1), Heading("B", 2, 2), Heading("C", 3, 3), Heading("D", 2, 4)], {"blk-1"}
    )
    assert table.has("A") and table.has("b") and table.has("A#B#C") and table.has("A#D")
    assert not table.has("C#B")  # order matters
    assert not table.has("Z")
    assert table.has("^blk-1") and table.has("^BLK-1") and not table.has("^blk-2")


# -- resolution ----------------------------------------------------------------------------------------


def _resolver(*paths: str) -> Resolver:
    resolver = Resolver()
    for path in paths:
        resolver.add(path, path.lower().endswith(".md"))
    return resolver


def _resolve(resolver: Resolver, raw: str, source: str = "src.md", tables: dict[str, AnchorTable] | None = None):
    link = _one(raw)
    return resolver.resolve(link, source, (tables or {}).get)


def test_resolution_rules() -> None:
    r = _resolver(
        "src.md",
        "Notes/Target.md",
        "Notes/Figure 1.png",
        "Deep/Inner/Page.md",
        "Café.md",
    )
    assert _resolve(r, "[[Target]]").target_path == "Notes/Target.md"
    assert _resolve(r, "[[target.MD]]").target_path == "Notes/Target.md"
    assert _resolve(r, "[[Notes/Target]]").target_path == "Notes/Target.md"
    assert _resolve(r, "[[notes/target.md]]").target_path == "Notes/Target.md"
    assert _resolve(r, "[[Inner/Page]]").target_path == "Deep/Inner/Page.md"  # a path suffix
    assert _resolve(r, "[[Other/Page]]").status is LinkStatus.BROKEN
    assert _resolve(r, "[[Figure 1.png]]").target_path == "Notes/Figure 1.png"
    assert _resolve(r, "[[Figure 1]]").status is LinkStatus.BROKEN  # other files need their extension
    assert _resolve(r, "[[Cafe\u0301]]").target_path == "Café.md"  # NFD link, NFC file
    assert _resolve(r, "[x](https://example.com)").status is LinkStatus.EXTERNAL
    assert _resolve(r, "[x](mailto:a@b.c)").status is LinkStatus.EXTERNAL


def test_markdown_links_are_relative_to_the_note() -> None:
    r = _resolver("A/src.md", "A/B/Page.md", "B/Page.md", "A/x.md", "top.md")
    assert _resolve(r, "[p](B/Page.md)", "A/src.md").target_path == "A/B/Page.md"
    assert _resolve(r, "[p](../B/Page.md)", "A/src.md").target_path == "B/Page.md"
    assert _resolve(r, "[p](./x.md)", "A/src.md").target_path == "A/x.md"
    assert _resolve(r, "[p](/B/Page.md)", "A/src.md").target_path == "B/Page.md"
    assert _resolve(r, "[p](top.md)", "A/src.md").target_path == "top.md"
    assert _resolve(r, "[p](../../out.md)", "A/src.md").status is LinkStatus.BROKEN
    # a wikilink path starts at the vault root
    assert _resolve(r, "[[B/Page]]", "A/src.md").target_path == "B/Page.md"


def test_nearest_file_wins_and_is_ambiguous() -> None:
    r = _resolver("a/b/Dup.md", "a/Dup.md", "z/Dup.md", "a/b/src.md", "c/src.md", "y/x/Dup.md")
    same_folder = _resolve(r, "[[Dup]]", "a/b/src.md")
    assert same_folder.status is LinkStatus.AMBIGUOUS
    assert same_folder.target_path == "a/b/Dup.md"
    assert set(same_folder.candidates) == {"a/b/Dup.md", "a/Dup.md", "z/Dup.md", "y/x/Dup.md"}
    shortest = _resolve(r, "[[Dup]]", "c/src.md")
    assert shortest.target_path == "a/Dup.md"  # fewest folders, then shortest, then alphabetical
    assert shortest.candidates[:2] == ("a/Dup.md", "z/Dup.md")
    exact = _resolve(r, "[[z/Dup]]", "c/src.md")
    assert (exact.status, exact.target_path) == (LinkStatus.OK, "z/Dup.md")


def test_anchors_are_checked_in_the_target() -> None:
    r = _resolver("src.md", "T.md", "img.pdf")
    tables = {"T.md": AnchorTable([Heading("Goals", 2, 3)], {"b1"}), "src.md": AnchorTable([Heading("Here", 1, 1)], set())}
    assert _resolve(r, "[[T#Goals]]", tables=tables).status is LinkStatus.OK
    assert _resolve(r, "[[T#^b1]]", tables=tables).status is LinkStatus.OK
    missing = _resolve(r, "[[T#Nope]]", tables=tables)
    assert (missing.status, missing.target_path) == (LinkStatus.BROKEN_ANCHOR, "T.md")
    assert _resolve(r, "[[T#^b2]]", tables=tables).status is LinkStatus.BROKEN_ANCHOR
    assert _resolve(r, "[[#Here]]", tables=tables).status is LinkStatus.OK
    assert _resolve(r, "[[#Gone]]", tables=tables).status is LinkStatus.BROKEN_ANCHOR
    assert _resolve(r, "[[img.pdf#page=3]]", tables=tables).status is LinkStatus.OK  # not a note


def test_alias_hint_for_broken_links() -> None:
    r = _resolver("src.md", "Real Name.md", "other/Other.md")
    r.add_aliases("Real Name.md", ["Short", "Nick"])
    broken = _resolve(r, "[[short]]")
    assert (broken.status, broken.target_path, broken.alias_of) == (LinkStatus.BROKEN, None, "Real Name.md")
    assert _resolve(r, "[[Nobody]]").alias_of is None
    # an alias never makes a link resolve, even when the alias equals a missing file name
    r.remove_aliases("Real Name.md", ["Short", "Nick"])
    assert _resolve(r, "[[Short]]").alias_of is None


# The markdown-link pattern as first written (a per-character alternation): the faster one in
# grasbot.links (possessive runs) must match exactly the same links.
_MD_REFERENCE = re.compile(
    r"\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]"
    r"\([ \t]*(?:<([^<>\n]*)>|((?:[^\s()<>]|\([^\s()]*\))+))"
    r"(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?[ \t]*\)"
)
_MD_BITS = ["[", "]", "(", ")", "<", ">", "a", " ", "\t", "\n", '"', "'", "x.md", "#h", "%20", "[t]", "(u)", "é"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_MD_BITS), max_size=30).map("".join))
def test_markdown_pattern_matches_the_reference(text: str) -> None:
    from grasbot.links import _MD_RE

    expected = [(m.span(), m.groups()) for m in _MD_REFERENCE.finditer(text)]
    assert [(m.span(), m.groups()) for m in _MD_RE.finditer(text)] == expected


# -- the fast forms of the loader against the plain ones they replace ----------------------------------

_CODE_BITS = ["`", "``", "```", "a", " ", "\n", "\n\n", "é", "[[x]]", "~~~", "> ", "\t", "\\"]


def _inline_code_spans_reference(text: str) -> list[tuple[int, int]]:
    """Inline code as first written: a run of N backticks up to the next run of exactly N, within one
    paragraph (CommonMark); an unmatched run is literal text."""
    runs = [(m.start(), m.end()) for m in re.finditer(r"`+", text)]
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(runs):
        start, end = runs[i]
        j = i + 1
        while j < len(runs) and runs[j][1] - runs[j][0] != end - start:
            j += 1
        if j < len(runs) and "\n\n" not in text[end : runs[j][0]]:
            spans.append((start, runs[j][1]))
            i = j + 1
        else:
            i += 1
    return spans


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(_CODE_BITS), max_size=30).map("".join))
def test_inline_code_pattern_matches_the_reference(text: str) -> None:
    from grasbot.markdown.body import _INLINE_CODE_RE

    assert [m.span() for m in _INLINE_CODE_RE.finditer(text)] == _inline_code_spans_reference(text)


_PERCENT_BITS = ["%", "%2", "%20", "%C3", "%A9", "%c3%a9", "%zz", "a", "é", "’", "%E2%80%99", "%F0", " ", "%%", "#"]


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(_PERCENT_BITS), max_size=12).map("".join))
def test_percent_decoding_is_urllib_unquote(text: str) -> None:
    from urllib.parse import unquote as reference

    from grasbot.links import unquote

    assert unquote(text) == reference(text)


_LINK_BITS = ["[[a]]", "![[b.png|3]]", "[[c#h|x]]", "[[#h]]", "[t](d.md)", "[t](<e f.md#g>)", "`[[code]]`",
              "```\n[[fenced]]\n```", "\n", " ", "é", "## H", "^id", "\\[[esc]]", "[[a]](b)"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_LINK_BITS), max_size=20).map("".join), st.integers(1, 30))
def test_link_entries_give_back_the_links(body: str, first_line: int) -> None:
    from grasbot.links import entry_of, links_from_entries, scan_body

    entries, headings, blocks = scan_body(body, first_line)
    links = links_from_entries(entries)
    assert (links, headings, blocks) == parse_body(body, first_line)
    assert [entry_of(link) for link in links] == entries


_FM_ITEMS = ['"[[a]]"', '"[[b|c]]"', "[[d]]", '"x [[e#f]] y"', "plain", "'[[g]]'", '"[[h]] [[i]]"']


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(_FM_ITEMS), max_size=5), st.sampled_from(["block", "flow", "multi-line"]))
def test_frontmatter_entries_are_the_frontmatter_links(items: list[str], form: str) -> None:
    from grasbot.links import entry_of, frontmatter_entries

    if form == "block":
        text = "---\nlinked:\n" + "".join(f"  - {item}\n" for item in items) + "---\n"
    elif form == "flow":
        text = "---\nrelated: [" + ", ".join(items) + "]\n---\n"
    else:
        text = '---\nup: "[[a]] and\n  [[b]]"\n---\n'
    parsed = parse_text(text, "n.md")
    links = frontmatter_links(parsed)
    entries = frontmatter_entries(parsed)
    expected = [entry_of(link) for link in links]
    if None in expected:
        assert entries is None
    else:
        assert entries == expected


def test_bulk_indexing_equals_one_by_one() -> None:
    from grasbot.links import _paths  # (a bulk load stores a lone path as the str itself)

    paths = [("b/Note.md", True), ("a/Note.md", True), ("img.png", False), ("a/b/Note.md", True), ("Z.md", True)]
    one = Resolver()
    for path, is_note in paths:
        one.add(path, is_note)
    one.add_aliases("Z.md", ["Nick", "nick", "Other"])
    one.add_aliases("a/Note.md", ["Nick"])
    bulk = Resolver()
    bulk.add_many(paths)
    bulk.add_aliases_many([("Z.md", ["Nick", "nick", "Other"]), ("a/Note.md", ["Nick"])])
    for index in ("by_name", "by_path", "alias_owners"):
        assert {k: list(_paths(v)) for k, v in getattr(bulk, index).items()} == getattr(one, index), index
    # the compact (tuple) entries of a bulk load change like the lists of a one-by-one index
    for resolver in (one, bulk):
        resolver.add("c/Note.md", True)
        resolver.remove("a/Note.md")
        resolver.remove_aliases("Z.md", ["Nick"])
    for index in ("by_name", "by_path", "alias_owners"):
        assert {k: list(_paths(v)) for k, v in getattr(bulk, index).items()} == getattr(one, index), index


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "B", ".", "..", "", "é"]), max_size=3).map("/".join),
    st.lists(st.sampled_from(["a", "..", ".", "", "x.md", "Page.md"]), min_size=1, max_size=4).map("/".join),
)
def test_relative_targets_resolve_as_normpath_says(folder: str, target: str) -> None:
    import posixpath

    resolver = _resolver("a/x.md", "a/B/Page.md", "Page.md", "x.md", "é/a/x.md")
    source = f"{folder}/src.md" if folder else "src.md"
    if not target.strip() or target.startswith("/"):
        return
    cands, exact = resolver.find(target, source, True)
    key = target.lower()
    base = folder.lower()
    rel = posixpath.normpath(posixpath.join(base, key)) if base else posixpath.normpath(key)
    direct = resolver._exact(rel)
    if direct:
        assert (cands, exact) == (direct, True)
