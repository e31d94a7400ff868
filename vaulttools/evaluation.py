"""Question sets and retrieval metrics for `vaulttools eval`.

A question set is a YAML list (or a mapping with a `questions:` list) of items::

    - id: push-swap-1            # optional: defaults to q1, q2, ... by position
      q: "C'est quoi push_swap ?"
      expect: [push-swap]        # ids of the notes that are a correct first source
      grounded: true             # optional: false marks an off-topic question (default: true iff expect)
      kind: direct               # optional: results are also reported by kind

Metrics, over the items that have expectations: hit@1 (an expected note is first), hit@5 (one is in the
top 5), recall@5 (share of the expected notes in the top 5), MRR (1 / rank of the first expected note in
the first 10 results, 0 when none is there). Over the items marked `grounded: false`: the share answered ungrounded
(`offtopic_rejected`); over the items marked grounded: the share answered grounded (`ontopic_grounded`).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

#: How many results an item is judged on (hit@5, recall@5).
DEPTH = 5
#: How many results are kept per question (MRR looks this deep; beyond it the reciprocal rank is 0).
KEEP = 10


class QuestionSetError(ValueError):
    """A question file that cannot be used; the message names the file and the item."""


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    q: str
    expect: tuple[str, ...]
    grounded: bool
    kind: str | None = None


@dataclass(slots=True)
class ItemResult:
    question: Question
    results: list[str]
    grounded: bool
    elapsed_ms: float

    @property
    def rank(self) -> int | None:
        """1-based rank of the first expected note in the results, or None."""
        for position, note in enumerate(self.results, 1):
            if note in self.question.expect:
                return position
        return None

    @property
    def hit1(self) -> bool | None:
        if not self.question.expect:
            return None
        return self.rank == 1

    @property
    def hit5(self) -> bool | None:
        if not self.question.expect:
            return None
        rank = self.rank
        return rank is not None and rank <= DEPTH

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.question.id,
            "q": self.question.q,
            "kind": self.question.kind,
            "expect": list(self.question.expect),
            "expect_grounded": self.question.grounded,
            "results": self.results,
            "grounded": self.grounded,
            "hit1": self.hit1,
            "hit5": self.hit5,
        }


@dataclass(slots=True)
class Report:
    items: list[ItemResult] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        return summarise(self.items, _metrics, "ms_per_query", 4)

    def as_json(self) -> dict[str, Any]:
        return {"summary": self.summary(), "items": [item.as_json() for item in self.items]}


def _share(values: Sequence[bool]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def summarise(items: Sequence[Any], metrics: Callable[[Sequence[Any]], dict[str, Any]], time_key: str, digits: int) -> dict[str, Any]:
    """`metrics(items)`, the median of the items' `elapsed_ms` under `time_key` (rounded to `digits`), and
    `by_kind` (the same metrics per question kind) when the set has kinds: the summary of a retrieval
    `Report` and of an answer report (vaulttools/answering.py) alike."""
    out = metrics(items)
    times = [item.elapsed_ms for item in items]
    out[time_key] = round(statistics.median(times), digits) if times else None
    kinds = sorted({item.question.kind for item in items if item.question.kind})
    if kinds:
        out["by_kind"] = {kind: metrics([i for i in items if i.question.kind == kind]) for kind in kinds}
    return out


def _metrics(items: Sequence[ItemResult]) -> dict[str, Any]:
    judged = [i for i in items if i.question.expect]
    offtopic = [i for i in items if not i.question.grounded]
    ontopic = [i for i in items if i.question.grounded]
    recall = [
        len(set(i.results[:DEPTH]) & set(i.question.expect)) / len(set(i.question.expect)) for i in judged
    ]
    rr = [(1.0 / i.rank) if i.rank else 0.0 for i in judged]
    return {
        "items": len(items),
        "with_expect": len(judged),
        "hit@1": _share([bool(i.hit1) for i in judged]),
        "hit@5": _share([bool(i.hit5) for i in judged]),
        "recall@5": round(sum(recall) / len(recall), 4) if recall else None,
        "mrr": round(sum(rr) / len(rr), 4) if rr else None,
        "offtopic": len(offtopic),
        "offtopic_rejected": _share([not i.grounded for i in offtopic]),
        "ontopic": len(ontopic),
        "ontopic_grounded": _share([i.grounded for i in ontopic]),
    }


#: The keys of a question item (`question` is accepted for `q`).
_ITEM_KEYS = ("id", "q", "question", "expect", "grounded", "kind")


def load_questions(path: str | Path) -> list[Question]:
    """Read a question file; QuestionSetError (naming the file and the item) when it is unusable."""
    path = Path(path)
    data = _read_yaml(path, "question file")
    if isinstance(data, dict) and "questions" in data:
        data = data["questions"]
    if not isinstance(data, list):
        raise QuestionSetError(f"{path}: expected a list of questions (or a mapping with a `questions:` list)")
    questions: list[Question] = []
    seen: set[str] = set()
    for position, item in enumerate(data, 1):
        label = f"{path}: item {position}"
        if not isinstance(item, dict):
            raise QuestionSetError(f"{label}: expected a mapping with `q:`, got {type(item).__name__}")
        qid = item.get("id", f"q{position}")
        if not isinstance(qid, (str, int)) or isinstance(qid, bool):
            raise QuestionSetError(f"{label}: `id` must be a string")
        qid = str(qid)
        label = f"{path}: item {position} (id {qid})"
        unknown = sorted(str(k) for k in item if k not in _ITEM_KEYS)
        if unknown:  # `expected:` or `groundd:` would silently make an off-topic item
            from vaulttools.lint.rules import did_you_mean

            guess = did_you_mean(unknown[0], _ITEM_KEYS)
            hint = f" (did you mean `{guess}`?)" if guess else ""
            raise QuestionSetError(
                f"{label}: unknown key `{unknown[0]}`{hint}; an item has {', '.join(f'`{k}`' for k in _ITEM_KEYS)}"
            )
        if qid in seen:
            raise QuestionSetError(f"{label}: duplicate id")
        seen.add(qid)
        q = item.get("q", item.get("question"))
        if not isinstance(q, str) or not q.strip():
            raise QuestionSetError(f"{label}: `q` must be a non-empty string")
        expect = item.get("expect", [])
        if expect is None:
            expect = []
        if isinstance(expect, str):
            expect = [expect]
        if not isinstance(expect, list) or not all(isinstance(e, (str, int)) and not isinstance(e, bool) for e in expect):
            raise QuestionSetError(f"{label}: `expect` must be a list of note ids")
        grounded = item.get("grounded", bool(expect))
        if not isinstance(grounded, bool):
            raise QuestionSetError(f"{label}: `grounded` must be true or false")
        if not grounded and expect:
            raise QuestionSetError(f"{label}: an item with `grounded: false` cannot expect notes")
        kind = item.get("kind")
        if kind is not None and not isinstance(kind, str):
            raise QuestionSetError(f"{label}: `kind` must be a string")
        questions.append(Question(qid, q, tuple(str(e) for e in expect), grounded, kind))
    if not questions:
        raise QuestionSetError(f"{path}: no questions")
    return questions


def unknown_expectations(questions: Sequence[Question], known: set[str]) -> list[tuple[Question, str]]:
    """(question, id) for every expected id that is no candidate note of the vault: a typo in the set."""
    return [(q, e) for q in questions for e in q.expect if e not in known]


def evaluate(questions: Sequence[Question], search: Callable[[str, int], Any], keep: int = KEEP) -> Report:
    """Run every question through `search(question, top_k)` (`RetrievalPipeline.search`, the bot's own
    retrieval, or anything returning ranked `hits` and `grounded`) and time it alone."""
    report = Report()
    for question in questions:
        started = time.perf_counter()
        result = search(question.q, keep)
        elapsed = (time.perf_counter() - started) * 1000.0
        ids = [hit.id for hit in result.hits[:keep]]
        report.items.append(ItemResult(question, ids, bool(result.grounded), elapsed))
    return report


# -- answer items: the verifier's precision and recall per label ------------------------------------
#: The keys of an answer item.
_ANSWER_KEYS = ("id", "question", "context", "answer", "sentences")


@dataclass(frozen=True, slots=True)
class GoldSentence:
    text: str
    label: str
    start: int  # where the text is in the answer
    end: int


@dataclass(frozen=True, slots=True)
class AnswerItem:
    id: str
    question: str
    context: tuple[str, ...]
    answer: str
    sentences: tuple[GoldSentence, ...]
    inline: tuple[tuple[str, tuple[str, str]], ...] = ()  # id -> (title, text) of passages given in the file


def is_answer_set(path: str | Path) -> bool:
    """Whether the YAML file at `path` holds answer items (a first item with `answer:`) rather than questions."""
    data = _read_yaml(Path(path))
    if isinstance(data, dict):
        data = data.get("items", data.get("questions"))
    return isinstance(data, list) and bool(data) and isinstance(data[0], dict) and "answer" in data[0]


def _read_yaml(path: Path, what: str = "file") -> Any:
    """The YAML at `path` (question or answer items); QuestionSetError naming the file, the line and column,
    and for an unclosed `[` or quote where it was opened."""
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise QuestionSetError(f"{path}: {what} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise QuestionSetError(f"{path}: cannot read: {exc}") from None
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        opened = getattr(exc, "context_mark", None)
        if opened is not None and mark is not None and opened.index < mark.index:  # an unclosed `[` or quote
            problem += f" ({getattr(exc, 'context', None) or 'while reading'} started at line {opened.line + 1}, column {opened.column + 1})"
        raise QuestionSetError(f"{path}{where}: not valid YAML: {problem}") from None


def load_answer_items(path: str | Path) -> list[AnswerItem]:
    """Read a file of labelled answers; QuestionSetError naming the file and the item when unusable."""
    from grasbot import LABELS

    path = Path(path)
    data = _read_yaml(path)
    if isinstance(data, dict) and "items" in data:
        data = data["items"]
    if not isinstance(data, list) or not data:
        raise QuestionSetError(f"{path}: expected a list of answer items (id, question, context, answer, sentences)")
    items: list[AnswerItem] = []
    seen: set[str] = set()
    for position, item in enumerate(data, 1):
        label = f"{path}: item {position}"
        if not isinstance(item, dict):
            raise QuestionSetError(f"{label}: expected a mapping, got {type(item).__name__}")
        item_id = str(item.get("id", f"a{position}"))
        label = f"{path}: item {position} (id {item_id})"
        unknown = sorted(str(k) for k in item if k not in _ANSWER_KEYS)
        if unknown:
            raise QuestionSetError(f"{label}: unknown key `{unknown[0]}`; an answer item has {', '.join(f'`{k}`' for k in _ANSWER_KEYS)}")
        if item_id in seen:
            raise QuestionSetError(f"{label}: duplicate id")
        seen.add(item_id)
        answer = item.get("answer")
        if not isinstance(answer, str) or not answer.strip():
            raise QuestionSetError(f"{label}: `answer` must be a non-empty string")
        context = item.get("context") or []
        if isinstance(context, str):
            context = [c.strip() for c in context.split(",") if c.strip()]
        if not isinstance(context, list):
            raise QuestionSetError(f"{label}: `context` must be a list of note ids (or of {{id, text}})")
        inline: dict[str, tuple[str, str]] = {}
        ids: list[str] = []
        for entry in context:
            if isinstance(entry, dict) and isinstance(entry.get("id"), (str, int)) and isinstance(entry.get("text"), str):
                inline[str(entry["id"])] = (str(entry.get("title") or ""), entry["text"])  # the passage itself
                ids.append(str(entry["id"]))
            elif isinstance(entry, (str, int)) and not isinstance(entry, bool):
                ids.append(str(entry))
            else:
                raise QuestionSetError(f"{label}: `context` must be a list of note ids (or of {{id, text}})")
        raw_sentences = item.get("sentences")
        if not isinstance(raw_sentences, list) or not raw_sentences:
            raise QuestionSetError(f"{label}: `sentences` must be a non-empty list of {{text, label}}")
        gold: list[GoldSentence] = []
        cursor = 0
        for number, sentence in enumerate(raw_sentences, 1):
            where = f"{label}, sentence {number}"
            if not isinstance(sentence, dict) or not isinstance(sentence.get("text"), str) or not sentence["text"].strip():
                raise QuestionSetError(f"{where}: expected {{text, label}} with a non-empty text")
            text, tag = sentence["text"].strip(), sentence.get("label")
            if tag not in LABELS:
                raise QuestionSetError(f"{where}: `label` must be one of {', '.join(LABELS)}, got {tag!r}")
            start = answer.find(text, cursor)
            if start < 0:
                start = answer.find(text)
            if start < 0:
                raise QuestionSetError(f"{where}: the text is not in the answer: {text[:80]!r}")
            gold.append(GoldSentence(text, tag, start, start + len(text)))
            cursor = start + len(text)
        question = item.get("question")
        items.append(AnswerItem(item_id, str(question or ""), tuple(ids), answer, tuple(gold), tuple(sorted(inline.items()))))
    return items


@dataclass(slots=True)
class SentenceResult:
    item: str
    gold: GoldSentence
    predicted: str
    reason: str


@dataclass(slots=True)
class AnswerReport:
    sentences: list[SentenceResult] = field(default_factory=list)
    elapsed_ms: float = 0.0  # verification time, all items
    verified_sentences: int = 0  # sentences the verifier saw (its own split)

    def summary(self) -> dict[str, Any]:
        from grasbot import LABELS

        per_label: dict[str, dict[str, Any]] = {}
        for label in LABELS:
            gold = [s for s in self.sentences if s.gold.label == label]
            predicted = [s for s in self.sentences if s.predicted == label]
            right = sum(1 for s in gold if s.predicted == label)
            per_label[label] = {
                "gold": len(gold),
                "predicted": len(predicted),
                "precision": round(right / len(predicted), 4) if predicted else None,
                "recall": round(right / len(gold), 4) if gold else None,
            }
        flagged = ("unsupported", "wrong-citation")
        bad = [s for s in self.sentences if s.gold.label in flagged]
        good = [s for s in self.sentences if s.gold.label == "supported"]
        wrong = [s for s in self.sentences if s.gold.label == "wrong-citation"]
        abstain = [s for s in self.sentences if s.gold.label == "abstention"]
        return {
            "sentences": len(self.sentences),
            "accuracy": _share([s.predicted == s.gold.label for s in self.sentences]),
            "labels": per_label,
            # the targets
            "flagged_recall": _share([s.predicted in flagged for s in bad]),
            "supported_flagged": _share([s.predicted in flagged for s in good]),
            "wrong_citation_named": _share([s.predicted == "wrong-citation" for s in wrong]),
            "abstention_recall": _share([s.predicted == "abstention" for s in abstain]),
            "ms_per_sentence": round(self.elapsed_ms / self.verified_sentences, 4) if self.verified_sentences else None,
        }

    def misses(self) -> list[SentenceResult]:
        return [s for s in self.sentences if s.predicted != s.gold.label]

    def as_json(self) -> dict[str, Any]:
        return {
            "summary": self.summary(),
            "items": [
                {"item": s.item, "text": s.gold.text, "label": s.gold.label, "predicted": s.predicted, "reason": s.reason}
                for s in self.sentences
            ],
        }


def unknown_context(items: Sequence[AnswerItem], known: set[str]) -> list[tuple[AnswerItem, str]]:
    """(item, id) for every context id that is no public note of the vault."""
    return [(item, c) for item in items for c in item.context if c not in known and c not in dict(item.inline)]


def evaluate_answers(items: Sequence[AnswerItem], passages_of: Callable[[Sequence[str]], Any], subjects: Any = ()) -> AnswerReport:
    """Verify every item's answer against the passages of its context (`passages_of(ids)`), and match each
    gold sentence to the verifier's sentence that overlaps it most (the two splits may differ)."""
    from grasbot import Passage, verify

    report = AnswerReport()
    for item in items:
        given = dict(item.inline)
        from_vault = iter(passages_of([c for c in item.context if c not in given]))
        passages = [Passage(c, given[c][1], given[c][0]) if c in given else next(from_vault) for c in item.context]
        started = time.perf_counter()
        result = verify(item.answer, passages, subjects)
        report.elapsed_ms += (time.perf_counter() - started) * 1000.0
        report.verified_sentences += len(result.sentences)
        for gold in item.sentences:
            best, overlap = None, 0
            for check in result.sentences:
                shared = min(gold.end, check.end) - max(gold.start, check.start)
                if shared > overlap:
                    best, overlap = check, shared
            if best is None:
                report.sentences.append(SentenceResult(item.id, gold, "missing", "no sentence of the verifier covers it"))
            else:
                report.sentences.append(SentenceResult(item.id, gold, best.label, best.reason))
    return report
