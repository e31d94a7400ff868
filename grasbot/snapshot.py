"""A persistent snapshot of a loaded vault and its search index, so that a command starts without re-reading
and re-indexing every note (docs/architecture.md, "Fast starts").

One file per (vault, exclusion list, search configuration), ``snapshot-<key>.bin`` in the vault's cache folder
(``VAULT/.vaulttools_cache/``, or under ``$VAULTTOOLS_CACHE_DIR``: the folder the lint cache uses). It holds the
pickled `Vault` and `SearchIndex` and, for every note and attachment, the file's stat signature (size, mtime,
ctime, inode: `_signature`) and the note's content digest. Notes are stored as shells (path, id, privacy
verdict, problems, digest) and their other fields apart, decoded on first read (`_Filler`, `Note.__getattr__`):
a command decodes only the notes it reads. Opening it:

- the file must start with our magic line and carry a valid HMAC-SHA256 of its payload under a random key kept
  beside it (``snapshot.key``, mode 0600): a damaged, truncated, foreign or planted file is ignored, never
  unpickled (pickle runs code, so only bytes this user's own process signed are read);
- the key of the file names the engine's own source code (a digest of the engine modules), the Python and
  NumPy versions, the vault folder, the exclusion list and the search configuration: any change is a miss;
- the vault folder is walked again (names and stat only) and every file whose signature differs (or was
  recorded as racy) is compared by digest: a note whose bytes did not change is kept as it is, the others go
  through the same
  incremental update the watcher uses (`Vault.update_file` / `Vault.remove_file`, then `SearchIndex.update`).

A miss is never an error: the vault is loaded and indexed as without a snapshot. Writing is atomic (a
temporary file, then a rename) and, for one-shot commands, done by a forked child after the command's work,
so that a cold start is not slowed by the write (`save(background=True)`).
"""

from __future__ import annotations

import bisect
import copyreg
import gc
import hashlib
import io
import hmac
import os
import pickle
import struct
import sys
import threading
import time
import weakref
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from grasbot.model import Heading, Link, LinkKind, LinkStatus, Note, PrivacyPolicy, Resolution, Span
from grasbot.files import write_atomic
from grasbot.search.index import SearchConfig, SearchIndex
from grasbot.vault import DEFAULT_EXCLUDE, Vault, read_privacy

__all__ = ["Snapshot", "cache_dir", "load", "save"]

_MAGIC = b"grasbot-snapshot\n"
#: Bump when the stored layout changes.
SNAPSHOT_FORMAT = "3"
_KEY_FILE = "snapshot.key"
#: The engine modules whose code shapes a loaded vault or an index: a change in any of them is a miss.
_ENGINE_SOURCES = ("model.py", "links.py", "vault.py", "readers.py", "text.py", "snapshot.py", "markdown", "search")


def cache_dir(root: Path) -> Path:
    """The folder where a vault's caches live: ``VAULT/.vaulttools_cache`` (a hidden folder that neither
    Obsidian nor the loader reads), or a per-vault folder under ``$VAULTTOOLS_CACHE_DIR`` when it is set."""
    env = os.environ.get("VAULTTOOLS_CACHE_DIR")
    if env:
        key = hashlib.blake2b(str(Path(root).resolve()).encode(), digest_size=8).hexdigest()
        return Path(env) / key
    return Path(root) / ".vaulttools_cache"


@dataclass
class Snapshot:
    """A vault and its index, and how they were obtained."""

    vault: Vault
    index: SearchIndex
    #: "snapshot" (read from the file, possibly with a few files re-read), "load" (a full load)
    source: str
    #: files re-read on top of the snapshot (0 after a full load)
    reread: int = 0
    _file: Path | None = None
    _signatures: dict[str, tuple[int, ...]] | None = None
    _dirty: bool = True
    _key: str | None = None


_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))


def _named_tuple(value: tuple[Any, ...]) -> tuple[Any, ...]:
    # (`tuple.__new__(cls, fields)`: the named tuple's own `__new__` is Python code, a frame per object)
    return (tuple.__new__, (value.__class__, tuple(value)))


