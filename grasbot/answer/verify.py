"""Sentence-level verification of an answer against the passages it was written from (no LLM).

`verify(answer, passages)` splits the answer into sentences (`grasbot.answer.verify_sentences`), reads their
citations, and labels each one, with the evidence span (passage id and text) and a reason:

- `abstention`: the sentence says the notes do not hold the answer (the prompt's fixed sentence
  `ABSTENTION`, or any sentence that joins a negation to a frame of knowledge, French or English:
  `grasbot.answer.verify_abstention`);
- `no-claim`: no factual content (a greeting, a question back to the visitor, a pointer to a page of the
  site, "voici ce que disent ses notes");
- `supported`: a window of the passages (one of its sentences or list items, with the next one and the
  passage's title) holds enough of the sentence's content words (`SUPPORT_COVERAGE`, by stem and lexicon
  synonym) **and** every anchor of the sentence exactly: numbers with their unit, versions, months, proper
  names, «quotes» (`grasbot.answer.verify_claims`); and a sentence that cites notes is supported by one it
  cites;
- `wrong-citation`: supported by a passage, but not by any note it cites (another passage, or an id that
  is not in the context at all);
- `unsupported`: everything else: absent from the passages, or contradicted by them (a changed number,
  date, version, name, an altered quote, a negation the evidence does not have).

The answer's status: `abstained` (an abstention and no supported sentence), `verified` (every factual
sentence supported, at least one), `partial` (some supported, some not), `unsupported` (none supported).

Deterministic (passages in the order given, ties broken by position) and fast: the passages are read once
per call; a sentence costs a few set operations per window (benchmarks/bench_verify.py).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from grasbot.answer.verify_claims import (
    KEY_LENGTH, Claims, Number, claims_of, facts_of, fold_text, key, negated, negated_keys, normalise_phrase, passage_text, plain_text,
)  # fmt: skip
from grasbot.answer.context import ContextNote
from grasbot.answer.prompt import redact_hidden_links
from grasbot.answer.verify_abstention import is_abstention
from grasbot.answer.verify_sentences import ABSTENTION, Sentence, split_sentences
from grasbot.model import Note
from grasbot.search.lexicon import expand
from grasbot.search.tokenize import STOP_WORDS, fold, tokenize

__all__ = [
    "ABSTENTION", "LABELS", "SUPPORT_COVERAGE", "Label", "Passage", "SentenceCheck", "Status", "Verification",
    "context_passages", "is_abstention", "note_passage", "subject_names", "verify",
]  # fmt: skip

Label = Literal["supported", "unsupported", "wrong-citation", "abstention", "no-claim"]
Status = Literal["verified", "partial", "unsupported", "abstained"]
LABELS: tuple[Label, ...] = ("supported", "unsupported", "wrong-citation", "abstention", "no-claim")
FACTUAL: frozenset[str] = frozenset({"supported", "unsupported", "wrong-citation"})


#: Share of a sentence's content (weighted, see `_weight`; each anchor counts as one word) a window must
#: hold for the sentence to be supported. Measured on the labelled dev set, the only set tuned on
#: (benchmarks/verify-dev.yaml, `vaulttools eval`): 0.55 flags 97.3 % of the unsupported and wrongly
#: cited sentences, 0.6 98.2 %, 0.65 98.2 % but 3.8 % of the supported ones instead of 1.3 %.
SUPPORT_COVERAGE = 0.6
#: Below this share, no passage is shown as the closest evidence of an unsupported sentence.
CLOSEST_COVERAGE = 0.34

# A sentence ending with a question mark asks the visitor something: no claim about the author.
_QUESTION_END = re.compile(r"\?\s*[»\"”)\]*_]*\s*$")

#: Content words that carry no fact by themselves: discourse, the site, the notes, evaluation, politeness.
#: A sentence made only of these (and no anchor) is `no-claim`; in a factual sentence they weigh little.
_DISCOURSE = frozenset(
    key(t)
    for word in """
    voici voila resume bref general globalement ensemble plus detail details information informations note
    notes source sources page pages site consulter consultez consulte voir voyez visiter visitez trouver
    trouverez retrouver retrouverez lien liens rubrique section question questions repondre reponse aider
    volontiers hesitez hesiter ecrire ecrivez contacter contactez auteur sujet sujets concernant propos
    egalement aussi notamment ainsi surtout parfois souvent toujours vraiment tres bien mieux beaucoup
    interessant interessante passionnant impressionnant remarquable excellent excellente bon bonne super
    ravi heureux bienvenue bonjour merci savoir souhaitez souhaiter envie pouvez pourrez demander presente
    presenter mentionne mentionnent indique indiquent precise precisent disent decrit decrivent explique
    quelques principal principaux principale principales different differents differentes divers diverses
    plusieurs certains nombreux nombreuses type genre domaine cas maniere facon niveau partie cadre
    environ pres quasiment actuellement aujourd exemple journee soiree continuation semaine week-end
    revoir disposition plaisir element elements poser demander aller loin espere aide aider
    polyvalent polyvalente via
    """.split()
    for t in tokenize(word)
)
#: Frequent verbs and nouns that a paraphrase swaps freely: they count at `_LIGHT_WEIGHT` of a content word.
_LIGHT = frozenset(
    key(t)
    for word in """
    avoir etre faire utiliser utilise utilisait permet permettre travailler travaille travail mener
    realiser realise construire construit developper developpe creer cree mettre place gerer gere
    projet projets outil outils systeme solution service services personne equipe ans annee annees
    """.split()
    for t in tokenize(word)
)
_LIGHT_WEIGHT = 0.35
# The assistant speaking of itself ("Je ne peux parler que de son parcours", "Je vous invite à...") states
# nothing about the author, unless it reports a fact ("Je peux vous dire qu'il a appris Rust").
_ASSISTANT = re.compile(r"[\W_]*(?:je |j'|j’|moi,|i |i'm |i am )")
_REPORTED = re.compile(r"\b(?:qu'|qu’|que )(?:il|elle|aurele|l'auteur|son |sa |ses )")
# A sentence that ends with a colon introduces a list or a quote: its facts are in what follows.
_LEAD_IN = re.compile(r":\s*[*_]*\s*$")
# Addressed to the visitor: "Vous pouvez lui écrire depuis /contact", "N'hésitez pas à consulter /portfolio".
_ADDRESSED = re.compile(r"[\W_]*(?:vous |n'hesitez|n’hesitez|pour |consultez|retrouvez|voyez|ecrivez|contactez|rendez-vous|je vous|je reste)")
# The openings of a sentence that introduces the answer ("Voici un résumé de son parcours").
_META_START = re.compile(r"[\W_]*(?:voici|voila|en resume|en bref|pour resumer|bref|ci-dessous|en quelques mots)\b")
#: Words of judgement: a sentence made of one of them and at most one other word states no fact.
_EVALUATIVE = frozenset(
    key(t)
    for w in "remarquable remarquables interessant interessante impressionnant impressionnante passionnant passionnante riche solide atypique original originale bel belle beau polyvalent polyvalente varie variee".split()
    for t in tokenize(w)
)
#: What a pointer to the site's pages names ("ses projets sont sur /portfolio"): no fact.
_POINTER_WORDS = frozenset(key(t) for w in "projet projets competence competences parcours contact formulaire ecrire page".split() for t in tokenize(w))
_SITE_POINTER = re.compile(r"(?<![\w/])/(?:portfolio|competences|contact)\b|https?://")


@dataclass(frozen=True, slots=True)
class Passage:
    """A context passage: what the model was given under `id` (a note's text, whole or cut)."""

    id: str
    text: str
    title: str = ""


@dataclass(frozen=True, slots=True)
class SentenceCheck:
    text: str
    start: int
    end: int
    label: Label
    cited: tuple[str, ...]
    evidence: tuple[str, str] | None  # (passage id, text of the span)
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "start": self.start,
            "end": self.end,
            "label": self.label,
            "cited": list(self.cited),
            "evidence": None if self.evidence is None else {"id": self.evidence[0], "text": " ".join(self.evidence[1].split())},
            "reason": self.reason,
        }

    @property
    def factual(self) -> bool:
        return self.label in FACTUAL


