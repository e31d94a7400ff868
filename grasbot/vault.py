"""Loading a vault folder into notes, resolving every link, and keeping both up to date one file at a time.

The vault keeps, besides the notes, a reverse index from link keys (the normalised file name a link
asks for, see `grasbot.links.link_key`) to the notes whose links use that key. Updating or removing one
file then re-resolves only the notes that could be affected by it, never the whole vault. That index and
the backlinks are built in one pass over the stored resolutions (`Vault._build_reverse`) when first
needed: a one-shot command (lint, ask) never needs them, and a long-running one (the watcher, the TUI)
calls `Vault.prepare_updates` once after loading, so that its first update costs what any other does.
"""

from __future__ import annotations

import errno
import gc
import os
import stat
import threading
import weakref
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from functools import partial
from itertools import chain
from pathlib import Path, PurePosixPath

from grasbot.links import AnchorTable, Resolver, cached_link_key, cut_links, link_key, scan_body, text_link_targets
from grasbot.markdown.reader import MarkdownReader
from grasbot.markdown.frontmatter import clear_caches
from grasbot.model import (
    Link,
    LinkKind,
    LinkStatus,
    Note,
    PrivacyPolicy,
    Problem,
    Resolution,
    Span,
    entry_link,
    visible_to_visitors,
)
from grasbot.readers import DEFAULT_READERS, Reader, Readers
from grasbot.text import clear_name_keys, name_key, name_key_fast

#: Paths (vault-relative, POSIX) or path parts that are never notes. Hidden folders (name starting with
#: ".") are always skipped. Matching is on a path part (folder or file name), case-insensitive.
DEFAULT_EXCLUDE: tuple[str, ...] = (".obsidian", ".trash", "README.md", "TAXONOMIE.md", "templates")

__all__ = ["DEFAULT_EXCLUDE", "PRIVACY_FILE", "LinkChange", "Vault", "read_privacy"]

#: The vault's own configuration file, whose `[privacy]` table names private folders and tags (the same
#: file holds `[lint]`, see docs/rules.md); read by the vault so that every tool that loads it agrees.
PRIVACY_FILE = "vaulttools.toml"


def read_privacy(root: str | Path) -> tuple[PrivacyPolicy, Problem | None]:
    """The `[privacy]` table of `root/vaulttools.toml` (none when the file or the table is absent):

        [privacy]
        private-folders = ["journal", "perso/famille"]
        private-tags = ["private"]

    A file that cannot be read, or a table of the wrong shape, hides every note (fail closed: which
    notes it meant to hide is unknown) and comes with a problem naming the file and what is wrong.
    """
    import tomllib

    path = Path(root) / PRIVACY_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return PrivacyPolicy(), None
    except OSError as exc:
        return PrivacyPolicy(everything=True), Problem(
            PRIVACY_FILE, 1, 1, f"not readable ({exc.strerror or exc}): every note is hidden until it is", "privacy-config"
        )
    if b"privacy" not in raw:
        return PrivacyPolicy(), None  # (a `[lint]`-only file: the lint configuration reports its own errors)
    try:
        table = tomllib.loads(raw.decode("utf-8")).get("privacy")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        return PrivacyPolicy(everything=True), Problem(
            PRIVACY_FILE, 1, 1, f"invalid TOML ({exc}): every note is hidden until it is fixed", "privacy-config"
        )
    if table is None:
        return PrivacyPolicy(), None
    lists: dict[str, tuple[str, ...]] = {}
    unknown = sorted(set(table) - {"private-folders", "private-tags"}) if isinstance(table, dict) else []
    for key in ("private-folders", "private-tags"):
        value = table.get(key, []) if isinstance(table, dict) else None
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            return PrivacyPolicy(everything=True), Problem(
                PRIVACY_FILE, 1, 1, f"[privacy] {key} must be a list of names (e.g. [\"journal\"]): every note "
                "is hidden until it is fixed", "privacy-config",
            )
        lists[key] = tuple(v.strip() for v in value)
    if unknown:
        return PrivacyPolicy(everything=True), Problem(
            PRIVACY_FILE, 1, 1, f"[privacy] has unknown keys {', '.join(unknown)} (known: private-folders, "
            "private-tags): every note is hidden until it is fixed", "privacy-config",
        )
    return PrivacyPolicy(lists["private-folders"], lists["private-tags"]), None

# Prefix of reverse-index keys that record "this broken link's text may equal an alias".
_ALIAS = "\0"
_ONLY_STR = {str}


@dataclass(slots=True)
class LinkChange:
    """What `Vault.update_file`/`Vault.remove_file` changed: the notes re-read and the notes whose link
    resolutions changed because of them (a deleted note breaks links elsewhere; a created one repairs them)."""

    changed: set[str] = field(default_factory=set)  # notes (re)read or removed
    relinked: set[str] = field(default_factory=set)  # other notes whose resolutions changed


_OK = LinkStatus.OK
_new = tuple.__new__
# O_NONBLOCK: a FIFO that appeared under a note's name must not block the scan forever
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


def _read_all(fd: int, size: int) -> bytes:
    """The whole file behind `fd`, whose size was `size` when it was opened: one `read` call in the
    usual case (no file object, no buffer), more if the file grew meanwhile."""
    raw = os.read(fd, size + 1)  # one byte more: a file that grew shows it at once
    if len(raw) <= size:
        return raw  # (shorter: the file shrank meanwhile, and this is all of it)
    chunks = [raw]
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _materialise(note: Note, compact: list[str | Resolution]) -> list[Resolution]:
    """Resolutions from the stored form: a str stands for an OK resolution to that path (a Resolution is
    stored, with its link, for any other status)."""
    ok = _OK
    new = _new
    flat = note._link_entries
    if flat is None:
        return [
            new(Resolution, (link, ok, r, (), None)) if r.__class__ is str else r  # type: ignore[misc]
            for link, r in zip(note.links, compact)
        ]
    # straight from the note's link entries (see Note.links): no intermediate list of links
    it = iter(flat)
    entries = zip(it, it, it, it, it, it, it, it)
    return [
        new(Resolution, (
            new(Link, (raw, target, anchor, display, kind, new(Span, (line, col, line, col + len(raw))), field))
            if raw is not None else entry_link(raw, target, anchor, display, kind, line, col, field),
            ok, r, (), None,
        )) if r.__class__ is str else r  # type: ignore[misc]
        for (raw, target, anchor, display, kind, line, col, field), r in zip(entries, compact)
    ]


