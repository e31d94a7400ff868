"""Helpers shared by the sub-commands: where the vault is, and how errors reach the user."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # heavy engine imports stay out of `vaulttools --help`
    from grasbot import RetrievalPipeline, Vault


class CliError(Exception):
    """A problem the user can fix (bad path, bad option): printed as one line, exit code 2."""


VAULT_HELP = ("the vault folder (wins over PATH; default: the vault PATH is in, then $VAULT_DIR, then ./vault, "
              "then the vault the current folder is in; see README, \"The commands\")")


def add_vault_arguments(parser: argparse.ArgumentParser, positional: bool = True) -> None:
    """`[PATH]` and `--vault PATH`; both optional (see `vaulttools.discovery` for the rule)."""
    if positional:
        parser.add_argument("path", nargs="?", metavar="PATH", help="the vault folder, or a folder or note inside it")
    parser.add_argument("--vault", metavar="PATH", help=VAULT_HELP)


def vault_path(args: argparse.Namespace, path: str | None = None) -> Path:
    """The vault folder the user meant (`vaulttools.discovery.resolve_vault`: `--vault`, else the vault `path` or
    the command's PATH is in, else $VAULT_DIR, ./vault, the current folder's vault); CliError if it is missing
    or not a folder."""
    from vaulttools.discovery import resolve_vault

    given = path if path is not None else getattr(args, "path", None)
    found = resolve_vault(getattr(args, "vault", None), given)
    if not found.exists():
        raise CliError(f"vault not found: {found} (pass a folder as PATH or --vault, or set VAULT_DIR)")
    if not found.is_dir():
        raise CliError(f"not a folder: {found}")
    return found


def split_vault_positional(values: list[str], least: int) -> tuple[str | None, list[str]]:
    """(vault, the rest) for commands whose positionals may start with the vault (`ask`, `eval`, `new`): the
    first positional is the vault when more than `least` are given and it is an existing folder."""
    if len(values) > least and Path(values[0]).expanduser().is_dir():
        return values[0], values[1:]
    return None, values


def load_vault(root: Path) -> Vault:
    """`Vault.load`, with a folder that vanished or cannot be read turned into a CliError."""
    from grasbot import Vault

    try:
        return Vault.load(root)
    except (FileNotFoundError, NotADirectoryError, PermissionError) as exc:
        raise CliError(str(exc)) from None


def load_pipeline(root: Path, purpose: str, top_k: int = 5) -> RetrievalPipeline:
    """The bot's retrieval pipeline over the vault at `root` (its index, its hidden notes, `top_k` notes a
    question); CliError when no public note is left to retrieve (`purpose` says for what)."""
    from grasbot import RetrievalLimits, RetrievalPipeline

    pipeline = RetrievalPipeline.of_vault(load_vault(root), limits=RetrievalLimits(top_k=top_k))
    if pipeline.index.size == 0:
        raise CliError(f"no public note in {root}: {purpose}")
    return pipeline
