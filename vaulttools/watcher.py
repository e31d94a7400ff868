"""Turning raw file-system events under a vault into one batch of vault-relative paths per burst.

Editors do not save a file in one event. Obsidian writes in place; vim renames the old file to a backup,
probes with a file named ``4913`` and writes a new one; VS Code and JetBrains write a temporary file and
rename it over the note; ``git checkout`` touches a thousand files in a few milliseconds. `VaultWatcher`
listens with watchdog and a `Debouncer` coalesces everything that happens until the vault has been quiet
for a short window (120 ms by default) into one `WatchBatch`, delivered on a worker thread:

- temporary and swap files, hidden folders (``.obsidian/``, ``.trash/``, ``.git/``) are ignored, so
  Obsidian rewriting ``workspace.json`` produces nothing at all;
- a rename reports both its source (gone) and its destination (new), so an atomic save (write a temporary
  file, rename it over the note) is one path: the note;
- a moved or deleted folder is reported as the folder's path; `LiveVault.apply` expands it into its notes
  (those on disk for the destination, those it knew for the source);
- a Markdown file modified but not yet closed by its writer (inotify reports the close) holds the batch
  until it is closed, up to `max_hold`, so a half-written note is not read;
- attachments (non-Markdown files) matter only as link targets: their creation, deletion and renames are
  reported, their content changes are not.

The public API (the TUI reuses it): `VaultWatcher`, `WatchBatch`, `Debouncer`, `is_ignored`,
`watch_live`.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # watchdog is imported lazily: `vaulttools --help` must stay instant
    from vaulttools.live import LiveDelta, LiveVault

#: Seconds without any relevant event after which a burst is over and delivered.
DEFAULT_QUIET = 0.12
#: A burst that never goes quiet (a sync tool writing without pause) is still delivered after this long.
DEFAULT_MAX_WAIT = 5.0
#: How long a Markdown file that is open for writing (modified, not yet closed) may hold a batch back.
DEFAULT_MAX_HOLD = 2.0

#: File-name endings of editors' temporary, swap and backup files (compared case-insensitively).
TEMP_SUFFIXES: tuple[str, ...] = (
    "~",  # vim / emacs / gedit backups
    ".swp", ".swo", ".swn", ".swx",  # vim swap files (usually hidden, not always: `directory` option)
    ".tmp", ".temp",  # generic write-then-rename temporaries
    ".crswap",  # Chromium File System Access API (web editors)
    ".part", ".crdownload", ".partial",  # downloads still in progress
    "___jb_tmp___", "___jb_old___",  # JetBrains "safe write"
    ".kate-swp",  # Kate
)
#: File names that are never vault content (vim's write probe is literally named `4913`).
TEMP_NAMES: frozenset[str] = frozenset({"4913", ".ds_store", "thumbs.db", "desktop.ini"})


def is_ignored(relpath: str) -> bool:
    """True when a vault-relative path can never matter to the vault: a hidden file or folder (``.obsidian``,
    ``.trash``, ``.git``, vim's ``.note.md.swp``, emacs' ``.#note.md``), or an editor's temporary, swap or
    backup file (``note.md~``, ``note.md.tmp``, ``4913``, ``#note.md#``, ``*.crswap``, ...)."""
    if not relpath or relpath == ".":
        return True
    parts = PurePosixPath(relpath).parts
    if any(part.startswith(".") for part in parts):
        return True
    name = parts[-1].lower()
    if name in TEMP_NAMES:
        return True
    if name.startswith("#") and name.endswith("#"):  # emacs auto-save
        return True
    return name.endswith(TEMP_SUFFIXES)


def is_markdown(relpath: str) -> bool:
    return relpath.lower().endswith(".md")


@dataclass(frozen=True, slots=True)
class WatchBatch:
    """Everything that changed in one burst.

    `paths` are vault-relative POSIX paths, sorted: files created, modified, deleted, or either end of a
    rename, and folders created, deleted or moved (expand them with `LiveVault.apply`, which knows what a
    vanished folder held). `events` is how many raw events were coalesced; `first_event`/`last_event` are
    `time.monotonic()` stamps of the burst's first and last event (latency is measured from them).
    """

    paths: tuple[str, ...]
    events: int
    first_event: float
    last_event: float


class Debouncer:
    """Coalesces path notifications into batches, delivered on its own worker thread.

    A batch is delivered when no notification came for `quiet` seconds, unless a Markdown file in it is
    still open for writing (then it waits for the close, at most `max_hold` seconds), and in any case no
    later than `max_wait` seconds after the burst's first notification. Batches are delivered one at a
    time: notifications that arrive while `callback` runs form the next batch. An exception raised by
    `callback` is passed to `on_error` (default: one line on stderr) and the worker carries on.
    """

    def __init__(
        self,
        callback: Callable[[WatchBatch], Any],
        *,
        quiet: float = DEFAULT_QUIET,
        max_wait: float = DEFAULT_MAX_WAIT,
        max_hold: float = DEFAULT_MAX_HOLD,
        on_error: Callable[[BaseException], Any] | None = None,
    ) -> None:
        if quiet <= 0 or max_wait < quiet:
            raise ValueError("need 0 < quiet <= max_wait")
        self.quiet = quiet
        self.max_wait = max_wait
        self.max_hold = max_hold
        self._callback = callback
        self._on_error = on_error or _print_error
        self._cond = threading.Condition()
        self._pending: dict[str, None] = {}  # insertion-ordered set
        self._writing: dict[str, float] = {}  # path -> when it was first seen modified and not yet closed
        self._events = 0
        self._first = 0.0
        self._last = 0.0
        self._busy = False
        self._stopped = False
        self._batches = 0
        self._thread = threading.Thread(target=self._run, name="vault-debouncer", daemon=True)

    # -- feeding -------------------------------------------------------------------------------------
    def touch(self, path: str, *, writing: bool | None = None, now: float | None = None) -> None:
        """Note that `path` changed. `writing=True`: it was modified and its writer has not closed it yet;
        `writing=False`: its writer closed it (or it was deleted/renamed); None: no information."""
        now = time.monotonic() if now is None else now
        with self._cond:
            if not self._pending:
                self._first = now
            self._pending[path] = None
            self._events += 1
            self._last = now
            if writing:
                self._writing.setdefault(path, now)
            elif writing is False:
                self._writing.pop(path, None)
            self._cond.notify_all()

    def requeue(self, paths: Iterable[str]) -> None:
        """Deliver these paths again after a quiet window (used for files caught half-written)."""
        for path in paths:
            self.touch(path)

    # -- lifecycle -----------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the worker; a batch being delivered finishes first, pending notifications are dropped."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)

    @property
    def batches(self) -> int:
        """How many batches were delivered so far."""
        return self._batches

    def idle(self) -> bool:
        """True when nothing is pending and no batch is being delivered."""
        with self._cond:
            return not self._pending and not self._busy

    def wait_idle(self, timeout: float) -> bool:
        """Block until `idle()` (True) or `timeout` seconds passed (False). For tests and benchmarks."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.05))
            return True

    # -- worker --------------------------------------------------------------------------------------
    def _due(self) -> float:
        """When the pending batch should go out (monotonic time); the condition's lock is held."""
        due = self._last + self.quiet
        holding = [since for path, since in self._writing.items() if path in self._pending]
        if holding:
            due = max(due, max(holding) + self.max_hold)
        return min(due, self._first + self.max_wait)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped:
                    if not self._pending:
                        self._cond.wait()
                        continue
                    left = self._due() - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
                if self._stopped:
                    return
                batch = WatchBatch(tuple(sorted(self._pending)), self._events, self._first, self._last)
                for path in self._pending:
                    self._writing.pop(path, None)
                self._pending = {}
                self._events = 0
                self._busy = True
            try:
                self._callback(batch)
            except BaseException as exc:  # the watcher runs all day: a bad batch must not end it
                try:
                    self._on_error(exc)
                except Exception:
                    pass
            finally:
                with self._cond:
                    self._busy = False
                    self._batches += 1
                    self._cond.notify_all()


def _print_error(exc: BaseException) -> None:
    print(f"vaulttools watch: error while handling changes: {type(exc).__name__}: {exc}", file=sys.stderr)


class WatchError(Exception):
    """The operating system refused to watch the folder (missing, or an inotify limit reached)."""


class VaultWatcher:
    """Watches a vault folder recursively and calls `callback(batch)` once per burst, on a worker thread.

    ::

        watcher = VaultWatcher("vault", lambda batch: print(batch.paths))
        watcher.start()          # raises WatchError when the folder cannot be watched
        ...
        watcher.stop()

    `poll=True` uses watchdog's polling observer (network drives, WSL's /mnt/c, where no native events
    arrive); `poll_interval` is then its period. `ignore` decides which vault-relative paths are never
    reported (default `is_ignored`). `extra_files` are files outside the vault worth watching too (the
    TAXONOMIE.md beside the vault): they are reported by their path relative to the vault root
    (``../TAXONOMIE.md``).
    """

    def __init__(
        self,
        root: str | Path,
        callback: Callable[[WatchBatch], Any],
        *,
        quiet: float = DEFAULT_QUIET,
        max_wait: float = DEFAULT_MAX_WAIT,
        max_hold: float = DEFAULT_MAX_HOLD,
        ignore: Callable[[str], bool] = is_ignored,
        on_error: Callable[[BaseException], Any] | None = None,
        poll: bool = False,
        poll_interval: float = 0.5,
        extra_files: Iterable[str | Path] = (),
    ) -> None:
        self.root = Path(root).resolve()
        self._root_str = str(self.root)
        self._extra: dict[str, str] = {}  # absolute path -> path relative to the root ("../X.md")
        for extra in extra_files:
            full = Path(extra).resolve()
            rel = os.path.relpath(full, self.root).replace(os.sep, "/")
            if rel.startswith("../"):
                self._extra[str(full)] = rel
        self._ignore = ignore
        self._poll = poll
        self._poll_interval = poll_interval
        self.debouncer = Debouncer(callback, quiet=quiet, max_wait=max_wait, max_hold=max_hold, on_error=on_error)
        self._observer: Any = None
        self._root_lost = False

    # -- lifecycle -----------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the observer and the worker. Events that happen from now on are never missed."""
        from watchdog import events as ev

        if not self.root.is_dir():
            raise WatchError(f"not a folder: {self.root}")
        if self._poll:
            from watchdog.observers.polling import PollingObserverVFS

            # lstat, not stat: the poller then never descends a symbolic link (a link to `/` would have it
            # walk the disk at every poll, a link to the vault loop), as the inotify observer never does;
            # a link's own creation or removal is still seen, and `Vault.update_file` applies the vault's
            # rule to it (followed only to a target inside the vault)
            observer: Any = PollingObserverVFS(os.lstat, os.scandir, polling_interval=self._poll_interval)
        else:
            from watchdog.observers import Observer

            observer = Observer()
        handler = _Handler(self)
        # Opened/closed-without-write events are left out on purpose: our own reads of the notes would
        # otherwise wake the watcher up after every check.
        wanted = [
            ev.FileCreatedEvent, ev.FileModifiedEvent, ev.FileDeletedEvent, ev.FileMovedEvent,
            ev.FileClosedEvent, ev.DirCreatedEvent, ev.DirDeletedEvent, ev.DirMovedEvent,
        ]
        try:
            observer.schedule(handler, self._root_str, recursive=True, event_filter=wanted)
            for folder in sorted({os.path.dirname(p) for p in self._extra}):
                observer.schedule(handler, folder, recursive=False, event_filter=wanted)
            observer.start()
        except OSError as exc:
            try:
                observer.stop()
            except Exception:
                pass
            raise WatchError(_explain_os_error(exc, self.root)) from None
        self._observer = observer
        self.debouncer.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop watching. Safe to call twice, and from a signal handler's thread."""
        observer, self._observer = self._observer, None
        if observer is not None:
            try:
                observer.stop()
                observer.join(timeout)
            except Exception:
                pass
        self.debouncer.stop(timeout)

    @property
    def watching(self) -> bool:
        """True while changes are being seen: started, not stopped, and the vault folder itself was not
        deleted. The system stops watching a deleted folder, and a folder made again under the same
        name is a new one: start a new `VaultWatcher` on it."""
        observer = self._observer
        if observer is None or self._root_lost or not observer.is_alive():
            return False
        return all(emitter.is_alive() for emitter in observer.emitters)

    def __enter__(self) -> VaultWatcher:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- helpers for consumers -----------------------------------------------------------------------
    def requeue(self, paths: Iterable[str]) -> None:
        """Re-deliver paths after another quiet window (a note caught while still being written)."""
        self.debouncer.requeue(paths)

    def wait_idle(self, timeout: float) -> bool:
        return self.debouncer.wait_idle(timeout)

    def relative(self, path: str | bytes) -> str | None:
        """The vault-relative POSIX path of an absolute event path, or None when it is outside the vault."""
        text = os.fsdecode(path)
        if text == self._root_str:
            return ""
        prefix = self._root_str.rstrip(os.sep) + os.sep
        if not text.startswith(prefix):
            return self._extra.get(text)
        rel = text[len(prefix):]
        return rel.replace(os.sep, "/") if os.sep != "/" else rel


class _Handler:
    """watchdog handler: translates raw events into `Debouncer.touch` calls (see the module docstring)."""

    def __init__(self, watcher: VaultWatcher) -> None:
        self._watcher = watcher
        self._touch = watcher.debouncer.touch
        # Only inotify reports when a writer closes a file; elsewhere (polling, FSEvents, Windows) a
        # "modified" would hold the batch for max_hold every time. There, the stat check of
        # `LiveVault.apply` (size/mtime changing while read) catches half-written notes instead.
        self._closes = _reports_closes(watcher)
        from grasbot.vault import PRIVACY_FILE  # (here: importing the engine must not slow `vaulttools --help`)

        self._privacy_file = PRIVACY_FILE

    def dispatch(self, event: Any) -> None:
        try:
            self._dispatch(event)
        except Exception as exc:  # never let one odd event kill watchdog's dispatcher thread
            _print_error(exc)

    def _dispatch(self, event: Any) -> None:
        kind = event.event_type
        rel = self._watcher.relative(event.src_path)
        if kind == "moved":
            dest = self._watcher.relative(event.dest_path)
            self._accept(rel, writing=False)  # the old name is gone (vim renames the note to `note.md~`)
            self._accept(dest, writing=False)  # the new name is complete (an atomic save lands here)
            return
        if event.is_directory:
            if rel == "" and kind == "deleted":  # the vault folder itself: watchdog stops watching it
                self._watcher._root_lost = True
            if kind in ("created", "deleted"):
                self._accept(rel, writing=False)
            return
        if rel is None or (self._watcher._ignore(rel) and not rel.startswith("../")):
            return
        if kind in ("created", "deleted"):
            self._accept(rel, writing=False if kind == "deleted" else None)
        elif is_markdown(rel) or rel == self._privacy_file:  # an attachment's content changes no link's status;
            # the vault's `[privacy]` table changes which notes are private
            if kind == "modified":
                self._touch(rel, writing=True if self._closes else None)
            elif kind == "closed":
                self._touch(rel, writing=False)

    def _accept(self, rel: str | None, *, writing: bool | None) -> None:
        if rel and (rel.startswith("../") or not self._watcher._ignore(rel)):
            self._touch(rel, writing=writing)


def _reports_closes(watcher: VaultWatcher) -> bool:
    if watcher._poll:
        return False
    try:
        from watchdog.observers import Observer
        from watchdog.observers.inotify import InotifyObserver
    except ImportError:  # not Linux
        return False
    return Observer is InotifyObserver


def _explain_os_error(exc: OSError, root: Path) -> str:
    import errno

    if exc.errno == errno.ENOSPC:
        return (
            f"cannot watch {root}: the system's inotify watch limit is reached "
            "(raise it with `sudo sysctl fs.inotify.max_user_watches=524288`)"
        )
    if exc.errno == errno.EMFILE:
        return (
            f"cannot watch {root}: too many inotify instances "
            "(raise `fs.inotify.max_user_instances`, or close other watchers)"
        )
    return f"cannot watch {root}: {exc.strerror or exc}"


def watch_live(
    live: LiveVault,
    on_delta: Callable[[LiveDelta, WatchBatch], Any],
    **options: Any,
) -> VaultWatcher:
    """Wire a `VaultWatcher` to a `LiveVault`: every batch is applied, notes caught half-written are
    re-read after another quiet window, and `on_delta(delta, batch)` runs on the worker thread for every
    batch that was applied (check `delta.is_empty` to stay quiet). Returns the watcher, not started yet.
    `options` go to `VaultWatcher` (quiet, max_wait, max_hold, on_error, poll, ...)."""

    def handle(batch: WatchBatch) -> None:
        delta = live.apply(batch.paths)
        if delta.unsettled:
            watcher.requeue(delta.unsettled)
        on_delta(delta, batch)

    watcher = VaultWatcher(live.root, handle, **options)
    return watcher
