"""What the service does with a verified answer: the two-stage grounding and the `GRASBOT_VERIFY_POLICY`.

Grounding in two stages (the decision table is in docs/service.md):

1. **Retrieval rules out the clear no's.** Below `EVIDENCE_FLOOR` (the engine's evidence share, see
   `grasbot.search.index.GROUND_EVIDENCE`) the model gets no note and is told it has no source. Measured on
   the question sets we tune on (tests/eval/sample-questions.yaml and benchmarks/questions-*.yaml but the
   fresh test sets: 199 on-topic, 48 off-topic questions): below 0.10 lie 1 on-topic question in 199
   (0.5 %) and 69 % of the off-topic ones; below 0.23, the engine's threshold for a confident match, lie
   2.5 % of the on-topic ones. Between the two (the middle band) a question may be a near miss in the
   vault's domain (the subject is there, the asked fact is not): the notes go in, with the instruction to
   answer only from them and to write `ABSTENTION` when they do not hold the answer.
2. **The answer decides.** `grounded` is true only when the verified answer has at least one supported
   factual sentence and did not abstain (`Verification.grounded`).

Policies: `flag` (the answer as generated, its unsupported sentences listed in `verification`), `drop`
(unsupported and wrongly cited sentences removed), `retry` (one regeneration that names the unsupported
sentences, then `drop`). Under `drop` and `retry`, an answer left with no supported sentence becomes
`NOT_IN_NOTES`, the polite "not in my notes" answer with the site's pointers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from grasbot.answer.verify_sentences import ABSTENTION

if TYPE_CHECKING:  # (types only: the service reads POLICIES and the bands at its start, before any answer
    # is verified, without loading the verifier)
    from grasbot.answer.verify import SentenceCheck, Verification

__all__ = [
    "EVIDENCE_FLOOR", "NOT_IN_NOTES", "POLICIES", "Band", "Policy", "drop_flagged", "evidence_band",
    "needs_fallback", "retry_instructions",
]  # fmt: skip

Policy = Literal["flag", "drop", "retry"]
POLICIES: tuple[Policy, ...] = ("flag", "drop", "retry")
Band = Literal["none", "middle", "strong"]

#: Below this evidence share the retrieval says "no" on its own (see the module docstring).
EVIDENCE_FLOOR = 0.10

#: The answer that replaces one whose factual sentences are all unsupported (under `drop` and `retry`).
NOT_IN_NOTES = (
    f"{ABSTENTION} Vous trouverez ses projets sur /portfolio et ses compétences sur /competences, "
    "et vous pouvez lui écrire depuis /contact."
)


def evidence_band(evidence: float, grounded: bool, has_notes: bool) -> Band:
    """Where a retrieval falls: `strong` (the engine grounds it), `middle` (at or above the floor: the
    notes go in, tentatively), `none` (below the floor, or no servable note)."""
    if not has_notes:
        return "none"
    if grounded:
        return "strong"
    return "middle" if evidence >= EVIDENCE_FLOOR else "none"


def _kept(sentence: SentenceCheck) -> bool:
    return sentence.label not in ("unsupported", "wrong-citation")


def drop_flagged(answer: str, verification: Verification) -> str:
    """`answer` without its unsupported and wrongly cited sentences (their citations go with them); the
    rest is kept byte for byte, the blank or line break between two kept sentences included."""
    pieces: list[str] = []
    last_end: int | None = None
    for sentence in verification.sentences:
        if not _kept(sentence):
            continue
        if last_end is not None:
            gap = answer[last_end : sentence.start]
            pieces.append("\n" if "\n" in gap else " ")
        pieces.append(answer[sentence.start : sentence.end])
        last_end = sentence.end
    return "".join(pieces).strip()


def needs_fallback(verification: Verification) -> bool:
    """An answer that states facts, none of them supported, and does not abstain: it says nothing true."""
    return verification.factual > 0 and verification.supported == 0 and verification.status != "abstained"


def retry_instructions(flagged: Sequence[SentenceCheck]) -> str:
    """The message asking the model for one more answer, naming the sentences the notes do not support."""
    named = "\n".join(f"- « {s.text} » ({'mauvaise source citée' if s.label == 'wrong-citation' else 'absent des notes'})" for s in flagged)
    return (
        "Ta réponse contient des phrases que les notes fournies ne permettent pas d'affirmer :\n"
        f"{named}\n"
        "Réécris ta réponse en ne gardant que ce que les notes disent, chaque fait cité avec le slug de la "
        "note qui le contient. Si les notes ne contiennent pas la réponse, écris exactement : "
        f"« {ABSTENTION} »"
    )