class _Memo(dict):  # type: ignore[type-arg]
    """A dict that computes a missing entry with `fill` and keeps it: `map(memo.__getitem__, keys)` then
    runs at C speed for every key already seen."""

    __slots__ = ("fill",)

    def __init__(self, fill: Callable[[str], object]) -> None:
        super().__init__()
        self.fill = fill

    def __missing__(self, key: str) -> object:
        value = self[key] = self.fill(key)
        return value


def _link_key_or_none(target: str) -> str | None:
    """`link_key(target)`, None for a same-note link (empty target), which has no key; without filling
    `link_key`'s caches (the caller keeps one answer per distinct target)."""
    if not target:
        return None
    key = name_key_fast(target[target.rfind("/") + 1 :])
    return key[:-3] if key.endswith(".md") else key


def _link_at(flat: tuple[object, ...], index: int) -> Link:
    """Link number `index` of a note's flat link entries (see `grasbot.model.links_from_flat`), built alone."""
    return entry_link(*flat[index * 8 : index * 8 + 8])  # type: ignore[arg-type]


def _index_add(index: dict[str, set[str] | tuple[str, ...]], key: str, path: str) -> None:
    users = index.get(key)
    if users is None:
        index[key] = {path}
    elif users.__class__ is tuple:
        if path not in users:
            index[key] = {*users, path}
    else:
        users.add(path)  # type: ignore[union-attr]


def _index_discard(index: dict[str, set[str] | tuple[str, ...]], key: str, path: str) -> None:
    users = index.get(key)
    if users is None or path not in users:
        return
    if users.__class__ is tuple:
        users = index[key] = set(users)
    users.discard(path)  # type: ignore[union-attr]
    if not users:
        del index[key]


def _aliases_of(notes: list[Note]) -> Iterator[tuple[str, list[str]]]:
    """(path, aliases) of the notes that have aliases, in the order given (a load's: by path)."""
    for note in notes:
        aliases = note.aliases
        if aliases:
            yield note.path, aliases


