"""Writing a file all at once or not at all: the one helper every writer of the project uses (lint fixes, the
PDF import, the lint cache and baseline, the TUI's preferences, the vault snapshot).

A temporary file in the target's own folder (same file system, so the rename is atomic), then `os.replace`: a
reader sees the old content or the new, never half of either, and a failed or interrupted write leaves the
old file as it was and no temporary file behind.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(
    path: Path,
    data: bytes,
    *,
    mode: int | None = None,
    durable: bool = False,
    suffix: str = ".tmp",
    before_replace: Callable[[], None] | None = None,
) -> None:
    """Replace `path` with `data` atomically.

    `mode`: the new file's permission bits (default: mkstemp's 0600, right for caches and keys; a note keeps
    its own). `durable`: fsync before the rename (a note the author wrote must survive a power cut; a cache
    need not). `before_replace`: called just before the rename, as close to it as possible; raising there
    leaves `path` untouched (lint fixes check that no editor saved the note meanwhile).
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
