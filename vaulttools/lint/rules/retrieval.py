"""The retrieval rule, answer-not-retrieved: does each question of a note's own `answers` bring that note into the top 3 of the real
retrieval engine? One index is built per run (`LintContext.search_index`) and shared by every question.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from vaulttools.lint.diagnostics import Diagnostic
from vaulttools.lint.rule import WARNING, Rule
from vaulttools.lint.rules import LintContext, item_span, make

if TYPE_CHECKING:
    from grasbot import SearchResult

ANSWER_NOT_RETRIEVED = Rule(
    "answer-not-retrieved", "retrieval", WARNING,
    "A question in the note's own `answers` does not bring the note into the top 3 of the real retrieval "
    "engine.",
    "The author learns the vault will not answer that question from this note: strengthen aliases, title "
    "or body, or move the question to the note that does come first.",
    "answers:\n  - Quel est son parcours ?   # bio-fernand.md comes first, this note 5th", None, scope="vault",
)


@ANSWER_NOT_RETRIEVED.check
def _answers(ctx: LintContext, paths: list[str]) -> Iterator[Diagnostic]:
    vault = ctx.vault
    top_k = ctx.config.answer_top_k
    if ctx.index is None and not ctx.build_index:
        return  # lint_notes without an index: building one per call would cost seconds on a large vault
    asking = []  # (note, answers) of the public notes with answers
    count = 0
    for path in paths:
        note = vault.notes.get(path)
        if note is None or not isinstance(note.meta, dict):
            continue
        answers = note.meta.get("answers")
        if not isinstance(answers, list) or not answers or note.is_private:
            continue  # private notes are never retrieved, by design
        questions = [q for q in answers if isinstance(q, str) and q.strip()]
        if questions:
            asking.append((note, answers))
            count += len(questions)
    if not count:
        return
    explicit = ctx.config.select is not None and ANSWER_NOT_RETRIEVED.name in ctx.config.select
    if count > ctx.config.answer_check_limit and not explicit:
        # one search per question: on a huge vault this would dominate lint time; run it on purpose instead
        ctx.notices.append(
            f"answer-not-retrieved skipped: {count} questions > answer-check-limit "
            f"({ctx.config.answer_check_limit}); run `--select answer-not-retrieved` or raise the limit"
        )
        return
    todo = [(note, i, q) for note, answers in asking for i, q in enumerate(answers) if isinstance(q, str) and q.strip()]
    index = ctx.search_index()
    ctx.answers_checked = True
    if index is None:
        return  # the engine reports it once through LintResult.notices
    # the results are a pure function of the index and the question: a question asked by several notes (a
    # template's "Qu'est-ce que ... ?" left as is) is searched once
    results: dict[str, SearchResult] = {}
    for note, i, question in todo:
        result = results.get(question)
        if result is None:
            result = results[question] = index.search(question, top_k=top_k)
        ranked = [hit.note.path for hit in result.hits[:top_k]]
        if note.path in ranked:
            continue
        if ranked:
            first = ", ".join(f"{hit.id} ({hit.score:.1f})" for hit in result.hits[:top_k])
            found = f"retrieved first: {first}"
        else:
            found = "no note is retrieved at all"
        yield make(ctx, note, item_span(note, "answers", i), ANSWER_NOT_RETRIEVED,
                   f"asking `{question.strip()}` does not retrieve this note in the top {top_k} ({found}): "
                   f"put the words of the question in its aliases, title or body, or move the question to the "
                   f"note that comes first")
