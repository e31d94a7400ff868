"""LiveVault: incremental re-checks on a real copy of the sample vault (files edited on disk, no watcher)."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import pytest

from vaulttools.live import LiveVault

UNKNOWN = "zzz-domaine-inconnu"


def set_domains(text: str, values: list[str]) -> str:
    """The note's text with its `domains:` value (flow or block list) replaced by `values`."""
    pattern = re.compile(r"^domains:[^\n]*\n(?:[ \t]+-[^\n]*\n)*", re.M)
    assert pattern.search(text), "the note has no domains field"
    return pattern.sub(lambda _: f"domains: [{', '.join(values)}]\n", text, count=1)


def note_with_domains(live: LiveVault) -> str:
    for path, note in live.vault.notes.items():
        if note.domains and not note.is_private and not live.diagnostics(path):
            return path
    pytest.skip("no clean note with domains in the sample vault")


def most_linked(live: LiveVault) -> str:
    best = max(sorted(live.vault.notes), key=lambda p: len(live.vault.incoming(p)))
    assert live.vault.incoming(best), "the sample vault has no links"
    return best


@pytest.fixture
def live(sample_vault_copy: Path) -> LiveVault:
    return LiveVault.load(sample_vault_copy)


def test_load_is_a_full_check(live: LiveVault) -> None:
    assert live.note_count() > 10
    assert live.taxonomy_path is not None and live.taxonomy_path.name == "TAXONOMIE.md"
    counts = live.counts()
    assert counts["error"] + counts["warning"] == len(live.diagnostics())


def test_unknown_domain_is_new_then_fixed(live: LiveVault) -> None:
    path = note_with_domains(live)
    file = live.root / path
    original = file.read_text(encoding="utf-8")
    note = live.note(path)
    file.write_text(set_domains(original, [UNKNOWN, *note.domains[1:]]), encoding="utf-8")
    delta = live.apply({path})
    assert delta.changed == (path,) and not delta.added and not delta.removed
    assert [(d.path, d.rule) for d in delta.new] == [(path, "unknown-domain")]
    assert UNKNOWN in delta.new[0].message and not delta.fixed
    assert delta.vault_changed
    assert [d.rule for d in live.diagnostics(path)] == ["unknown-domain"]

    file.write_text(original, encoding="utf-8")
    delta = live.apply({path})
    assert not delta.new and [(d.path, d.rule) for d in delta.fixed] == [(path, "unknown-domain")]
    assert live.diagnostics(path) == []


def test_saving_without_change_is_empty(live: LiveVault) -> None:
    path = sorted(live.vault.notes)[0]
    version = live.version
    os.utime(live.root / path)  # touched, same bytes (an editor saving an unmodified buffer)
    delta = live.apply([path])
    assert delta.is_empty and not delta.vault_changed and live.version == version


def test_moving_a_problem_down_is_not_new(live: LiveVault) -> None:
    path = note_with_domains(live)
    file = live.root / path
    original = file.read_text(encoding="utf-8")
    file.write_text(set_domains(original, [UNKNOWN]), encoding="utf-8")
    first = live.apply([path])
    assert [d.rule for d in first.new] == ["unknown-domain"]
    # a line inserted at the top of the frontmatter moves the problem one line down: not a new problem
    file.write_text(set_domains(original, [UNKNOWN]).replace("---\n", "---\nextra: 1\n", 1), encoding="utf-8")
    moved = live.apply([path])
    assert not moved.new and not moved.fixed and moved.changed == (path,)
    assert live.diagnostics(path)[0].line == first.new[0].line + 1


def test_deleted_note_breaks_links_and_recreating_repairs_them(live: LiveVault) -> None:
    target = most_linked(live)
    sources = live.vault.incoming(target)
    saved = (live.root / target).read_bytes()
    (live.root / target).unlink()
    delta = live.apply([target])
    assert delta.removed == (target,) and not delta.changed
    broken = {d.path for d in delta.new if d.rule == "broken-link"}
    assert broken == set(sources)
    assert set(delta.relinked) == set(sources)
    assert not live.diagnostics(target)  # the deleted note's own problems are gone with it

    (live.root / target).write_bytes(saved)
    delta = live.apply([target])
    assert delta.added == (target,)
    assert {d.path for d in delta.fixed if d.rule == "broken-link"} == set(sources)
    assert not [d for d in delta.new if d.rule == "broken-link"]


