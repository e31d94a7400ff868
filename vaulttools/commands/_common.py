"""Helpers shared by the sub-commands: where the vault is, and how errors reach the user."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # heavy engine imports stay out of `vaulttools --help`
    from grasbot import RetrievalPipeline, Vault
    from grasbot.search.filters import FilterConfig


class CliError(Exception):
    """A problem the user can fix (bad path, bad option): printed as one line, exit code 2."""


def add_vault_arguments(parser: argparse.ArgumentParser, positional: bool = True) -> None:
    """`[PATH]` and `--vault PATH`; both optional (VAULT_DIR, then ./vault)."""
    if positional:
        parser.add_argument("path", nargs="?", metavar="PATH", help="the vault folder")
    parser.add_argument("--vault", metavar="PATH", help="the vault folder (default: $VAULT_DIR, then ./vault)")


def vault_path(args: argparse.Namespace) -> Path:
    """The vault folder the user meant; CliError if it is missing or not a folder."""
    given = getattr(args, "path", None) or getattr(args, "vault", None) or os.environ.get("VAULT_DIR") or "vault"
    path = Path(given).expanduser()
    if not path.exists():
        raise CliError(f"vault not found: {path} (pass a folder as PATH or --vault, or set VAULT_DIR)")
    if not path.is_dir():
        raise CliError(f"not a folder: {path}")
    return path


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

    from grasbot.answer.filtering import FilterStage

    pipeline = RetrievalPipeline.of_vault(load_vault(root), limits=RetrievalLimits(top_k=top_k))
    if pipeline.index.size == 0:
        raise CliError(f"no public note in {root}: {purpose}")
    # the question's filters (§ 13, chapitre 2, classe 10: docs/pdf-import.md), as the API applies them
    pipeline.stages = (*pipeline.stages, FilterStage(pipeline.index, filter_config(root)))
    return pipeline


def filter_config(root: Path) -> FilterConfig:
    """The fields a question may filter on, from the vault's taxonomy (`filterable:` in its `yaml
    vaulttools` fence); none when there is no taxonomy or it cannot be read (lint reports that)."""
    from grasbot.search.filters import FilterConfig
    from vaulttools.taxonomy import TaxonomyError, find_taxonomy, load_taxonomy

    found = find_taxonomy(root)
    if found is None:
        return FilterConfig()
    try:
        return FilterConfig.parse(load_taxonomy(found).filterable)
    except (TaxonomyError, ValueError):
        return FilterConfig()
