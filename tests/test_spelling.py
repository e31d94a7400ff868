"""Spelling correction (grasbot/search/spelling.py): edit distance, candidates at the stem and word level, the
choice among them, when a correction is confident, determinism, and agreement with the tokenizer."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from grasbot.search.spelling import Correction, Speller, inflections, is_swap, max_distance, stem_words
from grasbot.text import edit_distance
from grasbot.search.tokenize import stem, tokenize, words

REPO = Path(__file__).resolve().parents[1]


def speller(df: dict[str, int], names: frozenset[str] = frozenset()) -> Speller:
    return Speller(df, names, stem_words)


def correct(sp: Speller, word: str) -> Correction | None:
    """Correct a word as the search engine does: its token and the folded word typed."""
    folded = words(word)[0]
    return sp.correct(stem(folded), folded)


# -- edit distance ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("python", "python", 0),
        ("pyhton", "python", 1),  # a swap of neighbours is one edit
        ("pyton", "python", 1),
        ("pythons", "python", 1),
        ("pithon", "python", 1),
        ("profesionel", "professionnel", 2),
        ("abc", "cab", 2),
        ("kitten", "sitting", 3),
        ("", "abc", 3),
    ],
)
def test_edit_distance(a: str, b: str, expected: int) -> None:
    assert edit_distance(a, b, 5, transpositions=True) == expected
    assert edit_distance(b, a, 5, transpositions=True) == expected


def test_edit_distance_stops_at_its_limit() -> None:
    assert edit_distance("kitten", "sitting", 1, transpositions=True) == 2  # "more than 1"
    assert edit_distance("a", "abcdef", 2, transpositions=True) == 3  # lengths alone exceed the limit


def test_is_swap_and_max_distance() -> None:
    assert is_swap("pyhton", "python") and is_swap("ypthon", "python")
    assert not is_swap("pyhton", "pyhton") and not is_swap("pyton", "python") and not is_swap("abcd", "badc")
    assert [max_distance(n) for n in (3, 4, 5, 7, 8, 12)] == [0, 0, 1, 1, 2, 2]


# -- candidates and the choice ---------------------------------------------------------------------------


def test_swap_is_corrected_and_confident() -> None:
    fix = correct(speller({"python": 5, "rust": 3}), "pyhton")
    assert fix is not None and (fix.term, fix.distance, fix.confident) == ("python", 1, True)


def test_word_level_finds_what_stemming_hides() -> None:
    # "competance" stems to "compet"; "compétence" to "competent", three edits away as stems and one as
    # words. "compt" is one edit from the stem "compet": the whole-word match is preferred.
    assert stem("competance") != stem("compétence")
    sp = speller({stem("compétence"): 6, "compt": 9, "rust": 2})
    fix = correct(sp, "competance")
    assert fix is not None and fix.term == stem("compétence") and fix.confident


def test_two_edits_only_on_long_words() -> None:
    sp = speller({stem("professionnel"): 4, stem("python"): 4})
    fix = correct(sp, "profesionel")
    assert fix is not None and fix.term == stem("professionnel") and fix.distance == 2 and fix.confident
    assert correct(sp, "pytonn") is None or correct(sp, "pytonn").distance == 1  # type: ignore[union-attr]
    assert speller({"abcdefg": 3}).correct("abdcfeg", "abdcfeg") is None  # 7 letters: one edit at most


def test_first_letter_is_kept() -> None:
    # "demain" is one edit from "semain" (semaine) but another word: not a candidate at all.
    assert speller({"semain": 9}).correct("demain", "demain") is None
    # ... except a swap of the first two letters.
    fix = speller({"python": 3}).correct("ypthon", "ypthon")
    assert fix is not None and fix.term == "python"


def test_short_tokens_and_numbers_are_left_alone() -> None:
    sp = speller({"rust": 4, "2024": 6, "python": 3})
    assert sp.correct("rsut", "rsut") is None  # 4 letters: too many neighbours
    assert sp.correct("2025", "2025") is None
    assert sp.correct("python", "python") is None  # a known term has no correction candidate but itself


def test_a_real_short_word_near_a_vault_word_is_not_confident() -> None:
    # "demain" is one edit from "domain" (domaine), held by many notes: a candidate for ranking, but six
    # letters are too few to tell a typo from another word of the language.
    fix = speller({"domain": 12}).correct("demain", "demain")
    assert fix is not None and fix.term == "domain" and not fix.confident


def test_a_word_of_one_note_is_no_confident_correction() -> None:
    fix = speller({"quintard": 1}).correct("quintar", "quintar")
    assert fix is not None and fix.term == "quintard" and not fix.confident
    # ... unless it names a note (title, alias, slug).
    fix = speller({"quintard": 1}, frozenset({"quintard"})).correct("quintar", "quintar")
    assert fix is not None and fix.confident


def test_ties_prefer_names_then_frequency_and_ambiguity_is_not_confident() -> None:
    # "carteron" and "carleron" are both one substitution from "carxeron".
    fix = speller({"carteron": 3, "carleron": 9}).correct("carxeron", "carxeron")
    assert fix is not None and fix.term == "carleron" and fix.confident  # 9 notes vs 3: clearly likelier
    fix = speller({"carteron": 6, "carleron": 9}).correct("carxeron", "carxeron")
    assert fix is not None and fix.term == "carleron" and not fix.confident  # too close to call
    fix = speller({"carteron": 3, "carleron": 9}, frozenset({"carteron"})).correct("carxeron", "carxeron")
    assert fix is not None and fix.term == "carteron" and fix.confident  # a name beats a plain word


def test_result_does_not_depend_on_vocabulary_order() -> None:
    rng = random.Random(7)
    vocab = {w: rng.randint(1, 9) for w in ("carton", "carlon", "cartel", "python", "pithon", "competent", "compt", "complet")}
    expected = None
    for _ in range(10):
        items = list(vocab.items())
        rng.shuffle(items)
        sp = speller(dict(items))
        got = [sp.correct(stem(w), w) for w in ("carxon", "pyhton", "competance", "cartle")]
        assert expected is None or got == expected
        expected = got


def test_unicode_and_empty_vocabularies() -> None:
    assert speller({}).correct("python", "python") is None
    sp = speller({"日本語テスト": 2, "çàéèùâ": 2, "python": 3})
    assert sp.correct("日本語テスタ", "日本語テスタ") is not None  # any script, stem level
    fix = sp.correct("pyhton", "pyhton")
    assert fix is not None and fix.term == "python"


# -- agreement with the tokenizer ------------------------------------------------------------------------


def test_stem_words_agrees_with_the_tokenizer() -> None:
    sample = sorted({w for path in (REPO / "vault").rglob("*.md") for w in words(path.read_text(encoding="utf-8"))})
    sample += ["le", "les", "1", "42", "2024", "developpee", "creees", "competance", "pyhton"]
    assert len(sample) > 1000
    assert stem_words(sample) == [stem(w) for w in sample]


def test_tokens_of_a_question_meet_the_index_terms() -> None:
    # The corrector works on the index's tokens: a correction is an index term, as tokenize makes them.
    index_terms = set(tokenize("Compétences en Python et parcours professionnel"))
    sp = speller({t: 3 for t in index_terms})
    for typed in ("competance", "pyhton", "profesionel"):
        fix = correct(sp, typed)
        assert fix is not None and fix.term in index_terms and fix.confident


def test_an_edit_that_reveals_a_suffix_the_stemmer_missed() -> None:
    # "inceptoin" keeps its garbled ending (the stemmer recognizes none); "inception" stems to "incept".
    assert stem("inceptoin") == "inceptoin" and stem("inception") == "incept"
    fix = correct(speller({"incept": 1}, frozenset({"incept"})), "inceptoin")
    assert fix is not None and fix.term == "incept" and fix.confident
    # ... but an edit toward a much shorter stem of another word is no candidate: the stemmer did cut
    # "tempaltes" (to "tempalt"), and "tempates" -> "temp" is another word.
    fix = correct(speller({"temp": 30, "templat": 2}), "tempaltes")
    assert fix is not None and fix.term == "templat"
    # Very short stems are never candidates.
    assert speller({"dem": 40}).correct("demain", "demain") is None


# -- other inflections of a question word (Speller.inflect) ----------------------------------------------


@pytest.mark.parametrize(
    ("typed", "vault_word"),
    [
        ("pointent", "pointer"),  # third person plural: Snowball keeps `-ent`
        ("mettent", "mettre"),
        ("trouvent", "trouver"),
        ("mangent", "manger"),
        ("mangeons", "manger"),  # `-ons` outside R2: `mangeon`
        ("communiquent", "communiquer"),
        ("metre", "mettre"),  # one consonant for two, too short for the spelling corrector
        ("renomer", "renommer"),
        ("mettait", "mettre"),  # the imperfect's radical is not the infinitive's stem (`met`, `mettr`)
        ("prennent", "prendre"),
        ("viennent", "venir"),
        ("ecrivent", "écrire"),
        ("construisent", "construire"),
        ("reecrite", "réécrire"),
        ("transmis", "transmettre"),
        ("retient", "retenir"),  # not `retirer`
        ("mangèrent", "manger"),  # folding hides `-èrent` from the stemmer
    ],
)
def test_another_inflection_meets_the_vault_form(typed: str, vault_word: str) -> None:
    folded = words(typed)[0]
    term = stem(vault_word)
    assert stem(typed) != term  # the stemmer alone leaves them apart
    sp = speller({term: 1, "python": 4})  # a word of one note: no coincidence here, unlike a typo
    fix = sp.correct(stem(typed), folded)
    assert fix is not None and (fix.term, fix.inflection, fix.confident, fix.distance) == (term, True, True, 0)


def test_inflection_is_tried_before_spelling_and_only_for_unknown_tokens() -> None:
    # "mangent" is one edit from nothing here, but "manger" is a vault word; a known token is never replaced.
    sp = speller({"mang": 2, "mangent": 1})
    assert sp.correct("mangent", "mangent") is None
    assert sp.inflect("mangent", "mangent") is None
    sp = speller({"mang": 2})
    fix = sp.correct("mangent", "mangent")
    assert fix is not None and fix.inflection
    # Without the word typed, or without the tokenizer's stemming, there is no inflection to try.
    assert sp.inflect("mangent", "") is None
    assert Speller({"mang": 2}).correct("mangent", "mangent") is None


#: Vault words that begin like the words below (the stems a vault of these words would hold).
_LOOKALIKES = (
    "âge agir agence CLI cliquer clé clenche momie patte pâtir patio souvenir parer partir part talus taler "
    "argile porter port mille cours courir valeur valoir corps mener mentir let démontrer retirer"
).split()


@pytest.mark.parametrize(
    "typed",
    ["agent", "moment", "client", "clients", "patient", "souvent", "parent", "talent", "argent", "portions",
     "millions", "questions", "versions", "regions", "opinions", "course", "value", "corpus", "menu", "lettre",
     "demontez", "retient"],
)
def test_words_that_only_look_inflected_are_left_alone(typed: str) -> None:
    # `agent` is not `âge` + `-ent`, `client` not `CLI` + `-ent`, `portions` not `porter`, `menu` not `mener`.
    folded = words(typed)[0]
    sp = speller({term: 5 for term in stem_words([words(w)[0] for w in _LOOKALIKES]) if term})
    assert stem(folded) not in sp._df  # unknown to this vault: the search engine would consult the speller
    assert sp.inflect(stem(folded), folded) is None
    fix = sp.correct(stem(folded), folded)
    assert fix is None or not fix.inflection


def test_inflection_choice_prefers_names_then_frequency() -> None:
    # "ecrivent" may meet "ecrire" (`ecrir`) or "ecrivez" (`ecriv`): both are the verb; a name wins, then the
    # most notes, then alphabetical order.
    token = stem("ecrivent")
    assert speller({"ecrir": 2, "ecriv": 5}).inflect(token, "ecrivent").term == "ecriv"  # type: ignore[union-attr]
    assert speller({"ecrir": 2, "ecriv": 5}, frozenset({"ecrir"})).inflect(token, "ecrivent").term == "ecrir"  # type: ignore[union-attr]
    assert speller({"ecriv": 5, "ecrir": 5}).inflect(token, "ecrivent").term == "ecrir"  # type: ignore[union-attr]
    # A stem shorter than its radical by more than a final letter is another word: `mettent` is not `met`
    # through `mett-er`, but `mettre` is kept.
    assert speller({"met": 9}).inflect("mettent", "mettent") is None


def test_inflections_are_sorted_forms_of_ascii_words() -> None:
    forms = inflections("mangent")
    assert forms == sorted(set(forms)) and ("mang", "manger") in forms
    assert inflections("café") == [] and inflections("c3po") == [] and inflections("agent") == []
    assert all(form != "mangent" for _core, form in forms)


def test_search_counts_an_inflection_as_the_word_typed(tmp_path: Path) -> None:
    from grasbot.search.index import SearchIndex
    from grasbot.vault import Vault

    notes = {
        "philosophes.md": "---\ntitle: Le dîner des philosophes\n---\nCinq philosophes doivent manger autour d'une table.\n",
        "pointeurs.md": "---\ntitle: Pointeurs en C\n---\nUn pointeur sert à pointer vers une adresse mémoire.\n",
        "jardin.md": "---\ntitle: Le jardin\n---\nLes tomates et les courgettes du potager.\n",
    }
    for name, text in notes.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    index = SearchIndex.build(Vault.load(tmp_path))
    plural = index.search("Comment mangent les philosophes ?")
    singular = index.search("Comment mange les philosophes ?")
    assert plural.stats["inflected"] == {"mangent": "mang"} and plural.stats["corrected"] == {}
    assert [h.id for h in plural.hits] == [h.id for h in singular.hits]
    assert [h.score for h in plural.hits] == [h.score for h in singular.hits]
    assert plural.grounded == singular.grounded and plural.stats["evidence"] == singular.stats["evidence"]
    result = index.search("Vers quoi pointent-ils ?")
    assert result.hits and result.hits[0].id == "pointeurs" and result.stats["inflected"] == {"pointent": "point"}
    # A word that only looks inflected is not cut to a vault word: `client` is not `cli`.
    assert index.search("Quel client ?").stats["inflected"] == {}