@dataclass(frozen=True, slots=True)
class Verification:
    status: Status
    sentences: tuple[SentenceCheck, ...] = field(default_factory=tuple)

    @property
    def summary(self) -> dict[str, int]:
        counts = dict.fromkeys(LABELS, 0)
        for s in self.sentences:
            counts[s.label] += 1
        return counts

    @property
    def factual(self) -> int:
        return sum(1 for s in self.sentences if s.factual)

    @property
    def supported(self) -> int:
        return sum(1 for s in self.sentences if s.label == "supported")

    @property
    def faithfulness(self) -> float | None:
        """Share of factual sentences supported (None without a factual sentence)."""
        return self.supported / self.factual if self.factual else None

    @property
    def grounded(self) -> bool:
        """At least one supported factual sentence, and not an abstention."""
        return self.supported > 0 and self.status != "abstained"

    def flagged(self) -> tuple[SentenceCheck, ...]:
        """The sentences a reader should not trust: unsupported or wrongly cited."""
        return tuple(s for s in self.sentences if s.label in ("unsupported", "wrong-citation"))

    def as_dict(self) -> dict[str, Any]:
        return {"status": self.status, "sentences": [s.as_dict() for s in self.sentences], "summary": self.summary}


# -- the passages, read once ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Unit:
    """One sentence, list item or heading of a passage."""

    text: str
    keys: frozenset[str]
    prefixes: frozenset[str]  # every 4- to KEY_LENGTH-1-letter head of its keys
    words: frozenset[str]  # folded words (names are looked up here)
    numbers: tuple[Number, ...]
    months: frozenset[str]
    denied: frozenset[str]  # content keys of its clauses that deny something
    negated: bool  # holds any negation, `sans` included
    heading: int  # its level when it is a heading (`## Résultats`: 2), else 0


