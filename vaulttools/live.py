"""A vault kept up to date while it is being edited: notes, search index and lint diagnostics.

`LiveVault` is what `vaulttools watch` and the TUI share. It is loaded once (one full read and one full
lint), then `apply(paths)` brings it up to date after a burst of file changes: it re-reads only the files
named (created, modified, deleted, either end of a rename, or a folder, expanded into its files), re-lints
those notes plus the notes whose link status changed because of them (the engine's `LinkChange.relinked`)
and the notes that share a slug or an alias with them (duplicate rules), and returns a `LiveDelta`: the
problems that appeared, the problems now fixed, and the notes that changed.

Threads: one writer (the watcher's worker calls `apply`), any number of readers (the TUI). Every public
method takes `lock` (re-entrant); a reader that needs several consistent reads holds it with
`with live.reading():`. Listeners registered with `subscribe` run after each `apply`, on the writer's
thread, outside the lock.

Never raises for a bad note: a file that cannot be read, or a rule that fails on a note, becomes a
diagnostic on that note.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grasbot import Note
from grasbot import fold
from grasbot import DEFAULT_EXCLUDE, PRIVACY_FILE, LinkChange, Vault, read_privacy
from vaulttools.lint.diagnostics import Diagnostic, Severity
from vaulttools.lint.view import LintVault

__all__ = ["LiveDelta", "LiveVault", "diagnostic_key"]

#: How many times a note caught mid-write (parse problem while its size/mtime kept changing) is re-read
#: before its state is accepted as it is.
MAX_SETTLE_TRIES = 3

#: Above this many notes, `with_index=None` ("auto") keeps no search index, and the one rule that needs it
#: (`answer-not-retrieved`) is left to `vaulttools lint`. Keeping the index up to date is cheap (milliseconds
#: a save); building it is not (seconds and tens of MiB on 10k notes: benchmarks/README.md, retrieval), which
#: `vaulttools watch` would pay at every start for one rule. (The TUI builds an index anyway: it keeps it live
#: up to its own, higher limit.)
INDEX_AUTO_LIMIT = 2000

#: Rule reported when the linter itself fails on a note (a bug of ours): the note is flagged, not skipped.
INTERNAL_RULE = "internal-error"


def diagnostic_key(diag: Diagnostic, path: str | None = None) -> tuple[str, str, str, str]:
    """What makes two diagnostics "the same problem" across edits: note, rule, severity and message, not
    the position (a line inserted above a problem moves it; it is not a new problem)."""
    return (path or diag.path, diag.rule, str(diag.severity), diag.message)


@dataclass(frozen=True, slots=True)
class LiveDelta:
    """What one `LiveVault.apply` changed. All tuples are sorted.

    - `changed`: notes created or whose bytes changed; `added` ⊆ `changed` are the new ones;
    - `removed`: notes deleted or moved away; `moved`: (old, new) pairs recognised among removed/added by
      identical content (a rename);
    - `relinked`: other notes re-checked because a link of theirs changed status (broken, repaired, ...);
    - `files_added`/`files_removed`: attachments (non-note files) that appeared or went away;
    - `new`/`fixed`: diagnostics that appeared / went away (compared by `diagnostic_key`, so a problem that
      only moved is in neither); for a renamed note, its problems carry over and are in neither;
    - `updated`: (old, new) pairs of one problem, same note, rule, severity and place, whose message changed
      (`alias x is also an alias of A, B` when B is deleted): neither new nor fixed;
    - `unsettled`: files caught while still being written: not applied yet, re-deliver them later;
    - `taxonomy_reloaded`: the taxonomy file changed and the whole vault was re-linted.
    """

    changed: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    moved: tuple[tuple[str, str], ...] = ()
    relinked: tuple[str, ...] = ()
    files_added: tuple[str, ...] = ()
    files_removed: tuple[str, ...] = ()
    new: tuple[Diagnostic, ...] = ()
    fixed: tuple[Diagnostic, ...] = ()
    updated: tuple[tuple[Diagnostic, Diagnostic], ...] = ()
    unsettled: tuple[str, ...] = ()
    taxonomy_reloaded: bool = False
    version: int = 0
    elapsed_ms: float = 0.0

    @property
    def vault_changed(self) -> bool:
        """True when the vault's content changed (a reload of the API is worth sending)."""
        return bool(
            self.changed or self.removed or self.files_added or self.files_removed or self.taxonomy_reloaded
        )

    @property
    def is_empty(self) -> bool:
        """Nothing to show and nothing to push (for example: a note saved without any change)."""
        return not (self.vault_changed or self.new or self.fixed or self.updated or self.relinked)


