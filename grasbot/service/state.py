"""The service's private state folder: the reload stamp and its lock, and the key that signs session ids.

Workers of one deployment serve the same vault folder and share this folder: a reload in one is announced
in a stamp file (named after the vault's path, holding only a version, a time and a pid) that the others
read before each answer (docs/service.md, "Several workers"). The folder is the service user's own (mode
0700, every file 0600, never followed through a symbolic link), not a predictable name in a shared temp
folder: another local user can neither read the stamp nor hold its lock to freeze a reload.

Taking the lock never blocks the event loop: `write_stamp` runs in a worker thread and tries the lock
without blocking, with retries, for at most LOCK_WAIT_SECONDS; a lock held longer (by a stuck process of
the same user) is logged and the stamp written anyway, since announcing the reload (so no worker keeps
serving a note made private) matters more than two workers never sharing a version number.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import stat
import time
from pathlib import Path

from platformdirs import user_state_dir

try:  # POSIX: announcing a reload takes a lock, so two workers reloading at once never share a version
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("grasbot.service.state")

#: Longest a reload waits for the stamp's lock (in a worker thread) before announcing without it.
LOCK_WAIT_SECONDS = 5.0
_LOCK_RETRY_SECONDS = 0.02
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_KEY_BYTES = 32


class StateDirError(OSError):
    """The private state folder cannot be used; the message names it and says what to do."""


def default_state_dir() -> Path:
    """`GRASBOT_STATE_DIR`'s default: the user's state folder (`~/.local/state/grasbot` on Linux)."""
    return Path(user_state_dir("grasbot", appauthor=False))


def private_dir(path: Path | None) -> Path:
    """`path` (default: `default_state_dir()`) created if needed, checked to be this user's and mode 0700.

    Raises StateDirError for a folder that cannot be created, is not a folder, or belongs to another
    user; a folder of this user that others may enter is closed (chmod 0700) rather than refused.
    """
    folder = (path if path is not None else default_state_dir()).expanduser()
    hint = "set GRASBOT_STATE_DIR to a folder the service's user owns"
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.stat(folder)
    except OSError as error:
        raise StateDirError(f"cannot create the service's private folder {folder} ({error.strerror or error}); {hint}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise StateDirError(f"the service's private folder {folder} is not a folder; {hint}")
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise StateDirError(f"the service's private folder {folder} belongs to another user; {hint}")
    if stat.S_IMODE(info.st_mode) & 0o077:
        try:
            os.chmod(folder, 0o700)
        except OSError as error:
            raise StateDirError(f"cannot make {folder} private (chmod 0700: {error.strerror}); {hint}") from None
    return folder


def reload_stamp_path(vault_dir: Path, state_dir: Path) -> Path:
    """Where the workers serving `vault_dir` announce reloads to each other (inside `state_dir`)."""
    digest = hashlib.sha256(str(Path(vault_dir).resolve()).encode()).hexdigest()[:16]
    return state_dir / f"reload-{digest}"


def lock_path(stamp: Path) -> Path:
    return stamp.with_name(f"{stamp.name}.lock")


def read_stamp(path: Path) -> str:
    """The stamp's text, "" when there is none (or it cannot be read)."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return ""
    try:
        return os.read(fd, 256).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""
    finally:
        os.close(fd)


def stamp_version(stamp: str) -> int | None:
    """The vault version a stamp announces (`"<version> <time_ns>-<pid>"`), None for none."""
    head = stamp.split(" ", 1)[0]
    return int(head) if head.isdigit() and len(head) < 19 else None


def _write_private(path: Path, data: bytes) -> None:
    """Write `path` atomically (a sibling never reads half of it), mode 0600, never through a link."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW | _CLOEXEC, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def _take_lock(fd: int, timeout: float) -> bool:
    """Try the exclusive lock without blocking until `timeout` seconds pass; True when held."""
    if fcntl is None:  # pragma: no cover - Windows: no lock, as before
        return True
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(_LOCK_RETRY_SECONDS)


def write_stamp(path: Path, at_least: int, lock_wait: float = LOCK_WAIT_SECONDS) -> tuple[str | None, int]:
    """Announce a reload: the stamp written (None if it could not be) and the vault version it carries,
    one more than the last announced (and at least `at_least`), so every worker numbers versions alike.

    Blocking (file I/O, a bounded wait for the lock): call it from a worker thread, never the event loop.
    """
    version = at_least
    try:
        fd = os.open(lock_path(path), os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o600)
    except OSError as error:
        log.warning("could not announce the reload to other workers (%s)", type(error).__name__)
        return None, version
    try:
        if not _take_lock(fd, lock_wait):
            log.warning(
                "the reload lock is held by another process for over %.0f s: announcing the reload without it",
                lock_wait,
            )
        version = max((stamp_version(read_stamp(path)) or 0) + 1, at_least)
        stamp = f"{version} {time.time_ns()}-{os.getpid()}"
        _write_private(path, stamp.encode("ascii"))
        return stamp, version
    except OSError as error:
        log.warning("could not announce the reload to other workers (%s)", type(error).__name__)
        return None, version
    finally:
        os.close(fd)  # releases the lock


def session_key(state_dir: Path) -> bytes:
    """The key that signs session ids, shared by the workers of `state_dir` (made once, mode 0600).

    Two workers starting at once may both make one: the first to link its file in place wins, and both
    then read that one, so every worker of a deployment accepts the ids the others issued.
    """
    path = state_dir / "session-key"
    key = _read_key(path)
    if key is not None:
        return key
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600)
    try:
        os.write(fd, secrets.token_bytes(_KEY_BYTES))
    finally:
        os.close(fd)
    try:
        if path.exists() or path.is_symlink():  # present but unusable (cut short, ...): replace it
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass  # another worker won the race: use its key
    finally:
        tmp.unlink(missing_ok=True)
    key = _read_key(path)
    if key is None:
        raise StateDirError(f"cannot read the session key {path}; set GRASBOT_STATE_DIR to a private folder")
    return key


def _read_key(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
    except OSError:
        return None
    try:
        data = os.read(fd, _KEY_BYTES + 1)
    finally:
        os.close(fd)
    return data if len(data) == _KEY_BYTES else None
