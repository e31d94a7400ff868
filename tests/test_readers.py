"""The reader registry (grasbot/readers.py): the vault asks it which files are notes and how to read them."""

from __future__ import annotations

from pathlib import Path

import pytest

from grasbot import DEFAULT_READERS, LinkStatus, MarkdownReader, Note, Problem, Readers, Vault, read_note


class TextReader:
    """A made-up second format: a `.txt` file is a note whose body is the text (no frontmatter)."""

    name = "text"
    suffixes = (".txt",)

    def __init__(self) -> None:
        self.read_paths: list[str] = []

    def read(self, rel: str, raw: bytes) -> Note:
        self.read_paths.append(rel)
        try:
            text = raw.decode("utf-8")
            problems: list[Problem] = []
        except UnicodeDecodeError:
            text, problems = "", [Problem(rel, 1, 1, "not UTF-8", "not-utf8")]
        return Note(rel, text, {"title": rel.rsplit("/", 1)[-1]}, text, 1, False, problems=problems)


def _vault(tmp_path: Path) -> Path:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("---\ntitle: A\n---\nVoir [[journal.txt]] et ![[photo.png]].\n", encoding="utf-8")
    (tmp_path / "notes" / "journal.txt").write_text("Un journal en texte brut.\n", encoding="utf-8")
    (tmp_path / "notes" / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    (tmp_path / "notes" / "B.MD").write_text("# B\n", encoding="utf-8")
    return tmp_path


def test_markdown_is_the_only_default_reader_and_other_files_stay_attachments(tmp_path: Path) -> None:
    vault = Vault.load(_vault(tmp_path))
    assert [r.name for r in DEFAULT_READERS.readers] == ["markdown"]
    assert set(vault.notes) == {"notes/a.md", "notes/B.MD"}  # the suffix in any case
    assert vault.files == {"notes/journal.txt", "notes/photo.png"}  # never opened, still link targets
    statuses = [r.status for r in vault.resolutions("notes/a.md")]
    assert statuses == [LinkStatus.OK, LinkStatus.OK]
    assert vault.note_files() == ["notes/B.MD", "notes/a.md"]


def test_a_registered_reader_turns_its_files_into_notes(tmp_path: Path) -> None:
    root = _vault(tmp_path)
    text = TextReader()
    readers = DEFAULT_READERS.with_reader(text)
    vault = Vault.load(root, readers=readers)
    assert set(vault.notes) == {"notes/a.md", "notes/B.MD", "notes/journal.txt"}
    assert vault.files == {"notes/photo.png"}  # a binary attachment stays a file
    assert text.read_paths == ["notes/journal.txt"]
    assert vault.notes["notes/journal.txt"].body == "Un journal en texte brut.\n"
    assert vault.resolutions("notes/a.md")[0].target_path == "notes/journal.txt"
    # an update goes through the same reader
    (root / "notes" / "journal.txt").write_text("Réécrit.\n", encoding="utf-8")
    vault.update_file("notes/journal.txt")
    assert vault.notes["notes/journal.txt"].body == "Réécrit.\n" and text.read_paths[-1] == "notes/journal.txt"
    assert vault.note_files() == ["notes/B.MD", "notes/a.md", "notes/journal.txt"]


def test_the_registry_refuses_two_readers_for_one_suffix_and_bad_suffixes() -> None:
    with pytest.raises(ValueError, match="both claim '.md'"):
        Readers([MarkdownReader(), MarkdownReader()])

    class Bad(TextReader):
        suffixes = ("txt",)

    with pytest.raises(ValueError, match="a suffix is a dot"):
        Readers([Bad()])
    assert DEFAULT_READERS.reader_for("a.b/c") is None  # a dot in a folder name is no suffix
    with pytest.raises(ValueError, match="attachment"):
        DEFAULT_READERS.read("img.png", b"")


def test_the_markdown_reader_is_read_note() -> None:
    raw = "---\ntitle: T\naliases: [x]\n---\nCorps [[y]].\n".encode()
    assert MarkdownReader().read("t.md", raw) == read_note("t.md", raw)
    note = read_note("t.md", raw)
    assert note.key_positions["aliases"].line == 3  # computed on first access, by the reader's own parser
