"""A persistent snapshot of a loaded vault and its search index, so that a command starts without re-reading
and re-indexing every note (docs/architecture.md, "Fast starts").

One file per (vault, exclusion list, search configuration), ``snapshot-<key>.bin`` in the vault's cache folder
(``VAULT/.vaulttools_cache/``, or under ``$VAULTTOOLS_CACHE_DIR``: the folder the lint cache uses). It holds the
pickled `Vault` and `SearchIndex` and, for every note and attachment, the file's stat signature (size, mtime)
and the note's content digest. Opening it:

- the file must start with our magic line and carry a valid HMAC-SHA256 of its payload under a random key kept
  beside it (``snapshot.key``, mode 0600): a damaged, truncated, foreign or planted file is ignored, never
  unpickled (pickle runs code, so only bytes this user's own process signed are read);
- the key of the file names the engine's own source code (a digest of the engine modules), the Python and
  NumPy versions, the vault folder, the exclusion list and the search configuration: any change is a miss;
- the vault folder is walked again (names and stat only) and every file whose signature differs is re-read;
  a note whose bytes did not change (same digest) is kept as it is, the others go through the same
  incremental update the watcher uses (`Vault.update_file` / `Vault.remove_file`, then `SearchIndex.update`).

A miss is never an error: the vault is loaded and indexed as without a snapshot. Writing is atomic (a
temporary file, then a rename) and, for one-shot commands, done by a forked child after the command's work,
so that a cold start is not slowed by the write (`save(background=True)`).
"""

from __future__ import annotations

import copyreg
import gc
import hashlib
import io
import mmap
import hmac
import os
import pickle
import sys
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grasbot.model import PrivacyPolicy
from grasbot.files import write_atomic
from grasbot.search.index import SearchConfig, SearchIndex
from grasbot.vault import DEFAULT_EXCLUDE, Vault, read_privacy

__all__ = ["Snapshot", "cache_dir", "load", "save"]

_MAGIC = b"grasbot-snapshot\n"
#: Bump when the stored layout changes.
SNAPSHOT_FORMAT = "1"
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
    _signatures: dict[str, tuple[int, int]] | None = None
    _dirty: bool = True
    _key: str | None = None


_LOCK_TYPES = (type(threading.Lock()), type(threading.RLock()))


class _Pickler(pickle.Pickler):
    """A lock (the vault's, guarding a lazy preparation) is pickled as a new, free lock: a lock's state
    means nothing in another process."""

    dispatch_table = copyreg.dispatch_table.copy()
    dispatch_table[_LOCK_TYPES[0]] = lambda _lock: (threading.Lock, ())
    dispatch_table[_LOCK_TYPES[1]] = lambda _lock: (threading.RLock, ())


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


def _signature(full: str) -> tuple[int, int] | None:
    try:
        st = os.stat(full)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns)


def _current_files(root: Path, exclude: tuple[str, ...]) -> dict[str, str] | None:
    """vault-relative path -> absolute path of every file the loader would read now, or None when the walk
    itself met a problem (an unreadable folder, a link loop): then only a full load tells the truth."""
    walker = Vault(root, exclude)
    files = dict(walker._walk())
    return None if walker.problems else files


def _read(file: Path, key: str) -> dict[str, Any] | None:
    secret = _secret(file.parent, create=False)
    if secret is None:
        return None
    try:
        with open(file, "rb") as fh:
            # Mapped, not read: the pickle is decoded from the page cache, without a second copy in memory.
            blob = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # ValueError: an empty file cannot be mapped
        return None
    try:
        head = len(_MAGIC)
        if blob[:head] != _MAGIC or len(blob) < head + 32:
            return None
        view = memoryview(blob)
        mac, payload = bytes(view[head : head + 32]), view[head + 32 :]
        try:
            if not hmac.compare_digest(mac, hmac.new(secret, payload, hashlib.sha256).digest()):
                return None
            gc_was_enabled = gc.isenabled()
            gc.disable()  # hundreds of thousands of small objects, no garbage: the collector would only rescan them
            try:
                data = pickle.loads(payload)
            except Exception:  # a file we signed ourselves, but a library changed under it since
                return None
            finally:
                if gc_was_enabled:
                    gc.enable()
        finally:
            payload.release()
            view.release()
    finally:
        blob.close()
    if not isinstance(data, dict) or data.get("key") != key:
        return None
    return data


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
    differs is re-read even if its size and mtime are those recorded (an edit that kept both: a sync tool
    that restores mtimes, a coarse-mtime file system). The service loads this way: a note made private must
    never be served from the snapshot because its file kept its mtime. Hashing costs a read of every note,
    still far less than parsing them.

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


def _stat_all(files: dict[str, str]) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for rel, full in files.items():
        sig = _signature(full)
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
    signatures: dict[str, tuple[int, int]] = data["signatures"]
    changed: dict[str, tuple[int, int] | None] = {}  # rel -> its signature now, taken before any read
    for rel, full in files.items():
        sig = _signature(full)
        if sig is None or signatures.get(rel) != sig:
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
    payload = _dumps({"key": key, "vault": snap.vault, "index": snap.index, "signatures": signatures})
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
