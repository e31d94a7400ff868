"""`vaulttools.lint.positions` must give exactly the engine's key and item positions whenever it answers.

It reads one key's lines instead of parsing the whole frontmatter again; when it answers (it may decline,
and the engine answers then), the span must be the one `grasbot.markdown.frontmatter.parse_text` computes: on every
key and list of the bundled vault, the fixtures, the real corpora, a synthetic vault, and random
frontmatters built from the pieces that real notes use and those that break the simple subset.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grasbot.markdown.frontmatter import parse_text
from grasbot.model import LIST_FIELDS
from grasbot import read_note
from tests.conftest import CORPORA, REPO, SAMPLE_VAULT
from tests.test_frontmatter_fastpath import entry
from vaulttools.lint import positions
from vaulttools.lint.rules import item_span, key_span, value_span

EXTRA_KEYS = ("missing", "vaulttools-ignore", "title", "slug", "priority", "updated", "visibility", "type")


def _check_note(rel: str, raw: bytes) -> tuple[int, int]:
    """Compare on one note; (answers given, answers declined)."""
    note = read_note(rel, raw)
    engine = parse_text(note.text, rel) if note.text else None
    given_, declined = 0, 0
    keys = list(note.meta) if isinstance(note.meta, dict) else []
    for key in [k for k in keys if isinstance(k, str)] + list(LIST_FIELDS) + list(EXTRA_KEYS):
        present = isinstance(note.meta, dict) and key in note.meta
        span = positions.key_span(note, key)
        if span is None:
            declined += present
        else:
            given_ += 1
            assert engine is not None and span == engine.key_positions.get(key), (rel, key)
        items = positions.item_spans(note, key)
        if items is None:
            declined += present
        else:
            given_ += 1
            assert engine is not None and items == (engine.item_positions.get(key) or []), (rel, key, items)
        # the rules' helpers, whichever way they get their spans, give the engine's
        assert key_span(note, key) == (note.key_positions.get(key) or key_span.__globals__["frontmatter_start"](note))
        assert value_span(note, key) is not None
        spans = note.item_positions.get(key) or []
        for i in range(len(spans) + 1):
            expected = spans[i] if i < len(spans) else key_span(note, key)
            assert item_span(note, key, i) == expected, (rel, key, i)
    positions.reset()
    return given_, declined


def _vault_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.md") if not any(part.startswith(".") for part in p.relative_to(root).parts))


@pytest.mark.parametrize("name", ["sample", "fixtures", "grasbot-vault", "obsidian-help-en", "obsidian-help-fr"])
def test_same_spans_as_the_engine_on_real_notes(name: str) -> None:
    if name == "sample":
        root = SAMPLE_VAULT
    elif name == "fixtures":
        root = REPO / "tests" / "fixtures"
    else:
        root = CORPORA / name
        if not root.is_dir():
            pytest.skip(f"corpus {name} not available")
    given_ = 0
    for path in _vault_files(root):
        g, _ = _check_note(path.relative_to(root).as_posix(), path.read_bytes())
        given_ += g
    assert given_ > 0


def test_same_spans_on_a_synthetic_vault(tmp_path: Path) -> None:
    import sys

    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import synth
    finally:
        sys.path.pop(0)
    root = synth.generate(tmp_path / "synth", 300, seed=7)
    given_ = declined = 0
    for path in _vault_files(root):
        g, d = _check_note(path.relative_to(root).as_posix(), path.read_bytes())
        given_ += g
        declined += d
    assert given_ > 50 * declined  # the usual notes are answered without the engine


def test_the_usual_aliases_are_answered_without_the_engine() -> None:
    raw = ("---\ntitle: Push swap\naliases:\n  - push swap\n  - \"tri à deux piles\"\n  - 42\n# note\n  -\n"
           "tags: [algo, 'c', \"x y\"]\nslug: push-swap\n---\nbody\n").encode()
    note = read_note("push-swap.md", raw)
    assert positions.item_spans(note, "aliases") is not None
    assert positions.item_spans(note, "tags") is not None
    assert positions.key_span(note, "slug") is not None
    _check_note("push-swap.md", raw)


@pytest.mark.parametrize("fm", [
    "aliases: # c\n  - a\n",          # a comment after the key
    "aliases:\n  - a\n  cont\n",       # a continuation line
    "aliases:\n  - a\n    - b\n",      # odd indentation
    "aliases:\n  - 'a'\n",             # single-quoted items: left to the engine
    "\"aliases\": [a]\n",              # a quoted key
    "aliases: [a]\naliases: [b]\n",    # a repeated key
    "aliases: &x [a]\n",               # an anchor
    "aliases:\n\t- a\n",               # a tab
    "aliases: [a,\n  b]\n",            # a multi-line flow sequence
    "aliases:\n  - 0x1F\n",            # a typed scalar that does not print back as written
])
def test_unusual_frontmatters_are_left_to_the_engine_or_agree(fm: str) -> None:
    _check_note("n.md", ("---\n" + fm + "---\nbody\n").encode())


@settings(max_examples=300, deadline=None)
@given(st.lists(entry(), max_size=8).map("".join))
def test_random_frontmatters_agree_with_the_engine(fm: str) -> None:
    _check_note("n.md", ("---\n" + fm + "---\nbody\n").encode())
