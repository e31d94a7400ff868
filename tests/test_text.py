"""The one text module: folding, name keys and edit distance, against plain reference versions."""

from __future__ import annotations

import random
import unicodedata

import pytest

from grasbot.text import edit_distance, fold, fold_each, loose_name_key, name_key, name_key_fast


def _fold_whole(text: str) -> str:
    """`fold` written the plain way, on the whole text: decompose, drop the marks, case-fold, collapse."""
    text = text.replace("œ", "oe").replace("Œ", "oe").replace("æ", "ae").replace("Æ", "ae")
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(stripped.casefold().split())


def _distance_table(a: str, b: str, transpositions: bool) -> int:
    """The textbook dynamic programme (with the optimal-string-alignment swap when asked)."""
    rows = [list(range(len(b) + 1))]
    for i, ca in enumerate(a, 1):
        row = [i]
        for j, cb in enumerate(b, 1):
            value = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + (ca != cb))
            if transpositions and i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                value = min(value, rows[-2][j - 2] + 1)
            row.append(value)
        rows.append(row)
    return rows[-1][-1]


def test_fold_examples() -> None:
    assert fold("  École   42 ") == "ecole 42"
    assert fold("Sécurité Œuvre cœur Æther") == "securite oeuvre coeur aether"
    assert fold("Push  Swap") == fold("push swap") == "push swap"
    assert fold("Straße") == "strasse"
    assert fold("plain ascii 42") == "plain ascii 42"


def test_fold_by_character_is_fold_of_the_whole_text() -> None:
    """`fold` translates character by character; it must equal decomposing the whole text first."""
    rng = random.Random(7)
    pools = [range(0x20, 0x250), range(0x300, 0x370), range(0x370, 0x400), range(0x1E00, 0x1F00),
             range(0xAC00, 0xAC20), [0x130, 0x1E9E, 0xDF, 0x2126, 0x212B, 0x3000, 0xA0, 0x85, 0x1F1, 0xFB01, 0x345]]
    texts = ["".join(chr(rng.choice(rng.choice(pools))) for _ in range(rng.randint(1, 8))) for _ in range(20_000)]
    texts += [chr(cp) for cp in range(0x80, 0x3000)] + ["Sécurité", "E\u0301cole  Été", "ΣΊΣΥΦΟΣ", "İstanbul"]
    for text in texts:
        assert fold(text) == _fold_whole(text), repr(text)


def test_fold_each_keeps_offsets() -> None:
    rng = random.Random(11)
    for _ in range(5000):
        text = "".join(chr(rng.choice(range(0x20, 0x2000))) for _ in range(rng.randint(0, 10)))
        folded = fold_each(text)
        assert len(folded) == len(text), repr(text)
    assert fold_each("Été  Straße") == "ete  straße"  # (ß folds to two letters: only lower-cased)


def test_name_keys() -> None:
    nfd = unicodedata.normalize("NFD", "Été")
    assert name_key(nfd) == name_key("ÉTÉ") == "été"  # Obsidian: NFC, lower case, accents kept
    assert name_key("ete") != name_key("été")
    assert name_key_fast("Push-Swap") == "push-swap" and name_key_fast(nfd) == "été"
    # the loose key matches whatever the resolver's key matches, and more
    for a, b in [(nfd, "ÉTÉ"), ("Straße", "STRASSE"), ("Note", "NOTE")]:
        if name_key(a) == name_key(b):
            assert loose_name_key(a) == loose_name_key(b)
    assert loose_name_key("Straße") == loose_name_key("STRASSE")


@pytest.mark.parametrize("transpositions", [False, True])
def test_edit_distance_is_the_textbook_one_and_stops_at_its_limit(transpositions: bool) -> None:
    rng = random.Random(3)
    for _ in range(5_000):
        a = "".join(rng.choice("abcé d") for _ in range(rng.randint(0, 12)))
        b = "".join(rng.choice("abcé d") for _ in range(rng.randint(0, 12)))
        expected = _distance_table(a, b, transpositions)
        assert edit_distance(a, b, transpositions=transpositions) == expected, (a, b)
        assert edit_distance(b, a, transpositions=transpositions) == expected, (a, b)
        for limit in (0, 1, 2, 5):
            assert edit_distance(a, b, limit, transpositions=transpositions) == min(expected, limit + 1), (a, b, limit)
    long_a, long_b = "x" * 90 + "section", "y" + "x" * 89 + "sectoin"  # past 64 bits
    assert edit_distance(long_a, long_b) == 3
    assert edit_distance(long_a, long_b, transpositions=True) == 2
