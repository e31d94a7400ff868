"""`vaulttools eval`: run a question set (a file, or a Langfuse dataset) against a vault and report retrieval
quality and speed; export question sets and chosen traces to Langfuse datasets; or run a set of labelled
answers through the answer verifier and report its precision and recall per label."""

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
    if args.langfuse_dataset or args.export_dataset:
        from vaulttools.langfuse_datasets import run_langfuse

        return run_langfuse(args, show_report)
    if args.file is None:
        raise CliError("give a question set FILE.yaml (or --langfuse-dataset NAME)")
    try:
        if is_answer_set(args.file):
            return _run_answers(args)
        questions = load_questions(args.file)
    except QuestionSetError as exc:
        raise CliError(str(exc)) from None
    root = vault_path(args, given)

    pipeline = load_pipeline(root, "nothing to evaluate", use_cache=not args.no_cache)
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
    return show_report(args, str(args.file), root, report, index.size)


def show_report(args: argparse.Namespace, label: str, root: object, report: Any, notes: int) -> int:
    """Print a retrieval report: JSON with --json, else the table, the median time and the misses."""
    summary = report.summary()

    if args.json:
        json.dump(report.as_json(), sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
        return 0

    from vaulttools.tables import Column, console as make_console, print_table

    console = make_console()
    console.print(f"[bold]{label}[/bold] on {root}: {summary['items']} questions, {notes} public notes")
    columns = [Column("set")] + [Column(name, justify="right") for name in
                                 ("items", "hit@1", "hit@5", "recall@5", "MRR", "off-topic rejected", "on-topic grounded")]
    table_rows: list[list[str]] = []

    def row(label: str, m: dict) -> list[str]:
        def fmt(value: object) -> str:
            return "-" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))

        return [
            label,
            str(m["items"]),
            fmt(m["hit@1"]),
            fmt(m["hit@5"]),
            fmt(m["recall@5"]),
            fmt(m["mrr"]),
            fmt(m["offtopic_rejected"]),
            fmt(m["ontopic_grounded"]),
        ]

    table_rows.append(row("all", summary))
    for kind, metrics in summary.get("by_kind", {}).items():
        table_rows.append(row(f"kind: {kind}", metrics))
    print_table(console, columns, table_rows)
    console.print(f"median retrieval time: {summary['ms_per_query']:.3f} ms per question (vault loaded)")
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
    return 0


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
