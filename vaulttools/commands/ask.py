"""`vaulttools ask`: what GrasBot would retrieve for a question, with scores, reasons and the prompt plan."""

from __future__ import annotations

import argparse
import json
import sys

from vaulttools.commands._common import (
    CliError,
    add_cache_argument,
    add_vault_arguments,
    load_pipeline,
    split_vault_positional,
    vault_path,
)

NAME = "ask"
HELP = "show which notes GrasBot would retrieve for a question, and why"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_vault_arguments(parser, positional=False)
    add_cache_argument(parser)
    parser.add_argument("--top-k", type=int, default=5, metavar="N", help="number of notes to show (default: 5)")
    parser.add_argument("--json", action="store_true", help="print JSON (docs/architecture.md) instead of a table")
    parser.add_argument("question", nargs="+", metavar="[PATH] QUESTION",
                        help="the visitor's question; a first word that is an existing folder, followed by more, "
                             "is the vault (vaulttools ask vault \"Rust ?\")")


def run(args: argparse.Namespace) -> int:
    given, words = (None, args.question) if args.vault else split_vault_positional(args.question, 1)
    question = " ".join(words).strip()
    if not question:
        raise CliError("empty question: pass the question to ask, e.g. vaulttools ask \"C'est quoi push_swap ?\"")
    if args.top_k < 1:
        raise CliError(f"--top-k must be at least 1, got {args.top_k}")
    root = vault_path(args, given)

    from grasbot import page_fields
    from grasbot.answer.filtering import filters_of

    retrieval = load_pipeline(root, "nothing GrasBot could retrieve", args.top_k, use_cache=not args.no_cache).retrieve(question)
    filters = filters_of(retrieval)

    if args.json:
        payload = {
            "query": retrieval.result.query,
            "grounded": retrieval.grounded,
            "filters": filters,
            "results": [
                {
                    "slug": hit.id,
                    "path": hit.note.path,
                    "title": hit.note.title,
                    "type": hit.note.type,
                    "score": hit.score,
                    "reasons": list(hit.reasons),
                    "direct": hit.direct,
                    "prompt": "cut" if context.truncated else "whole",
                    **page_fields(hit.note),
                }
                for hit, context in zip(retrieval.hits, retrieval.context, strict=True)
            ],
        }
        json.dump(payload, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
        return 0

    from vaulttools.tables import Column, console as make_console, print_table

    console = make_console()
    if filters:
        applied = ", ".join(f"{k}={v}" for k, v in filters["applied"].items()) or "none"
        relaxed = f" (relaxed: {', '.join(filters['relaxed'])}, nothing matched them all)" if filters["relaxed"] else ""
        console.print(f"filters: {applied}{relaxed}", markup=False)
    if not retrieval.hits:
        console.print(f"[bold]{question}[/bold]")
        console.print("No note matches this question. [yellow]grounded: no[/yellow] (the bot answers without notes)")
        return 0
    columns = [Column("#", justify="right"), Column("slug", style="bold cyan", overflow="fold"),
               Column("title", overflow="fold"), Column("type"), Column("score", justify="right"), Column("prompt"),
               Column("reasons", overflow="fold")]
    rows = [
        [str(rank), hit.id, hit.note.title, hit.note.type or "-", f"{hit.score:.2f}",
         "cut" if context.truncated else "whole", ", ".join(hit.reasons)]
        for rank, (hit, context) in enumerate(zip(retrieval.hits, retrieval.context, strict=True), 1)
    ]
    print_table(console, columns, rows, title=question)
    verdict = (
        "[green]grounded: yes[/green] (the notes above are credible sources)"
        if retrieval.grounded
        else "[yellow]grounded: no[/yellow] (no note is a credible source: the bot is told not to invent facts)"
    )
    console.print(verdict)
    return 0
