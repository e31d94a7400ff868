"""The TUI's one door to the engine: loading, linting, retrieval, fixes, authoring, the API, the OS.

Everything the app shows comes from here, and everything here calls the same functions as the command
line: the vault loader behind its persistent snapshot (`grasbot.snapshot.load`), the retrieval pipeline
`RetrievalPipeline` (what `vaulttools ask` and the API call), `LiveVault` + `VaultWatcher` (what `vaulttools watch` runs), `apply_fixes` (`vaulttools lint --fix`),
`create_note` (`vaulttools new`) and `reload_vault` (`vaulttools reload`). No Textual here: the methods
are plain, blocking and thread-safe, and the app calls them from worker threads so the UI never waits.

Loading is split in phases so the first screen comes fast on a big vault: `load()` reads the notes (the
tree can be drawn), `build_index()` makes the question preview work, `start_live()` runs the full lint
(the badges) and from then on every change on disk goes through the `LiveVault`.

Threads: before `start_live()` only one loader thread touches the vault; afterwards every read goes
through `LiveVault.reading()` (its lock), and the watcher's thread is the one writer.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote


if TYPE_CHECKING:
    from grasbot import Note
    from grasbot import Vault
    from vaulttools.authoring import NewNote
    from vaulttools.lint.diagnostics import Diagnostic
    from vaulttools.lint.fixes import FileFix
    from vaulttools.live import LiveDelta, LiveVault
    from vaulttools.reload_client import ReloadResult

__all__ = [
    "Backend",
    "BackendError",
    "VaultMissing",
    "LinkRow",
    "NoteDetail",
    "NoteRow",
    "Preview",
    "PreviewRow",
    "Summary",
    "obsidian_url",
]

#: How many notes the question preview lists (the API's SEARCH_TOP_K default).
DEFAULT_TOP_K = 5
#: Up to this many notes the LiveVault keeps the TUI's search index up to date with every save (see
#: `Backend._make_live`). The TUI builds the index at start whatever the size; an update after a save costs
#: milliseconds, where rebuilding it after a burst of saves costs seconds (benchmarks/README.md, retrieval).
#: Above, updates grow with the vault and the rebuild is kept.
INDEX_LIVE_LIMIT = 50_000
#: From this many notes on, the heap is frozen after each full check (see `_freeze_heap`).
FREEZE_ABOVE = 1000
#: Seconds the API check waits for `/health`: the API is on loopback, or it is down.
API_TIMEOUT = 1.5


#: Seconds `open_in_obsidian` waits for the URL opener to say whether it could open the URL.
OPENER_WAIT = 2.0


class BackendError(Exception):
    """Something the user must be told in one line (missing vault, unreadable taxonomy, ...)."""


class VaultMissing(BackendError):
    """The vault folder is gone (deleted or moved away while the app runs)."""


# -- plain data handed to the UI (immutable: safe to read on any thread) --------------------------------


@dataclass(frozen=True, slots=True)
class NoteRow:
    """What the tree shows for one note."""

    path: str
    title: str
    type: str | None
    private: bool
    errors: int = 0
    warnings: int = 0
    rules: tuple[str, ...] = ()  # distinct rules of its problems, sorted
    fixable: int = 0  # problems with a safe automatic fix

    @property
    def problems(self) -> int:
        return self.errors + self.warnings


@dataclass(frozen=True, slots=True)
class LinkRow:
    """One outgoing link (as written, where it leads) or one backlink (`text` is the linking note)."""

    text: str
    target: str | None  # vault-relative path it leads to; None when broken or external
    status: str  # ok, broken, broken-anchor, ambiguous, external, backlink
    line: int
    private: bool = False  # the target (or the linking note) is private
    hint: str = ""  # e.g. "alias of 10-Projets/x.md"


@dataclass(frozen=True, slots=True)
class NoteDetail:
    path: str
    note: Note
    diagnostics: tuple[Diagnostic, ...]
    links: tuple[LinkRow, ...]
    backlinks: tuple[LinkRow, ...]
    linted: bool  # False while the first full lint is still running

    @property
    def fixable(self) -> int:
        return sum(1 for d in self.diagnostics if d.fix is not None)


@dataclass(frozen=True, slots=True)
class PreviewRow:
    rank: int
    id: str
    path: str
    title: str
    type: str | None
    score: float
    reasons: tuple[str, ...]
    direct: bool
    prompt: str  # "whole" or "cut"
    chars: int  # characters of the note that go into the prompt


@dataclass(frozen=True, slots=True)
class Preview:
    query: str
    grounded: bool
    rows: tuple[PreviewRow, ...]
    candidates: int  # public notes the index holds
    elapsed_ms: float
    message: str | None = None  # why there is no ranking (empty question, index not ready)
    filters: tuple[str, ...] = ()  # the question's filters as reasons: filter:section=13, filter-relaxed:...


@dataclass(frozen=True, slots=True)
class Summary:
    vault_name: str
    notes: int
    private: int
    by_type: tuple[tuple[str, int], ...]
    by_rule: tuple[tuple[str, str, int, int], ...]  # (rule, severity, problems, notes)
    errors: int
    warnings: int
    notes_with_problems: int
    fixable_notes: int
    linted: bool
    taxonomy: str | None  # shown relative to the vault
    taxonomy_error: str | None
    notices: tuple[str, ...]  # problems of the vault itself (unreadable folder, link loop, ...)
    #: the answering profile the service would use (`name@version (origin)`), or why it cannot be used
    profile: str = ""
    profile_error: str | None = None


#: Editors that open a file at a line with `+LINE file` (vi and its kin, nano, Emacs, micro, kakoune, joe...).
_PLUS_LINE = frozenset({"vi", "vim", "nvim", "gvim", "mvim", "view", "nano", "pico", "emacs", "emacsclient", "micro",
                        "kak", "joe", "jmacs", "jstar", "ne", "mg", "jed", "mcedit", "vis", "elvis", "nvi", "ex"})
#: Editors that take `--goto`-style `-g file:line` (VS Code and its forks).
_GOTO = frozenset({"code", "code-insiders", "codium", "vscodium", "cursor", "windsurf"})
#: Editors that take `file:line`.
_COLON = frozenset({"subl", "sublime_text", "zed", "hx", "helix", "gedit", "kate", "mate"})


def editor_argv(editor: list[str], file: str, line: int | None) -> list[str]:
    """The command that opens `file` in `editor` (its argv, arguments included) at `line`: `+LINE file` for
    vi, nano, Emacs and the like, `-g file:LINE` for VS Code, `file:LINE` for Sublime Text, Zed, Helix; an
    editor not known here gets the file alone (at its first line, rather than a wrong argument)."""
    if line is None or line < 1 or not editor:
        return [*editor, file]
    name = Path(editor[0]).name.lower().removesuffix(".exe")
    if name in _PLUS_LINE:
        return [*editor, f"+{line}", file]
    if name in _GOTO:
        return [*editor, "-g", f"{file}:{line}"]
    if name in _COLON:
        return [*editor, f"{file}:{line}"]
    return [*editor, file]


def obsidian_url(vault_root: Path, path: str) -> str:
    """`obsidian://open?vault=<vault folder name>&file=<path without .md>`, both URI-encoded."""
    file = path[:-3] if path.lower().endswith(".md") else path
    return f"obsidian://open?vault={quote(vault_root.name, safe='')}&file={quote(file, safe='')}"


def _opener(url: str) -> list[str] | None:
    """The OS command that opens `url` with its registered handler, or None when there is none."""
    if sys.platform == "darwin":
        candidates = [["open", url]]
    elif sys.platform.startswith("win"):
        candidates = [["explorer", url]]
    else:
        candidates = [["xdg-open", url], ["gio", "open", url], ["wslview", url]]
    for argv in candidates:
        found = shutil.which(argv[0])
        if found:
            return [found, *argv[1:]]
    return None


class _VaultSnapshot:
    """What `SearchIndex.build` reads of a vault (its notes, their outgoing links and the text a visitor may
    read of them), copied under the live lock so the (seconds-long) build of a big vault's index does not
    hold the watcher back."""

    def __init__(self, vault: Vault) -> None:
        self.root = vault.root
        self.notes = dict(vault.notes)  # Note objects are replaced on update, never mutated
        self._out = {path: vault.outgoing(path) for path in self.notes}
        self._visitor: dict[tuple[str, str], str] = {}

    #: notes read per hold of the live lock by `read_visitor_texts` (a few tens of milliseconds)
    BATCH = 200

    def read_visitor_texts(self, live: LiveVault) -> None:
        """Keep what `Vault.visitor_text` gives of each copied note's title and body (without the links to
        hidden notes), as the bot's own index reads them: without it the preview would rank on words only a
        private link brings. It parses every body (seconds on a big vault), so the lock is taken per batch and
        saves go on between; a save meanwhile makes `refresh_index` build again, so a copy read across a
        change is replaced at once. Only the texts it changes are kept."""
        paths = list(self.notes)
        for start in range(0, len(paths), self.BATCH):
            with live.reading():
                vault = live.vault
                if not vault.hidden_paths():
                    continue
                for path in paths[start : start + self.BATCH]:
                    note = self.notes[path]
                    for text in {note.title, note.stem, note.reader_body}:
                        seen = vault.visitor_text(text, path)
                        if seen != text:
                            self._visitor[(path, text)] = seen

    def outgoing(self, path: str) -> list[str]:
        return self._out.get(path, [])

    def visitor_text(self, text: str, source: str) -> str:
        """`Vault.visitor_text` as it was when the copy was taken."""
        return self._visitor.get((source, text), text)


def _freeze_heap() -> None:
    """Move everything alive now (the vault, the index, the diagnostics: millions of objects on a big
    vault) out of the garbage collector's sight, after each loading phase. Otherwise every full collection
    (the lint allocates enough to trigger many) walks them all, holding the GIL, and the UI stalls now and
    then while the author types (benchmarks/README.md, TUI). They live as long as the app; `gc.freeze` itself
    is instant (no collection first: that would be the very stall we avoid)."""
    import gc

    gc.freeze()


def _severity_counts(diags: Iterable[Diagnostic]) -> tuple[int, int, tuple[str, ...], int]:
    errors = warnings = fixable = 0
    rules: set[str] = set()
    for d in diags:
        if str(d.severity) == "error":
            errors += 1
        else:
            warnings += 1
        if d.fix is not None:
            fixable += 1
        rules.add(d.rule)
    return errors, warnings, tuple(sorted(rules)), fixable


def _row(note: Note, diags: Iterable[Diagnostic], private: bool) -> NoteRow:
    """`private`: `note.is_private`, as the vault's `hidden_paths()` has it (computed once per state of the
    vault: the privacy rule is not run again for every note of every list)."""
    errors, warnings, rules, fixable = _severity_counts(diags)
    return NoteRow(note.path, note.title, note.type, private, errors, warnings, rules, fixable)


class Backend:
    """One vault, as the TUI sees it. Construct, then (from a worker thread) `load()`, `build_index()`,
    `start_live()`; `start_watching()` as early as possible so no save is missed while loading."""

    def __init__(
        self,
        root: str | Path,
        *,
        taxonomy: str | Path | None = None,
        api: str | None = None,
        token: str | None = None,
        top_k: int = DEFAULT_TOP_K,
        use_cache: bool = True,
    ) -> None:
        self.root = Path(root).expanduser()
        #: read the vault and its index from the persistent snapshot (grasbot/snapshot.py), written back
        #: when the app stops, and its first lint from the lint cache; False (`--no-cache`): read, index and
        #: lint the whole vault, write nothing
        self.use_cache = use_cache
        self._loaded: Any = None  # the grasbot.snapshot.Snapshot the vault came from
        self.taxonomy_arg = Path(taxonomy).expanduser() if taxonomy else None
        self.api = api
        self.token = token
        self.top_k = top_k
        self.live: LiveVault | None = None
        self.timings: dict[str, float] = {}  # phase -> seconds, for the summary and the benchmark
        self.taxonomy_error: str | None = None
        self._filters: Any = None  # FilterConfig, read from the taxonomy on the first preview
        self.config_error: str | None = None
        self._vault: Vault | None = None
        self._index: Any = None
        self._config: Any = None
        self._ready = threading.Event()  # the LiveVault exists (or loading failed): batches may be applied
        self._stopping = False
        self._watcher: Any = None
        self._watch_args: tuple[Any, ...] | None = None  # how the watcher was started, to start it again
        self._own_index = False
        self._reindex_lock = threading.Lock()
        self._reindexing = False
        self._reindex_again = False
        self._hidden: tuple[tuple[int, int], frozenset[str]] | None = None  # (vault, version) -> hidden names

    # -- loading ----------------------------------------------------------------------------------------
    @property
    def vault(self) -> Vault | None:
        live = self.live
        return live.vault if live is not None else self._vault

    @property
    def vault_name(self) -> str:
        return self.root.resolve().name if self.root.exists() else self.root.name

    def scan(self) -> list[NoteRow]:
        """The vault's note files, from a folder walk alone (no file is read): enough to draw the tree
        in a fraction of the time a full read of a big vault takes. Same exclusions as `Vault.load`."""
        from grasbot import Vault

        if not self.root.is_dir():
            raise BackendError(f"vault not found: {self.root} (pass a vault folder as PATH or --vault)")
        paths = Vault(self.root.resolve()).note_files()
        return [NoteRow(p, p.rsplit("/", 1)[-1].rsplit(".", 1)[0], None, False) for p in paths]

    def load(self) -> list[NoteRow]:
        """Read every note (no lint yet), and the index with them when the snapshot has it (only the files
        that changed since are re-read). BackendError for a missing or unreadable vault folder."""
        from grasbot import snapshot

        started = time.perf_counter()
        try:
            self._loaded = snapshot.load(self.root, use_snapshot=self.use_cache)
            vault = self._loaded.vault
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise BackendError(f"{exc} (pass a vault folder as PATH or --vault)") from None
        except OSError as exc:
            raise BackendError(f"cannot read the vault {self.root}: {exc.strerror or exc}") from None
        self._vault = vault
        self.root = vault.root
        self.timings["load"] = time.perf_counter() - started
        if len(vault.notes) > FREEZE_ABOVE:
            _freeze_heap()
        hidden = vault.hidden_paths()  # (`is_private`, once per state of the vault; kept in the snapshot)
        return [NoteRow(n.path, n.title, n.type, n.path in hidden) for n in vault.notes.values()]

    def build_index(self) -> int:
        """Build the retrieval index (the question preview works from then on); returns its size."""
        from grasbot import SearchIndex

        if self._vault is None:
            raise BackendError("the vault is not loaded")
        started = time.perf_counter()
        loaded = self._loaded
        self._index = loaded.index if loaded is not None and loaded.vault is self._vault else SearchIndex.build(self._vault)
        # one search now, with a word the vault has never seen: the engine builds its lazy parts (the spelling
        # corrector's tables: the slowest search of all, see benchmarks/README.md, TUI) here rather than on
        # the author's first key
        self._index.search("quelle est la météo zzzq demain ?", 1)
        self.timings["index"] = time.perf_counter() - started
        if len(self._vault.notes) > FREEZE_ABOVE:
            _freeze_heap()
        return self._index.size

    def start_live(self) -> list[NoteRow]:
        """Run the full lint and hand the vault to a `LiveVault`; returns every note's row with badges."""
        if self._vault is None:
            raise BackendError("the vault is not loaded")
        started = time.perf_counter()
        try:
            self.live = self._make_live(self._vault, self._index)
        finally:
            self._ready.set()
        self.timings["lint"] = time.perf_counter() - started
        if len(self._vault.notes) > FREEZE_ABOVE:
            _freeze_heap()
        return self.rows_all()

    def _load_config(self) -> Any:
        from vaulttools.lint import ConfigError, LintConfig, load_config

        if self._config is None:
            try:
                self._config = load_config(self._vault.root if self._vault else self.root)
            except ConfigError as exc:
                self.config_error = f"lint configuration not used: {exc}"
                self._config = LintConfig()
        return self._config

    def _make_live(self, vault: Vault, index: Any) -> LiveVault:
        """A LiveVault over the vault already read (reading 10k notes twice would delay the badges).

        Up to `INDEX_LIVE_LIMIT` notes the LiveVault keeps the search index up to date with every save
        (the preview and `answer-not-retrieved` follow at once). Above, an update per save would hold the
        badges back: the LiveVault keeps none (so `answer-not-retrieved` is left to `vaulttools lint`), and
        the backend rebuilds its own index in the background after each burst of changes
        (`refresh_index`), then the preview follows."""
        from vaulttools.live import LiveVault

        self._own_index = len(vault.notes) > INDEX_LIVE_LIMIT
        # (use_cache: the first lint from the lint cache too, as the vault came from the snapshot)
        if self._own_index:
            live = LiveVault.from_vault(vault, taxonomy=self.taxonomy_arg, config=self._load_config(), with_index=False,
                                        lint_cache=self.use_cache)  # fmt: skip
        else:
            live = LiveVault.from_vault(vault, taxonomy=self.taxonomy_arg, config=self._load_config(), index=index,
                                        lint_cache=self.use_cache)  # fmt: skip
        self.taxonomy_error = live.taxonomy_error
        return live

    @property
    def own_index(self) -> bool:
        """True when the index is the backend's own (big vault): call `refresh_index` after changes."""
        return self._own_index

    def refresh_index(self) -> bool:
        """Rebuild the backend's own index from the live vault (big vaults only; run on a worker thread).
        Several calls while one runs make one more rebuild after it. Returns True when it rebuilt."""
        from grasbot import SearchIndex

        live = self.live
        if live is None or not self._own_index:
            return False
        with self._reindex_lock:
            if self._reindexing:
                self._reindex_again = True
                return False
            self._reindexing = True
        try:
            while True:
                self._reindex_again = False
                started = time.perf_counter()
                with live.reading():  # a consistent copy, taken in milliseconds: saves go on meanwhile
                    snapshot = _VaultSnapshot(live.vault)
                snapshot.read_visitor_texts(live)
                index = SearchIndex.build(snapshot)  # type: ignore[arg-type]
                index.search("quelle est la météo zzzq demain ?", 1)  # warm it (see build_index)
                self._index = index  # one assignment: previews switch from the old index to the new
                self.timings["index"] = time.perf_counter() - started
                if not self._reindex_again:
                    return True
        finally:
            with self._reindex_lock:
                self._reindexing = False

    # -- watching ---------------------------------------------------------------------------------------
    def start_watching(
        self,
        on_delta: Callable[[LiveDelta], Any],
        on_error: Callable[[BaseException], Any] | None = None,
        *,
        quiet: float = 0.12,
        poll: bool = False,
    ) -> None:
        """Watch the vault folder; after each burst of changes (once `start_live()` is done) apply it and
        call `on_delta(delta)` on the watcher's thread. BackendError when the folder cannot be watched."""
        from vaulttools.watcher import VaultWatcher, WatchError

        def handle(batch: Any) -> None:
            self._ready.wait()
            live = self.live
            if live is None or self._stopping:
                return
            delta = live.apply(batch.paths)
            if delta.unsettled and self._watcher is not None:
                self._watcher.requeue(delta.unsettled)
            if not delta.is_empty:
                on_delta(delta)

        watcher = VaultWatcher(self.root, handle, quiet=quiet, on_error=on_error or (lambda exc: None), poll=poll)
        try:
            watcher.start()
        except WatchError as exc:
            raise BackendError(str(exc)) from None
        self._watcher = watcher
        self._watch_args = (handle, quiet, on_error, poll)

    def _rewatch(self) -> None:
        """Start watching again when the watch ended because the vault folder went away (the system
        cannot follow a folder that was deleted and made again: it is a new folder)."""
        from vaulttools.watcher import VaultWatcher, WatchError

        old = self._watcher
        if old is None or self._watch_args is None or self._stopping or old.watching:
            return
        handle, quiet, on_error, poll = self._watch_args
        watcher = VaultWatcher(self.root, handle, quiet=quiet, on_error=on_error or (lambda exc: None), poll=poll)
        try:
            watcher.start()
        except WatchError as exc:
            raise BackendError(f"not watching the vault any more: {exc}") from None
        self._watcher = watcher
        old.stop(timeout=2.0)

    def stop(self) -> None:
        """Stop watching (safe to call twice, from any thread)."""
        self._stopping = True
        self._ready.set()  # a batch waiting for the first lint must not hang the shutdown
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.stop(timeout=2.0)
        self._save_snapshot()

    def _save_snapshot(self) -> None:
        """Write the snapshot back if it changed (a cold start, files re-read), once nothing changes the vault
        any more: not while the lint runs or the watcher applies saves, which the pickler would race. The
        signatures it records are those taken before the load, so a file the app saw change since is
        re-read next time: never a stale note from the snapshot."""
        loaded, self._loaded = self._loaded, None
        live = self.live
        if loaded is None or live is None:  # stopped before every phase ended: the loader may still run
            return
        from grasbot import snapshot

        with live.reading():
            snapshot.save(loaded)

    def apply(self, paths: Iterable[str]) -> LiveDelta | None:
        """Apply changes the app made itself (a fix, a new note) now, without waiting for the watcher."""
        live = self.live
        return live.apply(list(paths)) if live is not None else None

    def full_lint(self) -> LiveDelta:
        """Re-read and re-lint the whole vault (the taxonomy too). VaultMissing when the vault folder is
        gone; when it is back after that, watching starts again first (a save during the check is seen)."""
        live = self.live
        if live is None:
            raise BackendError("the first check is still running")
        if not self.root.is_dir():
            raise VaultMissing(f"vault folder not found: {self.root}")
        self._rewatch()
        started = time.perf_counter()
        try:
            delta = live.reload()
        except (FileNotFoundError, NotADirectoryError):  # gone between the look above and the read
            raise VaultMissing(f"vault folder not found: {self.root}") from None
        except OSError as exc:
            raise BackendError(f"cannot read the vault {self.root}: {exc.strerror or exc}") from None
        self.timings["lint"] = time.perf_counter() - started
        if live.note_count() > FREEZE_ABOVE:
            _freeze_heap()
        if live.index is not None and not self._own_index:
            live.search("quelle est la météo zzzq demain ?", 1)  # warm the new index (see build_index)
        elif self._own_index:
            self.refresh_index()
        return delta

    # -- reading ----------------------------------------------------------------------------------------
    def rows_all(self) -> list[NoteRow]:
        live = self.live
        if live is None:
            vault = self._vault
            if vault is None:
                return []
            hidden = vault.hidden_paths()
            return [NoteRow(n.path, n.title, n.type, n.path in hidden) for n in vault.notes.values()]
        with live.reading():
            grouped: dict[str, list[Diagnostic]] = {}
            for d in live.diagnostics():
                grouped.setdefault(d.path, []).append(d)
            hidden = live.vault.hidden_paths()
            return [_row(n, grouped.get(p, ()), p in hidden) for p, n in live.vault.notes.items()]

    def rows(self, paths: Iterable[str]) -> dict[str, NoteRow | None]:
        """The rows of `paths` now; None for a path that is no longer a note."""
        out: dict[str, NoteRow | None] = {}
        live = self.live
        if live is None:
            return out
        with live.reading():
            for p in sorted(set(paths)):
                note = live.vault.notes.get(p)
                out[p] = _row(note, live.diagnostics(p), p in live.vault.hidden_paths()) if note is not None else None
        return out

    def detail(self, path: str) -> NoteDetail | None:
        """Everything the note pane shows for one note; None when it is not a note (any more)."""
        from grasbot import LinkStatus

        live = self.live
        lock = live.lock if live is not None else threading.RLock()
        with lock:
            vault = self.vault
            if vault is None:
                return None
            note = vault.notes.get(path)
            if note is None:
                return None
            diags = tuple(live.diagnostics(path)) if live is not None else ()
            links = []
            for res in vault.resolutions(path):
                link = res.link
                target = res.target_path
                target_note = vault.notes.get(target) if target else None
                hint = ""
                if res.status is LinkStatus.BROKEN and res.alias_of:
                    hint = f"an alias of {res.alias_of}"
                elif res.status is LinkStatus.AMBIGUOUS and res.candidates:
                    hint = f"{len(res.candidates)} files share this name"
                links.append(
                    LinkRow(
                        link.raw,
                        target,
                        res.status.value,
                        link.span.line,
                        bool(target_note and target_note.is_private),
                        hint,
                    )
                )
            backlinks = []
            for source in vault.incoming(path):
                other = vault.notes.get(source)
                if other is None:
                    continue
                line = next(
                    (r.link.span.line for r in vault.resolutions(source) if r.target_path == path), 1
                )
                backlinks.append(LinkRow(other.title, source, "backlink", line, other.is_private))
        return NoteDetail(path, note, diags, tuple(links), tuple(backlinks), live is not None)

    def preview(self, query: str, top_k: int | None = None) -> Preview:
        """What GrasBot would retrieve for `query`: the bot's own retrieval pipeline (ranking, servable
        hits, prompt plan), as the API runs it for a visitor's first question."""
        from grasbot import RetrievalLimits
        from grasbot.answer.filtering import filters_of

        started = time.perf_counter()
        q = " ".join(query.split())
        if not q:
            return Preview("", False, (), 0, 0.0, "Type a question as a visitor would ask it.")
        limits = RetrievalLimits(top_k=top_k or self.top_k)
        live = self.live
        if live is not None and live.index is not None and not self._own_index:
            with live.reading():
                index = live.index
                retrieval = self._retrieve(index, limits, q)
                size = index.size
        elif self._index is not None:
            index = self._index
            retrieval = self._retrieve(index, limits, q)
            size = index.size
        else:
            return Preview(q, False, (), 0, 0.0, "The search index is being built; the preview starts in a moment.")
        rows = tuple(
            PreviewRow(
                rank,
                hit.id,
                hit.note.path,
                hit.note.title,
                hit.note.type,
                hit.score,
                tuple(hit.reasons),
                hit.direct,
                "cut" if ctx.truncated else "whole",
                len(ctx.text),
            )
            for rank, (hit, ctx) in enumerate(zip(retrieval.hits, retrieval.context, strict=True), 1)
        )
        filters = tuple(filters_of(retrieval).get("reasons", ()))
        return Preview(q, retrieval.grounded, rows, size, (time.perf_counter() - started) * 1000.0, filters=filters)

    def _retrieve(self, index: Any, limits: Any, q: str) -> Any:
        """The bot's retrieval pipeline, with the question's filters (§, chapter, page, the taxonomy's
        filterable fields) as `vaulttools ask` and the API apply them."""
        from grasbot import RetrievalPipeline
        from grasbot.answer.filtering import FilterStage
        from vaulttools.commands._common import filter_config

        if self._filters is None:
            self._filters = filter_config(self.root)
        stages = (FilterStage(index, self._filters),)
        return RetrievalPipeline(index, limits, hidden=self._hidden_names(), stages=stages).retrieve(q)

    def _hidden_names(self) -> frozenset[str]:
        """The names of the notes a visitor may not see (the prompt removes links to them), computed once
        per version of the vault."""
        from grasbot.answer.prompt import hidden_names

        vault, live = self.vault, self.live
        key = (id(vault), live.version if live is not None else -1)
        cached = self._hidden
        if cached is None or cached[0] != key:
            cached = self._hidden = (key, hidden_names(vault.notes.values()) if vault is not None else frozenset())
        return cached[1]

    def verify_answer(self, answer: str, ids: Sequence[str]) -> Any:
        """Check `answer` sentence by sentence against the notes `ids` (the preview's, in rank order):
        the verifier the API runs after each generation (`grasbot.answer.verify`), as `vaulttools verify`
        runs it. Returns a `Verification`; BackendError when a note is gone or not public."""
        from grasbot import is_servable
        from grasbot.answer.prompt import hidden_names
        from grasbot import note_passage, subject_names, verify

        vault = self.vault
        if vault is None:
            raise BackendError("the vault is not loaded yet")
        live = self.live
        lock = live.lock if live is not None else threading.RLock()
        with lock:
            notes = list(vault.notes.values())
        by_id = {n.id: n for n in notes if is_servable(n)}
        hidden = hidden_names(notes)
        passages = []
        for note_id in ids:
            note = by_id.get(note_id)
            if note is None:
                raise BackendError(f"`{note_id}` is no public note any more: ask the question again")
            passages.append(note_passage(note, hidden))
        return verify(answer, passages, subject_names(by_id.values()))

    def summary(self) -> Summary:
        live = self.live
        lock = live.lock if live is not None else threading.RLock()
        with lock:
            vault = self.vault
            notes = list(vault.notes.values()) if vault else []
            diags = live.diagnostics() if live is not None else []
            notices = tuple(f"{p.path}: {p.message}" for p in (vault.problems if vault else []))
            tax_path = live.taxonomy_path if live is not None else None
            tax_error = live.taxonomy_error if live is not None else self.taxonomy_error
        by_type = Counter((n.type or "(no type)") for n in notes)
        rule_count: Counter[tuple[str, str]] = Counter()
        rule_notes: dict[tuple[str, str], set[str]] = {}
        fixable_notes: set[str] = set()
        errors = warnings = 0
        with_problems: set[str] = set()
        for d in diags:
            sev = str(d.severity)
            key = (d.rule, sev)
            rule_count[key] += 1
            rule_notes.setdefault(key, set()).add(d.path)
            with_problems.add(d.path)
            if d.fix is not None:
                fixable_notes.add(d.path)
            if sev == "error":
                errors += 1
            else:
                warnings += 1
        by_rule = tuple(
            sorted(
                ((rule, sev, n, len(rule_notes[(rule, sev)])) for (rule, sev), n in rule_count.items()),
                key=lambda r: (r[1] != "error", -r[2], r[0]),
            )
        )
        taxonomy = None
        if tax_path is not None:
            try:
                taxonomy = os.path.relpath(tax_path, self.root)
            except ValueError:  # another drive (Windows)
                taxonomy = str(tax_path)
        extra = tuple(m for m in (self.config_error,) if m)
        return Summary(
            vault_name=self.vault_name,
            notes=len(notes),
            private=sum(1 for n in notes if n.is_private),
            by_type=tuple(sorted(by_type.items(), key=lambda kv: (-kv[1], kv[0]))),
            by_rule=by_rule,
            errors=errors,
            warnings=warnings,
            notes_with_problems=len(with_problems),
            fixable_notes=len(fixable_notes),
            linted=live is not None,
            taxonomy=taxonomy,
            taxonomy_error=tax_error,
            notices=notices + extra,
            **self.profile_summary(),
        )

    def profile_summary(self) -> dict[str, str | None]:
        """The answering profile GrasBot would use for this vault (GRASBOT_PROFILE, else the vault's own,
        else `site`): `profile` and `profile_error` of the Summary. Read each time: it is one small file."""
        from grasbot import PROFILE_FILE, ProfileError, load_profile

        try:
            profile = load_profile(self.root, os.environ.get("GRASBOT_PROFILE"))
        except ProfileError as error:
            where = PROFILE_FILE.as_posix() if error.path.endswith(PROFILE_FILE.as_posix()) else error.path
            return {"profile": "", "profile_error": f"{where}:{error.line}:{error.column}: {error.message}" if error.line else f"{where}: {error.message}"}
        described = profile.describe()
        return {"profile": f"{profile.name}@{profile.version} ({described['origin']}, cites {profile.citation})", "profile_error": None}

    # -- fixing -----------------------------------------------------------------------------------------
    def plan_fix(self, path: str) -> FileFix | None:
        """The safe fixes of one note, computed on the file as it is now; nothing is written. None when
        the note has no fixable problem."""
        from vaulttools.lint import apply_fixes

        live = self.live
        if live is None:
            raise BackendError("the first check is still running; try again in a moment")
        with live.reading():
            diags = [d for d in live.diagnostics(path) if d.fix is not None]
            if not diags:
                return None
            fixes = apply_fixes(live.vault, diags, live.taxonomy, self._load_config(), write=False)
        return fixes[0] if fixes else None

    def write_fix(self, fix: FileFix) -> LiveDelta | None:
        """Write a planned fix (refused if the file changed since it was planned), then re-check the note.
        BackendError with the reason when nothing was written."""
        from vaulttools.lint.fixes import write_fixed

        if fix.error:
            raise BackendError(fix.error)
        try:
            write_fixed(self.root, fix)
        except OSError as exc:
            raise BackendError(f"{fix.path}: cannot write: {exc.strerror or exc}") from None
        except Exception as exc:  # FileChangedError: an editor saved meanwhile
            raise BackendError(str(exc)) from None
        return self.apply([fix.path])

    # -- authoring --------------------------------------------------------------------------------------
    @staticmethod
    def note_types() -> list[str]:
        from vaulttools.authoring import NOTE_TYPES

        return list(NOTE_TYPES)

    def domains(self) -> list[str]:
        """The taxonomy's domains, in its order (empty without a taxonomy or a domain list)."""
        live = self.live
        vocabulary = live.taxonomy.vocabularies.get("domains") if live is not None and live.taxonomy else None
        return list(vocabulary.values) if vocabulary is not None else []

    def create_note(self, note_type: str, title: str, domains: Sequence[str] = ()) -> tuple[str, NewNote]:
        """Create a note from its type's template (`vaulttools new`); returns its vault-relative path.
        BackendError with the reason when nothing was created."""
        from vaulttools.authoring import AuthoringError, create_note

        live = self.live
        taxonomy = live.taxonomy if live is not None else None
        try:
            new = create_note(note_type, title, self.root, taxonomy=taxonomy, domains=domains)
        except AuthoringError as exc:
            raise BackendError(str(exc)) from None
        except OSError as exc:
            raise BackendError(f"cannot write the note: {exc.strerror or exc}") from None
        rel = Path(new.path).resolve().relative_to(self.root.resolve()).as_posix()
        self.apply([rel])
        return rel, new

    # -- outside the app: editor, Obsidian, the API -----------------------------------------------------
    def absolute(self, path: str) -> Path:
        return self.root / path

    def editor_command(self, path: str, line: int | None = None) -> list[str] | None:
        """`$VISUAL`/`$EDITOR` (with its arguments) on the note's file, at `line` when given and the editor
        is one whose way of saying it is known (`editor_argv`); else a common editor; else None."""
        for var in ("VISUAL", "EDITOR"):
            value = os.environ.get(var, "").strip()
            if value:
                try:
                    argv = shlex.split(value)
                except ValueError:
                    argv = [value]
                return editor_argv(argv, str(self.absolute(path)), line)
        for name in ("nano", "vim", "vi"):
            found = shutil.which(name)
            if found:
                return editor_argv([found], str(self.absolute(path)), line)
        return None

    def obsidian_url(self, path: str) -> str:
        return obsidian_url(self.root, path)

    def open_in_obsidian(self, path: str) -> tuple[list[str] | None, str]:
        """Ask the OS to open the note in Obsidian. Returns (the command run or None, one line to show)."""
        url = self.obsidian_url(path)
        argv = _opener(url)
        if argv is None:
            return None, f"no URL opener found (xdg-open); open this URL yourself: {url}"
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            return None, f"could not run {argv[0]}: {exc.strerror or exc}; open this URL yourself: {url}"
        name = Path(argv[0]).name
        # (runs on a worker thread) an opener hands the URL over and exits at once; one that fails says so
        # by its status (no handler for obsidian://): wait a moment for it rather than claim success
        try:
            status = proc.wait(timeout=OPENER_WAIT)
        except subprocess.TimeoutExpired:
            status = 0  # still running: it is showing something
        if status != 0:
            return None, (f"{name} could not open it (status {status}: is Obsidian installed and registered for "
                          f"obsidian:// links?); open this URL yourself: {url}")
        return argv, "ran: " + " ".join(shlex.quote(a) for a in [name, *argv[1:]])

    def push_reload(self) -> ReloadResult:
        """`POST /reload-vault` once (never raises for network trouble: see `ReloadResult`)."""
        from vaulttools.reload_client import reload_vault

        if not self.api:
            raise BackendError("no API configured: start the TUI with --api URL")
        return reload_vault(self.api, self.token, timeout=10.0)

    def check_api(self) -> tuple[bool, str]:
        """(answers, one short line) from `GET /health`."""
        import httpx

        if not self.api:
            return False, "not configured"
        url = self.api.rstrip("/")
        if url.endswith("/reload-vault"):
            url = url[: -len("/reload-vault")]
        try:
            with httpx.Client(timeout=API_TIMEOUT, trust_env=False) as client:
                response = client.get(url + "/health")
        except httpx.HTTPError as exc:
            return False, "down" if isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout)) else f"down ({type(exc).__name__})"
        if response.is_success:
            return True, "up"
        return False, f"HTTP {response.status_code}"
