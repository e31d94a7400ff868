"""Property tests: whatever bytes a note holds, reading it never raises and every position is in the file."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grasbot.markdown.frontmatter import parse_bytes
from grasbot.links import frontmatter_links, parse_body
from grasbot.model import Span
from grasbot import Vault, read_note

# Pieces that make frontmatter and links interesting: YAML syntax, link syntax, code markers, odd line
# breaks (libyaml counts \r, U+0085 and U+2028 as line breaks, we count \n only), a BOM, invalid UTF-8.
YAML_BITS = [
    "title: x", "tags: [a, b", "- item", "  - nested", "key:", ": v", "? k", "&a", "*a", "!!set", "'", '"',
    "{", "}", "[", "]", "#", "|", ">", "<<: *a", "2026-02-30", "\t", " ", "\n", "\r\n", "\r", "\u2028",
    "\x85", "é", "’", '"[[x]]"', "- \"[[a|b]]\"", "linked:", "related: [\"[[r]]\"]", "\x00", "\x07",
]
BODY_BITS = [
    "[[", "]]", "[[a]]", "![[img.png|300]]", "[[a#h#i]]", "[[#h]]", "[[x#^b]]", "\\|", "|", "\\[[",
    "[t](u.md)", "[t](<a b.md>)", "](", "(", ")", "<", ">", "%20", "`", "```", "~~~", "> ```", "#", "## H",
    "^id", " ^blk", "\n", "\r\n", "\r", "\u2028", "é", "œ", "’", " ", "\t", "x", "https://e.com",
]

yaml_text = st.lists(st.sampled_from(YAML_BITS), max_size=25).map("".join)
body_text = st.lists(st.sampled_from(BODY_BITS), max_size=40).map("".join)


@st.composite
def note_bytes(draw: st.DrawFn) -> bytes:
    front = draw(st.sampled_from(["---\n", "---\r\n", "", "----\n", "---"]))
    close = draw(st.sampled_from(["---\n", "\n---\n", "---", "", "\n---\r\n"]))
    text = front + draw(yaml_text) + close + draw(body_text)
    raw = text.encode("utf-8")
    prefix = draw(st.sampled_from([b"", b"\xef\xbb\xbf"]))
    junk = draw(st.sampled_from([b"", b"\xff", b"\xc3", b"\xe9t\xe9"]))
    cut = draw(st.integers(0, len(raw)))
    return prefix + raw[:cut] + junk + raw[cut:]


def _lines(text: str) -> list[str]:
    return text.split("\n")


def _inside(span: Span, lines: list[str]) -> bool:
    if not (1 <= span.line <= span.end_line <= len(lines)):
        return False
    if not 1 <= span.column <= len(lines[span.line - 1]) + 1:
        return False
    if not 1 <= span.end_column <= len(lines[span.end_line - 1]) + 1:
        return False
    return span.line < span.end_line or span.column <= span.end_column


@settings(max_examples=400, deadline=None)
@given(note_bytes())
def test_reading_never_raises_and_positions_are_inside_the_file(raw: bytes) -> None:
    note = read_note("n.md", raw)
    lines = _lines(note.text)
    for problem in note.problems:
        assert 1 <= problem.line <= len(lines), problem
        assert 1 <= problem.column <= len(lines[problem.line - 1]) + 1, problem
        assert problem.path == "n.md" and problem.message
    for link in note.links:
        assert _inside(link.span, lines), (link, lines)
        if link.kind.value != "frontmatter":
            line = lines[link.span.line - 1]
            assert line[link.span.column - 1 : link.span.end_column - 1] == link.raw
    for span in note.key_positions.values():
        assert _inside(span, lines)
    for spans in note.item_positions.values():
        assert all(_inside(span, lines) for span in spans)
    for heading in note.headings:
        assert 1 <= heading.line <= len(lines)
    assert isinstance(note.meta, dict)
    assert 1 <= note.body_line <= len(lines) + 1
    assert note.text.endswith(note.body)


@settings(max_examples=300, deadline=None)
@given(body_text, st.integers(1, 50))
def test_body_links_point_at_their_text(body: str, first_line: int) -> None:
    links, headings, _blocks = parse_body(body, first_line)
    lines = body.split("\n")
    for link in links:
        line = lines[link.span.line - first_line]
        assert line[link.span.column - 1 : link.span.end_column - 1] == link.raw
        assert "\n" not in link.raw
    assert all(first_line <= h.line < first_line + len(lines) for h in headings)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(['"[[a]]"', '"[[b|c]]"', "[[d]]", '"x [[e#f]] y"', "plain", '"\\u00e9[[g]]"']), max_size=5))
def test_frontmatter_links_are_inside_their_value(items: list[str]) -> None:
    text = "---\nlinked:\n" + "".join(f"  - {item}\n" for item in items) + "---\n"
    parsed = parse_bytes(text.encode(), "n.md")
    lines = text.split("\n")
    for link in frontmatter_links(parsed):
        assert _inside(link.span, lines)
        assert link.field == "linked"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(note_bytes(), min_size=1, max_size=6))
def test_a_vault_of_random_files_loads(tmp_path_factory, files: list[bytes]) -> None:  # type: ignore[no-untyped-def]
    root: Path = tmp_path_factory.mktemp("vault")
    for i, raw in enumerate(files):
        folder = root / ("sub" if i % 2 else "")
        folder.mkdir(exist_ok=True)
        (folder / f"n{i}.md").write_bytes(raw)
    vault = Vault.load(root)
    assert len(vault.notes) == len(files)
    for path, note in vault.notes.items():
        resolutions = vault.resolutions(path)
        for resolution in resolutions:
            assert resolution.status.value in {"ok", "broken", "broken-anchor", "ambiguous", "external"}
        # the load's fused resolution is the general one
        assert resolutions == vault._resolver.resolve_all(note.links, path, vault._anchor_table)
    ids = [note.id for note in vault.notes.values()]
    assert len(set(ids)) == len(ids)


_NAMES = ["a", "B", "é", "Cafe\u0301", "n0"]
_FOLDERS = ["", "x", "x/y", "Z"]
_LINKS = ["[[{n}]]", "[[{f}/{n}]]", "[[{n}#H]]", "[[{n}#Nope]]", "[[{n}#^blk]]", "[t](../{n}.md)", "[t]({n}.md#H)",
          "[t](<{f}/{n}.md>)", "[[#H]]", "![[img.png]]", "[[{n}.md]]", "[[missing]]", "[[alias-{n}]]",
          "[u](https://e.org)"]


@st.composite
def linked_vault(draw: st.DrawFn) -> dict[str, str]:
    files: dict[str, str] = {}
    for folder in _FOLDERS:
        for name in draw(st.lists(st.sampled_from(_NAMES), max_size=3, unique=True)):
            links = draw(st.lists(st.sampled_from(_LINKS), max_size=6))
            parts = [
                form.format(n=draw(st.sampled_from(_NAMES)), f=draw(st.sampled_from(_FOLDERS[1:]))) for form in links
            ]
            head = f"---\naliases: [alias-{name}]\nrelated: [\"[[{draw(st.sampled_from(_NAMES))}]]\"]\n---\n"
            rel = f"{folder}/{name}.md" if folder else f"{name}.md"
            files[rel] = head + "# H\ntext ^blk\n" + " ".join(parts) + "\n"
    return files


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(linked_vault())
def test_load_resolution_and_indexes_equal_the_general_path(
    tmp_path_factory: pytest.TempPathFactory, files: dict[str, str]
) -> None:
    """Names shared across folders (ambiguous links), relative markdown links, anchors, aliases: the load's
    fused resolution and its one-pass reverse indexes equal the general, note-by-note path."""
    root: Path = tmp_path_factory.mktemp("vault")
    (root / "img.png").write_bytes(b"png")
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    vault = Vault.load(root)
    for path, note in vault.notes.items():
        assert vault.resolutions(path) == vault._resolver.resolve_all(note.links, path, vault._anchor_table)
    vault.prepare_updates()
    loaded = ({k: set(v) for k, v in vault._in.items()}, {k: set(v) for k, v in vault._dependents.items()})
    vault._in, vault._dependents, vault._src_keys, vault._out = {}, {}, {}, {}
    for path, note in vault.notes.items():
        vault._set_resolutions(note, vault._res[path])
    assert loaded == ({k: set(v) for k, v in vault._in.items()}, {k: set(v) for k, v in vault._dependents.items()})