@dataclass(slots=True)
class _Linter:
    """The bridge to `vaulttools.lint`: the taxonomy and configuration in force, and the two entry points."""

    taxonomy: Any
    config: Any
    taxonomy_path: Path | None
    taxonomy_error: str | None = None  # why the taxonomy file in force could not be read, if it could not

    def lint_all(self, vault: Vault, index: Any) -> list[Diagnostic]:
        from vaulttools.lint import lint_vault

        result = lint_vault(vault, self.taxonomy, self.config, index=index)
        return list(getattr(result, "diagnostics", result))

    def lint_cached(self, vault: Vault, index: Any) -> list[Diagnostic]:
        from vaulttools.lint.cache import lint_through_cache

        result = lint_through_cache(vault, self.taxonomy, self.config, index=index)
        return list(getattr(result, "diagnostics", result))

    def lint_some(self, vault: Vault, index: Any, paths: list[str]) -> list[Diagnostic]:
        from vaulttools.lint import lint_notes

        result = lint_notes(vault, self.taxonomy, paths, config=self.config, index=index)
        return list(getattr(result, "diagnostics", result))


class _IdentityRows:
    """The linter's per-note identity rows (slug, aliases, visibility), kept up to date note by note.

    The duplicate-slug/alias and private-link rules need them for every note of the vault; computed from
    scratch they cost a large part of a second per check on 10,000 notes (benchmarks/README.md, "Figures
    behind the code"), which a watcher re-checking one note cannot pay. The rows come from the linter's own
    `identity_rows` (one note at a time), so their shape is always the
    linter's; the linter reads them through its `vault.identity_rows()` hook (see `_LintView`).
    """

    def __init__(self, vault: Vault) -> None:
        self._rows: dict[str, tuple] | None = None
        try:
            from vaulttools.lint.rules.slugs import identity_rows
        except ImportError:  # the hook moved: the linter computes the rows itself, only slower
            self._compute = None
            return
        self._compute = identity_rows
        self._rows = {row[0]: row for row in identity_rows(vault)}

    @property
    def available(self) -> bool:
        return self._rows is not None

    def refresh(self, vault: Vault, paths: Iterable[str]) -> None:
        rows = self._rows
        if rows is None or self._compute is None:
            return
        added = False
        for path in paths:
            note = vault.notes.get(path)
            if note is None:
                rows.pop(path, None)
                continue
            added |= path not in rows
            rows[path] = self._compute(_OneNote(path, note))[0]
        if added:  # the linter iterates rows in the vault's (sorted) order
            self._rows = dict(sorted(rows.items()))

    def rows(self) -> list[tuple]:
        return list(self._rows.values()) if self._rows is not None else []


class _OneNote:
    """A one-note stand-in vault, to compute one note's identity row with the linter's own function."""

    __slots__ = ("notes",)

    def __init__(self, path: str, note: Note) -> None:
        self.notes = {path: note}


class _LintView:
    """The vault as handed to the linter by a LiveVault: the vault itself (every attribute is delegated),
    plus the `identity_rows()` hook answered from `_IdentityRows` instead of recomputed."""

    __slots__ = ("_vault", "_rows")

    def __init__(self, vault: Vault, rows: _IdentityRows) -> None:
        self._vault = vault
        self._rows = rows

    def identity_rows(self) -> list[tuple]:
        return self._rows.rows()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._vault, name)


