"""`vaulttools import pdf FILE…`: PDF books become section notes with page provenance (docs/pdf-import.md).

Exit status: 0 every book imported (or, with --dry-run, planned); 1 a file could not be imported (not a
PDF, encrypted, broken, no text, too many pages: one line naming it, the other files still go through);
2 usage error (bad option, vault missing).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import re
import sys
from pathlib import Path
from typing import Any

from vaulttools.commands._common import CliError, vault_path

NAME = "import"
#: The install extra this command needs (vaulttools.extras).
EXTRA = "pdf"
HELP = "import documents as notes: `import pdf BOOK.pdf` makes one note per section, with its pages"

_KEY = re.compile(r"^[A-Za-z_][\w-]*$")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    kinds = parser.add_subparsers(dest="kind", metavar="KIND")
    pdf = kinds.add_parser(
        "pdf",
        help="a PDF book: one note per section (from the outline or numbered headings), printed pages kept",
        description="Import PDF books: one `section` note per section and a `moc` note per book.",
    )
    pdf.add_argument("files", nargs="+", metavar="FILE", help="the PDF files")
    pdf.add_argument("--vault", metavar="PATH", help="the vault folder (default: $VAULT_DIR, then ./vault)")
    pdf.add_argument("--folder", metavar="REL", help="vault-relative folder for the notes (default: 60-Livres/<book>)")
    pdf.add_argument(
        "--meta", metavar="KEY=VALUE", action="append", default=[],
        help="a field for every note of the book, e.g. classe=10 or domains=livres (repeatable; lists: a,b)",
    )
    pdf.add_argument("--level", type=int, default=2, metavar="N", help="deepest heading level with a note of its own (default: 2)")
    pdf.add_argument("--visibility", choices=("private", "public"), default="private", help="of new notes (default: private)")
    pdf.add_argument("--copy-pdf", action="store_true", help="copy the PDF into the vault's attachments; page markers become links")
    pdf.add_argument("--dry-run", action="store_true", help="show what would change, as a diff; write nothing")
    pdf.add_argument("--json", action="store_true", help="print a JSON summary")
    pdf.add_argument("--max-pages", type=int, default=1500, metavar="N", help="refuse longer PDFs (default: 1500)")
    pdf.add_argument("--time-limit", type=float, default=120.0, metavar="S", help="stop reading one PDF after S seconds (default: 120)")
    pdf.add_argument("--taxonomy", metavar="FILE", help="the taxonomy to check --meta against (default: VAULT/TAXONOMIE.md)")


def parse_meta(pairs: list[str]) -> dict[str, Any]:
    """`KEY=VALUE` pairs: numbers stay numbers (`classe=10`), list fields split on commas."""
    import yaml

    from grasbot.model import LIST_FIELDS
    from vaulttools.importers.pdf.notes import IMPORTER_FIELDS

    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not _KEY.match(key):
            raise CliError(f"--meta {pair!r}: write KEY=VALUE, e.g. --meta classe=10")
        if key in (*IMPORTER_FIELDS, "slug", "updated", "visibility", "aliases", "answers"):
            raise CliError(f"--meta {key}: the import writes `{key}` itself" + (" (use --visibility)" if key == "visibility" else ""))
        if key in LIST_FIELDS:
            out[key] = [v.strip() for v in value.split(",") if v.strip()]
            continue
        try:
            parsed = yaml.safe_load(value) if value else ""
        except yaml.YAMLError:
            parsed = value
        out[key] = parsed if isinstance(parsed, (str, int, float, bool)) and not isinstance(parsed, _dt.date) else value
    return out


def _taxonomy_warnings(vault: Path, explicit: str | None, meta: dict[str, Any]) -> list[str]:
    from vaulttools.taxonomy import TaxonomyError, find_taxonomy, load_taxonomy

    found = find_taxonomy(vault, Path(explicit) if explicit else None)
    if found is None:
        return []
    try:
        taxonomy = load_taxonomy(found)
    except TaxonomyError as exc:
        if explicit:
            raise CliError(f"cannot read the taxonomy: {exc}") from None
        return [f"taxonomy not used, it cannot be read: {exc}"]
    out: list[str] = []
    types = taxonomy.vocabulary("type")
    if types is not None and not types.allows("section"):
        out.append(f"{found}: the `section` type is not listed; lint will report type-value (see docs/pdf-import.md)")
    for name, bounds in sorted(taxonomy.counts.items()):
        if bounds.min and name not in meta and name not in ("aliases", "answers"):
            out.append(f"{found} asks for {bounds.describe()} `{name}` per note: pass --meta {name}=VALUE")
    for name, value in sorted(meta.items()):
        vocab = taxonomy.vocabulary(name)
        for item in value if isinstance(value, list) else [value]:
            if vocab is not None and not vocab.allows(str(item)):
                out.append(f"--meta {name}={item}: not in the `{name}` list of {found}")
    return out


def run(args: argparse.Namespace) -> int:
    if getattr(args, "kind", None) != "pdf":
        raise CliError("say what to import: vaulttools import pdf BOOK.pdf [--vault DIR]")
    if args.level < 1:
        raise CliError(f"--level must be at least 1, got {args.level}")
    if args.max_pages < 1:
        raise CliError(f"--max-pages must be at least 1, got {args.max_pages}")
    vault = vault_path(args)
    meta = parse_meta(args.meta)

    from vaulttools.authoring import existing_slugs
    from vaulttools.importers.pdf import ImportOptions, PdfImportError, plan_import, write_plan
    from vaulttools.lint.fixes import unified_diff

    warnings = _taxonomy_warnings(vault, args.taxonomy, meta)
    options = ImportOptions(
        vault=vault, folder=args.folder, meta=meta, level=args.level, visibility=args.visibility,
        copy_pdf=args.copy_pdf, max_pages=args.max_pages, time_limit=args.time_limit,
    )
    taken = set(existing_slugs(vault))
    status = 0
    reports: list[dict[str, Any]] = []
    err = sys.stderr
    for name in args.files:
        path = Path(name).expanduser()
        try:
            plan = plan_import(path, options, taken)
            if not args.dry_run:
                write_plan(plan, vault)
        except PdfImportError as exc:
            status = 1
            print(f"vaulttools import: {exc}", file=err)
            reports.append({"pdf": str(path), "error": str(exc)})
            continue
        plan.warnings = list(warnings)
        summary = plan.summary()
        summary["dry_run"] = bool(args.dry_run)
        reports.append(summary)
        if args.json:
            continue
        if args.dry_run:
            for change in plan.changes:
                if change.status == "unchanged":
                    continue
                if change.path.lower().endswith(".pdf"):
                    print(f"would copy {path} -> {change.path}")
                    continue
                sys.stdout.write(unified_diff(change.path, change.before or b"", change.after))
        verb = "would write" if args.dry_run else "wrote"
        sources = ", ".join(summary["page_source"])
        offset = f", offset {summary['offset']}" if summary["offset"] is not None else ""
        print(
            f"{path.name} -> {plan.folder}/: {summary['sections']} sections ({summary['structure']}), "
            f"{summary['pages']} pages, printed pages from {sources}{offset}; {verb} "
            f"{summary['created']} new, {summary['updated']} updated, {summary['unchanged']} unchanged",
            file=err,
        )
        for line in [*plan.book.problems, *warnings]:
            print(f"  - {line}", file=err)
        for change in plan.changes:
            for note in change.notes:
                print(f"  - {change.path}: {note}", file=err)
        for stale in plan.stale:
            print(f"  - {stale}: no longer in the PDF; kept (delete it by hand if the section is gone)", file=err)
    if args.json:
        json.dump(reports, sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    return status
