"""`vaulttools lint`: check every note against TAXONOMIE.md and the link graph; report for people or CI; fix safely."""

from __future__ import annotations

import argparse
import gc
import os
import sys
from pathlib import Path
from typing import Any

from vaulttools.commands._common import VAULT_HELP, CliError, vault_path
from vaulttools.lint import formats as report_formats
from vaulttools.words import count

NAME = "lint"
HELP = "check the vault's notes (frontmatter, taxonomy, links, retrieval) and fix what is safe to fix"

#: Above this many notes, a progress bar is shown on a terminal.
PROGRESS_MIN_NOTES = 500


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="notes or folders to report on (default: the whole vault); links and duplicates are "
                             "still checked against the whole vault, which is found at or above the first PATH")
    parser.add_argument("--vault", metavar="PATH", help=VAULT_HELP)
    parser.add_argument("--taxonomy", metavar="FILE", help="the TAXONOMIE.md to use (default: VAULT/TAXONOMIE.md, "
                        "then TAXONOMIE.md beside the vault)")
    names = report_formats.FORMATS  # (the registry: vaulttools/lint/formats/__init__.py)
    parser.add_argument("--format", choices=names, default=names[0],
                        help=f"report format (default: {names[0]}): "
                        + "; ".join(f"{f.name}: {f.help}" for f in report_formats.formats()))
    parser.add_argument("--fix", action="store_true", help="apply safe fixes, then report what is left")
    parser.add_argument("--diff", action="store_true",
                        help="print the fixes as a unified diff (for git apply or patch -p1 from the current folder) "
                             "and write nothing (exit 1 when there is one)")
    parser.add_argument("--select", metavar="RULE,...", help="only these rules")
    parser.add_argument("--ignore", metavar="RULE,...", help="not these rules")
    parser.add_argument("--baseline", metavar="FILE",
                        help="report only the findings not recorded in FILE (default: the configuration's `baseline`)")
    parser.add_argument("--write-baseline", metavar="FILE",
                        help="record every finding of the vault in FILE (then use it with --baseline), report nothing")
    parser.add_argument("--no-baseline", action="store_true", help="ignore the configuration's baseline")
    parser.add_argument("--statistics", action="store_true",
                        help="print the number of findings per rule (and how many --fix can fix) instead of each one")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="print the findings only: no summary, no notes, no progress")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when errors are found")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the lint cache")
    parser.add_argument("--output", metavar="FILE", help="write the report to FILE instead of standard output (`-`: standard output)")


def run(args: argparse.Namespace) -> int:
    # The cyclic GC stays off for the whole command, as the loader and the rules already keep it off for their
    # own parts: re-enabled in between, its first pass would scan every finding and report row of the run (35k
    # findings on the 10k benchmark vault (benchmarks/README.md, "Figures behind the code")) for garbage the
    # run does not make.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _run(args)
    except CliError:
        raise
    except KeyboardInterrupt:
        raise
    except Exception as exc:  # never a traceback: one line, exit 2
        raise CliError(f"internal error: {type(exc).__name__}: {exc} (please report it)") from exc
    finally:
        if gc_was_enabled:
            gc.enable()


