"""Evidence that the vault covers a question: how question terms, "soft" terms (spelling corrections,
lexicon expansions) and body-only mentions count toward the `grounded` decision of `grasbot.search.index`.

The engine grounds a question when its best note's *evidence* reaches a share of what an ideal note
holding every question word strongly would get (`search.GROUND_EVIDENCE`). Evidence is BM25F (IDF times
saturated, field-weighted frequency) summed over the question's words, with two corrections:

- **Soft terms.** A question's original tokens are full evidence. A term the engine added itself (a
  confident spelling correction, a synonym or translation from `grasbot.search.lexicon`) ranks at its weight and
  counts as evidence only at its evidence weight and at most once per original word — the best of a
  word's expansions in a note, not their sum — so that a word with many synonyms cannot build evidence out
  of nothing, and an off-topic question made of words the lexicon does not know gains none. An expansion
  that two question words reach ("prétentions salariales" -> `salaire`) counts for both.
- **Body-only mentions.** A term a note holds in its body only, in no short field (title, aliases, slug,
  answers, labels, headings), is weak evidence that the note is *about* it: "Comment réparer un vélo ?"
  is not answered by a note whose list of hobbies says "il se déplace à vélo", and "Comment faire pousser
  des tomates ?" is not answered by a help page that says "poussez les modifications" six times (the
  question's subject, `tomates`, is a word the vault has never seen). Such a posting counts at
  `PASSING_EVIDENCE`, lifted toward full weight by *corroboration*: the other question words the same note
  holds, in proportion to their informative mass (IDF) relative to this word's. "Quel GR a-t-il parcouru
  en 2024 ?" finds "parcouru" and "2024" in one sentence of one note; "Comment installer une pompe à
  chaleur ?" finds "pompes" once beside the common "installer" — little corroboration. A one-word
  question is never discounted (the mention answers "vélo ?"). How often the body repeats the word does
  not make it the note's subject (a term's frequency already saturates in BM25); being named in a short
  field does. Ranking is unchanged.

Cost: a few array operations over the question's postings (`plain` for the common case of original
tokens only), nothing per note in Python.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["PASSING_EVIDENCE", "SOFT_NEEDS_ORIGINAL", "combine", "in_passing", "plain"]

#: When True, soft terms add evidence only to a note that also holds an original question word. Off by
#: default: an English question over a French vault, or "Peut-on l'embaucher ?" over notes that say
#: "recrutement", has no original word in any note, and must still be answerable. Measured both ways on
#: the question sets: True loses on-topic answers and rejects no more off-topic ones.
SOFT_NEEDS_ORIGINAL = False

#: The least share of its weight a body-only mention counts as evidence (no corroboration at all).
#: Measured on the question sets (tests/eval, benchmarks/questions-*.yaml except the fresh test sets;
#: balanced accuracy and AUC of `grounded`). Body-only rather than once-in-the-body (the previous rule):
#: AUC 0.9856 -> 0.990, off-topic questions rejected 0.94 -> 1.0 ("tulipes", "tomates", "essence" shared
#: a plain word that a body repeats), on-topic grounded 0.961 -> 0.955 at the same threshold. Over the
#: discount, 0.3 and 0.4 give the same balanced accuracy (0.978), 0.5 0.975, 0.7 0.970: 0.4 is kept.
PASSING_EVIDENCE = 0.4

#: Ranking counts a question word's soft terms (its synonyms, translations, correction) in a note at the
#: best of them plus this share of the others, not their sum: a generic word with many expansions
#: ("changer" reaches `configurer`, `modifier`, `paramètres`, `personnaliser`, `réglages`...) does not
#: lift a note for holding several of them, which say the one word again. Measured on every question
#: set (benchmarks/README.md, "Fresh sets"): 1.0 (the plain sum, before) -> 0.5 hit@1 up on the GrasBot
#: vault sets (grasbot 0.977 -> 1.000, grasbot-fresh 0.914 -> 0.943), none down; 0.25 and 0 lose one
#: help-fr question (a note naming "sauvegarde" by several of its synonyms is the right one there).
RANK_OTHER_SHARE = 0.5


def in_passing(fm: np.ndarray, lead: float = 0.0) -> np.ndarray:
    """Per posting, True for a term the note holds in its body only, in no short field (a mention that
    does not say the note is about it), however often the body repeats it. `fm`: the weighted short-field
    frequency of each posting; `lead`: the weight of the lead paragraph, a part of the body (a term there
    only is still in passing: a help page's first sentence says what it is about for ranking, but any
    common word of it would otherwise ground a question). It is below every other field's weight, so a
    short-field frequency of at most it is the lead's alone."""
    return fm <= lead