@dataclass(frozen=True, slots=True)
class _Window:
    """One or two consecutive sentences of a passage, read with its title and the headings above them:
    where the evidence of a sentence is looked for."""

    text: str
    keys: frozenset[str]
    own: frozenset[str]  # the keys of its sentences, without the title's and headings'
    prefixes: frozenset[str]  # every 4- to KEY_LENGTH-1-letter head of its keys (derivations, see `_covered`)
    words: frozenset[str]
    numbers: tuple[Number, ...]
    months: frozenset[str]
    denied: frozenset[str]  # of the sentences themselves, not of the headings
    negated: bool  # one of its sentences holds a negation, `sans` included
    size: int
    parts: tuple[_Unit, ...]  # its sentences, when it has two (a pair must use both)


@dataclass(frozen=True, slots=True)
class _Context:
    passages: tuple[Passage, ...]
    windows: tuple[tuple[int, _Window], ...]  # (passage number, window)
    phrases: tuple[str, ...]  # per passage, its normalised text (quotes are looked up here)
    keys: frozenset[str]  # every content key of the context (for lexicon expansion)
    capitalised: frozenset[str]
    subjects: frozenset[str]


_CAPITALISED = re.compile(r"(?<=[a-zà-ÿ0-9,;:)] )([A-ZÀ-Ý][\w-]+)")
_HEADING_LINE = re.compile(r"\s*(#{1,6})\s")
_MIN_PREFIX = 4


def _unit(text: str, heading: int = 0) -> _Unit:
    plain = plain_text(passage_text(text))
    numbers, months, words = facts_of(plain)
    keys = frozenset(key(t) for t in tokenize(plain))
    no = negated(plain)
    return _Unit(text, keys, _prefixes(keys), words, numbers, months, negated_keys(plain) if no else frozenset(), no, heading)


@dataclass(frozen=True, slots=True)
class _Read:
    """What one passage contributes to a context, whatever its position (cached by text)."""

    windows: tuple[_Window, ...]
    phrase: str
    capitalised: frozenset[str]
    keys: frozenset[str]


