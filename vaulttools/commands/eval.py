"""`vaulttools eval`: run a question set (a file, or a Langfuse dataset) against a vault and report retrieval
quality and speed, and with `--answers` the service's answers too (vaulttools/answering.py: faithfulness,
grounded, statuses); export question sets and chosen traces to Langfuse datasets; or run a set of labelled
answers through the answer verifier and report its precision and recall per label.

Exit codes: 0 done; 1 with `--answers`, when the answer to at least one question failed (the LLM down or
erring: each such item is reported with the reason, the others are answered and recorded); 2 a usage
error (bad option, file or vault)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from vaulttools.commands._common import (
    CliError,
    add_cache_argument,
    add_vault_arguments,
    load_pipeline,
    split_vault_positional,
    vault_path,
)

NAME = "eval"
HELP = (
    "measure retrieval on a question set (hit@1, hit@5, recall@5, MRR, off-topic rejection), or the answer "
    "verifier on labelled answers (precision and recall per label)"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_vault_arguments(parser, positional=False)
    add_cache_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the summary and every item as JSON")
    parser.add_argument(
        "--answers", action="store_true",
        help="also answer every question as the service does (its settings: LLM_BACKEND, LLM_BASE_URL or "
             "OLLAMA_URL, LLM_MODEL, the profile, the verify policy) and report faithfulness, grounded and the "
             "answers' statuses; exit 1 when an answer failed",
    )  # fmt: skip
    parser.add_argument(
        "files", metavar="[PATH] FILE.yaml", nargs="*",
        help="the question set (items: id, q, expect, grounded, kind) or labelled answers (id, question, context, "
             "answer, sentences), after the vault folder if given; with "
             "--export-dataset, the items to export",
    )  # fmt: skip
    add_langfuse_arguments(parser)


def add_langfuse_arguments(parser: argparse.ArgumentParser) -> None:
    """The Langfuse dataset options (vaulttools/langfuse_datasets.py; the SDK is imported only when used)."""
    group = parser.add_argument_group("Langfuse datasets (need the Langfuse SDK and the LANGFUSE_* variables)")
    group.add_argument("--langfuse-dataset", metavar="NAME", help="run the dataset's items and record the run in Langfuse")
    group.add_argument("--run-name", metavar="NAME", help="the dataset run's name (default: retrieval <UTC time>)")
    group.add_argument("--export-dataset", metavar="NAME", help="add items to this dataset: from FILE.yaml, or --from-traces")
    group.add_argument("--from-traces", action="store_true", help="with --export-dataset: the questions of traces (--score or --tag)")
    group.add_argument("--score", metavar="NAME=VALUE", help="with --from-traces: traces with this score, e.g. user_feedback=1")
    group.add_argument("--tag", metavar="TAG", help="with --from-traces: traces with this tag, e.g. grounded")


def run(args: argparse.Namespace) -> int:
    from vaulttools.evaluation import QuestionSetError, evaluate, is_answer_set, load_questions, unknown_expectations

    given, rest = (None, args.files) if args.vault else split_vault_positional(args.files, 1)
    if len(rest) > 1:
        raise CliError("give one question set: vaulttools eval [PATH] FILE.yaml")
    args.file = rest[0] if rest else None
    if given is not None:
        args.vault = given  # (what every later `vault_path(args)` reads)
    if args.answers and args.export_dataset:
        raise CliError("--answers goes with a question set FILE.yaml or --langfuse-dataset NAME, not --export-dataset")
    if args.langfuse_dataset or args.export_dataset:
        from vaulttools.langfuse_datasets import run_langfuse

        return run_langfuse(args, show_report)
    if args.file is None:
        raise CliError("give a question set FILE.yaml (or --langfuse-dataset NAME)")
    try:
        if is_answer_set(args.file):
            if args.answers:
                raise CliError(f"{args.file}: --answers answers a question set (id, q, expect); this file holds labelled answers")
            return _run_answers(args)
        questions = load_questions(args.file)
    except QuestionSetError as exc:
        raise CliError(str(exc)) from None
    root = vault_path(args, given)

    settings, privacy = None, None
    if args.answers:
        from vaulttools.answering import service_settings

        settings = service_settings()
        privacy = settings.privacy()  # the service's private folders and tags hide the same notes here
    pipeline = load_pipeline(root, "nothing to evaluate", use_cache=not args.no_cache, privacy=privacy)
    index = pipeline.index
    unknown = unknown_expectations(questions, set(index.ids))
    for question, note in unknown:
        print(
            f"vaulttools eval: warning: {args.file}: item {question.id}: expects `{note}`, which is no public note "
            f"of {root}",
            file=sys.stderr,
        )
    # the bot's own retrieval (grasbot/answer/pipeline.py), as the API runs it for a first question
    evaluate(questions[:3], pipeline.search)  # warm the stem cache so the timing is the retrieval alone
    report = evaluate(questions, pipeline.search)
    answers = None
    if settings is not None:
        from vaulttools.answering import AnswerReport, ServiceAnswerer

        with ServiceAnswerer(root, settings) as answerer:
            answers = AnswerReport([answerer.answer(question) for question in questions])
    return show_report(args, str(args.file), root, report, index.size, answers)


def show_report(args: argparse.Namespace, label: str, root: object, report: Any, notes: int, answers: Any = None) -> int:
    """Print a retrieval report: JSON with --json, else the table, the median time and the misses; with
    `answers` (a `vaulttools.answering.AnswerReport` of the same questions), the answers' columns, the
    failed answers, and exit code 1 when there is one."""
    summary = report.summary()
    code = 1 if answers is not None and answers.failures else 0

    if args.json:
        payload = report.as_json()
        if answers is not None:
            payload["summary"]["answers"] = answers.summary()
            for item, answer in zip(payload["items"], answers.items, strict=True):
                item["answer"] = answer.as_json()
        json.dump(payload, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
        return code

    from vaulttools.tables import Column, console as make_console, print_table

    console = make_console()
    console.print(f"[bold]{label}[/bold] on {root}: {summary['items']} questions, {notes} public notes")
    names = ["items", "hit@1", "hit@5", "recall@5", "MRR", "off-topic rejected", "on-topic grounded"]
    if answers is not None:
        names += ["faithfulness", "answers grounded"]
    columns = [Column("set")] + [Column(name, justify="right") for name in names]
    if answers is not None:
        columns.append(Column("answers"))
    answer_summary = answers.summary() if answers is not None else {}
    table_rows: list[list[str]] = []

    def fmt(value: object) -> str:
        return "-" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))

    def row(label: str, m: dict, a: dict | None) -> list[str]:
        cells = [
            label,
            str(m["items"]),
            fmt(m["hit@1"]),
            fmt(m["hit@5"]),
            fmt(m["recall@5"]),
            fmt(m["mrr"]),
            fmt(m["offtopic_rejected"]),
            fmt(m["ontopic_grounded"]),
        ]
        if a is not None:
            statuses = ", ".join(f"{n} {status}" for status, n in a["statuses"].items() if n)
            cells += [fmt(a["faithfulness"]), fmt(a["grounded"]), statuses or "-"]
        return cells

    table_rows.append(row("all", summary, answer_summary if answers is not None else None))
    for kind, metrics in summary.get("by_kind", {}).items():
        table_rows.append(row(f"kind: {kind}", metrics, answer_summary["by_kind"][kind] if answers is not None else None))
    print_table(console, columns, table_rows)
    console.print(f"median retrieval time: {summary['ms_per_query']:.3f} ms per question (vault loaded)")
    if answers is not None:
        console.print(
            f"answers: {answer_summary['answered']} of {answer_summary['items']} given, median {answer_summary['ms_per_answer'] or 0:.0f} ms "
            "each (retrieval, generation, verification); faithfulness: the mean share of an answer's factual "
            "sentences that its notes support",
            markup=False, highlight=False,
        )  # fmt: skip
        if answers.failures:
            console.print("[bold]failed answers[/bold] (the run went on without them):")
            for failed in answers.failures:
                console.print(f"  {failed.question.id}: {failed.question.q!r}: {failed.error}", markup=False, highlight=False)
    misses = [
        item
        for item in report.items
        if (item.question.expect and not item.hit1) or item.grounded != item.question.grounded
    ]
    if misses:
        console.print("[bold]misses[/bold] (expected first / grounded verdict):")
        for item in misses:
            what = []
            if item.question.expect and not item.hit1:
                rank = item.rank
                what.append(f"expected {', '.join(item.question.expect)}; got {item.results[:3]}" + (f", rank {rank}" if rank else ""))
            if item.grounded != item.question.grounded:
                what.append(f"grounded {str(item.grounded).lower()}, expected {str(item.question.grounded).lower()}")
            console.print(f"  {item.question.id}: {item.question.q!r}: " + "; ".join(what), markup=False, highlight=False)
    return code


def _run_answers(args: argparse.Namespace) -> int:
    """Labelled answers: verify each against its context notes, report per label."""
    from grasbot import is_servable
    from grasbot.answer.prompt import hidden_names
    from grasbot import LABELS, note_passage, subject_names
    from vaulttools.commands._common import load_snapshot
    from vaulttools.evaluation import QuestionSetError, evaluate_answers, load_answer_items, unknown_context

    try:
        items = load_answer_items(args.file)
    except QuestionSetError as exc:
        raise CliError(str(exc)) from None
    root = vault_path(args)
    vault = load_snapshot(root).vault
    public = {note.id: note for note in vault.notes.values() if is_servable(note)}
    if not public:
        raise CliError(f"no public note in {root}: nothing to verify against")
    # a context may name a note by its id, or by its path in the vault (with or without `.md`)
    by_path = {name: note.id for note in public.values() for name in (note.path, note.path.removesuffix(".md"), note.stem)}
    items = [dataclasses.replace(item, context=tuple(c if c in public else by_path.get(c, c) for c in item.context)) for item in items]
    unknown = unknown_context(items, set(public))
    if unknown:
        item, note = unknown[0]
        raise CliError(f"{args.file}: item {item.id}: context names `{note}`, which is no public note of {root}")
    hidden = hidden_names(vault.notes.values())
    passages = {note_id: note_passage(note, hidden) for note_id, note in public.items()}
    subjects = subject_names(public.values())
    report = evaluate_answers(items, lambda ids: [passages[i] for i in ids], subjects)
    summary = report.summary()

    if args.json:
        json.dump(report.as_json(), sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
        return 0

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    def fmt(value: object) -> str:
        return "-" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))

    console = Console()
    console.print(f"[bold]{escape(str(args.file))}[/bold] on {escape(str(root))}: {len(items)} answers, {summary['sentences']} sentences")
    table = Table(show_header=True)
    for name in ("label", "gold", "predicted", "precision", "recall"):
        table.add_column(name, justify="right" if name != "label" else "left")
    for label in LABELS:
        m = summary["labels"][label]
        table.add_row(label, str(m["gold"]), str(m["predicted"]), fmt(m["precision"]), fmt(m["recall"]))
    console.print(table)
    console.print(
        f"unsupported + wrong-citation flagged: {fmt(summary['flagged_recall'])}; supported flagged: "
        f"{fmt(summary['supported_flagged'])}; wrong-citation named: {fmt(summary['wrong_citation_named'])}; "
        f"abstention recognised: {fmt(summary['abstention_recall'])}; accuracy {fmt(summary['accuracy'])}; "
        f"{fmt(summary['ms_per_sentence'])} ms per sentence",
        highlight=False,
    )
    misses = report.misses()
    if misses:
        console.print("[bold]misses[/bold] (gold -> predicted):")
        for miss in misses:
            console.print(
                f"  {miss.item}: {miss.gold.label} -> {miss.predicted}: {miss.gold.text!r} ({miss.reason})",
                markup=False,
                highlight=False,
            )
    return 0