def _identity_keys(note: Note) -> set[str]:
    """Keys under which a note can clash with another: its slug, its aliases, its file name."""
    keys = {"stem:" + fold(note.stem)}
    slug = note.slug
    if slug and slug.strip():
        keys.add("slug:" + fold(slug))
    for alias in note.aliases:
        if alias.strip():
            keys.add("alias:" + fold(alias))
    return keys


class LiveVault:
    """A `Vault`, its `SearchIndex` (optional) and the current diagnostics of every note, kept in step.

    ::

        live = LiveVault.load("vault")                 # full read + full lint
        print(live.counts())                           # {"error": 3, "warning": 12}
        delta = live.apply({"10-Projets/cub3d.md"})    # after the file changed on disk
        for d in delta.new: ...
        for d in delta.fixed: ...
    """

    def __init__(
        self,
        vault: Vault,
        linter: _Linter,
        *,
        index: Any = None,
        with_index: bool = False,
        notices: Iterable[str] = (),
        lint_cache: bool = False,
    ) -> None:
        self.vault = vault
        self.root: Path = vault.root
        self.index = index
        self._with_index = with_index
        self._linter = linter
        self.lock = threading.RLock()
        self.version = 0
        self._diags: dict[str, list[Diagnostic]] = {}
        self._keys: dict[str, set[str]] = {}  # identity key -> notes holding it
        self._note_keys: dict[str, set[str]] = {}
        self._settle_tries: dict[str, int] = {}
        self._carry: set[str] = set()  # notes to re-lint with the next batch (relinked by an unsettled one)
        self._listeners: list[Callable[[LiveDelta], Any]] = []
        self._snapshot: Any = None  # the grasbot.snapshot.Snapshot the vault came from, if any
        #: Things the user should know about this session (a rule left out, and why).
        self.notices: list[str] = list(notices)
        for path, note in vault.notes.items():
            self._index_identity(path, note)
        self._rows = _IdentityRows(vault)
        self._store(self._lint_all(lint_cache))

    # -- construction ----------------------------------------------------------------------------------
    @classmethod
    def load(
        cls,
        root: str | Path,
        *,
        taxonomy: str | Path | None = None,
        config: Any = None,
        exclude: tuple[str, ...] = DEFAULT_EXCLUDE,
        with_index: bool | None = True,
        use_snapshot: bool = False,
    ) -> LiveVault:
        """Read and lint the whole vault. `taxonomy` is an explicit TAXONOMIE.md (else the usual search:
        `VAULT/TAXONOMIE.md`, then the folder above); `config` is the lint configuration (None: the vault's
        own, see `vaulttools.lint.load_config`). `with_index`: keep a `SearchIndex` up to date (the TUI's
        preview needs it; so does the `answer-not-retrieved` rule, which is switched off without one);
        None chooses by size (up to INDEX_AUTO_LIMIT notes).

        Raises FileNotFoundError/NotADirectoryError for a missing vault folder, and whatever the taxonomy
        loader raises for an unreadable taxonomy given explicitly (the caller turns those into messages).

        `use_snapshot`: the vault and its index come from the persistent snapshot (grasbot/snapshot.py),
        re-reading only the files changed since, and the first lint from the lint cache (`from_vault`'s
        `lint_cache`); `save_snapshot()` writes the snapshot back once watching is over."""
        loaded = None
        if use_snapshot:
            from grasbot import snapshot

            loaded = snapshot.load(root, exclude=exclude)
            vault = loaded.vault
        else:
            vault = Vault.load(root, exclude)
        if taxonomy is not None:
            _read_taxonomy(_find_taxonomy(vault.root, taxonomy))  # asked for by name: TaxonomyError now
        wants_index = with_index if with_index is not None else len(vault.notes) <= INDEX_AUTO_LIMIT
        index = loaded.index if loaded is not None and wants_index else None
        live = cls.from_vault(vault, taxonomy=taxonomy, config=config, index=index, with_index=with_index,
                              lint_cache=use_snapshot)  # fmt: skip
        live._snapshot = loaded
        return live

    def save_snapshot(self) -> None:
        """Write the snapshot the vault came from back, if it changed (`load(use_snapshot=True)` only). Call
        it once nothing applies changes any more (the watcher stopped): it holds the lock while it writes.
        The file signatures it records are those taken before the load, so every file that changed since
        is re-read next time, whether or not this live vault applied the change."""
        loaded, self._snapshot = self._snapshot, None
        if loaded is None:
            return
        from grasbot import snapshot

        with self.lock:
            snapshot.save(loaded)

    @classmethod
    def from_vault(
        cls,
        vault: Vault,
        *,
        taxonomy: str | Path | None = None,
        config: Any = None,
        index: Any = None,
        with_index: bool | None = None,
        lint_cache: bool = False,
    ) -> LiveVault:
        """Like `load`, over a `Vault` already read (and, optionally, its `SearchIndex` already built:
        `with_index` then defaults to True). `lint_cache`: the first lint through the lint cache
        (`vaulttools.lint.cache.lint_through_cache`: the same findings, without re-checking unchanged notes). Never raises for the taxonomy: a taxonomy that cannot be read
        leaves the structural rules only, and `taxonomy_error` says why (editing the file to fix it brings
        the vocabulary rules back). Raises ConfigError for a broken lint configuration when `config` is None."""
        from vaulttools.taxonomy import TaxonomyError

        if with_index is None and index is not None:
            with_index = True
        if config is None:
            from vaulttools.lint import load_config

            config = load_config(vault.root)  # ConfigError names the file and the key
        taxonomy_path = _find_taxonomy(vault.root, taxonomy)
        error = None
        try:
            loaded = _read_taxonomy(taxonomy_path)
        except TaxonomyError as exc:
            loaded, error = None, str(exc)
        notices = []
        if with_index is None:
            with_index = len(vault.notes) <= INDEX_AUTO_LIMIT
            if not with_index and config.enabled("answer-not-retrieved"):
                notices.append(
                    f"answer-not-retrieved is not checked while watching a vault of more than "
                    f"{INDEX_AUTO_LIMIT} notes (run `vaulttools lint` for it)"
                )
        if index is None and with_index:
            index = _build_index(vault)
        if not with_index:
            index = None
        if index is None and config.enabled("answer-not-retrieved"):
            # without a live index every re-check would build a whole new one
            config = config.with_options(ignore=["answer-not-retrieved"])
        linter = _Linter(loaded, config, taxonomy_path, error)
        vault.prepare_updates()  # a live vault is updated on every save: the first save as quick as the next
        return cls(vault, linter, index=index, with_index=with_index, notices=notices, lint_cache=lint_cache)

    # -- reading (any thread) --------------------------------------------------------------------------
    @contextmanager
    def reading(self) -> Iterator[LiveVault]:
        """Hold the lock for several consistent reads (`live.vault`, `live.index`, diagnostics)."""
        with self.lock:
            yield self

    @property
    def taxonomy(self) -> Any:
        return self._linter.taxonomy

    @property
    def taxonomy_path(self) -> Path | None:
        return self._linter.taxonomy_path

    @property
    def taxonomy_error(self) -> str | None:
        """Why the taxonomy file could not be read (the last good one, if any, stays in force)."""
        return self._linter.taxonomy_error

    def diagnostics(self, path: str | None = None) -> list[Diagnostic]:
        """The current diagnostics of one note, or of the whole vault, sorted by path and position."""
        with self.lock:
            if path is not None:
                return sorted(self._diags.get(path, ()), key=_sort_key)
            return sorted((d for ds in self._diags.values() for d in ds), key=_sort_key)

    def counts(self) -> dict[str, int]:
        """How many diagnostics of each severity: ``{"error": n, "warning": m}``."""
        with self.lock:
            counter = Counter(str(d.severity) for ds in self._diags.values() for d in ds)
        return {"error": counter.get("error", 0), "warning": counter.get("warning", 0)}

    def note_count(self) -> int:
        with self.lock:
            return len(self.vault.notes)

    def note(self, path: str) -> Note | None:
        with self.lock:
            return self.vault.notes.get(path)

    def search(self, query: str, top_k: int | None = None) -> Any:
        """`SearchIndex.search` on the current vault (needs `with_index=True`)."""
        with self.lock:
            if self.index is None:
                raise RuntimeError("this LiveVault was loaded without a search index")
            return self.index.search(query, top_k)

    def subscribe(self, listener: Callable[[LiveDelta], Any]) -> Callable[[], None]:
        """Call `listener(delta)` after every `apply` (on the writer's thread). Returns an unsubscriber."""
        with self.lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self.lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    # -- writing (one thread) --------------------------------------------------------------------------
    def apply(self, paths: Iterable[str]) -> LiveDelta:
        """Bring everything up to date after the files at `paths` (vault-relative; files or folders)
        changed on disk: created, modified, deleted, or either end of a move."""
        started = time.perf_counter()
        paths = sorted(set(paths))
        if PRIVACY_FILE in paths and read_privacy(self.root)[0] != self.vault.privacy:
            # private folders or tags changed: which notes are private, every note may have changed
            return self.reload()
        with self.lock:
            delta = self._apply(paths, started)
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(delta)
            except Exception:  # a reader's bug must not stop the writer
                pass
        return delta

    def reload(self) -> LiveDelta:
        """Re-read and re-lint everything (the taxonomy too), and report the difference."""
        started = time.perf_counter()
        with self.lock:
            before_notes = dict(self.vault.notes)
            before_files = set(self.vault.files)
            before = self._all_diags()
            self._reload_taxonomy()
            self.vault = Vault.load(self.root, self.vault.exclude)
            self.vault.prepare_updates()
            if self._with_index:
                self.index = _build_index(self.vault)
            self._keys.clear()
            self._note_keys.clear()
            for p, note in self.vault.notes.items():
                self._index_identity(p, note)
            self._rows = _IdentityRows(self.vault)
            self._diags = {}
            self._store(self._lint_all())
            after = self._all_diags()
            changed = {p for p, n in self.vault.notes.items() if p not in before_notes or before_notes[p].digest != n.digest}
            removed = set(before_notes) - set(self.vault.notes)
            delta = self._delta(
                before, after, changed, set(before_notes), removed, set(), before_files, (), True, started
            )
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(delta)
            except Exception:
                pass
        return delta

    # -- internals -------------------------------------------------------------------------------------
    def _apply(self, paths: list[str], started: float) -> LiveDelta:
        vault = self.vault
        before_notes = dict(vault.notes)  # shallow: Note objects are replaced, not mutated, on update
        before_files = set(vault.files)
        taxonomy_hit = self._taxonomy_touched(paths)

        touched: set[str] = set()
        relinked: set[str] = set(self._carry)
        self._carry = set()
        unsettled: list[str] = []
        read_failures: dict[str, str] = {}
        cleared: set[str] = set()
        reread: set[str] = set()  # every note the vault re-read or dropped, settled or not
        merged = LinkChange()
        folders: list[str] = []  # folders in this batch: their files are re-read by the folder's walk
        for rel in paths:
            if rel.startswith("../") or rel.startswith("/"):
                continue  # outside the vault: only ever the taxonomy file beside it
            if any(rel.startswith(folder + "/") for folder in folders):
                continue
            full = self.root / rel
            if full.is_dir() or (rel not in vault.notes and rel not in vault.files and not full.exists()):
                folders.append(rel)  # a folder, or something gone that may have been one
            stat_before = _stat(full)
            try:
                change = vault.update_file(rel)
            except Exception as exc:  # the engine promises not to raise; if it does, flag the file
                read_failures[rel] = f"cannot read this file: {type(exc).__name__}: {exc}"
                change = LinkChange()
            reread |= change.changed
            if self._caught_mid_write(rel, stat_before):
                unsettled.append(rel)
                self._carry |= change.relinked
                continue
            self._settle_tries.pop(rel, None)
            if rel not in read_failures and rel in self._diags and rel not in vault.notes:
                cleared.add(rel)  # a file flagged unreadable earlier, now gone or no longer a note
            touched |= change.changed
            relinked |= change.relinked
            merged.changed |= change.changed
            merged.relinked |= change.relinked
        self._rows.refresh(vault, reread)
        if self.index is not None and (merged.changed or merged.relinked):
            merged.relinked -= merged.changed
            try:
                self.index.update(vault, merged)  # once per batch: a burst of 1,000 files is one update
            except Exception:  # keep serving the old ranking rather than stop watching
                pass

        unsettled_set = set(unsettled)
        present = set(vault.notes)
        removed = {p for p in touched if p not in present and p in before_notes}
        added = {p for p in touched if p in present and p not in before_notes}
        changed = {
            p for p in touched if p in present and (p not in before_notes or before_notes[p].digest != vault.notes[p].digest)
        }
        moved = _pair_moves(removed, added, before_notes, vault.notes)

        # which notes to re-lint: re-read ones, relinked ones, and those that may clash with them
        scope = (touched & present) | (relinked & present)
        for p in sorted(touched):
            old_keys = self._note_keys.get(p, set())
            self._forget_identity(p)
            note = vault.notes.get(p)
            new_keys = set()
            if note is not None:
                self._index_identity(p, note)
                new_keys = self._note_keys.get(p, set())
            if old_keys != new_keys:
                for key in old_keys | new_keys:
                    scope |= self._keys.get(key, set())
            old_note = before_notes.get(p)
            if old_note is not None and (note is None or note.is_private != old_note.is_private):
                scope |= set(vault.incoming(p)) & present  # private-link status of notes linking here
        for p in read_failures:
            if p in present:
                scope.add(p)
        scope -= unsettled_set

        gone = (removed | cleared | {p for p in self._diags if p not in present and p in touched}) - unsettled_set
        affected = scope | gone | set(read_failures)
        before = {p: list(self._diags.get(p, ())) for p in affected}

        if taxonomy_hit:
            self._reload_taxonomy()
            before = self._all_diags()
            self._diags = {}
            self._store(self._lint_all())
        else:
            for p in gone:
                self._diags.pop(p, None)
            if scope:
                fresh = self._lint_some(sorted(scope))
                for p in scope:
                    self._diags.pop(p, None)
                self._store(fresh)
        for rel, message in read_failures.items():
            self._diags.setdefault(rel, []).append(_file_diagnostic(rel, message))

        after = self._all_diags() if taxonomy_hit else {p: list(self._diags.get(p, ())) for p in affected}
        return self._delta(
            before, after, changed, set(before_notes), removed, relinked - touched, before_files,
            moved, taxonomy_hit, started, unsettled=tuple(sorted(unsettled)), added=added,
        )

    def _delta(
        self,
        before: dict[str, list[Diagnostic]],
        after: dict[str, list[Diagnostic]],
        changed: set[str],
        before_paths: set[str],
        removed: set[str],
        relinked: set[str],
        before_files: set[str],
        moved: Iterable[tuple[str, str]],
        taxonomy_reloaded: bool,
        started: float,
        *,
        unsettled: tuple[str, ...] = (),
        added: set[str] | None = None,
    ) -> LiveDelta:
        moved = tuple(sorted(moved))
        renamed = {old: new for old, new in moved}
        old_keys = Counter(diagnostic_key(d, renamed.get(d.path)) for ds in before.values() for d in ds)
        new_keys = Counter(diagnostic_key(d) for ds in after.values() for d in ds)
        appeared = new_keys - old_keys
        vanished = old_keys - new_keys
        new_diags = _pick(after, appeared, lambda d: diagnostic_key(d))
        fixed_diags = _pick(before, vanished, lambda d: diagnostic_key(d, renamed.get(d.path)))
        new_diags, fixed_diags, updated = _pair_rewordings(new_diags, fixed_diags, renamed)
        if added is None:
            added = {p for p in changed if p not in before_paths}
        files = self.vault.files
        if changed or removed or new_diags or fixed_diags or taxonomy_reloaded or files != before_files:
            self.version += 1
        return LiveDelta(
            changed=tuple(sorted(changed)),
            added=tuple(sorted(added)),
            removed=tuple(sorted(removed)),
            moved=moved,
            relinked=tuple(sorted(p for p in relinked if p in self.vault.notes)),
            files_added=tuple(sorted(files - before_files)),
            files_removed=tuple(sorted(before_files - files)),
            new=tuple(sorted(new_diags, key=_sort_key)),
            fixed=tuple(sorted(fixed_diags, key=_sort_key)),
            updated=tuple(updated),
            unsettled=unsettled,
            taxonomy_reloaded=taxonomy_reloaded,
            version=self.version,
            elapsed_ms=(time.perf_counter() - started) * 1000.0,
        )

    def _caught_mid_write(self, rel: str, stat_before: tuple[int, int] | None) -> bool:
        """True when the note just read has a parse problem and the file changed while it was read: the
        writer is not done. Given up after MAX_SETTLE_TRIES, so a file written forever is still checked."""
        note = self.vault.notes.get(rel)
        if note is None or not note.problems or stat_before is None:
            return False
        if _stat(self.root / rel) == stat_before:
            return False
        tries = self._settle_tries.get(rel, 0) + 1
        if tries > MAX_SETTLE_TRIES:
            self._settle_tries.pop(rel, None)
            return False
        self._settle_tries[rel] = tries
        return True

    def _taxonomy_touched(self, paths: list[str]) -> bool:
        tax = self._linter.taxonomy_path
        if tax is None:
            # a TAXONOMIE.md appearing in the vault turns the vocabulary rules on
            return any(p.lower() == "taxonomie.md" for p in paths)
        rel = os.path.relpath(tax.resolve(), self.root).replace(os.sep, "/")
        return rel in paths

    def _reload_taxonomy(self) -> None:
        linter = self._linter
        path = linter.taxonomy_path
        if path is None or not path.exists():  # none yet, or deleted: maybe another one applies now
            path = _find_taxonomy(self.root, None)
        try:
            taxonomy = _read_taxonomy(path)
        except Exception as exc:  # being edited, or broken: keep the last good one and say why
            linter.taxonomy_path, linter.taxonomy_error = path, str(exc)
            return
        linter.taxonomy, linter.taxonomy_path, linter.taxonomy_error = taxonomy, path, None

    def _lint_all(self, lint_cache: bool = False) -> list[Diagnostic]:
        """Every note's findings; `lint_cache`: through the lint cache (`lint_through_cache`), for a start."""
        try:
            if lint_cache:
                return self._linter.lint_cached(self.vault, self.index)
            return self._linter.lint_all(self.vault, self.index)
        except Exception as exc:
            return [_file_diagnostic(".", f"the linter failed: {type(exc).__name__}: {exc}", rule=INTERNAL_RULE)]

    def _lint_some(self, paths: list[str]) -> list[Diagnostic]:
        vault: LintVault = _LintView(self.vault, self._rows) if self._rows.available else self.vault
        try:
            return self._linter.lint_some(vault, self.index, paths)
        except Exception:
            pass
        out: list[Diagnostic] = []  # one note at a time, so one bad note does not hide the others
        for path in paths:
            try:
                out.extend(self._linter.lint_some(vault, self.index, [path]))
            except Exception as exc:
                out.append(_file_diagnostic(path, f"the linter failed on this note: {type(exc).__name__}: {exc}", rule=INTERNAL_RULE))
        return out

    def _store(self, diags: Iterable[Diagnostic]) -> None:
        for d in diags:
            self._diags.setdefault(d.path, []).append(d)

    def _all_diags(self) -> dict[str, list[Diagnostic]]:
        return {p: list(ds) for p, ds in self._diags.items()}

    def _index_identity(self, path: str, note: Note) -> None:
        keys = _identity_keys(note)
        self._note_keys[path] = keys
        for key in keys:
            self._keys.setdefault(key, set()).add(path)

    def _forget_identity(self, path: str) -> None:
        for key in self._note_keys.pop(path, set()):
            holders = self._keys.get(key)
            if holders is not None:
                holders.discard(path)
                if not holders:
                    del self._keys[key]