@lru_cache(maxsize=512)
def _read_passage(title: str, text: str) -> _Read:
    """A passage read for matching. Cached: a service verifies against the same notes again and again,
    and reading is most of the cost of a verification (benchmarks/bench_verify.py)."""
    head = _unit(title)
    body: list[_Unit] = []
    for sentence in split_sentences(text):
        # the splitter took the `#` marks off; the heading level is read from the line
        marks = _HEADING_LINE.match(text, text.rfind("\n", 0, sentence.start) + 1)
        body.append(_unit(sentence.text, len(marks.group(1)) if marks and marks.end() <= sentence.start + 1 else 0))
    keys = head.keys.union(*(u.keys for u in body))
    capitalised = frozenset(map(fold_text, _CAPITALISED.findall(passage_text(text))))
    return _Read(tuple(_windows(head, body)), normalise_phrase(passage_text(title + " \n " + text)), capitalised, keys)


def _prefixes(keys: frozenset[str]) -> frozenset[str]:
    return frozenset(k[:n] for k in keys for n in range(_MIN_PREFIX, min(len(k), KEY_LENGTH)))


def _windows(title: _Unit, body: list[_Unit]) -> list[_Window]:
    out = []
    headings: dict[int, _Unit] = {}  # the current heading of each level
    for i, unit in enumerate(body):
        if unit.heading:
            headings = {lvl: h for lvl, h in headings.items() if lvl < unit.heading}
            headings[unit.heading] = unit
            continue  # a heading is read as the context of the sentences under it, never as evidence alone
        context = (title, *headings.values())
        for size in (1, 2):
            part = body[i : i + size]
            if len(part) < size or (size == 2 and part[1].heading):
                continue  # a heading opens what follows it, it does not end what precedes
            units = (*context, *part)
            out.append(
                _Window(
                    part[0].text if size == 1 else " ".join(u.text for u in part),
                    frozenset().union(*(u.keys for u in units)),
                    part[0].keys if size == 1 else part[0].keys | part[1].keys,
                    frozenset().union(*(u.prefixes for u in units)),
                    frozenset().union(*(u.words for u in units)),
                    tuple(n for u in units for n in u.numbers),
                    frozenset().union(*(u.months for u in units)),
                    frozenset().union(*(u.denied for u in part)),
                    any(u.negated for u in part),
                    size,
                    tuple(part) if size > 1 else (),
                )
            )
    return out


def _read_context(passages: Sequence[Passage], subjects: Iterable[str]) -> _Context:
    reads = [_read_passage(p.title, p.text) for p in passages]
    windows = [(p, w) for p, read in enumerate(reads) for w in read.windows]
    return _Context(
        tuple(passages), tuple(windows), tuple(r.phrase for r in reads), frozenset().union(*(r.keys for r in reads)),
        frozenset().union(*(r.capitalised for r in reads)), frozenset(fold(s) for s in subjects),
    )  # fmt: skip


# -- one sentence -----------------------------------------------------------------------------------
def _weight(k: str) -> float:
    return _LIGHT_WEIGHT if k in _LIGHT else 1.0


#: A content word met only as a derivation (`passe`/`passage`: one key the head of the other) or through
#: a lexicon synonym counts this much of a match.
_LOOSE_MATCH = 0.8
_SYNONYM_MATCH = 0.7
#: A content word found only in the passage's title or in a heading above the evidence: the passage is
#: about it, the sentence does not say it.
_CONTEXT_MATCH = 1.0


@dataclass(slots=True)
class _Match:
    coverage: float
    missing: list[str]  # anchors absent from the window, as written
    passage: int
    window: _Window
    stated: bool = True  # the window's own sentences carry the content (see `_stated`)

    @property
    def anchored(self) -> bool:
        return not self.missing

    @property
    def supports(self) -> bool:
        """Every anchor, enough of the content, and stated in the window's own sentences."""
        return not self.missing and self.stated and self.coverage >= SUPPORT_COVERAGE


def _number_in(number: Number, numbers: Iterable[Number]) -> bool:
    for n in numbers:
        if n.value == number.value and (not number.unit or not n.unit or n.unit == number.unit or "version" in (n.unit, number.unit)):
            return True
    return False