class Vault:
    """A loaded vault: notes by path, attachment files, link resolutions and the link graph.

    Iteration order everywhere is sorted by path, so results never depend on file-system order.
    """

    root: Path
    notes: dict[str, Note]  # vault-relative path -> note, sorted by path
    files: set[str]  # every non-note file (attachments), vault-relative
    problems: list[Problem]  # problems that belong to no note (symlink loop, unreadable folder, ...)

    def __init__(
        self,
        root: Path,
        exclude: tuple[str, ...] = DEFAULT_EXCLUDE,
        readers: Readers = DEFAULT_READERS,
        privacy: PrivacyPolicy | None = None,
    ) -> None:
        self.root = root
        self.exclude = tuple(exclude)
        # (the real path: symbolic links are followed only to targets under it)
        self._real_root = os.path.realpath(root)
        #: which files are notes and how each is read (grasbot.readers); every other file is an attachment
        self.readers = readers
        # names (no "/") match any path part; entries with "/" match a vault-relative path prefix
        self._exclude_names = frozenset(name_key(e.strip("/")) for e in exclude if "/" not in e.strip("/"))
        self._exclude_paths = tuple(name_key(e.strip("/")) for e in exclude if "/" in e.strip("/"))
        self.notes = {}
        self.files = set()
        self.problems = []
        self._resolver = Resolver()
        # per note, one entry per link: the target path of an OK link, else its Resolution (see
        # Resolver.resolve_compact); Resolution objects are built when asked for
        self._res: dict[str, list[str | Resolution]] = {}
        self._out: dict[str, tuple[str, ...]] = {}
        # The two sets-valued indexes below hold tuples after a load (a tuple is a quarter of a set's size;
        # most hold one to a few paths) and become sets when an update changes them (see _index_add).
        self._in: dict[str, set[str] | tuple[str, ...]] = {}
        self._dependents: dict[str, set[str] | tuple[str, ...]] = {}  # link key -> notes whose links use it
        self._src_keys: dict[str, tuple[str, ...]] = {}  # note -> the keys it is registered under
        self._reverse_ready = True  # False after a load until `prepare_updates` builds the three above
        # (the TUI may ask for backlinks on its UI thread while its first lint prepares the same vault)
        self._prepare_lock = threading.Lock()
        self._anchors: dict[str, AnchorTable] = {}
        self._ids: dict[str, str] = {}  # id -> path
        # (these two hold tuples after a load, sets once an update changed them: see _index_add)
        self._slug_groups: dict[str, set[str] | tuple[str, ...]] = {}
        self._stem_groups: dict[str, set[str] | tuple[str, ...]] = {}
        self._hidden: frozenset[str] | None = None  # `hidden_paths`, forgotten at each update
        self._types: dict[str, str] | None = None  # `note_types`, forgotten at each update
        # (`hidden_paths`, the `Resolver.names_of` them) for `visitor_text`: recomputed when they change
        self._hidden_names: tuple[frozenset[str], frozenset[str]] | None = None
        #: What the configuration adds to the notes' own fields: private folders and tags (`read_privacy`,
        #: plus `privacy` from the caller, such as the service's settings).
        own, problem = read_privacy(root)
        self.privacy: PrivacyPolicy = own.merged(privacy)
        if problem is not None:
            self.problems.append(problem)

    # -- loading ---------------------------------------------------------------------------------------
    @classmethod
    def load(
        cls,
        root: str | Path,
        exclude: tuple[str, ...] = DEFAULT_EXCLUDE,
        readers: Readers = DEFAULT_READERS,
        privacy: PrivacyPolicy | None = None,
    ) -> Vault:
        """Read every note under `root` (the files one of `readers` claims; the others are attachments).
        Never raises on a bad file; raises FileNotFoundError / NotADirectoryError with a clear message
        when `root` itself is missing or not a folder. `privacy` adds private folders and tags to those of
        the vault's own `vaulttools.toml` (`read_privacy`)."""
        root = Path(root).expanduser()
        if not root.exists():
            raise FileNotFoundError(f"vault folder not found: {root}")
        if not root.is_dir():
            raise NotADirectoryError(f"vault path is not a folder: {root}")
        # Loading allocates millions of small objects and frees none: the cyclic GC would rescan the
        # growing heap again and again for nothing (benchmarks/README.md, "Figures behind the code").
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            vault = cls._load(root.resolve(), exclude, readers, privacy)
        finally:
            if gc_was_enabled:
                gc.enable()
        # The notes live as long as the vault and hold no garbage cycles: move them out of the collector's
        # sight, or every later full collection (triggered by any allocation burst, such as an update) rescans
        # millions of objects and one update takes hundreds of times longer (benchmarks/README.md, "Figures
        # behind the code").
        # gc.freeze() also freezes whatever garbage cycles exist at this moment (and the vault's own, if any):
        # frozen objects are never collected. So that a long-running process that reloads the vault often
        # does not leak, everything is unfrozen again when this vault is dropped; the next full
        # collection then reclaims what was frozen with it (and scans the live vault once).
        # (Not at interpreter exit: unfreezing then would make the final collections scan the whole vault,
        # close to a second of CPU on 10k notes, for memory the process is giving back anyway.)
        gc.freeze()
        weakref.finalize(vault, gc.unfreeze).atexit = False
        return vault

    @classmethod
    def _load(
        cls, root: Path, exclude: tuple[str, ...], readers: Readers, privacy: PrivacyPolicy | None = None
    ) -> Vault:
        vault = cls(root, exclude, readers, privacy)
        notes: list[Note] = []
        reader_for = readers.reader_for
        for rel, full in vault._walk():
            reader = reader_for(rel)
            if reader is not None:
                note = vault._read(rel, full, reader)
                if note is not None:
                    notes.append(note)
            else:
                vault.files.add(rel)
        clear_caches()  # see its docstring: lowers the peak memory of the load
        notes.sort(key=lambda n: n.path)
        vault.notes = {n.path: n for n in notes}
        resolver = vault._resolver
        resolver.add_many([(path, False) for path in vault.files] + [(note.path, True) for note in notes])
        # The whole alias index is for updates: a load names its broken links' likely targets from a
        # small one (`_name_likely_targets`); `prepare_updates` or the first look-up builds the whole.
        resolver.defer_aliases(partial(_aliases_of, notes))
        vault._build_groups()
        vault._assign_ids(vault.notes.keys())
        # (only updates need the id groups again: `prepare_updates` builds them anew, some MiB on 10k notes
        # that a one-shot command does not keep)
        vault._slug_groups, vault._stem_groups = {}, {}
        vault._name_likely_targets(vault._resolve_all(notes), notes)
        # The look-up caches filled by the resolution are returned before the last allocations of the load
        # (as clear_caches above): they are rebuilt on demand, a few entries per update.
        vault.forget_lookups()
        # The backlinks and the reverse index follow from what _resolve_all stored: built when first needed
        # (`prepare_updates`): a tenth of a load's time and some MiB that a one-shot command never uses
        # (benchmarks/README.md, "Figures behind the code").
        vault._reverse_ready = False
        return vault

    def forget_lookups(self) -> None:
        """Return the memory of what resolving many links filled and nothing needs to keep: the resolver's
        look-ups, the name and string sharing caches, the anchor tables (rebuilt from a note's headings when
        an update resolves a link into it, see `_anchor_table`). After a load, and after a search index
        build has read every note through `visitor_text`: they are rebuilt on demand, a few entries per update."""
        self._resolver.forget_lookups()
        clear_name_keys()
        clear_caches()
        self._anchors = {}

    def _excluded(self, rel_key: str, name_lower: str) -> bool:
        if name_lower in self._exclude_names:
            return True
        for prefix in self._exclude_paths:
            if rel_key == prefix or rel_key.startswith(prefix + "/"):
                return True
        return False

    def note_files(self) -> list[str]:
        """The vault paths of the files this vault's readers would read, sorted, from a folder walk alone
        (no file is opened): what a screen can show before the notes are read. Same exclusions as `load`."""
        reader_for = self.readers.reader_for
        return sorted(rel for rel, _ in self._walk() if reader_for(rel) is not None)

    def _walk(self, start: str = "") -> Iterator[tuple[str, str]]:
        """(vault-relative path, absolute path) of every non-excluded file, following folder symlinks once."""
        root = str(self.root)
        top = os.path.join(root, start) if start else root
        try:
            st = os.stat(top)
            seen = {(st.st_dev, st.st_ino)}
        except OSError:
            seen = set()
        stack = [(start, top)]
        exclude_names = self._exclude_names
        exclude_paths = self._exclude_paths
        while stack:
            rel_dir, abs_dir = stack.pop()
            try:
                with os.scandir(abs_dir) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError as exc:
                self.problems.append(Problem(rel_dir or ".", 1, 1, f"folder not readable: {exc.strerror or exc}", "unreadable"))
                continue
            subdirs = []
            for entry in entries:
                name = entry.name
                if name.startswith("."):
                    continue
                rel = f"{rel_dir}/{name}" if rel_dir else name
                name_lower = name_key_fast(name)
                if name_lower in exclude_names or (exclude_paths and self._excluded(name_key(rel), name_lower)):
                    continue
                if entry.is_symlink() and not self._inside(entry.path):
                    self._outside_problem(rel)
                    continue
                try:
                    is_dir = entry.is_dir()  # follows symlinks
                except OSError:
                    is_dir = False
                if is_dir:
                    try:
                        st = entry.stat()
                    except OSError as exc:
                        self.problems.append(Problem(rel, 1, 1, f"folder not readable: {exc.strerror or exc}", "unreadable"))
                        continue
                    ident = (st.st_dev, st.st_ino)
                    if ident in seen:
                        self.problems.append(
                            Problem(rel, 1, 1, "symbolic link loop (folder already visited): skipped", "unreadable")
                        )
                        continue
                    seen.add(ident)
                    subdirs.append((rel, entry.path))
                    continue
                try:
                    regular = entry.is_file()  # follows symlinks; False for FIFOs, sockets, devices
                except OSError:
                    regular = False
                if not regular:
                    self._link_problem(rel, entry.path)
                    continue
                yield rel, entry.path
            stack.extend(reversed(subdirs))

    def _inside(self, full: str) -> bool:
        """Whether `full`, symbolic links followed, is the vault's root or under it."""
        real = os.path.realpath(full)
        root = self._real_root
        return real == root or real.startswith(root.rstrip(os.sep) + os.sep)

    def _outside_problem(self, rel: str) -> None:
        # (the target is not named: it is outside the vault, and may be what the link hides)
        self.problems.append(Problem(
            rel, 1, 1, "symbolic link to a target outside the vault (symlink-outside-vault): skipped; a vault "
            "reads only its own files: move the target into the vault or remove the link", "symlink-outside-vault",
        ))

    def _symlink_verdict(self, rel: str) -> str | None:
        """For an update of `rel`: "outside" when a symbolic link on its path leads outside the vault, "loop"
        when a folder link on it leads back to one of its own parent folders (the vault root included), as
        the load's walk decides for the same path; None when it may be read."""
        parts = rel.split("/")
        root = self._real_root
        path = str(self.root)
        for i, part in enumerate(parts):
            parent = path
            path = os.path.join(path, part)
            if not os.path.islink(path):
                continue
            if not self._inside(path):
                return "outside"
            real = os.path.realpath(path)
            real_parent = os.path.realpath(parent)
            if i < len(parts) - 1 or os.path.isdir(path):
                if real == root or real_parent == real or real_parent.startswith(real.rstrip(os.sep) + os.sep):
                    return "loop"
        return None

    def _link_problem(self, rel: str, full: str) -> None:
        try:
            os.stat(full)
            message = "not a regular file: skipped"
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                message = "symbolic link loop: skipped"
            elif exc.errno == errno.ENOENT and os.path.islink(full):
                message = "broken symbolic link (its target does not exist): skipped"
            elif exc.errno == errno.ENOENT:
                message = "file vanished while the vault was read: skipped"
            else:
                message = f"not readable: {exc.strerror or exc}"
        self.problems.append(Problem(rel, 1, 1, message, "unreadable"))

    def _read(self, rel: str, full: str, reader: Reader) -> Note | None:
        """Read one note file with its reader; a file that cannot be read becomes a problem (and no note) or a note
        carrying the problem, never an exception."""
        try:
            # O_NONBLOCK: a FIFO that appeared under a note's name must not block the scan forever
            fd = os.open(full, _OPEN_FLAGS)
            try:
                st = os.fstat(fd)
                if not stat.S_ISREG(st.st_mode):
                    self.problems.append(Problem(rel, 1, 1, "not a regular file: skipped", "unreadable"))
                    return None
                raw = _read_all(fd, st.st_size)
            finally:
                os.close(fd)
        except FileNotFoundError:
            self.problems.append(Problem(rel, 1, 1, "file vanished while the vault was read: skipped", "unreadable"))
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                self.problems.append(Problem(rel, 1, 1, "symbolic link loop: skipped", "unreadable"))
                return None
            # it exists (Obsidian lists it, links to it resolve) but we cannot read it
            note = reader.read(rel, b"")
            note.problems[:] = [Problem(rel, 1, 1, f"file not readable: {exc.strerror or exc}", "unreadable")]
            return note
        return self.with_privacy(reader.read(rel, raw))

    def with_privacy(self, note: Note) -> Note:
        """`note`, withheld from visitors when the vault's `PrivacyPolicy` says so (see `Note.withheld`)."""
        if self.privacy:
            note.withheld = self.privacy.withheld(note)
        return note

    # -- ids -------------------------------------------------------------------------------------------
    @staticmethod
    def _slug_of(note: Note) -> str | None:
        slug = note.slug
        if slug is None:
            return None
        slug = slug.strip()
        return slug or None

    def _build_groups(self) -> None:
        """The id groups (`_slug_groups`, `_stem_groups`) of every note, from scratch: what `_group_add`
        of each note in path order gives, as tuples (a set costs four times more; an update turns the
        ones it changes into sets, see _index_add)."""
        slug_groups: dict[str, list[str]] = {}
        stem_groups: dict[str, list[str]] = {}
        for path, note in self.notes.items():  # (in path order)
            slug = self._slug_of(note)
            if slug:
                slug_groups.setdefault(slug, []).append(path)
            stem_groups.setdefault(name_key(note.stem), []).append(path)
        self._slug_groups = {key: tuple(members) for key, members in slug_groups.items()}  # type: ignore[misc]
        self._stem_groups = {key: tuple(members) for key, members in stem_groups.items()}  # type: ignore[misc]

    def _group_add(self, note: Note) -> None:
        slug = self._slug_of(note)
        if slug:
            _index_add(self._slug_groups, slug, note.path)  # type: ignore[arg-type]
        _index_add(self._stem_groups, name_key(note.stem), note.path)  # type: ignore[arg-type]

    def _group_remove(self, note: Note) -> None:
        slug = self._slug_of(note)
        if slug:
            _index_discard(self._slug_groups, slug, note.path)  # type: ignore[arg-type]
        _index_discard(self._stem_groups, name_key(note.stem), note.path)  # type: ignore[arg-type]

    def _id_for(self, note: Note) -> str:
        """The note's slug when no other note claims it, else its file name when no other note claims
        that, else its path without `.md`.

        Only notes a visitor may see claim (`visible_to_visitors`): a hidden note takes its path, and does
        not count when a public note's id is chosen, so that it can neither change a public note's id (its
        sources' URLs, the links the prompt keeps) nor show by such a change that it exists."""
        path = note.path
        if not visible_to_visitors(note):
            return path[:-3] if path.lower().endswith(".md") else path
        slug = self._slug_of(note)
        if slug and self._claimed_by(self._slug_groups.get(slug, ()), path) == 1:
            return slug
        stem = note.stem
        if self._claimed_by(self._stem_groups.get(name_key(stem), ()), path) == 1:
            owners = self._slug_groups.get(stem, ())
            if not owners or self._claimed_by(owners, path) == (1 if path in owners else 0):
                return stem
        return path[:-3] if path.lower().endswith(".md") else path

    def _claimed_by(self, group: tuple[str, ...] | set[str], path: str) -> int:
        """How many visible notes are in an id group; `path` is a visible note's (the usual group: it alone)."""
        if len(group) == 1 and path in group:
            return 1
        notes = self.notes
        return sum(1 for p in group if p == path or (p in notes and visible_to_visitors(notes[p])))

    def _assign_ids(self, paths: object) -> None:
        ids = self._ids
        for path in sorted(paths):  # type: ignore[call-overload]
            note = self.notes.get(path)
            if note is None:
                continue
            if note.id and ids.get(note.id) == path:
                del ids[note.id]
            new_id = self._id_for(note)
            if new_id in ids and ids[new_id] != path:
                new_id = path  # a slug equal to another note's path: the full path is unique
            note.id = new_id
            ids[new_id] = path

    def _id_neighbours(self, note: Note) -> set[str]:
        """Notes whose id may change when `note` appears, disappears or changes its slug."""
        out = {note.path}
        slug = self._slug_of(note)
        for key in filter(None, (slug,)):
            out.update(self._slug_groups.get(key, ()))
            out.update(self._stem_groups.get(name_key(key), ()))
        out.update(self._stem_groups.get(name_key(note.stem), ()))
        for path in list(out):
            other = self.notes.get(path)
            if other is not None:
                out.update(self._slug_groups.get(other.stem, ()))
        return out

    # -- resolution ------------------------------------------------------------------------------------
    def _anchor_table(self, path: str) -> AnchorTable | None:
        table = self._anchors.get(path)
        if table is None:
            note = self.notes.get(path)
            if note is None:
                return None
            table = AnchorTable(note.headings, note.block_ids)
            self._anchors[path] = table
        return table

    def _resolve_note(self, note: Note) -> list[str | Resolution]:
        return self._resolver.resolve_compact(note.links, note.path, self._anchor_table)

    def _resolve_all(self, notes: list[Note]) -> list[str]:
        """Resolve and register every note of a fresh load: `_set_resolutions(note, _resolve_note(note))`
        for each, with the same results, organised for a whole vault (some hundred thousand links).

        Most links are a name or path that finds one file from anywhere, with no anchor: for those the
        answer is one look-up in a table filled once per distinct target (`_Memo`), taken inside a list
        comprehension; every other link goes through `_resolve_odd`, which is `Resolver.resolve_compact`'s
        per-link logic. Only the outgoing edges are recorded here: `_build_reverse` derives the rest.
        Broken links are left without their likely target: returns the notes that have one, for
        `_name_likely_targets`.
        """
        resolver = self._resolver
        # target -> the one file it finds from anywhere, or "": the resolver's own table, which
        # `_learn_unique` fills, made to fill itself on a miss
        unique = resolver._unique = _Memo(resolver._learn_unique)  # type: ignore[assignment]
        found = unique.__getitem__
        markdown = LinkKind.MARKDOWN
        odd_one = self._resolve_odd
        res_store = self._res
        out_store = self._out
        broken = LinkStatus.BROKEN
        with_broken: list[str] = []
        for note in notes:
            path = note.path
            flat = note._link_entries
            odd: list[Resolution] = []
            if flat is None:  # a note that keeps Link objects (see grasbot.markdown.reader.read_note): the general path
                compact = resolver.resolve_compact(note.links, path, self._anchor_table, likely=False)
                odd = [r for r in compact if r.__class__ is not str]  # type: ignore[misc]
            elif not flat:
                res_store[path] = []
                continue
            else:
                compact = [
                    p
                    if kind is not markdown and anchor is None and (p := found(target))
                    else odd_one(flat, i, path, odd)
                    for i, (target, anchor, kind) in enumerate(zip(flat[1::8], flat[2::8], flat[4::8]))
                ]
            res_store[path] = compact
            if odd:
                if any(r.status is broken for r in odd):
                    with_broken.append(path)
                out = {r for r in compact if r.__class__ is str}
                for res in odd:
                    if res.target_path is not None:
                        out.add(res.target_path)
            else:
                out = set(compact)  # type: ignore[arg-type]
            out.discard(path)
            if out:
                out_store[path] = tuple(sorted(out))
        return with_broken

    def _name_likely_targets(self, paths: list[str], notes: list[Note]) -> None:
        """Give the broken links of the notes at `paths` their likely target (`Resolver.likely_owner`),
        looked up in an alias index of only the keys those links ask for (see `Resolver.defer_aliases`)."""
        broken = LinkStatus.BROKEN
        found: list[tuple[str, list[str | Resolution], int, Resolution]] = []
        for path in paths:
            compact = self._res[path]
            found += [
                (path, compact, i, r)  # type: ignore[misc]
                for i, r in enumerate(compact)
                if r.__class__ is not str and r.status is broken and r.link.target  # type: ignore[union-attr]
            ]
        if not found:
            return
        wanted = {name_key(r.link.target) for _, _, _, r in found}  # type: ignore[union-attr]
        owners: dict[str, list[str]] = {}
        for path, aliases in _aliases_of(notes):
            for alias in aliases:
                key = name_key_fast(alias.strip())
                if key in wanted:
                    held = owners.setdefault(key, [])
                    if not held or held[-1] != path:  # (notes come in path order: the list stays sorted)
                        held.append(path)
        likely = self._resolver.likely_owner
        for path, compact, i, r in found:
            alias_of = likely(r.link.target, path, owners)  # type: ignore[union-attr]
            if alias_of is not None:
                compact[i] = r._replace(alias_of=alias_of)  # type: ignore[union-attr]

    def _resolve_odd(self, flat: tuple[object, ...], index: int, path: str, odd: list[Resolution]) -> str | Resolution:
        """Link number `index` of a note's entries (see `Note.links`) when it is not the common case of
        `_resolve_all`, resolved as `Resolver.resolve_compact` does: the target path for an OK link, else
        the Resolution (also appended to `odd`). The Link itself is built only for a Resolution."""
        resolver = self._resolver
        at = index * 8
        target: str = flat[at + 1]  # type: ignore[assignment]
        found: str | None = None
        if not target:  # `[[#Heading]]`: the note itself, whatever the link's kind
            found = path
        elif flat[at + 4] is not LinkKind.MARKDOWN:
            found = resolver._unique.get(target)
            if found is None:
                found = resolver._learn_unique(target)
        if found:
            anchor: str | None = flat[at + 2]  # type: ignore[assignment]
            if anchor and resolver.is_note[found]:
                table = self._anchor_table(found)
                if table is not None and not table.has(anchor):
                    res = _new(Resolution, (_link_at(flat, index), LinkStatus.BROKEN_ANCHOR, found, (), None))
                    odd.append(res)
                    return res
            return found
        res = resolver.resolve(_link_at(flat, index), path, self._anchor_table, likely=False)
        if res.status is _OK and not res.candidates:
            return res.target_path  # type: ignore[return-value]
        odd.append(res)
        return res

    def prepare_updates(self) -> None:
        """Build what only updates and backlinks need, if a load left it to be built: the backlinks, the
        reverse index, the whole alias index and the id groups. `incoming`, `update_file` and `remove_file` call it, so
        nothing depends on it being called; a long-running consumer calls it once after `load` so that its
        first update is as quick as the next (the figures: benchmarks/README.md, load)."""
        if self._reverse_ready:
            return
        with self._prepare_lock:
            if not self._reverse_ready:
                self._resolver.owners()  # the whole alias index, deferred by the load
                self._build_groups()  # dropped by the load once the ids were given
                self._build_reverse()
                self._reverse_ready = True

    def _build_reverse(self) -> None:
        """Build the backlinks (`_in`) and the reverse index (`_dependents`, `_src_keys`) of a fresh load
        from the stored resolutions: the same entries `_set_resolutions` would have registered note by
        note, in one pass over the vault instead of one look-up per link and note."""
        incoming: dict[str, list[str]] = {}
        for path, targets in self._out.items():  # in path order, as the notes were resolved
            for target in targets:
                users = incoming.get(target)
                if users is None:
                    incoming[target] = [path]
                else:
                    users.append(path)
        # (tuples: a quarter of a set's size; an update turns the ones it changes into sets, see _index_add)
        self._in = {target: tuple(users) for target, users in incoming.items()}
        # (a key equal to a file name already indexed by the resolver is that very string: one copy each)
        names = {name: name for name in self._resolver.by_name}

        def shared_key(target: str) -> str | None:
            key = _link_key_or_none(target)
            return names.get(key, key) if key is not None else None

        key_of = _Memo(shared_key)
        deps: dict[str, list[str]] = {}
        src_keys = self._src_keys
        broken = LinkStatus.BROKEN
        for path, note in self.notes.items():
            targets = note.link_targets()
            if not targets:
                continue
            keys = set(map(key_of.__getitem__, targets))
            keys.discard(None)  # type: ignore[arg-type]
            compact = self._res.get(path, ())
            if set(map(type, compact)) != _ONLY_STR:  # some link is not OK: maybe broken, with an alias key
                for target, res in zip(targets, compact):
                    if res.__class__ is not str and res.status is broken and target:  # type: ignore[union-attr]
                        keys.add(_ALIAS + name_key(target.strip()))
            if keys:
                src_keys[path] = tuple(keys)
                for key in keys:
                    users = deps.get(key)
                    if users is None:
                        deps[key] = [path]
                    else:
                        users.append(path)
        self._dependents = {key: tuple(users) for key, users in deps.items()}

    def _set_resolutions(self, note: Note, resolutions: list[str | Resolution]) -> None:
        """Record a note's resolutions (compact form) and bring the graph and the reverse index in line."""
        path = note.path
        self._res[path] = resolutions
        out: set[str] = set()
        keys: set[str] = set()
        key_cache = cached_link_key
        broken = LinkStatus.BROKEN
        for link, res in zip(note.links, resolutions):
            target = link[1]
            if res.__class__ is str:
                tp: str | None = res  # type: ignore[assignment]
            else:
                tp = res.target_path  # type: ignore[union-attr]
                if target and res.status is broken:  # type: ignore[union-attr]
                    keys.add(_ALIAS + name_key(target.strip()))
            if target:
                key = key_cache(target)
                keys.add(key if key is not None else link_key(target))
            if tp is not None and tp != path:
                out.add(tp)
        self._update_indexes(path, out, keys)

    def _update_indexes(self, path: str, out: set[str], keys: set[str]) -> None:
        # graph edges (stored as sorted tuples: ten times smaller than sets, and already in answer order)
        old_out = set(self._out.get(path, ()))
        if old_out != out:
            for gone in old_out - out:
                _index_discard(self._in, gone, path)
            for new in out - old_out:
                _index_add(self._in, new, path)
            if out:
                self._out[path] = tuple(sorted(out))
            else:
                self._out.pop(path, None)
        # reverse index
        old_keys = set(self._src_keys.get(path, ()))
        if old_keys != keys:
            deps = self._dependents
            for gone in old_keys - keys:
                _index_discard(deps, gone, path)
            for new in keys - old_keys:
                _index_add(deps, new, path)
            if keys:
                self._src_keys[path] = tuple(keys)
            else:
                self._src_keys.pop(path, None)

    def _forget(self, path: str) -> None:
        """Drop a removed note's outgoing edges and reverse-index entries."""
        self._update_indexes(path, set(), set())
        self._res.pop(path, None)
        self._src_keys.pop(path, None)

    def _relink(self, keys: set[str], skip: str) -> set[str]:
        """Re-resolve every note registered under one of `keys`; return those whose resolutions changed."""
        sources: set[str] = set()
        for key in keys:
            users = self._dependents.get(key)
            if users:
                sources.update(users)
        sources.discard(skip)
        changed = set()
        for source in sorted(sources):
            note = self.notes.get(source)
            if note is None:
                continue
            new = self._resolve_note(note)
            if new != self._res.get(source):
                self._set_resolutions(note, new)
                changed.add(source)
        return changed

    # -- queries ---------------------------------------------------------------------------------------
    def resolutions(self, path: str) -> list[Resolution]:
        """The resolution of every link of the note at `path`, in the order the links appear."""
        note = self.notes.get(path)
        compact = self._res.get(path)
        if note is None or not compact:
            return []
        return _materialise(note, compact)

    def link_problems(self, path: str, into: Collection[str] = ()) -> list[Resolution]:
        """The resolutions of the note's links that are not plain OK (broken, broken anchor, ambiguous), and of
        its OK links whose target is in `into`, in link order: what a linter reports on, without building a
        Resolution for each of the other links (the usual note has only plain OK links)."""
        compact = self._res.get(path)
        if not compact:
            return []
        if into:
            picked = [i for i, r in enumerate(compact) if r.__class__ is not str or r in into]
        else:
            picked = [i for i, r in enumerate(compact) if r.__class__ is not str]
        if not picked:
            return []
        note = self.notes[path]
        flat = note._link_entries
        links = note.links if flat is None else None
        out: list[Resolution] = []
        for i in picked:
            r = compact[i]
            if r.__class__ is str:  # an OK link into `into`: built like `_materialise` does
                link = links[i] if links is not None else _link_at(flat, i)  # type: ignore[arg-type]
                r = _new(Resolution, (link, _OK, r, (), None))
            out.append(r)  # type: ignore[arg-type]
        return out

    # -- what visitors may read -----------------------------------------------------------------------
    def hidden_paths(self) -> frozenset[str]:
        """The notes a visitor may not see (`visible_to_visitors` false), computed once per state of the vault."""
        hidden = self._hidden
        if hidden is None:
            hidden = self._hidden = frozenset(p for p, n in self.notes.items() if not visible_to_visitors(n))
        return hidden

    def note_types(self) -> dict[str, str]:
        """Each note's `type` field ("" when it has none), computed once per state of the vault (as
        `hidden_paths`, and kept with it in the persistent snapshot: the service counts its notes by type
        at each start without decoding every note)."""
        types = self._types
        if types is None:
            types = self._types = {p: n.type or "" for p, n in self.notes.items()}
        return types

    def visitor_text(self, text: str, source: str) -> str:
        """`text` (a body, a title, as written in the note at `source`) without the links a visitor may not
        follow: every link that *resolves* to a hidden note is removed with its text (a public note named
        like a private one keeps its links), whatever its form (see `grasbot.links.scan_body`). Then a plain
        pass removes the `[[name]]` and `[x](name)` written as text inside code that would resolve to one.
        What the prompt quotes and what the search index reads, so that neither repeats a hidden note's name."""
        hidden = self.hidden_paths()
        if not hidden or "[" not in text and "<" not in text:
            return text
        if source not in hidden and not self._may_cut(text, source, hidden):
            return text
        return cut_links(text, lambda link: self._link_target(link, source) in hidden)

    def _may_cut(self, text: str, source: str, hidden: frozenset[str]) -> bool:
        """Whether `cut_links` could take anything out of `text`, written in `source` (not hidden): False
        only when it surely returns `text` as it is, told from the targets of the links it would look at
        (the parser's, then its plain pass's) by `Resolver.may_find`, without resolving any. An empty
        target is the linking note itself, visible here. The parser's links of the note's own body are
        those the vault read (a Markdown note's links are its body's, the frontmatter's besides)."""
        names = self._hidden_names
        if names is None or names[0] is not hidden:
            names = self._hidden_names = (hidden, self._resolver.names_of(hidden))
        note = self.notes.get(source)
        if note is not None and type(self.readers.reader_for(source)) is MarkdownReader and text == note.body:
            parsed: Iterable[str] = note.body_link_targets()
        else:
            parsed = [entry[1] for entry in scan_body(text, 1, keep=False)[0]]
        return self._resolver.may_find(filter(None, chain(parsed, text_link_targets(text))), names[1])

    def _link_target(self, link: Link, source: str) -> str | None:
        """Where `link`, written in `source`, resolves (None when broken or external)."""
        return self._resolver.resolve(link, source, lambda _path: None, likely=False).target_path

    def all_resolutions(self) -> Iterator[tuple[str, list[Resolution]]]:
        """(note path, its resolutions) for every note, sorted by path."""
        for path, note in self.notes.items():
            compact = self._res.get(path)
            yield path, _materialise(note, compact) if compact else []

    def outgoing(self, path: str) -> list[str]:
        """Paths of notes/files this note links to (resolved links only), sorted, unique."""
        return list(self._out.get(path, ()))

    def outgoing_paths(self, path: str) -> tuple[str, ...]:
        """`outgoing(path)` as the tuple the vault keeps (no copy: the search index holds one per note)."""
        return self._out.get(path, ())

    def incoming(self, path: str) -> list[str]:
        """Paths of notes that link to this one (backlinks), sorted, unique."""
        self.prepare_updates()
        return sorted(self._in.get(path, ()))

    def note_by_id(self, note_id: str) -> Note | None:
        path = self._ids.get(note_id)
        return self.notes.get(path) if path is not None else None

    def resolve_name(self, target: str, source: str = "") -> str | None:
        """Where `[[target]]` written in `source` leads (nearest match), or None: for callers that hold a
        bare name or slug, such as frontmatter `linked` values."""
        cands, _ = self._resolver.find(target, source, False)
        return cands[0] if cands else None

    def all_problems(self) -> list[Problem]:
        """Every problem, the vault's and the notes', sorted by path then position."""
        out = list(self.problems)
        for note in self.notes.values():
            out.extend(note.problems)
        out.sort(key=lambda p: (p.path, p.line, p.column, p.code))
        return out

    # -- incremental updates ---------------------------------------------------------------------------
    def _relpath(self, path: str | Path) -> str:
        p = Path(path)
        if p.is_absolute():
            try:
                rel = p.relative_to(self.root)
            except ValueError:
                try:
                    rel = p.resolve().relative_to(self.root)
                except (ValueError, OSError):
                    raise ValueError(f"{path} is not inside the vault {self.root}") from None
            return rel.as_posix()
        return PurePosixPath(str(path).replace(os.sep, "/")).as_posix()  # also drops a leading "./"

    def _is_excluded_path(self, rel: str) -> bool:
        parts = rel.split("/")
        for i, part in enumerate(parts):
            if part.startswith(".") or self._excluded(name_key("/".join(parts[: i + 1])), name_key(part)):
                return True
        return False

    def _drop_problems(self, rel: str) -> None:
        """Forget the vault-level problems recorded for `rel` (or under it): it is being read again."""
        if self.problems:
            prefix = rel.rstrip("/") + "/"
            self.problems = [p for p in self.problems if p.path != rel and not p.path.startswith(prefix)]

    def update_file(self, path: str | Path) -> LinkChange:
        """Re-read one file (created or modified), without re-reading the rest of the vault."""
        self.prepare_updates()
        self._hidden = self._types = None
        rel = self._relpath(path)
        full = self.root / rel
        self._drop_problems(rel)
        if self._is_excluded_path(rel):
            return self.remove_file(rel) if (rel in self.notes or rel in self.files) else LinkChange()
        verdict = self._symlink_verdict(rel) if rel else None
        if verdict is not None:  # what a fresh load would skip, an update skips too (watch and lint agree)
            change = self.remove_file(rel) if (rel in self.notes or rel in self.files or self._has_under(rel)) else LinkChange()
            if verdict == "outside":
                self._outside_problem(rel)
            else:
                self.problems.append(Problem(rel, 1, 1, "symbolic link loop (folder already visited): skipped", "unreadable"))
            return change
        if full.is_dir():
            change = LinkChange()
            for sub_rel, _ in self._walk(rel):
                sub = self.update_file(sub_rel)
                change.changed |= sub.changed
                change.relinked |= sub.relinked
            change.relinked -= change.changed
            return change
        if not full.exists() and not full.is_symlink():
            return self.remove_file(rel)
        reader = self.readers.reader_for(rel)
        if reader is None:
            return self._update_attachment(rel)
        note = self._read(rel, str(full), reader)
        if note is None:  # vanished or a link loop: the problem is recorded, the old note is gone
            return self.remove_file(rel)
        return self._replace_note(note)

    def _has_under(self, rel: str) -> bool:
        prefix = rel.rstrip("/") + "/"
        return any(p.startswith(prefix) for p in chain(self.notes, self.files))

    def _update_attachment(self, rel: str) -> LinkChange:
        if rel in self.files:
            return LinkChange()
        self.files.add(rel)
        self._resolver.add(rel, False)
        return LinkChange(changed=set(), relinked=self._relink({link_key(rel)}, rel))

    def _replace_note(self, note: Note) -> LinkChange:
        rel = note.path
        old = self.notes.get(rel)
        resolver = self._resolver
        keys = {link_key(rel)}
        if old is None:
            resolver.add(rel, True)
            last = next(reversed(self.notes), None)
            self.notes[rel] = note
            if last is not None and rel < last:  # keep `notes` sorted by path
                notes = self.notes
                self.notes = {path: notes[path] for path in sorted(notes)}
            anchors_changed = True
        else:
            old_aliases = old.aliases
            resolver.remove_aliases(rel, old_aliases)
            self._group_remove(old)
            old_table = self._anchors.pop(rel, None) or AnchorTable(old.headings, old.block_ids)
            self.notes[rel] = note
            new_table = self._anchor_table(rel)
            anchors_changed = new_table is None or (
                old_table.headings != new_table.headings or old_table.blocks != new_table.blocks
            )
            if set(map(name_key, old_aliases)) != set(map(name_key, note.aliases)):
                keys |= {_ALIAS + name_key(a.strip()) for a in old_aliases}
                keys |= {_ALIAS + name_key(a.strip()) for a in note.aliases}
                anchors_changed = True
            note.id = old.id
        self._anchors.pop(rel, None)
        resolver.add_aliases(rel, note.aliases)
        if old is None:
            keys |= {_ALIAS + name_key(a.strip()) for a in note.aliases}
        self._group_add(note)
        neighbours = self._id_neighbours(note)
        if old is not None:
            neighbours |= self._id_neighbours(old)
        self._assign_ids(neighbours)
        self._set_resolutions(note, self._resolve_note(note))
        relinked = self._relink(keys, rel) if anchors_changed else set()
        return LinkChange(changed={rel}, relinked=relinked)

    def remove_file(self, path: str | Path) -> LinkChange:
        """Forget one file (deleted, or moved out of the vault) or every file under a deleted folder."""
        self.prepare_updates()
        self._hidden = self._types = None
        rel = self._relpath(path)
        self._drop_problems(rel)
        if rel in self.files:
            self.files.discard(rel)
            self._resolver.remove(rel)
            return LinkChange(changed=set(), relinked=self._relink({link_key(rel)}, rel))
        old = self.notes.get(rel)
        if old is None:
            prefix = rel.rstrip("/") + "/"
            inside = [p for p in list(self.notes) + sorted(self.files) if p.startswith(prefix)]
            change = LinkChange()
            for p in inside:
                sub = self.remove_file(p)
                change.changed |= sub.changed
                change.relinked |= sub.relinked
            change.relinked -= change.changed
            return change
        del self.notes[rel]
        self._resolver.remove(rel)
        self._resolver.remove_aliases(rel, old.aliases)
        self._anchors.pop(rel, None)
        self._group_remove(old)
        if self._ids.get(old.id) == rel:
            del self._ids[old.id]
        self._assign_ids(self._id_neighbours(old) - {rel})
        self._forget(rel)
        keys = {link_key(rel)} | {_ALIAS + name_key(a.strip()) for a in old.aliases}
        relinked = self._relink(keys, rel)
        return LinkChange(changed={rel}, relinked=relinked)