def _run(args: argparse.Namespace) -> int:
    # imports kept to what every run needs: the cached answer loads neither the vault engine nor the rules
    from vaulttools.discovery import DiscoveryError, select_paths
    from vaulttools.lint.cache import LintCache, profile_has_findings
    from vaulttools.lint.config import ConfigError, load_config, parse_rule_list
    from vaulttools.taxonomy import TaxonomyError, find_taxonomy, load_taxonomy

    if args.output == "-":  # the usual name for standard output
        args.output = None
    if args.fix and args.diff:
        raise CliError("--fix and --diff go one at a time: --diff shows what --fix would write, and writes nothing")
    if args.write_baseline and (args.fix or args.diff):
        raise CliError("--write-baseline records today's findings: run it without --fix or --diff")
    if args.statistics and args.format not in ("text", "json"):
        raise CliError("--statistics prints text or json (--format text or --format json)")
    root = vault_path(args, args.paths[0] if args.paths else None)
    try:
        selection = select_paths(root, args.paths)
    except DiscoveryError as exc:
        raise CliError(str(exc)) from None
    if args.write_baseline and not selection.everything:
        raise CliError("--write-baseline records the findings of the whole vault: give the vault, not notes in it")
    try:
        config = load_config(root).with_options(
            select=parse_rule_list(args.select, "--select"), ignore=parse_rule_list(args.ignore, "--ignore")
        )
    except ConfigError as exc:
        raise CliError(str(exc)) from None
    baseline = None
    baseline_file = None if (args.no_baseline or args.write_baseline or args.fix or args.diff) else (
        args.baseline or config.baseline)
    if baseline_file is not None:
        from vaulttools.lint.baseline import Baseline, BaselineError

        try:
            baseline = Baseline.read(baseline_file)
        except BaselineError as exc:
            raise CliError(str(exc)) from None
    taxonomy = None
    found = find_taxonomy(root, Path(args.taxonomy) if args.taxonomy else None)
    if found is not None:
        try:
            taxonomy = load_taxonomy(found)
        except TaxonomyError as exc:
            raise CliError(str(exc)) from None

    cache = None if args.no_cache or args.fix or args.diff or profile_has_findings(root, config) else LintCache.open(root, taxonomy, config)
    answered = cache is not None and cache.answer(taxonomy, config)
    vault = None
    result = None
    if not answered:
        from grasbot import Vault
        from vaulttools.lint import lint_vault

        try:
            vault = Vault.load(root)
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise CliError(str(exc)) from None
        quiet_bar = args.quiet or args.format != "text"
        progress, stop = _progress(0 if quiet_bar else len(vault.notes))
        try:
            result = lint_vault(vault, taxonomy, config, cache=cache, progress=progress)
        finally:
            stop()
        if cache is not None:
            cache.record(vault, result, result.answers_checked)

    if args.write_baseline:
        from vaulttools.lint.baseline import Baseline, BaselineError

        if result is None:
            result = cache.result()  # type: ignore[union-attr]
        if cache is not None:
            cache.save()
        recorded = Baseline.of(result.diagnostics)
        try:
            recorded.write(args.write_baseline)
        except BaselineError as exc:
            raise CliError(str(exc)) from None
        notes = len({d.path for d in result.diagnostics})
        if not args.quiet:
            print(f"Wrote {args.write_baseline}: {count(len(recorded), 'finding')} in {count(notes, 'note')} "
                  f"(of {count(result.notes, 'note')} checked); run with --baseline {args.write_baseline} "
                  "to report only new ones.", file=sys.stderr)
        return 0

    if args.diff:
        from vaulttools.lint import apply_fixes
        from vaulttools.lint.formats import path_prefix

        wanted = [d for d in result.diagnostics if d.path in selection]
        fixes = apply_fixes(vault, wanted, taxonomy, config, write=False)
        changed = [f for f in fixes if f.changed]
        prefix = path_prefix(root)
        outside = prefix.startswith("/")
        _write_output(args, "".join(f.diff("" if outside else prefix) for f in changed))
        fixed = sum(len(f.applied) for f in changed)
        if not args.quiet:
            where = (f"apply it from {root.resolve()}" if outside else "apply it from here with git apply or patch -p1")
            print(f"{count(fixed, 'fix', 'fixes')} in {count(len(changed), 'file')} "
                  f"(nothing written; run with --fix to apply, or {where})", file=sys.stderr)
        return 0 if (args.exit_zero or not changed) else 1

    failed = 0
    if args.fix:
        from vaulttools.lint import apply_fixes, lint_vault

        wanted = [d for d in result.diagnostics if d.path in selection]
        fixes = apply_fixes(vault, wanted, taxonomy, config, write=True)
        written = [f for f in fixes if f.changed and f.error is None]
        for f in fixes:
            if f.error:
                failed += 1
                print(f"not fixed: {f.error}", file=sys.stderr)
            for diag, reason in f.skipped:
                print(f"not fixed: {f.path}:{diag.line}:{diag.column}: {diag.rule}: {reason}", file=sys.stderr)
        fixed = sum(len(f.applied) for f in written)
        if not args.quiet:
            print(f"Fixed {count(fixed, 'finding')} in {count(len(written), 'file')}.", file=sys.stderr)
        if written:  # report what is left, from the files as they are now
            for f in written:
                vault.update_file(f.path)  # (vault-relative: `root` may be a relative path)
            result = lint_vault(vault, taxonomy, config)

    color = args.format == "text" and not args.output and sys.stdout.isatty()
    filtered = baseline is not None or not selection.everything or args.statistics or args.quiet
    report: str | bytes | None = None
    if cache is not None and not color and not filtered:  # the stored per-note parts of the last report
        report = cache.report(args.format, result=result)
    if report is None:
        from vaulttools.lint import render

        if result is None:
            result = cache.result()  # type: ignore[union-attr]
        if filtered:
            result = _narrow(result, selection, baseline, vault, cache, config, quiet=args.quiet)
        if args.statistics:
            from vaulttools.lint.statistics import render_statistics

            report = render_statistics(result, args.format, quiet=args.quiet)
        elif args.quiet and args.format == "text":
            from vaulttools.lint.formats import path_prefix
            from vaulttools.lint.formats.text import findings_only

            report = findings_only(result, path_prefix(result.root))
        elif color:
            report = render(result, args.format, color=True)
        else:  # (json: 17 MB on the 10k benchmark vault, written as the UTF-8 bytes it is built as)
            from vaulttools.lint.formats import render_bytes

            report = render_bytes(result, args.format)
    if cache is not None:
        cache.save()
    _write_output(args, report)
    if args.exit_zero:
        return 0
    has_errors = result.has_errors if result is not None else cache.has_errors  # type: ignore[union-attr]
    return 1 if (has_errors or failed) else 0