def _missing(claims: Claims, content: Sequence[str], window: _Window, phrase: str, ctx: _Context) -> list[str]:
    """The sentence's anchors that `window` does not hold, as written in the sentence (and "a negation"
    when one side denies what the other states)."""
    missing = [n.label() for n in claims.numbers if not _number_in(n, window.numbers)]
    missing.extend(m for m in claims.months if m not in window.months)
    for name in claims.names:
        if not all(w in window.words or w in ctx.subjects for w in re.findall(r"[^\W_]+", name)):
            missing.append(name)
    missing.extend(f"«{q}»" for q in claims.quotes if q not in phrase)
    if claims.denied and not window.negated:
        missing.append("a negation")
    elif window.denied and not claims.denied:
        denied = sum(1 for k in content if k in window.denied)
        if denied >= 2 and denied * 2 >= len(content):
            missing.append("the evidence denies it")
    return missing


def _covered(k: str, window: _Window, alternatives: frozenset[str]) -> float:
    """How much content key `k` is matched in `window`: 1 as is, `_LOOSE_MATCH` as a derivation (one of
    the two keys is the head of the other), `_SYNONYM_MATCH` through a lexicon synonym."""
    keys = window.keys
    if k in window.own:
        return 1.0
    if k in keys:
        return _CONTEXT_MATCH
    if len(k) >= _MIN_PREFIX and (k in window.prefixes or any(k[:n] in keys for n in range(_MIN_PREFIX, len(k)))):
        return _LOOSE_MATCH
    if alternatives and not alternatives.isdisjoint(keys):
        return _SYNONYM_MATCH
    return 0.0


def _best(
    claims: Claims, content: list[str], synonyms: Mapping[str, frozenset[str]], ctx: _Context,
    only: Sequence[int] | None = None, prefer: Sequence[int] = (),
) -> _Match | None:  # fmt: skip
    """The best window for a sentence: one that supports it first (every anchor, enough coverage), then
    by coverage (for an unsupported sentence: the closest evidence), then a passage it cites, then the
    shorter window, then the earliest. Coverage counts each anchor as one word, matched when present
    (a sentence made of figures is carried by its figures), and the content words by `_covered`."""
    weights = [(k, _weight(k), synonyms.get(k, frozenset())) for k in content]
    anchors = len(claims.numbers) + len(claims.months) + len(claims.names) + len(claims.quotes)
    total = sum(w for _, w, _ in weights) + anchors
    best: _Match | None = None
    best_rank: tuple[bool, float, bool, bool, int] | None = None
    for p, window in ctx.windows:
        if only is not None and p not in only:
            continue
        if window.parts and not all(_contributes(part, content, claims) for part in window.parts):
            continue  # a pair of sentences is evidence only when the sentence needs both of them
        got = sum(w * _covered(k, window, alt) for k, w, alt in weights)
        if best_rank is not None and best_rank[0] and (got + anchors) / total <= best_rank[1]:
            continue  # cannot beat a supporting window that covers at least as much
        missing = _missing(claims, content, window, ctx.phrases[p], ctx)
        coverage = round((got + anchors - _anchor_misses(missing)) / total, 6) if total else 1.0
        stated = _stated(weights, window, got, anchors - _anchor_misses(missing))
        rank = (not missing and stated and coverage >= SUPPORT_COVERAGE, coverage, not missing, p in prefer, -window.size)
        if best_rank is None or rank > best_rank:
            best, best_rank = _Match(coverage, missing, p, window, stated), rank
    return best


#: Least share of what a window matches of a sentence that its own sentences must hold (the rest may
#: come from the passage's title or the headings above them).
STATED_SHARE = 0.5


def _stated(weights: Sequence[tuple[str, float, frozenset[str]]], window: _Window, got: float, anchors: float) -> bool:
    """Whether the window's own sentences state the sentence's content, not only its title or headings:
    "Il fait de la randonnée" is not supported by a note titled "Application de randonnée" whose
    sentences never say it. The anchors found count as stated (they are checked exactly anyway)."""
    if got <= 0:
        return anchors > 0
    own = sum(w * _covered(k, window, alt) for k, w, alt in weights if _in_own(k, window, alt))
    return own + anchors >= STATED_SHARE * (got + anchors)


