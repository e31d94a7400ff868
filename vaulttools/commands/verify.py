"""`vaulttools verify`: check an answer, sentence by sentence, against the notes it was written from."""

from __future__ import annotations

import argparse
import json
import sys

from vaulttools.commands._common import CliError, add_vault_arguments, load_snapshot, vault_path

NAME = "verify"
HELP = "check each sentence of an answer against the given notes (supported, unsupported, wrong citation...)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_vault_arguments(parser, positional=False)
    parser.add_argument(
        "--sources", required=True, metavar="ID[,ID...]", help="the notes the answer was written from, in prompt order"
    )
    parser.add_argument("--json", action="store_true", help="print the verification as JSON")
    given = parser.add_mutually_exclusive_group(required=True)
    given.add_argument("--answer", metavar="TEXT", help="the answer to check")
    given.add_argument("stdin", nargs="?", choices=["-"], metavar="-", help="read the answer from standard input")


def _source_ids(raw: str) -> list[str]:
    ids = [part.strip() for part in raw.split(",") if part.strip()]
    if not ids:
        raise CliError("--sources is empty: give the ids of the notes the answer was written from, e.g. --sources rust,python")
    return list(dict.fromkeys(ids))


def run(args: argparse.Namespace) -> int:
    ids = _source_ids(args.sources)
    if args.answer is not None:
        answer = args.answer
    else:
        try:
            answer = sys.stdin.read()
        except UnicodeDecodeError:
            raise CliError("the answer on standard input is not UTF-8 text") from None
    if not answer.strip():
        raise CliError("the answer is empty")
    root = vault_path(args)

    from grasbot import is_servable
    from grasbot.answer.prompt import hidden_names
    from grasbot import note_passage, subject_names, verify

    vault = load_snapshot(root).vault
    by_id = {note.id: note for note in vault.notes.values()}
    public = [note for note in vault.notes.values() if is_servable(note)]
    hidden = hidden_names(vault.notes.values())
    passages = []
    for note_id in ids:
        note = by_id.get(note_id)
        if note is None:
            from vaulttools.lint.rules import did_you_mean

            guess = did_you_mean(note_id, sorted(n.id for n in public))
            hint = f" (did you mean `{guess}`?)" if guess else ""
            raise CliError(f"--sources: no note `{note_id}` in {root}{hint}")
        if not is_servable(note):
            # the bot never gives such a note to the model: an answer cannot be checked against it
            raise CliError(f"--sources: `{note_id}` is not a public note ({note.path}); GrasBot never uses it")
        passages.append(note_passage(note, hidden))
    result = verify(answer, passages, subject_names(public))
    code = 0 if result.status in ("verified", "abstained") else 1

    if args.json:
        json.dump(result.as_dict(), sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
        return code

    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = Console()
    colours = {"supported": "green", "unsupported": "red", "wrong-citation": "yellow", "abstention": "cyan", "no-claim": "dim"}
    table = Table(show_header=True, show_lines=False)
    for name in ("#", "label", "sentence", "evidence", "reason"):
        table.add_column(name, overflow="fold")
    for number, check in enumerate(result.sentences, 1):
        colour = colours[check.label]
        table.add_row(
            str(number),
            f"[{colour}]{check.label}[/{colour}]",
            escape(check.text),
            escape(check.evidence[0]) if check.evidence else "-",
            escape(check.reason),
        )
    console.print(table, markup=True, highlight=False)
    counts = ", ".join(f"{n} {label}" for label, n in result.summary.items() if n)
    console.print(f"status: [bold]{result.status}[/bold] ({counts or 'no sentence'})", highlight=False)
    return code