def _member(value: Enum) -> tuple[Any, ...]:
    # (the member by name, a C-level getattr; by default an Enum member is rebuilt by calling its class)
    return (getattr, (value.__class__, value.name))


class _Pickler(pickle.Pickler):
    """A lock (the vault's, guarding a lazy preparation) is pickled as a new, free lock: a lock's state
    means nothing in another process. The model's named tuples and enums are pickled so that decoding
    them runs no Python code (a 10k-note vault holds some hundred thousand of them): the same objects."""

    dispatch_table = copyreg.dispatch_table.copy()
    dispatch_table[_LOCK_TYPES[0]] = lambda _lock: (threading.Lock, ())
    dispatch_table[_LOCK_TYPES[1]] = lambda _lock: (threading.RLock, ())
    for _cls in (Span, Link, Heading, Resolution):
        dispatch_table[_cls] = _named_tuple
    for _cls in (LinkKind, LinkStatus):
        dispatch_table[_cls] = _member


def _dumps(obj: object) -> bytes:
    out = io.BytesIO()
    _Pickler(out, protocol=5).dump(obj)
    return out.getvalue()


def _engine_digest() -> str:
    here = Path(__file__).resolve().parent
    h = hashlib.blake2b(digest_size=16)
    for name in _ENGINE_SOURCES:
        path = here / name
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path]
        for f in files:
            try:
                h.update(f.relative_to(here).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
            except OSError:
                h.update(b"missing\0")
    import numpy  # the index's arrays are NumPy's: their pickled form follows its version

    h.update(f"{sys.version}|{numpy.__version__}|{SNAPSHOT_FORMAT}".encode())
    return h.hexdigest()


def _file_for(
    root: Path, exclude: tuple[str, ...], config: SearchConfig, privacy: PrivacyPolicy | None = None
) -> tuple[Path, str]:
    key = "|".join([_engine_digest(), str(root), repr(tuple(exclude)), repr(config), repr(privacy)])
    name = hashlib.blake2b(key.encode(), digest_size=10).hexdigest()
    return cache_dir(root) / f"snapshot-{name}.bin", key


def _secret(folder: Path, create: bool) -> bytes | None:
    path = folder / _KEY_FILE
    try:
        data = path.read_bytes()
        if len(data) == 32:
            return data
    except OSError:
        pass
    if not create:
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _ignore(folder)
        data = os.urandom(32)
        tmp = folder / f".{_KEY_FILE}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
        return path.read_bytes()  # whoever renamed last wins: read back what is there
    except OSError:
        return None


def _ignore(folder: Path) -> None:
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# created by vaulttools\n*\n", encoding="utf-8")


#: A file changed this close to the moment its stat was taken (or after) may change again within the same
#: tick of a coarse clock and keep its signature: such a signature is recorded as never matching (`_RACY`),
#: so the next start compares the file's digest (the "racily clean" entries of git's index).
_RACY_NS = 2_000_000_000
_RACY = -1


def _signature(full: str, now_ns: int) -> tuple[int, ...] | None:
    """(size, mtime, ctime, inode) of a file, `now_ns` the clock read before the stat. The ctime and the inode
    change with every write, rename over or `touch` of the file, and no unprivileged tool can set them back (a
    sync tool that restores mtimes does not restore them): an unchanged signature means unchanged bytes,
    except for a file changed within `_RACY_NS` of the stat, whose ctime is replaced by `_RACY`."""
    try:
        st = os.stat(full)
    except OSError:
        return None
    ctime = st.st_ctime_ns
    if max(ctime, st.st_mtime_ns) >= now_ns - _RACY_NS:
        ctime = _RACY
    return (st.st_size, st.st_mtime_ns, ctime, st.st_ino)


def _current_files(root: Path, exclude: tuple[str, ...]) -> dict[str, str] | None:
    """vault-relative path -> absolute path of every file the loader would read now, or None when the walk
    itself met a problem (an unreadable folder, a link loop): then only a full load tells the truth."""
    walker = Vault(root, exclude)
    files = dict(walker._walk())
    return None if walker.problems else files


class SnapshotDamaged(OSError):
    """A note's fields could not be read back from its snapshot file (changed in place since it was opened,
    which no writer of ours does: they replace it whole). Names the file."""


#: Notes per section of the note store: filling one note decodes its section's notes with it (one pickle
#: for 64 notes decodes about twice as fast as 64 pickles); the private notes have sections of their own
#: (the hidden names read them all, and only them).
_SECTION = 64


class _Filler:
    """Fills the note shells of one opened snapshot file (`Note.__getattr__`). The notes' fields are stored
    in sections of up to `_SECTION` notes, one pickle each, checked against its keyed digest before it is
    decoded (the file was verified whole when opened; this also refuses bytes changed since); filling a
    note fills the shells of its section still waiting. Holds the open file, so a file replaced by a newer
    snapshot meanwhile is still read as it was; closed when the last shell is filled or dropped."""

    __slots__ = ("_fh", "_name", "_base", "_offsets", "_digests", "_secret", "_lock", "_order", "_first", "_place",
                 "_shells", "_last")  # fmt: skip

    def __init__(self, fh: Any, base: int, table: tuple[list[int], bytes, list[int], list[int]], secret: bytes) -> None:
        self._fh = fh
        self._name = fh.name
        self._base = base
        self._offsets, self._digests, self._order, self._first = table  # section -> bytes; order -> notes
        place = [0] * len(self._order)  # note k -> its index in `_order`
        for i, k in enumerate(self._order):
            place[k] = i
        self._place = place
        self._secret = secret
        self._lock = threading.RLock()
        self._shells: list[Any] = [None] * len(self._order)  # note k -> weak reference to its shell
        self._last: tuple[int, tuple[Any, ...]] | None = None  # (the writer reads sections in order)

    def shell(self, k: int, note: Note) -> None:
        self._shells[k] = weakref.ref(note)

    def _section(self, c: int) -> tuple[Any, ...]:
        last = self._last
        if last is not None and last[0] == c:
            return last[1]
        start, end = self._offsets[c], self._offsets[c + 1]
        if _pread is not None:  # (no file position: safe across threads and a forked writer alike)
            blob = _pread(self._fh.fileno(), end - start, self._base + start)
        else:
            with self._lock:
                self._fh.seek(self._base + start)
                blob = self._fh.read(end - start)
        if len(blob) != end - start or not hmac.compare_digest(_blob_digest(self._secret, blob), self._digests[16 * c : 16 * c + 16]):
            raise SnapshotDamaged(f"{self._name}: the vault snapshot changed while in use; run the command again")
        enabled = gc.isenabled()
        gc.disable()  # (thousands of small objects, no garbage)
        try:
            fields = pickle.loads(blob)
        finally:
            if enabled:
                gc.enable()
        self._last = (c, fields)
        return fields

    def _where(self, k: int) -> tuple[int, int]:
        i = self._place[k]
        c = bisect.bisect_right(self._first, i) - 1
        return c, i - self._first[c]

    def fields(self, k: int) -> Any:
        """Note k's stored fields (a tuple in `Note.LAZY_FIELDS` order, or a dict of those set)."""
        c, j = self._where(k)
        return self._section(c)[j]

    def fill(self, note: Note) -> None:
        with self._lock:
            pending = _pending(note)
            if pending is None:
                return  # another thread filled it meanwhile
            c, _ = self._where(pending[1])
            section = self._section(c)
            first = self._first[c]
            for j, fields in enumerate(section):
                ref = self._shells[self._order[first + j]]
                shell = ref() if ref is not None else None
                if shell is None or _pending(shell) is None:
                    continue
                pairs = zip(Note.LAZY_FIELDS, fields) if fields.__class__ is tuple else fields.items()
                for name, value in pairs:
                    setattr(shell, name, value)
                del shell._pending
            self._last = None  # (decoded once: the notes hold the objects now)


_pread = getattr(os, "pread", None)


def _blob_digest(secret: bytes, blob: bytes) -> bytes:
    return hashlib.blake2b(blob, key=secret, digest_size=16).digest()


def _pending(note: Note) -> Any:
    """A shell's (filler, k), else None (a note read from its file, or a shell already filled)."""
    try:
        return object.__getattribute__(note, "_pending")
    except AttributeError:
        return None


_HEADER = struct.Struct("<QQQ")  # the main pickle's length, the number of notes, the number of sections
_CHUNK = 1 << 20


def _read(file: Path, key: str) -> dict[str, Any] | None:
    """The snapshot's main pickle (vault, index, signatures, with its notes as shells), or None when the file
    is missing, foreign, damaged or not signed by this cache's key (then nothing of it is unpickled).

    Layout after the magic line and the HMAC-SHA256 of the rest: the header (`_HEADER`), the main pickle,
    the note table (for the S sections: S + 1 offsets, S keyed digests, S + 1 first places; the n notes in
    section order) and the sections, one pickle each (`_Filler`). Read as a stream: the MAC over the file
    in chunks, then the main pickle from the open file (no copy of the file in memory); the notes' fields
    stay in the file until read."""
    secret = _secret(file.parent, create=False)
    if secret is None:
        return None
    try:
        fh = open(file, "rb")
    except OSError:
        return None
    keep = False
    try:
        head = len(_MAGIC)
        if fh.read(head) != _MAGIC:
            return None
        mac = fh.read(32)
        if len(mac) != 32:
            return None
        check = hmac.new(secret, digestmod=hashlib.sha256)
        while chunk := fh.read(_CHUNK):
            check.update(chunk)
        if not hmac.compare_digest(mac, check.digest()):
            return None
        size = fh.tell()
        payload = head + 32
        fh.seek(payload)
        main_len, count, sections = _HEADER.unpack(fh.read(_HEADER.size))
        fh.seek(payload + _HEADER.size + main_len)
        offsets = list(struct.unpack(f"<{sections + 1}Q", fh.read(8 * (sections + 1))))
        digests = fh.read(16 * sections)
        first = list(struct.unpack(f"<{sections + 1}Q", fh.read(8 * (sections + 1))))
        order = list(struct.unpack(f"<{count}Q", fh.read(8 * count)))
        base = fh.tell()
        if base + offsets[-1] != size or sorted(order) != list(range(count)) or first[-1] != count:
            return None
        filler = _Filler(fh, base, (offsets, digests, order, first), secret)
        shells: dict[int, Note] = {}

        def shell(pid: Any) -> Note:
            if pid.__class__ is int:
                return shells[pid]
            k, path, id_, withheld, problems, digest = pid
            note = _new_note(Note)
            note.path, note.id, note.withheld, note.problems, note._digest = path, id_, withheld, problems, digest
            note._pending = (filler, k)
            filler.shell(k, note)
            shells[k] = note
            return note

        fh.seek(payload + _HEADER.size)
        unpickler = pickle.Unpickler(fh)
        unpickler.persistent_load = shell
        gc_was_enabled = gc.isenabled()
        gc.disable()  # hundreds of thousands of small objects, no garbage: the collector would only rescan them
        try:
            data = unpickler.load()
        except Exception:  # a file we signed ourselves, but a library changed under it since
            return None
        finally:
            if gc_was_enabled:
                gc.enable()
        if not isinstance(data, dict) or data.get("key") != key or len(shells) != count:
            return None
        keep = True
        return data
    except (OSError, ValueError, struct.error):
        return None
    finally:
        if not keep:
            fh.close()


_new_note = object.__new__


def load(
    root: str | Path,
    config: SearchConfig | None = None,
    *,
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE,
    use_snapshot: bool = True,
    verify: bool = False,
    privacy: PrivacyPolicy | None = None,
) -> Snapshot:
    """The vault at `root` and its index, from the snapshot when one matches (re-reading only the files that
    changed), else loaded and indexed from scratch. Raises like `Vault.load` when `root` is not a folder.

    `verify`: trust no stat signature; every note's bytes are read and hashed, and a note whose digest
    differs is re-read even if its signature is the one recorded. Not needed for privacy: the signature
    holds the ctime and the inode, which every write, rename over or `touch` changes and no unprivileged
    tool sets back, and a file changed just before its stat is compared by digest (`_signature`); so a
    note made private is re-read however it was saved. For a file system whose ctime means nothing (a
    FUSE or network mount that fakes it), at the cost of a read of every note.

    `privacy`: private folders and tags added to the vault's own `[privacy]` (`Vault.load`'s); part of the
    file's key. A snapshot whose vault was read under another policy than the one in force now (the vault's
    `vaulttools.toml` changed) is not used: every note's visibility is then recomputed by a full load."""
    config = config or SearchConfig()
    root_path = Path(root).expanduser()
    if not root_path.is_dir():
        vault = Vault.load(root_path, exclude)  # raises the loader's own clear error
    root_path = root_path.resolve()
    file, key = _file_for(root_path, exclude, config, privacy)
    if use_snapshot:
        data = _read(file, key)
        files = _current_files(root_path, exclude) if data is not None else None
        if data is not None and files is not None and _same_privacy(data, root_path, privacy):
            snap = _refresh(data, files, verify)
            if snap is not None:
                snap._file, snap._key = file, key
                return snap
    # Stat before reading: a file saved while the load runs then differs from its recorded signature
    # and is re-read next time (recording it after the read could pair new stat with old text).
    signatures = _stat_all(_current_files(root_path, exclude) or {}) if use_snapshot else None
    vault = Vault.load(root_path, exclude, privacy=privacy)
    index = SearchIndex.build(vault, config)
    return Snapshot(vault, index, "load", 0, file if use_snapshot else None, signatures, True, key)


def _same_privacy(data: dict[str, Any], root: Path, privacy: PrivacyPolicy | None) -> bool:
    """Whether the policy the snapshot's notes were read under is the one in force now (fail closed: a
    vault's `[privacy]` that changed, became unreadable or readable again means a full load)."""
    vault = data.get("vault")
    own, problem = read_privacy(root)
    return isinstance(vault, Vault) and problem is None and vault.privacy == own.merged(privacy)


def _stat_all(files: dict[str, str]) -> dict[str, tuple[int, ...]]:
    now = time.time_ns()
    out: dict[str, tuple[int, ...]] = {}
    for rel, full in files.items():
        sig = _signature(full, now)
        if sig is not None:
            out[rel] = sig
    return out


def _digest_of(full: str) -> str | None:
    try:
        with open(full, "rb") as fh:
            return hashlib.blake2b(fh.read(), digest_size=16).hexdigest()
    except OSError:
        return None


def _refresh(data: dict[str, Any], files: dict[str, str], verify: bool = False) -> Snapshot | None:
    vault: Vault = data["vault"]
    index: SearchIndex = data["index"]
    signatures: dict[str, tuple[int, ...]] = data["signatures"]
    changed: dict[str, tuple[int, ...] | None] = {}  # rel -> its signature now, taken before any read
    now = time.time_ns()
    for rel, full in files.items():
        sig = _signature(full, now)
        recorded = signatures.get(rel)
        if sig is None or recorded != sig or recorded[2] == _RACY:  # (racy: only its digest tells)
            changed[rel] = sig
        elif verify:
            note = vault.notes.get(rel)
            if note is not None and _digest_of(full) != note.digest:
                changed[rel] = sig
    gone = [rel for rel in signatures if rel not in files]
    vault_freeze(vault)
    reread = 0
    for rel in changed:
        old = vault.notes.get(rel)
        if old is not None:
            digest = _digest_of(files[rel])
            if digest == old.digest:  # touched, not changed (a checkout, a sync tool)
                continue
        index.update(vault, vault.update_file(rel))
        reread += 1
    for rel in gone:
        index.update(vault, vault.remove_file(rel))
        reread += 1
    for rel, sig in changed.items():
        if sig is not None:
            signatures[rel] = sig
        else:
            signatures.pop(rel, None)
    for rel in gone:
        signatures.pop(rel, None)
    dirty = bool(changed or gone)
    return Snapshot(vault, index, "snapshot", reread, None, signatures, dirty)


def vault_freeze(vault: Vault) -> None:
    """What `Vault.load` does for a loaded vault's objects (see its comment): out of the collector's sight,
    given back when the vault is dropped."""
    gc.freeze()
    weakref.finalize(vault, gc.unfreeze).atexit = False


def _payload(key: str, snap: Snapshot, signatures: dict[str, tuple[int, ...]], secret: bytes) -> bytes:
    """The file after its MAC (see `_read`): every `Note` met in the vault or the index is pickled as a
    reference to its entry in the note store (its first reference carries the shell's fields), and its
    other fields are pickled there, in sections, so that a reader decodes only the notes it reads."""
    notes: list[Note] = []
    seen: dict[int, int] = {}

    class Main(_Pickler):
        def persistent_id(self, obj: Any) -> Any:
            if obj.__class__ is not Note:
                return None
            k = seen.get(id(obj))
            if k is not None:
                return k
            seen[id(obj)] = k = len(notes)
            notes.append(obj)
            return (k, obj.path, obj.id, obj.withheld, obj.problems, obj.digest)

    out = io.BytesIO()
    Main(out, protocol=5).dump({"key": key, "vault": snap.vault, "index": snap.index, "signatures": signatures})
    main = out.getvalue()
    hidden = snap.vault.hidden_paths()
    private = [k for k, note in enumerate(notes) if note.path in hidden]
    public = [k for k, note in enumerate(notes) if note.path not in hidden]
    order: list[int] = []
    first = [0]
    blobs: list[bytes] = []
    for group in (private, public):
        for at in range(0, len(group), _SECTION):
            members = group[at : at + _SECTION]
            blobs.append(_dumps(tuple(_fields(notes[k]) for k in members)))
            order.extend(members)
            first.append(len(order))
    offsets = [0]
    for blob in blobs:
        offsets.append(offsets[-1] + len(blob))
    return b"".join([
        _HEADER.pack(len(main), len(notes), len(blobs)), main, struct.pack(f"<{len(offsets)}Q", *offsets),
        *(_blob_digest(secret, blob) for blob in blobs), struct.pack(f"<{len(first)}Q", *first),
        struct.pack(f"<{len(order)}Q", *order), *blobs,
    ])  # fmt: skip


def _fields(note: Note) -> Any:
    """What the note store keeps of `note`: its `LAZY_FIELDS`, as a tuple (every field set, as after any
    read), else as a dict of those set. A shell never read gives its stored fields, not decoded into it."""
    pending = _pending(note)
    if pending is not None:
        return pending[0].fields(pending[1])
    try:
        return tuple(object.__getattribute__(note, name) for name in Note.LAZY_FIELDS)
    except AttributeError:
        fields = {}
        for name in Note.LAZY_FIELDS:
            try:
                fields[name] = object.__getattribute__(note, name)
            except AttributeError:
                pass
        return fields


def _write(snap: Snapshot) -> None:
    file = snap._file
    if file is None:
        return
    folder = file.parent
    secret = _secret(folder, create=True)
    if secret is None:
        return
    signatures = snap._signatures
    if signatures is None:
        return
    key = snap._key or _file_for(Path(snap.vault.root), snap.vault.exclude, snap.index.config)[1]
    snap.vault.hidden_paths()  # (computed once here, not by every command that starts from the file)
    snap.vault.note_types()
    try:
        payload = _payload(key, snap, signatures, secret)
    except SnapshotDamaged:
        return  # the file the shells came from changed under us: nothing trustworthy to write
    mac = hmac.new(secret, payload, hashlib.sha256).digest()
    # (mode 0600: it holds private notes; a temporary name of its own, so two writers never share one)
    try:
        write_atomic(file, _MAGIC + mac + payload)
    except OSError:
        pass  # only a cache


def save(snap: Snapshot, *, background: bool = False) -> threading.Thread | int | None:
    """Write the snapshot when it differs from the file (errors are ignored: a snapshot is only a cache).

    `background=True`: a one-shot command forks a child that writes while the parent goes on and exits
    (POSIX; elsewhere, a thread the caller may join). Returns the child's pid, the thread, or None."""
    if snap._file is None or not snap._dirty:
        return None
    snap._dirty = False
    if not background:
        _write(snap)
        return None
    if hasattr(os, "fork") and threading.active_count() == 1:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: write, then leave at once (no atexit handlers, no buffered output twice)
            try:
                _write(snap)
            finally:
                os._exit(0)
        return pid
    thread = threading.Thread(target=_write, args=(snap,), name="grasbot-snapshot", daemon=False)
    thread.start()
    return thread