def test_rename_is_a_move_and_keeps_the_note_problems(live: LiveVault) -> None:
    path = note_with_domains(live)
    file = live.root / path
    file.write_text(set_domains(file.read_text(encoding="utf-8"), [UNKNOWN]), encoding="utf-8")
    live.apply([path])
    incoming = live.vault.incoming(path)
    new_path = path[:-3] + "-renomme.md"
    file.rename(live.root / new_path)
    delta = live.apply([path, new_path])
    assert delta.moved == ((path, new_path),)
    assert delta.removed == (path,) and delta.added == (new_path,)
    # its unknown domain is neither fixed nor new: it moved with the note
    assert "unknown-domain" not in {d.rule for d in delta.new + delta.fixed}
    assert {d.path for d in delta.new if d.rule == "broken-link"} == set(incoming)


def test_folder_move_is_expanded_into_its_notes(live: LiveVault) -> None:
    folder = sorted({p.split("/")[0] for p in live.vault.notes if "/" in p})[-1]
    inside = sorted(p for p in live.vault.notes if p.startswith(folder + "/"))
    (live.root / folder).rename(live.root / "Archive")
    delta = live.apply([folder, "Archive"])
    assert delta.removed == tuple(inside)
    assert sorted(new for _, new in delta.moved) == sorted("Archive/" + p.split("/", 1)[1] for p in inside)
    assert all(p not in live.vault.notes for p in inside)