def _in_own(k: str, window: _Window, alternatives: frozenset[str]) -> bool:
    own = window.own
    if k in own or (alternatives and not alternatives.isdisjoint(own)):
        return True
    return len(k) >= _MIN_PREFIX and any(o.startswith(k) or k.startswith(o) for o in own if len(o) >= _MIN_PREFIX and o[:_MIN_PREFIX] == k[:_MIN_PREFIX])


def _contributes(unit: _Unit, content: Sequence[str], claims: Claims) -> bool:
    """Whether `unit` holds a content word or a name of the sentence (a number alone does not make a
    neighbouring sentence part of the evidence: "son premier contact" is not "classé premier")."""
    return any(k in unit.keys for k in content) or any(n in unit.words for n in claims.names)


def _anchor_misses(missing: Sequence[str]) -> int:
    return sum(1 for m in missing if m not in ("a negation", "the evidence denies it"))


def _synonyms(content: Sequence[str], ctx: _Context) -> dict[str, frozenset[str]]:
    """Per content key of the sentence, the keys of its lexicon synonyms that the context holds."""
    found: dict[str, set[str]] = {}
    for exp in expand(list(content), ctx.keys):
        for source in exp.sources:
            for part in source.split():
                found.setdefault(key(part), set()).add(key(exp.term))
    return {k: frozenset(v) for k, v in found.items()}


def _check(sentence: Sentence, ctx: _Context) -> SentenceCheck:
    text, cited = sentence.text, sentence.cited

    def result(label: Label, reason: str, evidence: tuple[str, str] | None = None) -> SentenceCheck:
        return SentenceCheck(text, sentence.start, sentence.end, label, cited, evidence, reason)

    if is_abstention(text):
        return result("abstention", "says the notes do not hold the answer")
    claims = claims_of(text, ctx.capitalised)
    content = [k for k in claims.keys if k not in _DISCOURSE and k not in _NAME_KEYS(claims)]
    anchors = claims.numbers or claims.months or claims.names or claims.quotes
    if _QUESTION_END.search(text) and not claims.numbers:
        return result("no-claim", "a question to the visitor")
    if _ASSISTANT.match(fold(text)) and not _REPORTED.search(fold(text)):
        return result("no-claim", "the assistant speaks of itself, not of the author")
    if not content and not anchors:
        return result("no-claim", "no factual content")
    if _LEAD_IN.search(text) and not claims.numbers:
        return result("no-claim", "introduces what follows")
    if _SITE_POINTER.search(text) and not claims.numbers and (set(content) <= _POINTER_WORDS or _ADDRESSED.match(fold(text))):
        return result("no-claim", "points to the site")
    if len(content) <= 1 and not anchors and not _EVALUATIVE.isdisjoint(claims.keys):
        return result("no-claim", "an opinion, no fact")
    if len(content) <= 1 and not anchors and (_ADDRESSED.match(fold_text(text)) or _META_START.match(fold_text(text))):
        return result("no-claim", "speaks to the visitor or introduces the answer")
    if not ctx.passages:
        return result("unsupported", "no passage was given to check it against")
    synonyms = _synonyms(content, ctx)
    ids = [p.id for p in ctx.passages]
    best = _best(claims, content, synonyms, ctx, prefer=[ids.index(c) for c in cited if c in ids])
    if best is None:
        return result("unsupported", "the passages hold no sentence to check it against")
    supported = best.supports
    if not supported:
        if best.anchored and best.coverage >= SUPPORT_COVERAGE:
            return result("unsupported", f"only the title or headings of [{ids[best.passage]}] name it, its sentences do not say it", (ids[best.passage], best.window.text))
        if best.coverage >= SUPPORT_COVERAGE:
            why = "; ".join(best.missing[:4])
            return result("unsupported", f"not in the evidence: {why}", (ids[best.passage], best.window.text))
        if best.coverage >= CLOSEST_COVERAGE:
            extra = f"; also missing: {'; '.join(best.missing[:3])}" if best.missing else ""
            return result("unsupported", f"only {best.coverage:.0%} of its content is in the closest passage{extra}", (ids[best.passage], best.window.text))
        return result("unsupported", "not stated in the passages")
    where = ids[best.passage]
    if not cited or where in cited:
        return result("supported", f"stated in [{where}] ({best.coverage:.0%} of its content)", (where, best.window.text))
    in_context = [ids.index(c) for c in cited if c in ids]
    if in_context:
        own = _best(claims, content, synonyms, ctx, in_context)
        if own is not None and own.supports:
            cid = ids[own.passage]
            return result("supported", f"stated in [{cid}] ({own.coverage:.0%} of its content)", (cid, own.window.text))
    outside = [c for c in cited if c not in ids]
    named = ", ".join(f"[{c}]" for c in cited)
    tail = " (not in the context)" if outside and len(outside) == len(cited) else ""
    return result("wrong-citation", f"stated in [{where}], but cites {named}{tail}", (where, best.window.text))