def _sort_key(d: Diagnostic) -> tuple[str, int, int, str, str]:
    return (d.path, d.line, d.column, d.rule, d.message)


def _pick(
    diags: dict[str, list[Diagnostic]], wanted: Counter, key: Callable[[Diagnostic], tuple[str, str, str, str]]
) -> list[Diagnostic]:
    """The diagnostics whose key is in the multiset `wanted`, as many of each as it counts."""
    left = Counter(wanted)
    out = []
    for path in sorted(diags):
        for d in sorted(diags[path], key=_sort_key):
            k = key(d)
            if left[k] > 0:
                left[k] -= 1
                out.append(d)
    return out


def _pair_rewordings(
    new: list[Diagnostic], fixed: list[Diagnostic], renamed: dict[str, str]
) -> tuple[list[Diagnostic], list[Diagnostic], list[tuple[Diagnostic, Diagnostic]]]:
    """Split off (old, new) pairs that are one problem reworded: same note, rule, severity and place."""
    if not new or not fixed:
        return new, fixed, []

    def place(d: Diagnostic, path: str | None = None) -> tuple[str, str, str, int, int]:
        return (path or d.path, d.rule, str(d.severity), d.line, d.column)

    waiting: dict[tuple[str, str, str, int, int], list[Diagnostic]] = {}
    for d in fixed:
        waiting.setdefault(place(d, renamed.get(d.path)), []).append(d)
    pairs, still_new = [], []
    for d in new:
        olds = waiting.get(place(d))
        if olds:
            pairs.append((olds.pop(0), d))
        else:
            still_new.append(d)
    paired = {id(old) for old, _ in pairs}
    return still_new, [d for d in fixed if id(d) not in paired], pairs


