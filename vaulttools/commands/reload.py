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
    """`--api URL`, `--token-file F` and `--token T`, shared with `vaulttools watch` and `tui`.

    The token is best left out of the command line, where other local users read it (`ps`): it comes from
    `GRASBOT_RELOAD_TOKEN`, or from a file (`--token-file`); `--token` still works.
    """
    parser.add_argument(
        "--api",
        metavar="URL",
        default=None,
        help="the GrasBot API (default: $GRASBOT_API, then http://127.0.0.1:8000)",
    )
    tokens = parser.add_mutually_exclusive_group()
    tokens.add_argument(
        "--token-file",
        metavar="F",
        default=None,
        help="read the bearer token for /reload-vault from file F (its first line)",
    )
    tokens.add_argument(
        "--token",
        metavar="T",
        default=None,
        help="bearer token for /reload-vault (default: $GRASBOT_RELOAD_TOKEN); visible to other users in "
        "`ps`: prefer the variable or --token-file",
    )


def api_token(args: argparse.Namespace) -> str | None:
    """The token the user gave: `--token`, else the first line of `--token-file`, else None (the reload
    client then reads GRASBOT_RELOAD_TOKEN). CliError for a file that cannot be read or holds no token."""
    if args.token is not None or args.token_file is None:
        return args.token
    from pathlib import Path

    path = Path(args.token_file).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise CliError(f"--token-file {path}: cannot read it ({reason})") from None
    token = text.strip().splitlines()[0].strip() if text.strip() else ""
    if not token:
        raise CliError(f"--token-file {path}: the file holds no token")
    return token


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
    result = reload_vault(api, api_token(args), timeout=timeout)
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False))
    else:
        print(result.summary(), file=sys.stdout if result.ok else sys.stderr)
    return result.exit_code
