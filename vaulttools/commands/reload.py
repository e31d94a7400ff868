"""`vaulttools reload`: tell the running GrasBot API to re-read the vault (`POST /reload-vault`), once.

Exit status: 0 the API reloaded; 1 the API answered an error (bad token, failure on its side); 2 the API is
unreachable, or the usage is wrong.
"""

from __future__ import annotations

import argparse
import json
import sys

from vaulttools.commands._common import CliError

NAME = "reload"
HELP = "push POST /reload-vault to the running GrasBot API (exit 0 ok, 1 API error, 2 unreachable)"


def add_api_arguments(parser: argparse.ArgumentParser) -> None:
    """`--api URL` and `--token T`, shared with `vaulttools watch`."""
    parser.add_argument(
        "--api",
        metavar="URL",
        default=None,
        help="the GrasBot API (default: $GRASBOT_API, then http://127.0.0.1:8000)",
    )
    parser.add_argument(
        "--token",
        metavar="T",
        default=None,
        help="bearer token for /reload-vault (default: $GRASBOT_RELOAD_TOKEN)",
    )


def api_url(args: argparse.Namespace) -> str:
    """The API base URL the user meant; CliError when it is not an http(s) URL."""
    import os

    from vaulttools.reload_client import DEFAULT_API, reload_url

    api = args.api or os.environ.get("GRASBOT_API") or DEFAULT_API
    try:
        reload_url(api)
    except ValueError as exc:
        raise CliError(f"--api: {exc}") from None
    return api


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_api_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    parser.add_argument(
        "--timeout", type=float, default=None, metavar="S", help="seconds to wait for the answer (default: 15)"
    )


def run(args: argparse.Namespace) -> int:
    from vaulttools.reload_client import DEFAULT_TIMEOUT, reload_vault

    api = api_url(args)
    timeout = args.timeout if args.timeout is not None else DEFAULT_TIMEOUT
    if timeout <= 0:
        raise CliError("--timeout must be positive")
    result = reload_vault(api, args.token, timeout=timeout)
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False))
    else:
        print(result.summary(), file=sys.stdout if result.ok else sys.stderr)
    return result.exit_code