def _pair_moves(
    removed: set[str], added: set[str], before: dict[str, Note], after: dict[str, Note]
) -> list[tuple[str, str]]:
    """(old, new) for every removed note whose exact content reappeared under a new path (a rename)."""
    if not removed or not added:
        return []
    by_digest: dict[str, list[str]] = {}
    for p in sorted(added):
        by_digest.setdefault(after[p].digest, []).append(p)
    pairs = []
    for old in sorted(removed):
        candidates = by_digest.get(before[old].digest)
        if candidates:
            pairs.append((old, candidates.pop(0)))
    return pairs


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def _file_diagnostic(path: str, message: str, rule: str = "frontmatter-invalid") -> Diagnostic:
    return Diagnostic(path, 1, 1, 1, 1, rule, Severity.ERROR, message)


def _build_index(vault: Vault) -> Any:
    from grasbot import SearchIndex

    try:
        return SearchIndex.build(vault)
    except NotImplementedError:  # the engine's index is optional for lint and watch
        return None


def _find_taxonomy(root: Path, explicit: str | Path | None) -> Path | None:
    """The taxonomy file in force for a vault: `explicit`, else the usual search (docs/architecture.md, "The way of a lint run"), else None."""
    from vaulttools.taxonomy import find_taxonomy

    path = find_taxonomy(root, Path(explicit) if explicit is not None else None)
    return Path(path).absolute() if path is not None else None


def _read_taxonomy(path: Path | None) -> Any:
    """The parsed taxonomy, None without a file; raises TaxonomyError for a file that cannot be read."""
    from vaulttools.taxonomy import load_taxonomy

    return load_taxonomy(path) if path is not None else None
