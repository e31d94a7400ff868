"""The vault as the service serves it (docs/architecture.md, "The way of a question", step 1): one immutable
`VaultSnapshot` (the loaded vault, its index, the public notes, the names of hidden ones), built by
`load_snapshot` off the event loop, and what a reload changed (`changes`).

A request reads the current snapshot once and uses it to the end, and a reload builds a complete new
snapshot and swaps it in one assignment (grasbot/service/reload.py), so an answer always comes from one
complete index, old or new, never a mix.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grasbot import snapshot as engine_snapshot
from grasbot.answer.prompt import hidden_links, unservable_notes
from grasbot.model import HIDING_PROBLEMS, Note, PrivacyPolicy
from grasbot.search.index import SearchConfig, SearchIndex
from grasbot.vault import Vault


@dataclass(frozen=True, slots=True)
class VaultSnapshot:
    """A loaded vault and its index, never modified after it is built."""

    version: int
    root: Path
    vault: Vault
    index: SearchIndex
    public: dict[str, Note]  # id -> note, for every note a visitor may see
    digests: dict[str, str]  # id -> content digest, public notes only
    by_type: dict[str, int]
    hidden: frozenset[str]  # names of notes that must never be mentioned
    problems: list[dict[str, Any]]
    unlisted_problems: int = 0  # problems of files that may be private: counted, never named
    loaded_at: float = field(default_factory=time.time)

    @property
    def size(self) -> int:
        return len(self.public)


def _problem_view(path: str, line: int, column: int, code: str, message: str) -> dict[str, Any]:
    return {"path": path, "line": line, "column": column, "code": code, "message": message[:300]}


def listed_problems(vault: Vault, unservable: set[str]) -> tuple[list[dict[str, Any]], int]:
    """The problems `/reload-vault` may name (those of servable notes), and how many others there are.
    `unservable`: the paths of `unservable_notes(vault)`, which the caller has already computed.

    Fail closed: a problem is listed, path and message, only for a note a visitor may see. A hidden note's
    problems are not even counted (its path would name it). A file that could not be read at all (binary,
    unreadable, not a regular file, a folder problem) may be a private note whose visibility nobody could
    read: it is counted, never named; `vaulttools lint`, run by the author, names it.
    """
    listed: list[dict[str, Any]] = []
    unlisted = 0
    hidden = vault.hidden_paths()  # (`visible_to_visitors` false, without decoding every note)
    for path in sorted(vault.notes):
        note = vault.notes[path]
        if path in hidden:
            if any(p.code in HIDING_PROBLEMS for p in note.problems):  # hidden as unreadable: counted, as below
                unlisted += len(note.problems)
            continue
        if path in unservable:
            unlisted += len(note.problems)
            continue
        listed.extend(_problem_view(p.path, p.line, p.column, p.code, p.message) for p in note.problems)
    unlisted += len(getattr(vault, "problems", None) or [])
    return listed, unlisted


def _reap(pid: int) -> None:
    with suppress(ChildProcessError):
        os.waitpid(pid, 0)


def load_snapshot(
    root: Path, config: SearchConfig, version: int, privacy: PrivacyPolicy | None = None
) -> VaultSnapshot:
    """Read the vault at `root` and index it. Runs in a worker thread; raises OSError for a bad root.
    `privacy`: private folders and tags from the settings, beside the vault's own `[privacy]`.

    Through the persistent snapshot (grasbot/snapshot.py): a start or a reload re-reads only the notes whose
    stat signature changed (size, mtime, ctime, inode: a note made private is seen however it was saved, see
    `grasbot.snapshot.load`). The refreshed snapshot is written back in the background; a vault folder the
    service cannot write to (mounted read-only, without VAULTTOOLS_CACHE_DIR) only costs the fast start."""
    loaded = engine_snapshot.load(root, config, privacy=privacy)
    vault, index = loaded.vault, loaded.index
    # Written in the background. Pickling the vault holds the GIL: from a thread it slowed the server's own
    # start (a cold start took 1.16 × the time without a snapshot, benchmarks/README.md); so at the start,
    # while this process has no other thread, a forked child writes it, reaped by a thread; a reload, which
    # runs beside the event loop's threads, writes from a thread as before.
    written = engine_snapshot.save(loaded, background=True)
    if isinstance(written, int):
        threading.Thread(target=_reap, args=(written,), name="grasbot-snapshot-reaper", daemon=True).start()
    public: dict[str, Note] = {}
    digests: dict[str, str] = {}
    by_type: dict[str, int] = {}
    # (what is_servable decides, from what a note started from the snapshot holds without being decoded)
    unservable = {note.path for note in unservable_notes(vault)}
    types = vault.note_types()
    for path in sorted(vault.notes):
        if path in unservable:
            continue
        note = vault.notes[path]
        note_id = note.id or note.slug or note.stem
        public[note_id] = note
        digests[note_id] = note.digest
        kind = types[path] or "autre"
        by_type[kind] = by_type.get(kind, 0) + 1
    problems, unlisted = listed_problems(vault, unservable)
    return VaultSnapshot(
        version=version,
        root=root,
        vault=vault,
        index=index,
        public=public,
        digests=digests,
        by_type=dict(sorted(by_type.items())),
        hidden=hidden_links(vault),  # links redacted by resolution (grasbot.answer.prompt.HiddenLinks)
        problems=problems,
        unlisted_problems=unlisted,
    )


def changes(old: VaultSnapshot, new: VaultSnapshot) -> dict[str, list[str]]:
    """The public ids added, removed and modified (by content digest) from `old` to `new`."""
    before, after = set(old.digests), set(new.digests)
    return {
        "added": sorted(after - before),
        "removed": sorted(before - after),
        "modified": sorted(i for i in before & after if old.digests[i] != new.digests[i]),
    }
