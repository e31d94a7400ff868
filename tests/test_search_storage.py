"""The index's compact storage: postings on 2 bytes per value while they fit, 4 when they do not, and an
update that meets a value too wide for the 2-byte arrays answers exactly as a fresh build."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import grasbot.search.index as search_module
from grasbot.search.index import SearchIndex
from grasbot.vault import Vault
from tests.test_search import _full_snapshot

QUESTIONS = ["kayak", "kayak rouge", "voilier", "le kayak de mer", "canoe bleu", "Parle-moi du voilier rouge"]


def _note(root: Path, name: str, title: str, body: str) -> Path:
    path = root / f"{name}.md"
    path.write_text(f"---\ntitle: {title}\nvisibility: public\n---\n{body}\n", encoding="utf-8")
    return path


def _snapshot(index: SearchIndex) -> list:
    return _full_snapshot(index, QUESTIONS)


def _stats_by_id(index: SearchIndex, term: str) -> dict[str, tuple[float, float]]:
    docs, fm, body = index._postings(index._vocab[term])
    return {index._docs[int(s)].id: (float(f), float(b)) for s, f, b in zip(docs, fm, body)}  # type: ignore[union-attr]


def test_small_values_are_stored_on_two_bytes(tmp_path: Path) -> None:
    _note(tmp_path, "a", "Kayak", "Un kayak rouge. " * 3)
    _note(tmp_path, "b", "Voilier", "Un voilier bleu.")
    index = SearchIndex.build(Vault.load(tmp_path))
    assert (index._p_doc.dtype, index._p_fm.dtype, index._p_body.dtype) == (np.uint16, np.float16, np.float16)
    # the title at 3, and 0.5 for the note's definition (its first paragraph names the kayak)
    assert _stats_by_id(index, "kayak") == {"a": (3.5, 3.0)}


def test_values_too_wide_for_two_bytes_stay_exact(tmp_path: Path) -> None:
    """A body count or a weighted frequency above what a float16 holds exactly: a fresh build stores the
    postings on 4 bytes, and an update that brings such a value widens the term's postings."""
    _note(tmp_path, "a", "Kayak", "Un kayak rouge.")
    _note(tmp_path, "b", "Voilier", "Un voilier bleu.")
    vault = Vault.load(tmp_path)
    index = SearchIndex.build(vault)
    assert index._p_body.dtype == np.float16
    # 2,049 in the body and 1,024.5 in the short fields (title 341 times at 3, one alias at 1.5): neither
    # is a float16 (spacing 1 from 1,024, 2 from 2,048). Its first paragraph does not name it: no
    # definition (search.index.LEAD_WEIGHT) adds to the short fields.
    big = tmp_path / "c.md"
    big.write_text(f"---\ntitle: {'kayak ' * 341}canoe\naliases: [kayak]\n---\nUn bateau.\n\n{'kayak ' * 2049}rouge\n", encoding="utf-8")
    index.update(vault, vault.update_file(big))
    edited = _note(tmp_path, "a", "Kayak", "Un kayak rouge. " + "voilier " * 2049)
    index.update(vault, vault.update_file(edited))
    fresh = SearchIndex.build(Vault.load(tmp_path))
    assert fresh._p_body.dtype == np.float32 and fresh._p_fm.dtype == np.float32
    assert _stats_by_id(index, "kayak") == _stats_by_id(fresh, "kayak") == {"a": (3.5, 1.0), "c": (1024.5, 2049.0)}
    # (the definitions of "a" and "b" name them, and the first holds the sailing boats too)
    assert _stats_by_id(index, "voili") == _stats_by_id(fresh, "voili") == {"a": (0.5, 2049.0), "b": (3.5, 1.0)}
    assert index.ids == fresh.ids
    assert _snapshot(index) == _snapshot(fresh)


def test_slots_beyond_two_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A vault that grows past the 2-byte slot bound (lowered here to 4 notes): the postings of the notes
    added after it are widened, and the index answers as a fresh build (which stores slots on 4 bytes)."""
    monkeypatch.setattr(search_module, "_U16_SLOTS", 4)
    for i, colour in enumerate(("rouge", "bleu", "vert")):
        _note(tmp_path, f"n{i}", f"Kayak {colour}", f"Un kayak {colour} et un voilier.")
    vault = Vault.load(tmp_path)
    index = SearchIndex.build(vault)
    assert index._p_doc.dtype == np.uint16
    for i, colour in enumerate(("jaune", "noir", "blanc"), start=3):
        index.update(vault, vault.update_file(_note(tmp_path, f"n{i}", f"Kayak {colour}", f"Un kayak {colour}, un canoe.")))
    index.update(vault, vault.update_file(_note(tmp_path, "n0", "Kayak rouge", "Un voilier rouge.")))
    fresh = SearchIndex.build(Vault.load(tmp_path))
    assert fresh._p_doc.dtype == np.int32
    assert index._postings(index._vocab["kayak"])[0].dtype == np.int32  # widened by the update
    assert _stats_by_id(index, "kayak") == _stats_by_id(fresh, "kayak")
    assert index.ids == fresh.ids
    assert _snapshot(index) == _snapshot(fresh)


def test_find_and_fits() -> None:
    from grasbot.search.index import _F16_EXACT, _find, _fits

    docs = np.array([1, 5, 9], dtype=np.uint16)
    fms = np.zeros(3, dtype=np.float16)
    assert [_find(docs, s) for s in (0, 5, 6, 70_000)] == [0, 1, 2, 3]
    assert _fits(docs, fms, fms, 9, _F16_EXACT, 2.0)
    assert not _fits(docs, fms, fms, 70_000, 1.0, 1.0)
    assert not _fits(docs, fms, fms, 1, _F16_EXACT + 0.5, 1.0)
    assert not _fits(docs, fms, fms, 1, 1.0, 1025.0)
    assert all(float(np.float16(k * 0.5)) == k * 0.5 for k in range(int(2 * _F16_EXACT) + 1))
