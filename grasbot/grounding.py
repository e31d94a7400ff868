"""How "soft" question terms (spelling corrections, lexicon expansions) mix into ranking and evidence.

A question's original tokens are full evidence that the vault covers it. A term the engine added itself
(a corrected spelling, a synonym or translation from `grasbot.lexicon`) is weaker: it ranks at its
weight, and counts as evidence only at its evidence weight and at most once per original word — the
best of a word's expansions in a note, not their sum — so that a word with many synonyms cannot build
evidence out of nothing, and an off-topic question made of words the lexicon does not know gains none.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SOFT_NEEDS_ORIGINAL", "combine"]

#: When True, soft terms add evidence only to a note that also holds an original question word. Off by
#: default: an English question over a French vault, or "Peut-on l'embaucher ?" over notes that say
#: "recrutement", has no original word in any note, and must still be answerable. Measured both ways on
#: the question sets: True loses on-topic answers and rejects no more off-topic ones.
SOFT_NEEDS_ORIGINAL = False


def combine(
    doc_ids: np.ndarray,
    w: np.ndarray,
    lengths: np.ndarray,
    rank_weight: np.ndarray,
    evidence_weight: np.ndarray,
    group: np.ndarray,
    n: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-note ranking BM25 and evidence BM25 from concatenated postings.

    `doc_ids`/`w` are the postings of the question's terms one after the other (term j has `lengths[j]`
    entries); per term, `rank_weight` and `evidence_weight` scale it, and `group` is -1 for an original
    token or the number of the original word a soft term stands for (evidence: max within a group).
    """
    seg = np.repeat(np.arange(lengths.size), lengths)
    rank = np.bincount(doc_ids, weights=w * rank_weight[seg], minlength=n)
    soft = group[seg] >= 0
    if not soft.any():
        evidence = rank if bool(np.all(rank_weight == 1.0)) else np.bincount(doc_ids, weights=w, minlength=n)
        return rank, evidence
    hard = ~soft
    evidence = np.bincount(doc_ids[hard], weights=w[hard] * evidence_weight[seg[hard]], minlength=n)
    original = evidence > 0
    for g in np.unique(group[group >= 0]).tolist():  # sorted: deterministic
        mask = group[seg] == g
        best = np.zeros(n)
        np.maximum.at(best, doc_ids[mask], w[mask] * evidence_weight[seg[mask]])
        evidence = evidence + (np.where(original, best, 0.0) if SOFT_NEEDS_ORIGINAL else best)
    return rank, evidence
