"""`vaulttools tui`: placeholder until the Textual app lands."""

from __future__ import annotations

import argparse

from vaulttools.commands._common import CliError, add_vault_arguments

NAME = "tui"
HELP = "open the terminal UI: vault health, a note's problems, and a live retrieval preview"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_vault_arguments(parser)


def run(args: argparse.Namespace) -> int:
    raise CliError("the TUI is not built yet")
