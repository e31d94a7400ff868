"""Which files of a vault are notes, and how each kind becomes a `Note`: the reader registry.

`Vault` asks its `Readers` for the reader of each file by its suffix: a file a reader claims is read into a
note (its links resolved, its text searched), any other file stays an attachment (a link target only,
never opened). Markdown is the first reader; a new format registers its own (docs/architecture.md,
"Readers": a class with `name`, `suffixes` and `read(rel, raw) -> Note`, which never raises on a bad file
but records `Problem`s on the note).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable

from grasbot.markdown.reader import MarkdownReader
from grasbot.model import Note

__all__ = ["DEFAULT_READERS", "Reader", "Readers"]


@runtime_checkable
class Reader(Protocol):
    """Turns one kind of file into a note."""

    #: a short name for messages and docs (`markdown`)
    name: str
    #: the file suffixes it reads, lower-case with their dot (`.md`); matched case-insensitively
    suffixes: tuple[str, ...]

    def read(self, rel: str, raw: bytes) -> Note:
        """The note of the file at vault path `rel` whose bytes are `raw`. Never raises: a file it cannot
        read becomes a note carrying a `Problem` (`grasbot.model.Problem`)."""
        ...


class Readers:
    """The readers a vault uses, by suffix. Immutable once built: `with_reader` returns a new registry."""

    __slots__ = ("_by_suffix", "readers")

    def __init__(self, readers: Iterable[Reader] = ()) -> None:
        self.readers: tuple[Reader, ...] = tuple(readers)
        by_suffix: dict[str, Reader] = {}
        for reader in self.readers:
            for suffix in reader.suffixes:
                key = suffix.lower()
                if not key.startswith(".") or len(key) < 2:
                    raise ValueError(f"reader {reader.name!r}: a suffix is a dot and letters, got {suffix!r}")
                if key in by_suffix:
                    raise ValueError(f"readers {by_suffix[key].name!r} and {reader.name!r} both claim {key!r}")
                by_suffix[key] = reader
        self._by_suffix = by_suffix

    def with_reader(self, reader: Reader) -> Readers:
        """This registry and one more reader (for a suffix no reader claims yet)."""
        return Readers((*self.readers, reader))

    def reader_for(self, rel: str) -> Reader | None:
        """The reader of the file at vault path `rel`, or None for an attachment."""
        dot = rel.rfind(".")
        if dot <= rel.rfind("/"):
            return None  # no suffix (a dot in a folder name is not one)
        return self._by_suffix.get(rel[dot:].lower())

    def is_note(self, rel: str) -> bool:
        return self.reader_for(rel) is not None

    def read(self, rel: str, raw: bytes) -> Note:
        """The note of `rel` read by its reader; ValueError for a file no reader claims."""
        reader = self.reader_for(rel)
        if reader is None:
            raise ValueError(f"{rel}: no reader for this kind of file (it is an attachment)")
        return reader.read(rel, raw)


#: Markdown only: what `Vault.load` uses unless given other readers.
DEFAULT_READERS = Readers([MarkdownReader()])
