"""Query expansion (grasbot/search/lexicon.py) and how soft terms mix into ranking and evidence (grasbot/search/grounding.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from grasbot.search import grounding, lexicon
from grasbot.search.index import SearchIndex
from grasbot.search.tokenize import stem, tokenize
from grasbot.vault import Vault
from tests.conftest import REPO


def terms(found: list[lexicon.Expansion]) -> list[str]:
    return [e.term for e in found]


def test_every_entry_is_tokenized_and_never_expands_to_itself() -> None:
    table = lexicon.entries()
    assert len(table) > 100
    for trigger, targets in table:
        assert trigger and all(trigger)  # stop words and punctuation never make a trigger
        assert not set(trigger) & set(targets)
        assert list(targets) == sorted(targets)


def test_synonym_group_works_both_ways() -> None:
    vocab = {stem("recrutement"), stem("embaucher")}
    assert terms(lexicon.expand(tokenize("Peut-on l'embaucher ?"), vocab)) == [stem("recrutement")]
    assert terms(lexicon.expand(tokenize("recrutement"), vocab)) == [stem("embaucher")]


def test_directed_entry_goes_one_way_only() -> None:
    # English -> French: "salary" leads to "salaire", a French question with "salaire" gets no English.
    vocab = {stem("salaire"), stem("salary")}
    assert terms(lexicon.expand(tokenize("What salary does he ask?"), vocab)) == [stem("salaire")]
    assert stem("salary") not in terms(lexicon.expand(tokenize("Quel salaire ?"), vocab))


def test_only_vocabulary_terms_and_weight_below_original() -> None:
    found = lexicon.expand(tokenize("Is he available?"), {stem("disponible")})
    assert terms(found) == [stem("disponible")]
    assert all(0 < e.weight < 1 for e in found)
    assert found[0].source == stem("available")
    assert lexicon.expand(tokenize("Is he available?"), set()) == []  # the vault holds none: nothing


def test_a_translation_ranks_above_a_synonym() -> None:
    # "tabs" is the English for `onglets` (the same word): TRANSLATION_WEIGHT; a French synonym stays at
    # EXPANSION_WEIGHT, a word family at FAMILY_WEIGHT.
    (tab,) = lexicon.expand(tokenize("How do I pin tabs?"), {stem("onglets")})
    assert tab.term == stem("onglets") and tab.weight == lexicon.TRANSLATION_WEIGHT
    (synonym,) = lexicon.expand(tokenize("recrutement"), {stem("embaucher")})
    assert synonym.weight == lexicon.EXPANSION_WEIGHT < lexicon.TRANSLATION_WEIGHT < 1.0
    (family,) = lexicon.expand(tokenize("perdre"), {stem("perte")})
    assert family.weight == lexicon.FAMILY_WEIGHT


def test_note_taking_words_in_english_reach_the_french_ones() -> None:
    vocab = {stem(w) for w in ("signets", "barre", "latérale", "propriétés", "aléatoire", "domotique")}
    assert set(terms(lexicon.expand(tokenize("bookmarks"), vocab))) == {stem("signets")}
    assert set(terms(lexicon.expand(tokenize("sidebar"), vocab))) == {stem("barre"), stem("latérale")}
    assert set(terms(lexicon.expand(tokenize("properties"), vocab))) == {stem("propriétés")}
    assert set(terms(lexicon.expand(tokenize("random note"), vocab))) == {stem("aléatoire")}
    assert set(terms(lexicon.expand(tokenize("smart home"), vocab))) == {stem("domotique")}
    # French words that look like English ones are no triggers: "versions", "fichier" expand nothing here.
    assert lexicon.expand(tokenize("les versions du fichier"), vocab | {stem("historique")}) == []


def test_multi_word_trigger_needs_all_its_words() -> None:
    vocab = {stem("reconversion")}
    assert terms(lexicon.expand(tokenize("a career change"), vocab)) == [stem("reconversion")]
    assert terms(lexicon.expand(tokenize("his career"), vocab)) == []


def test_keep_stops_expanding_common_words_but_not_phrases() -> None:
    vocab = {stem("alias"), stem("coffre"), stem("vault")}
    assert terms(lexicon.expand(tokenize("mon coffre"), vocab, keep={stem("coffre")})) == []
    assert terms(lexicon.expand(tokenize("mon coffre"), vocab)) == [stem("vault")]
    # "pièce jointe" is a phrase: expanded even when both of its words are common in the vault.
    keep = {stem("pièce"), stem("jointe")}
    found = terms(lexicon.expand(tokenize("une pièce jointe"), {stem("image")}, keep=keep))
    assert found == [stem("image")]


def test_expansion_is_deterministic_and_sorted() -> None:
    vocab = {t for _trigger, targets in lexicon.entries() for t in targets}
    question = tokenize("Peut-on l'embaucher ? Quel salaire, quelles compétences, quel téléphone ?")
    first = lexicon.expand(question, vocab)
    assert first == lexicon.expand(list(reversed(question)), vocab)
    assert terms(first) == sorted(terms(first))
    assert len(set(terms(first))) == len(first)


def test_known_words_are_not_misspellings() -> None:
    assert lexicon.knows(stem("available"))
    assert not lexicon.knows(stem("zzzyx"))


# -- grounding.combine ----------------------------------------------------------------------------------


def test_combine_counts_a_word_s_expansions_once_as_evidence() -> None:
    # Three terms over two notes: term 0 is an original word, terms 1 and 2 expand the same word (group 0).
    doc_ids = np.array([0, 1, 0, 1, 0])
    w = np.array([2.0, 1.0, 4.0, 3.0, 6.0])
    lengths = np.array([1, 2, 2])  # term 0: note 0; term 1: notes 1, 0; term 2: notes 1, 0
    rank_weight = np.array([1.0, 0.5, 0.5])
    evidence_weight = np.array([1.0, 0.5, 0.5])
    group = np.array([-1, 0, 0])
    rank, evidence = grounding.combine(doc_ids, w, lengths, rank_weight, evidence_weight, group, 2)
    # Ranking: the original in full, the group's best term plus RANK_OTHER_SHARE of the others:
    # note 0 = 2 + 0.5*6 + s * 0.5*4, note 1 = 0.5*3 + s * 0.5*1.
    s = grounding.RANK_OTHER_SHARE
    assert rank.tolist() == pytest.approx([5.0 + s * 2.0, 1.5 + s * 0.5])
    # Evidence: the original in full, the group's best term at half: note 0 = 2 + 0.5*6, note 1 = 0.5*3.
    assert evidence.tolist() == pytest.approx([5.0, 1.5])


def test_combine_without_soft_terms_is_plain_bm25() -> None:
    doc_ids = np.array([0, 1, 1])
    w = np.array([1.0, 2.0, 3.0])
    rank, evidence = grounding.combine(doc_ids, w, np.array([1, 2]), np.ones(2), np.ones(2), np.array([-1, -1]), 3)
    assert rank.tolist() == [1.0, 5.0, 0.0]
    assert evidence.tolist() == rank.tolist()


# -- through the search engine --------------------------------------------------------------------------


def note(root: Path, name: str, title: str, body: str) -> None:
    (root / f"{name}.md").write_text(
        f"---\ntitle: \"{title}\"\nslug: {name}\nvisibility: public\n---\n\n{body}\n", encoding="utf-8"
    )


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    note(root, "recherche", "Ce qu'il recherche", "Ouvert au recrutement : disponibilité en janvier, poste de développeur.")
    note(root, "embauche", "Première embauche", "Sa première embauche date de 2012, dans une tannerie.")
    note(root, "loisirs", "Centres d'intérêt", "Randonnée, échecs et lecture le week-end.")
    note(root, "rust", "Rust", "Rust pour les services réseau, depuis 2021.")
    note(root, "python", "Python", "Python pour les données et les scripts.")
    # Words held by more than a tenth of the notes are not expanded: enough notes for one note's word to be rare.
    for i, subject in enumerate(["cartographie", "base de données", "conteneurs", "tests", "cuisine", "photographie"]):
        note(root, f"sujet-{i}", subject.capitalize(), f"Quelques lignes sur {subject}.")
    return root


def test_a_question_in_other_words_finds_the_note(vault: Path) -> None:
    index = SearchIndex.build(Vault.load(vault))
    result = index.search("Is he available for a job?")
    assert result.hits and result.hits[0].id == "recherche"
    assert result.stats["evidence"] > 0  # translations count as evidence, at a discount


def test_an_original_word_outranks_its_synonym(vault: Path) -> None:
    index = SearchIndex.build(Vault.load(vault))
    ids = [h.id for h in index.search("embauche").hits]
    assert ids[:2] == ["embauche", "recherche"]  # the literal word first, the synonym (recrutement) next


def test_expansions_alone_never_reach_full_evidence(vault: Path) -> None:
    index = SearchIndex.build(Vault.load(vault))
    literal = index.search("recrutement").stats["evidence"]
    via_synonym = index.search("engager").stats["evidence"]  # not in the vault: expanded
    assert 0 < via_synonym < literal


def test_an_off_topic_question_gains_nothing(vault: Path) -> None:
    index = SearchIndex.build(Vault.load(vault))
    result = index.search("Quelle est la capitale de l'Australie ?")
    assert not result.grounded


def test_combine_can_require_an_original_word(monkeypatch: pytest.MonkeyPatch) -> None:
    doc_ids = np.array([0, 0, 1])
    w = np.array([2.0, 4.0, 3.0])
    args = (np.array([1, 2]), np.array([1.0, 0.5]), np.array([1.0, 0.5]), np.array([-1, 0]), 2)
    assert grounding.combine(doc_ids, w, *args)[1].tolist() == pytest.approx([4.0, 1.5])
    monkeypatch.setattr(grounding, "SOFT_NEEDS_ORIGINAL", True)
    # Note 1 holds only the expansion: no evidence; note 0 holds the original word too.
    assert grounding.combine(doc_ids, w, *args)[1].tolist() == pytest.approx([4.0, 0.0])


def test_expansion_does_not_depend_on_the_hash_seed() -> None:
    code = (
        "from grasbot.search import lexicon; from grasbot.search.tokenize import tokenize;"
        "v = {t for _a, b in lexicon.entries() for t in b};"
        "print([(e.term, e.weight, e.source) for e in lexicon.expand("
        "tokenize('Peut-on embaucher ce développeur ? salaire, téléphone, skills, hobbies'), v)])"
    )
    outputs = set()
    for seed in ("0", "1", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, cwd=REPO)
        outputs.add(done.stdout)
    assert len(outputs) == 1 and outputs.pop().count("(") > 5


# -- an expansion two question words reach (grasbot/search/lexicon.py `sources`) --------------------------------


def test_an_expansion_keeps_every_word_that_reaches_it() -> None:
    vocab = {stem("salaire")}
    found = lexicon.expand(tokenize("Quelles sont ses prétentions salariales ?"), vocab)
    assert terms(found) == [stem("salaire")]
    assert found[0].source == found[0].sources[0]
    assert sorted(found[0].sources) == sorted([stem("prétentions"), stem("salariales")])


def test_combine_counts_a_shared_expansion_for_each_word_it_stands_for() -> None:
    # One soft term (note 0) standing for original words 0 and 1: evidence for both, each at its weight.
    doc_ids = np.array([0])
    w = np.array([4.0])
    args = (np.array([1]), np.array([0.5]), np.array([0.5]), np.array([0]), 1)
    assert grounding.combine(doc_ids, w, *args)[1].tolist() == pytest.approx([2.0])
    assert grounding.combine(doc_ids, w, *args, also=[(1,)])[1].tolist() == pytest.approx([4.0])


# -- mentions in passing (grasbot/search/grounding.py) -----------------------------------------------------------


def test_in_passing_is_in_the_body_only() -> None:
    # Body-only (however often) is a mention that does not say what the note is about; a short field does.
    fm = np.array([0.0, 3.0, 0.0, 0.5])  # (the body counts of these postings: 1, 1, 6, 0)
    assert grounding.in_passing(fm).tolist() == [True, False, True, False]


def test_a_lone_mention_in_passing_counts_half_unless_corroborated() -> None:
    # Two terms of equal IDF; note 0 holds term 0 once in passing and nothing else, note 1 holds both.
    doc_ids = np.array([0, 1, 1])
    w = np.array([2.0, 2.0, 2.0])
    passing = np.array([True, True, True])
    own = np.array([3.0, 3.0, 3.0])
    held = np.bincount(doc_ids, weights=own).astype(float)
    bm25 = np.bincount(doc_ids, weights=w)
    evidence = grounding.plain(doc_ids, w, passing, own, held, 2, bm25)
    assert evidence.tolist() == pytest.approx([2.0 * grounding.PASSING_EVIDENCE, 4.0])
    # A one-word question is never discounted: the mention answers it.
    assert grounding.plain(doc_ids, w, passing, own, held, 1, bm25) is bm25


def test_a_common_word_corroborates_in_proportion_to_its_idf() -> None:
    # Note 0 holds a rare word (IDF 4) in passing beside a common one (IDF 1, not in passing).
    doc_ids = np.array([0, 0])
    w = np.array([4.0, 1.0])
    passing = np.array([True, False])
    own = np.array([4.0, 1.0])
    held = np.array([5.0])
    evidence = grounding.plain(doc_ids, w, passing, own, held, 2, np.array([5.0]))
    p = grounding.PASSING_EVIDENCE
    assert evidence.tolist() == pytest.approx([4.0 * (p + (1 - p) * 0.25) + 1.0])


def test_combine_discounts_like_plain_without_soft_terms() -> None:
    rng = np.random.default_rng(3)
    lengths = np.array([4, 3, 5])
    doc_ids = np.concatenate([rng.choice(8, size=k, replace=False) for k in lengths])
    w = rng.uniform(0.5, 3.0, size=doc_ids.size)
    passing = rng.uniform(size=doc_ids.size) < 0.5
    idf = np.array([1.0, 2.5, 4.0])
    own = np.repeat(idf, lengths)
    held = np.bincount(doc_ids, weights=own, minlength=8)
    bm25 = np.bincount(doc_ids, weights=w, minlength=8)
    expected = grounding.plain(doc_ids, w, passing, own, held, 3, bm25)
    _rank, evidence = grounding.combine(doc_ids, w, lengths, np.ones(3), np.ones(3), np.full(3, -1), 8, passing, 3, None, idf)
    assert evidence.tolist() == pytest.approx(expected.tolist())


def test_a_word_family_is_the_vault_words_that_share_a_root() -> None:
    # Snowball: `financier` -> `financi`, `financière` -> `financier`, `financement` -> `financ`,
    # `vidéo` -> `video`, `vidéos` -> `videos`, `affichage` -> `affichag`.
    vocabulary = {stem(w) for w in ("financière", "financement", "vidéos", "affichage", "portion", "version", "dernière")}
    assert lexicon.family(stem("financier"), vocabulary) == sorted({stem("financière"), stem("financement")})
    assert lexicon.family(stem("vidéo"), vocabulary) == [stem("vidéos")]
    assert lexicon.family(stem("afficher"), vocabulary) == [stem("affichage")]
    # No root shorter than FAMILY_MIN_ROOT, even where the two are one word (`dern-i`, `dern-ier`): too
    # many short roots join other words (`port` / `portion`).
    assert lexicon.family(stem("dernier"), vocabulary) == []
    # Never the token itself, and only what the vocabulary holds.
    assert lexicon.family(stem("financement"), vocabulary) == [stem("financière")]
    assert lexicon.family(stem("financier"), set()) == []
