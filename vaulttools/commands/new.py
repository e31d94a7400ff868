"""`vaulttools new TYPE "Title"`: create a note from its type's template, private until the author publishes it.

Prints the new file's path alone on stdout (so scripts can use it: ``$EDITOR "$(vaulttools new projet X)"``),
and on stderr what was adjusted and what the author still has to fill before the note passes lint.

Exit status: 0 created; 2 the type is unknown, the vault is missing, the file exists, or a template or the
taxonomy given with ``--taxonomy`` cannot be read. Nothing is ever overwritten.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vaulttools.commands._common import CliError, add_vault_arguments, vault_path

NAME = "new"
HELP = "create a note from its type's template (projet, competence, parcours, moc, technique), private by default"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = "vaulttools new [-h] [PATH] TYPE TITLE [--vault PATH] [--slug SLUG] [--domain D] [--tag T] [--taxonomy FILE]"
    parser.add_argument("type", metavar="TYPE", help="projet, competence, parcours, moc or technique "
                        "(after the vault folder PATH, if given)")
    parser.add_argument("title", metavar="TITLE", help="the note's title (the slug and file name come from it)")
    parser.add_argument("extra", nargs="?", help=argparse.SUPPRESS)  # TITLE when PATH comes first
    add_vault_arguments(parser, positional=False)
    parser.add_argument("--slug", metavar="SLUG", help="use this slug instead of the one made from the title")
    parser.add_argument(
        "--domain", metavar="D", action="append", default=[], help="a domain from TAXONOMIE.md (repeatable)"
    )
    parser.add_argument("--tag", metavar="T", action="append", default=[], help="a tag (repeatable)")
    parser.add_argument("--taxonomy", metavar="FILE", help="the taxonomy (default: VAULT/TAXONOMIE.md, then ../)")


def run(args: argparse.Namespace) -> int:
    from vaulttools.authoring import AuthoringError, create_note, normalize_type
    from vaulttools.taxonomy import TaxonomyError, find_taxonomy, load_taxonomy

    given = None
    if args.extra is not None:  # `new PATH TYPE TITLE`: the first is the vault
        if args.vault or not Path(args.type).expanduser().is_dir():
            raise CliError(f"too many arguments: `{args.extra}` (vaulttools new [PATH] TYPE TITLE; "
                           "PATH must be an existing folder)")
        given, args.type, args.title = args.type, args.title, args.extra
    try:
        note_type = normalize_type(args.type)
    except AuthoringError as exc:
        raise CliError(str(exc)) from None
    vault = vault_path(args, given)

    explicit = Path(args.taxonomy).expanduser() if args.taxonomy else None
    taxonomy = None
    warnings: list[str] = []
    found = find_taxonomy(vault, explicit)
    if found is not None:
        try:
            taxonomy = load_taxonomy(found)
        except TaxonomyError as exc:
            if explicit is not None:
                raise CliError(f"cannot read the taxonomy: {exc}") from None
            # A typo in TAXONOMIE.md must not stop the author from writing; lint reports it.
            warnings.append(f"taxonomy not used, it cannot be read: {exc}")

    try:
        note = create_note(
            note_type,
            args.title,
            vault,
            taxonomy=taxonomy,
            slug=args.slug,
            domains=[d.strip() for d in args.domain if d.strip()],
            tags=[t.strip() for t in args.tag if t.strip()],
        )
    except AuthoringError as exc:
        raise CliError(str(exc)) from None

    print(note.path)
    err = sys.stderr
    print(f"created {note.note_type} « {args.title.strip()} » from {note.template}", file=err)
    print(
        "visibility: private — GrasBot will not use this note until you publish it: "
        "set `visibility: public` in its frontmatter once it is written and reviewed.",
        file=err,
    )
    for line in [*warnings, *note.notes]:
        print(f"  - {line}", file=err)
    fields = [name for name, given in (("domains", args.domain), ("tags", args.tag)) if not given]
    todo = ", ".join(["the body", *fields, "aliases/answers in your own words"])
    print(f"to fill: {todo}; then check with `vaulttools lint`.", file=err)
    return 0
