"""`vaulttools tui [PATH] [--vault PATH] [--api URL] [--token T] [--taxonomy F]`: the terminal UI.

Vault health, a note's problems (and their safe fixes), and a live preview of what GrasBot would
retrieve for a question; it watches the vault like `vaulttools watch`. A missing vault or an unreadable
`--taxonomy` is a one-line message and exit status 2, before the screen is taken over.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from vaulttools.commands._common import CliError, add_cache_argument, add_vault_arguments, vault_path
from vaulttools.commands.reload import add_api_arguments, api_token, api_url

NAME = "tui"
#: The install extra this command needs (vaulttools.extras).
EXTRA = "tui"
HELP = "open the terminal UI: vault health, a note's problems, and a live retrieval preview"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_vault_arguments(parser)
    add_api_arguments(parser)
    parser.add_argument("--taxonomy", metavar="F", help="the TAXONOMIE.md to check against (default: VAULT/, then ../)")
    parser.add_argument("--no-watch", action="store_true", help="do not watch the vault for changes")
    add_cache_argument(parser)


def run(args: argparse.Namespace) -> int:
    root = vault_path(args)
    api = api_url(args)
    taxonomy = None
    if args.taxonomy:
        from vaulttools.taxonomy import TaxonomyError, load_taxonomy

        taxonomy = Path(args.taxonomy).expanduser()
        if not taxonomy.is_file():
            raise CliError(f"--taxonomy: file not found: {taxonomy}")
        try:
            load_taxonomy(taxonomy)
        except TaxonomyError as exc:
            raise CliError(f"--taxonomy: {exc}") from None

    from vaulttools.tui.app import VaultApp

    app = VaultApp(root, taxonomy=taxonomy, api=api, token=api_token(args), watch=not args.no_watch,
                   use_cache=not args.no_cache)
    app.run()
    return 0
