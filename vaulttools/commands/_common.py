"""Helpers shared by the sub-commands: where the vault is, and how errors reach the user."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # heavy engine imports stay out of `vaulttools --help`
    from grasbot import RetrievalPipeline
    from grasbot.model import PrivacyPolicy
    from grasbot.search.filters import FilterConfig
    from grasbot.snapshot import Snapshot


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


def add_cache_argument(parser: argparse.ArgumentParser) -> None:
    """`--no-cache`, as lint has it: read the whole vault and build the index, no snapshot read or written (and,
    for `tui` and `watch`, the first lint without the lint cache)."""
    parser.add_argument(
        "--no-cache", action="store_true",
        help="do not read or write the caches of VAULT/.vaulttools_cache/ (the vault snapshot; for tui and watch, "
             "the lint cache too): read the whole vault",
    )  # fmt: skip


def load_snapshot(root: Path, use_cache: bool = True, privacy: PrivacyPolicy | None = None) -> Snapshot:
    """The vault at `root` and its search index, from the persistent snapshot when it matches (re-reading only
    the files that changed: grasbot/snapshot.py), else read and indexed whole. A snapshot that changed is
    written back when the command is done (`write_pending_snapshots`). CliError for a folder that vanished
    or cannot be read. `privacy`: private folders and tags beside the vault's own `[privacy]` (the
    service's settings, for `eval --answers`)."""
    from grasbot import snapshot

    try:
        loaded = snapshot.load(root, use_snapshot=use_cache, privacy=privacy)
    except (FileNotFoundError, NotADirectoryError, PermissionError) as exc:
        raise CliError(str(exc)) from None
    _PENDING.append(loaded)
    return loaded


#: Snapshots loaded by this command, written back (if they changed) once its output is out.
_PENDING: list[Snapshot] = []


def write_pending_snapshots() -> None:
    """Write back the snapshots this command loaded, after its work: `vaulttools.cli.main` calls it when the
    command returns. The writer is a forked child, so the command's process exits at once and a cold start
    is not slowed by the write (not even by the child's CPU, while the command still runs)."""
    from grasbot import snapshot

    while _PENDING:
        snapshot.save(_PENDING.pop(), background=True)


def load_pipeline(
    root: Path, purpose: str, top_k: int = 5, use_cache: bool = True, privacy: PrivacyPolicy | None = None
) -> RetrievalPipeline:
    """The bot's retrieval pipeline over the vault at `root` (its index, its hidden notes, `top_k` notes a
    question); CliError when no public note is left to retrieve (`purpose` says for what). `privacy`: as
    for `load_snapshot`."""
    from grasbot import RetrievalLimits, RetrievalPipeline

    from grasbot.answer.filtering import FilterStage

    loaded = load_snapshot(root, use_cache, privacy)
    pipeline = RetrievalPipeline.of_vault(loaded.vault, loaded.index, limits=RetrievalLimits(top_k=top_k))
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
