"""`vaulttools eval`: run a question set (a file, or a Langfuse dataset) against a vault and report retrieval
quality and speed; export question sets and chosen traces to Langfuse datasets."""

from __future__ import annotations

import argparse
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
HELP = "measure retrieval on a question set (hit@1, hit@5, recall@5, MRR, off-topic rejection)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_vault_arguments(parser, positional=False)
    add_cache_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the summary and every item as JSON")
    parser.add_argument(
        "files", metavar="[PATH] FILE.yaml", nargs="*",
        help="the question set (items: id, q, expect, grounded, kind), after the vault folder if given; with "
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
    from vaulttools.evaluation import QuestionSetError, evaluate, load_questions, unknown_expectations

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
