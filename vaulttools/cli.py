"""`vaulttools`: the command line. Each sub-command lives in `vaulttools.commands.<name>`."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from vaulttools import __version__
from vaulttools.commands import COMMANDS
from vaulttools.commands._common import CliError, write_pending_snapshots


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vaulttools",
        description="Lint, watch and author an Obsidian vault that feeds GrasBot, and preview what it retrieves.",
    )
    parser.add_argument("--version", action="version", version=f"vaulttools {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"vaulttools.commands.{name}")
        command = sub.add_parser(getattr(module, "NAME", name), help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(_run=module.run, _extra=getattr(module, "EXTRA", None))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    extra = getattr(args, "_extra", None)
    if extra is not None:
        from vaulttools.extras import missing_extra

        message = missing_extra(extra, f"vaulttools {args.command}")
        if message is not None:
            print(f"vaulttools {args.command}: error: {message}", file=sys.stderr)
            return 2
    try:
        try:
            return int(args._run(args) or 0)
        finally:
            write_pending_snapshots()  # after the output: the command's own time is not spent on it
    except CliError as exc:
        print(f"vaulttools {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug of ours: one clear line, the traceback only on request
        if os.environ.get("VAULTTOOLS_DEBUG"):
            import traceback  # only here: every command's start-up stays lighter

            traceback.print_exc()
        print(
            f"vaulttools {args.command}: internal error: {type(exc).__name__}: {exc} "
            "(set VAULTTOOLS_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