def _NAME_KEYS(claims: Claims) -> frozenset[str]:  # noqa: N802 - a small derived set, named for what it holds
    """Content keys that are the sentence's names: checked as anchors, not counted twice."""
    return frozenset(key(t) for name in claims.names for t in tokenize(name))


def _status(checks: Sequence[SentenceCheck]) -> Status:
    supported = sum(1 for c in checks if c.label == "supported")
    flagged = sum(1 for c in checks if c.label in ("unsupported", "wrong-citation"))
    if supported == 0 and any(c.label == "abstention" for c in checks):
        return "abstained"
    if supported and not flagged:
        return "verified"
    if supported:
        return "partial"
    return "unsupported"


def verify(answer: str, passages: Sequence[Passage], subjects: Iterable[str] = ()) -> Verification:
    """Check every sentence of `answer` against `passages` (see the module docstring). `subjects`: names
    that need not be repeated in the evidence window (the vault's subject, whom every note is about)."""
    ctx = _read_context(passages, subjects)
    checks = tuple(_check(s, ctx) for s in split_sentences(answer))
    return Verification(_status(checks), checks)


# -- passages from notes ----------------------------------------------------------------------------
def note_passage(note: Note, hidden: Collection[str] = frozenset(), text: str | None = None) -> Passage:
    """The passage of a public note as a prompt shows it: its title and body (or `text`, the cut the
    prompt kept), links to hidden notes removed (`grasbot.answer.prompt.redact_hidden_links`; `hidden`
    from `hidden_links(vault)` or `hidden_names`)."""
    body = redact_hidden_links(note.reader_body if text is None else text, hidden, note.path).strip()
    return Passage(note.id, body, redact_hidden_links(note.title, hidden, note.path))


def context_passages(notes: Iterable[ContextNote], hidden: Collection[str] = frozenset()) -> list[Passage]:
    """Exactly the passages a prompt gave the model (`Prompt.notes`): the text as cut, the title."""
    return [Passage(c.hit.id, c.text, redact_hidden_links(c.hit.note.title, hidden, c.hit.note.path)) for c in notes]


#: A name written with a capital in at least this share of the notes is the vault's subject (its author,
#: "Aurèle"): an answer may name him in a sentence whose evidence says "il".
SUBJECT_SHARE = 0.5


_ANY_CAPITALISED = re.compile(r"\b[A-ZÀ-Ý][a-zà-ÿ]{2,}\b")


def subject_names(notes: Iterable[Note], share: float = SUBJECT_SHARE) -> frozenset[str]:
    """Folded capitalised words found in at least `share` of `notes` (and two of them): who the vault is about."""
    counts: dict[str, int] = {}
    total = 0
    for note in notes:
        total += 1
        for word in {fold(m) for m in _ANY_CAPITALISED.findall(note.title + " \n " + note.reader_body)}:
            counts[word] = counts.get(word, 0) + 1
    floor = max(2, share * total)
    return frozenset(w for w, n in counts.items() if n >= floor and w not in STOP_WORDS)