def test_unreadable_note_is_a_diagnostic_not_an_exception(live: LiveVault, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = "10-Projets/binaire.md"
    (live.root / bad).write_bytes(b"---\ntitle: \xff\xfe\x00\x01\n---\n")
    delta = live.apply([bad])
    assert delta.added == (bad,)
    assert [d.rule for d in delta.new if d.path == bad] == ["frontmatter-invalid"]

    # even if the engine itself failed on a file, the watcher reports it and goes on
    def boom(path: object) -> None:
        raise PermissionError(13, "Permission denied")

    other = sorted(live.vault.notes)[0]
    monkeypatch.setattr(live.vault, "update_file", boom)
    delta = live.apply([other])
    assert [(d.path, d.rule) for d in delta.new] == [(other, "frontmatter-invalid")]
    assert "Permission denied" in delta.new[0].message


def test_half_written_note_is_unsettled_not_broken(live: LiveVault, monkeypatch: pytest.MonkeyPatch) -> None:
    path = "10-Projets/en-cours.md"
    file = live.root / path
    head = "---\ntitle: En cours\ndomains: ["
    rest = "backend]\n---\nCorps.\n"
    file.write_text(head, encoding="utf-8")
    real_update = live.vault.update_file

    def writer_still_writing(p: object):  # the editor appends while we read
        change = real_update(p)
        with open(file, "a", encoding="utf-8") as fh:
            fh.write(rest)
        return change

    monkeypatch.setattr(live.vault, "update_file", writer_still_writing)
    delta = live.apply([path])
    assert delta.unsettled == (path,)
    assert not [d for d in delta.new if d.path == path]
    monkeypatch.undo()
    delta = live.apply(delta.unsettled)  # re-delivered after the quiet window
    assert delta.added == (path,) or delta.changed == (path,)
    assert "frontmatter-invalid" not in {d.rule for d in delta.new}


def test_taxonomy_edit_re_checks_everything(live: LiveVault) -> None:
    path = note_with_domains(live)
    file = live.root / path
    file.write_text(set_domains(file.read_text(encoding="utf-8"), [UNKNOWN]), encoding="utf-8")
    live.apply([path])
    assert "unknown-domain" in {d.rule for d in live.diagnostics(path)}
    taxonomy = live.taxonomy_path
    text = taxonomy.read_text(encoding="utf-8")
    row = re.search(r"^\| `backend` \|[^\n]*\n", text, re.M)
    assert row, "the sample taxonomy lists `backend` in a table"
    taxonomy.write_text(text.replace(row.group(0), row.group(0) + f"| `{UNKNOWN}` | Test | Test |\n"), encoding="utf-8")
    rel = os.path.relpath(taxonomy, live.root).replace(os.sep, "/")  # "../TAXONOMIE.md": beside the vault
    delta = live.apply([rel])
    assert delta.taxonomy_reloaded and live.taxonomy_error is None
    assert [(d.path, d.rule) for d in delta.fixed] == [(path, "unknown-domain")]
    assert not delta.new

    taxonomy.write_bytes(b"\xff\xfe not utf-8")  # a broken taxonomy keeps the last good one in force
    delta = live.apply([rel])
    assert live.taxonomy_error and "UTF-8" in live.taxonomy_error
    assert not delta.new and not delta.fixed


def test_readers_see_consistent_state_while_applying(live: LiveVault) -> None:
    path = note_with_domains(live)
    file = live.root / path
    original = file.read_text(encoding="utf-8")
    broken = set_domains(original, [UNKNOWN])
    errors: list[str] = []
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            with live.reading():
                total = sum(live.counts().values())
                listed = len(live.diagnostics())
                notes = len(live.vault.notes)
            if total != listed or notes == 0:
                errors.append(f"{total} != {listed}")

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for t in threads:
        t.start()
    seen = []
    live.subscribe(seen.append)
    try:
        for i in range(20):
            file.write_text(broken if i % 2 == 0 else original, encoding="utf-8")
            live.apply([path])
    finally:
        done.set()
        for t in threads:
            t.join()
    assert not errors
    assert len(seen) == 20 and [len(d.new) for d in seen[:2]] == [1, 0]


def test_attachments_change_link_status(live: LiveVault) -> None:
    note = note_with_domains(live)
    file = live.root / note
    file.write_text(file.read_text(encoding="utf-8") + "\n![[schema-test.png]]\n", encoding="utf-8")
    delta = live.apply([note])
    assert [d.rule for d in delta.new] == ["broken-link"]
    image = live.root / "schema-test.png"
    image.write_bytes(b"\x89PNG\r\n")
    delta = live.apply(["schema-test.png"])
    assert delta.files_added == ("schema-test.png",) and delta.vault_changed
    assert [d.rule for d in delta.fixed] == ["broken-link"]
    image.unlink()
    delta = live.apply(["schema-test.png"])
    assert delta.files_removed == ("schema-test.png",)
    assert [d.rule for d in delta.new] == ["broken-link"]


def test_duplicate_slug_and_alias_are_checked_on_both_notes(live: LiveVault) -> None:
    path = note_with_domains(live)
    note = live.note(path)
    if not note.slug or not note.aliases:
        pytest.skip("the chosen note has no slug or alias")
    twin = "50-Technique/jumeau.md"
    (live.root / twin).write_text(
        f"---\ntitle: Jumeau\nslug: {note.slug}\naliases: [{note.aliases[0]}]\n---\nCorps.\n", encoding="utf-8"
    )
    delta = live.apply([twin])
    found = {(d.path, d.rule) for d in delta.new}
    # the other note was not touched on disk, yet its own duplicate findings appear
    assert {(path, "slug-duplicate"), (twin, "slug-duplicate"), (path, "alias-duplicate"), (twin, "alias-duplicate")} <= found
    assert ("slug-duplicate" in {d.rule for d in live.diagnostics(path)})
    (live.root / twin).unlink()
    delta = live.apply([twin])
    assert {(path, "slug-duplicate"), (path, "alias-duplicate")} <= {(d.path, d.rule) for d in delta.fixed}
    assert not [d for d in live.diagnostics(path) if d.rule.endswith("-duplicate")]


def _findings(live: LiveVault) -> list[tuple]:
    return sorted((d.path, d.line, d.column, d.rule, d.message, str(d.severity)) for d in live.diagnostics())


def test_a_start_through_the_lint_cache_finds_what_a_full_lint_finds(sample_vault_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Differential: `use_snapshot=True` (the TUI's and watch's start: the snapshot, then the first lint
    through the lint cache) against a full load and lint of the same folder, cold, warm (nothing changed:
    the stored findings), after a body edit (the cache re-checks that note) and after a note made private
    (a full run). A second way to the same findings, so compared on every step."""
    from vaulttools.lint import cache as lint_cache

    monkeypatch.delenv("VAULTTOOLS_CACHE_DIR", raising=False)
    root = sample_vault_copy
    answered: list[str] = []
    real_answer = lint_cache.LintCache.answer

    def answer(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        ok = real_answer(self, *args, **kwargs)
        answered.append(self.mode if ok else "full")
        return ok

    monkeypatch.setattr(lint_cache.LintCache, "answer", answer)

    def both() -> None:
        cached = LiveVault.load(root, use_snapshot=True)
        cached.save_snapshot()
        assert _findings(cached) == _findings(LiveVault.load(root))

    both()
    both()
    assert answered == ["full", "unchanged"]
    live = LiveVault.load(root)
    path = note_with_domains(live)
    file = root / path
    text = file.read_text(encoding="utf-8")
    file.write_text(set_domains(text, [UNKNOWN]) + "\nUne ligne de plus.\n", encoding="utf-8")
    both()
    assert answered[-1] in ("incremental", "full")
    assert any(d.rule == "unknown-domain" and d.path == path for d in LiveVault.load(root, use_snapshot=True).diagnostics())
    file.write_text(file.read_text(encoding="utf-8").replace("visibility: public", "visibility: private", 1), encoding="utf-8")
    both()