def _narrow(result, selection, baseline, vault, cache, config, quiet: bool):
    """`result` with only the findings of the selected notes that the baseline does not hold; says on stderr
    what the baseline silenced (unless `quiet`)."""
    from dataclasses import replace

    diagnostics = result.diagnostics
    notes = result.notes
    if not selection.everything:
        known = vault.notes if vault is not None else (cache.snapshot or {}).get("notes", {})
        checked = [p for p in selection.keep(known) if not config.excluded(p)]
        notes = len(checked)
        diagnostics = [d for d in diagnostics if d.path in selection]
    else:
        checked = None
    if baseline is not None:
        match = baseline.match(diagnostics, checked)
        diagnostics = match.kept
        if not quiet:
            gone = (f"; {count(match.gone, 'entry', 'entries')} of it no longer found (fixed or changed: "
                    f"--write-baseline {baseline.source} drops them)") if match.gone else ""
            print(f"Baseline {baseline.source}: {count(match.baselined, 'finding')} baselined, not reported{gone}.",
                  file=sys.stderr)
    return replace(result, diagnostics=diagnostics, notes=notes)


def _write_output(args: argparse.Namespace, text: str | bytes) -> None:
    """Write the report in one go; UTF-8 bytes (a report from the cache) are written as they are where the text
    would be encoded to the same bytes."""
    if isinstance(text, bytes) and not _utf8_bytes_ok(None if args.output else sys.stdout):
        text = text.decode("utf-8")
    if args.output:
        try:
            if isinstance(text, bytes):
                Path(args.output).write_bytes(text)
            else:
                Path(args.output).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CliError(f"cannot write {args.output}: {exc.strerror or exc}") from None
    elif isinstance(text, bytes):
        sys.stdout.flush()
        sys.stdout.buffer.write(text)
        sys.stdout.buffer.flush()
    else:
        sys.stdout.write(text)
        sys.stdout.flush()


def _utf8_bytes_ok(stream) -> bool:
    """Whether writing UTF-8 bytes gives what writing the text would: no newline translation, and a stream
    (None: a file we open as UTF-8) that encodes to UTF-8 and has a binary buffer."""
    if os.linesep != "\n":
        return False
    if stream is None:
        return True
    encoding = (getattr(stream, "encoding", None) or "").lower().replace("_", "-")
    return encoding in ("utf-8", "utf8") and hasattr(stream, "buffer")


def _progress(total: int):
    """A rich progress bar on stderr for large vaults on a terminal (`total` 0: none, as for -q or a format other
    than text); (callback, stop) — no-ops otherwise."""
    if total < PROGRESS_MIN_NOTES or not sys.stderr.isatty():
        return None, lambda: None
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("linting"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=Console(stderr=True), transient=True)
    task = bar.add_task("lint", total=total)
    bar.start()

    def update(done: int, total_: int) -> None:
        bar.update(task, completed=done, total=total_)

    return update, bar.stop