def combine(
    doc_ids: np.ndarray,
    w: np.ndarray,
    lengths: np.ndarray,
    rank_weight: np.ndarray,
    evidence_weight: np.ndarray,
    group: np.ndarray,
    n: int,
    passing: np.ndarray | None = None,
    words: int = 0,
    also: Sequence[tuple[int, ...]] | None = None,
    idf: np.ndarray | None = None,
    held: np.ndarray | None = None,
    w_evidence: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-note ranking BM25 and evidence BM25 from concatenated postings.

    `doc_ids`/`w` are the postings of the question's terms one after the other (term j has `lengths[j]`
    entries); per term, `rank_weight` and `evidence_weight` scale it, and `group` is -1 for an original
    token or the number of the original word a soft term stands for (evidence: max within a group);
    `also[j]` lists further original words soft term j stands for. `passing` (per posting, `in_passing`)
    marks body-only mentions, discounted when the question has `words` ≥ 2 words (unseen ones count),
    corroborated by the IDF (`idf`, per term) of the other question words in the note. `held`: per note,
    the IDF mass of the original terms it holds, when the caller has it (else computed here). `w_evidence`:
    the postings' weights for the evidence when they differ from the ranking's `w` (another saturation).
    """
    seg = np.arange(lengths.size).repeat(lengths)
    rank = _rank(doc_ids, w * rank_weight[seg], group[seg], n)
    if w_evidence is not None:
        w = w_evidence  # the evidence reads its own saturation of the same postings
    soft_terms = group >= 0
    numbers = sorted({int(g) for g in group[soft_terms].tolist()} | {g for extra in (also or ()) for g in extra})
    # Per original word g, the terms that stand for it (a soft group: its synonyms or its correction).
    members = {g: (group == g) | np.asarray([g in extra for extra in also], dtype=bool) if also and any(also) else group == g for g in numbers}
    hard = ~soft_terms[seg]  # the postings of original terms
    # Per original word g (sorted: deterministic) that a soft term in the notes stands for: its postings
    # and their notes (a word whose soft terms no note holds adds nothing).
    soft_postings = []
    for g in numbers:
        mask = members[g][seg]
        if np.count_nonzero(mask):
            soft_postings.append((mask, doc_ids[mask]))
    if passing is not None and words >= 2 and PASSING_EVIDENCE < 1.0 and np.count_nonzero(passing):
        # The informative mass of the question words each note holds: an original term is one word (a
        # term's postings hold a note once), a soft word counts at its best term in the note.
        own = np.ones(seg.size) if idf is None else np.asarray(idf, dtype=np.float64)[seg]
        if held is None:
            held = np.bincount(doc_ids[hard], weights=own[hard], minlength=n).astype(np.float64, copy=False)
        for mask, notes in soft_postings:
            best = np.zeros(n)
            np.maximum.at(best, notes, own[mask])
            held = held + best  # (not in place: `held` may be the caller's)
        w = _discount(doc_ids, w, passing, own, held)
    return rank, _evidence(doc_ids, w * evidence_weight[seg], hard, soft_postings, n)


def _rank(doc_ids: np.ndarray, weighted: np.ndarray, group: np.ndarray, n: int) -> np.ndarray:
    """Ranking BM25 per note: original terms summed, the soft terms of one original word (their primary
    word: `group`) at their best in the note plus `RANK_OTHER_SHARE` of the others."""
    hard = group < 0
    rank = np.bincount(doc_ids[hard], weights=weighted[hard], minlength=n).astype(np.float64, copy=False)
    if hard.all():
        return rank
    soft = ~hard
    groups = group[soft]
    width = int(groups.max()) + 1
    at = doc_ids[soft] * width + groups
    best = np.zeros(n * width)
    np.maximum.at(best, at, weighted[soft])
    total = np.bincount(at, weights=weighted[soft], minlength=n * width)
    return rank + (best + RANK_OTHER_SHARE * (total - best)).reshape(n, width).sum(axis=1)


def plain(
    doc_ids: np.ndarray,
    w: np.ndarray,
    passing: np.ndarray,
    own: np.ndarray,
    held: np.ndarray,
    words: int,
    bm25: np.ndarray,
    any_passing: bool | None = None,
) -> np.ndarray:
    """Evidence per note when every question term is an original token (the common case): `bm25` (the
    notes' BM25F from these postings) with body-only mentions discounted. `own`: per posting, its term's
    IDF; `held`: per note, the IDF mass of the question terms it holds; `words`: the question's words;
    `any_passing`: `passing.any()` when the caller knows it (cached per term)."""
    if words < 2 or PASSING_EVIDENCE >= 1.0 or not (np.count_nonzero(passing) if any_passing is None else any_passing):
        return bm25
    return np.bincount(doc_ids, weights=_discount(doc_ids, w, passing, own, held), minlength=bm25.size)


def _discount(doc_ids: np.ndarray, w: np.ndarray, passing: np.ndarray, own: np.ndarray, held: np.ndarray) -> np.ndarray:
    """`w` with each body-only mention scaled by PASSING_EVIDENCE + (1 - PASSING_EVIDENCE) x support,
    support = min(1, the other words' mass in the note / this word's): a common word beside a rare one
    corroborates little, a word as informative corroborates fully."""
    factor = held[doc_ids]  # in place from here: this runs on every posting of the question
    factor /= own  # 1 + support, before the cap (own > 0: a term's IDF)
    factor *= 1.0 - PASSING_EVIDENCE
    factor += 2.0 * PASSING_EVIDENCE - 1.0
    np.minimum(factor, 1.0, out=factor)
    factor *= w
    return np.where(passing, factor, w)  # other postings keep their weight (as w x 1.0)


def _evidence(doc_ids: np.ndarray, weighted: np.ndarray, hard: np.ndarray, soft_postings: list[tuple[np.ndarray, np.ndarray]], n: int) -> np.ndarray:
    """Evidence per note from the postings' evidence-weighted BM25 (`weighted`): original terms (`hard`)
    summed, each soft word at its best term (`soft_postings`: per word, its postings and their notes)."""
    evidence = np.bincount(doc_ids[hard], weights=weighted[hard], minlength=n).astype(np.float64, copy=False)
    original = evidence > 0 if SOFT_NEEDS_ORIGINAL else None
    for mask, notes in soft_postings:
        best = np.zeros(n)
        np.maximum.at(best, notes, weighted[mask])
        evidence = evidence + (np.where(original, best, 0.0) if SOFT_NEEDS_ORIGINAL else best)
    return evidence
