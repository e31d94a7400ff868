"""Loading a vault folder: notes, attachments, exclusions, ids, link graph, bad files, incremental updates."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grasbot.links import Resolver
from grasbot.model import LinkStatus
from grasbot.vault import DEFAULT_EXCLUDE, LinkChange, Vault

FIXTURES = Path(__file__).parent / "fixtures" / "engine"


@pytest.fixture()
def links_vault(tmp_path: Path) -> Path:
    target = tmp_path / "vault"
    shutil.copytree(FIXTURES / "links", target, symlinks=True)
    return target


def _write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _statuses(vault: Vault, path: str) -> list[tuple[str, str, str | None]]:
    return [(r.link.raw, r.status.value, r.target_path) for r in vault.resolutions(path)]


# -- loading -------------------------------------------------------------------------------------------


def test_notes_files_and_exclusions() -> None:
    vault = Vault.load(FIXTURES / "links")
    assert list(vault.notes) == sorted(vault.notes)
    assert set(vault.notes) == {
        "Archive/Dup.md",
        "Home.md",
        "Notes/one.md",
        "Notes/two.md",
        "Projects/Alpha.md",
        "Projects/Dup.md",
        "Projects/Some Note.md",
        "Projects/beta.md",
    }
    # README.md, TAXONOMIE.md, templates/, .obsidian/, .trash/ are not notes nor attachments
    assert vault.files == {"attachments/diagram.png"}
    assert vault.problems == []


def test_exclusions_are_configurable(tmp_path: Path) -> None:
    _write(tmp_path, "README.md", "readme")
    _write(tmp_path, "Archive/old/x.md", "---\ntitle: x\n---\n")
    _write(tmp_path, "templates/t.md", "---\ntitle: t\n---\n")
    _write(tmp_path, "keep.md", "---\ntitle: k\n---\n")
    assert set(Vault.load(tmp_path).notes) == {"Archive/old/x.md", "keep.md"}
    custom = Vault.load(tmp_path, exclude=("archive/old",))
    assert set(custom.notes) == {"README.md", "templates/t.md", "keep.md"}
    assert "templates" in DEFAULT_EXCLUDE


def test_every_link_form_resolves_as_expected() -> None:
    vault = Vault.load(FIXTURES / "links")
    got = {(raw, status, target) for raw, status, target in _statuses(vault, "Home.md")}
    expected = {
        ("[[Projects/Alpha]]", "ok", "Projects/Alpha.md"),
        ("[[beta]]", "ok", "Projects/beta.md"),
        ("[[Missing note]]", "broken", None),
        ("[[Alpha]]", "ok", "Projects/Alpha.md"),
        ("[[alpha.md]]", "ok", "Projects/Alpha.md"),
        ("[[Projects/Alpha#Goals first]]", "ok", "Projects/Alpha.md"),
        ("[[Alpha#Goals first#Details]]", "ok", "Projects/Alpha.md"),
        ("[[Alpha#^block-1]]", "ok", "Projects/Alpha.md"),
        ("[[#Intro]]", "ok", "Home.md"),
        ("[[Alpha|the alpha]]", "ok", "Projects/Alpha.md"),
        ("![[diagram.png|300]]", "ok", "attachments/diagram.png"),
        ("![[Alpha#goals  FIRST]]", "ok", "Projects/Alpha.md"),
        ("[md](Projects/Alpha.md#Goals%20first)", "ok", "Projects/Alpha.md"),
        ("[angle](<Projects/Some Note.md>)", "ok", "Projects/Some Note.md"),
        ("[enc](Projects/Some%20Note.md)", "ok", "Projects/Some Note.md"),
        ("[ext](https://example.com)", "external", None),
        ("[[Alpha\\|A]]", "ok", "Projects/Alpha.md"),
        ("[[Dup]]", "ambiguous", "Archive/Dup.md"),
        ("[[Bêta-test]]", "broken", None),
        ("[[Alpha#Nope]]", "broken-anchor", "Projects/Alpha.md"),
        ("[[Alpha#^nope]]", "broken-anchor", "Projects/Alpha.md"),
    }
    assert got == expected
    by_raw = {r.link.raw: r for r in vault.resolutions("Home.md")}
    assert by_raw["[[Bêta-test]]"].alias_of == "Projects/beta.md"
    assert set(by_raw["[[Dup]]"].candidates) == {"Archive/Dup.md", "Projects/Dup.md"}
    # relative markdown link from Projects/Alpha.md: the same-folder Dup, not ambiguous
    assert ("[Dup](Dup.md)", "ok", "Projects/Dup.md") in _statuses(vault, "Projects/Alpha.md")


def test_link_graph() -> None:
    vault = Vault.load(FIXTURES / "links")
    assert vault.outgoing("Home.md") == [
        "Archive/Dup.md",
        "Projects/Alpha.md",
        "Projects/Some Note.md",
        "Projects/beta.md",
        "attachments/diagram.png",
    ]
    assert vault.incoming("Projects/Alpha.md") == ["Home.md"]
    assert vault.incoming("Home.md") == ["Projects/Alpha.md"]
    assert vault.incoming("Projects/Some Note.md") == ["Home.md", "Projects/beta.md"]
    assert vault.incoming("attachments/diagram.png") == ["Home.md"]
    assert vault.outgoing("Notes/one.md") == []


def test_ids() -> None:
    vault = Vault.load(FIXTURES / "links")
    ids = {path: note.id for path, note in vault.notes.items()}
    assert ids["Home.md"] == "home"  # unique slug
    assert ids["Projects/Alpha.md"] == "alpha"
    assert ids["Notes/one.md"] == "one"  # slug shared by two notes: file name
    assert ids["Notes/two.md"] == "two"
    assert ids["Projects/beta.md"] == "beta"  # no slug: file name
    assert ids["Archive/Dup.md"] == "Archive/Dup"  # file names collide: path
    assert ids["Projects/Dup.md"] == "Projects/Dup"
    assert len(set(ids.values())) == len(ids)
    assert vault.note_by_id("home") is vault.notes["Home.md"]
    assert vault.note_by_id("shared") is None


def test_private_notes_never_change_a_public_note_id(tmp_path: Path) -> None:
    (tmp_path / "Competences").mkdir()
    (tmp_path / "Competences/python.md").write_text("---\nslug: python\n---\n[[rust]]\n", encoding="utf-8")
    (tmp_path / "Langages").mkdir()
    (tmp_path / "Langages/rust.md").write_text("---\ntitle: Rust\n---\n", encoding="utf-8")
    # a private note with the public one's slug, one whose slug is the other's file name, one with its file name
    (tmp_path / "perso.md").write_text("---\nslug: python\nvisibility: private\n---\n", encoding="utf-8")
    (tmp_path / "brouillon.md").write_text("---\nslug: rust\nvisibility: private\n---\n", encoding="utf-8")
    (tmp_path / "Archive").mkdir()
    (tmp_path / "Archive/rust.md").write_text("---\nvisibility: private\n---\n", encoding="utf-8")
    # hidden without a readable field (its frontmatter never closes, and says private), with a public file name
    (tmp_path / "Notes").mkdir()
    (tmp_path / "Notes/rust.md").write_text("---\nvisibility: private\n\nbody\n", encoding="utf-8")
    vault = Vault.load(tmp_path)
    ids = {path: note.id for path, note in vault.notes.items()}
    assert ids["Competences/python.md"] == "python" and ids["Langages/rust.md"] == "rust"
    assert ids["perso.md"] == "perso" and ids["brouillon.md"] == "brouillon" and ids["Archive/rust.md"] == "Archive/rust"
    assert ids["Notes/rust.md"] == "Notes/rust"
    assert len(set(ids.values())) == len(ids)
    # the private note made public: now it claims the slug, both fall back; private again: back as before
    perso = tmp_path / "perso.md"
    perso.write_text("---\nslug: python\n---\n", encoding="utf-8")
    vault.update_file(perso)
    assert vault.notes["Competences/python.md"].id == "Competences/python" and vault.notes["perso.md"].id == "perso"
    perso.write_text("---\nslug: python\nvisibility: private\n---\n", encoding="utf-8")
    vault.update_file(perso)
    assert vault.notes["Competences/python.md"].id == "python"
    assert {path: note.id for path, note in vault.notes.items()} == ids


def test_bad_files_become_problems_and_the_rest_loads() -> None:
    vault = Vault.load(FIXTURES / "broken")
    codes = {path: [p.code for p in note.problems] for path, note in vault.notes.items()}
    assert codes == {
        "binary.md": ["binary"],
        "bom-crlf.md": [],
        "empty.md": ["empty"],
        "good.md": [],
        "invalid-yaml.md": ["yaml-error"],
        "latin1.md": ["not-utf8"],
        "list-frontmatter.md": ["not-mapping"],
        "no-frontmatter.md": ["no-frontmatter"],
        "scalar-frontmatter.md": ["not-mapping"],
        "unclosed.md": ["unclosed-frontmatter"],
    }
    assert vault.notes["invalid-yaml.md"].problems[0].line == 4
    assert vault.notes["latin1.md"].problems[0].line == 2
    # links of damaged notes still resolve
    for path in ("invalid-yaml.md", "latin1.md", "no-frontmatter.md", "unclosed.md", "bom-crlf.md"):
        assert [r.status for r in vault.resolutions(path)] == [LinkStatus.OK], path
    bom = vault.notes["bom-crlf.md"]
    assert bom.meta == {"title": "BOM and CRLF", "tags": ["x"]}
    assert bom.links[0].span.line == 6 and bom.links[0].span.column == 5
    assert all(p.path for p in vault.all_problems())


def test_missing_or_wrong_root(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="vault folder not found"):
        Vault.load(tmp_path / "nope")
    file = _write(tmp_path, "file.md", "x")
    with pytest.raises(NotADirectoryError, match="not a folder"):
        Vault.load(file)


def test_symlink_loops_and_broken_links(tmp_path: Path) -> None:
    _write(tmp_path, "a/note.md", "---\ntitle: n\n---\n[[b]]\n")
    _write(tmp_path, "b.md", "---\ntitle: b\n---\n")
    os.symlink(tmp_path / "a", tmp_path / "a" / "loop")  # a/loop -> a
    os.symlink("self.md", tmp_path / "self.md")  # points at itself
    os.symlink(tmp_path / "gone.md", tmp_path / "dangling.md")
    vault = Vault.load(tmp_path)
    assert set(vault.notes) == {"a/note.md", "b.md"}
    messages = {p.path: p.message for p in vault.problems}
    assert "loop" in messages["a/loop"]
    assert "loop" in messages["self.md"]
    assert "broken symbolic link" in messages["dangling.md"]
    assert all(p.code == "unreadable" for p in vault.problems)


def test_fifo_named_md_does_not_hang(tmp_path: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this system")
    os.mkfifo(tmp_path / "pipe.md")
    _write(tmp_path, "ok.md", "---\ntitle: ok\n---\n")
    vault = Vault.load(tmp_path)
    assert set(vault.notes) == {"ok.md"}
    assert [p.path for p in vault.problems] == ["pipe.md"]


def test_file_deleted_during_the_scan(tmp_path: Path) -> None:
    _write(tmp_path, "stays.md", "---\ntitle: s\n---\n[[goes]]\n")
    _write(tmp_path, "goes.md", "---\ntitle: g\n---\n")

    class DeletingVault(Vault):
        def _walk(self, start: str = ""):  # type: ignore[override]
            for rel, full in super()._walk(start):
                if rel == "goes.md":
                    os.remove(full)  # the file disappears between listing and reading
                yield rel, full

    vault = DeletingVault.load(tmp_path)
    assert set(vault.notes) == {"stays.md"}
    assert [(p.path, p.code) for p in vault.problems] == [("goes.md", "unreadable")]
    assert [r.status for r in vault.resolutions("stays.md")] == [LinkStatus.BROKEN]


def test_unreadable_file(tmp_path: Path) -> None:
    if os.name != "posix" or os.geteuid() == 0:
        pytest.skip("permissions are not enforced for root")
    path = _write(tmp_path, "secret.md", "---\ntitle: s\n---\n")
    path.chmod(0)
    try:
        vault = Vault.load(tmp_path)
    finally:
        path.chmod(0o644)
    assert [p.code for p in vault.notes["secret.md"].problems] == ["unreadable"]


def test_nfd_file_names_resolve_from_nfc_links(tmp_path: Path) -> None:
    nfd = unicodedata.normalize("NFD", "Équipe café.md")
    _write(tmp_path, nfd, "---\ntitle: e\n---\n")
    _write(tmp_path, "src.md", "---\ntitle: s\n---\n[[équipe CAFÉ]] [x](%C3%89quipe%20caf%C3%A9.md)\n")
    vault = Vault.load(tmp_path)
    assert [r.target_path for r in vault.resolutions("src.md")] == [nfd, nfd]


def test_load_is_independent_of_hash_seed(tmp_path: Path) -> None:
    script = (
        "import json, sys\n"
        "from grasbot.vault import Vault\n"
        "v = Vault.load(sys.argv[1])\n"
        "print(json.dumps([[p, n.id, [[r.status.value, r.target_path, list(r.candidates)] for r in v.resolutions(p)],"
        " v.incoming(p)] for p, n in v.notes.items()]))\n"
    )
    outputs = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run(
            [sys.executable, "-c", script, str(FIXTURES / "links")], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(run.stdout)
    assert len(outputs) == 1
    assert json.loads(outputs.pop())


# -- incremental updates -------------------------------------------------------------------------------


def _same_as_fresh(vault: Vault) -> None:
    fresh = Vault.load(vault.root)
    assert list(vault.notes) == list(fresh.notes)
    assert vault.files == fresh.files
    for path in fresh.notes:
        assert vault.resolutions(path) == fresh.resolutions(path), path
        assert vault.incoming(path) == fresh.incoming(path), path
        assert vault.outgoing(path) == fresh.outgoing(path), path
        assert vault.notes[path].id == fresh.notes[path].id, path


def test_deleting_a_note_breaks_links_and_creating_it_repairs_them(links_vault: Path) -> None:
    vault = Vault.load(links_vault)
    alpha = links_vault / "Projects" / "Alpha.md"
    saved = alpha.read_text(encoding="utf-8")
    alpha.unlink()
    change = vault.remove_file("Projects/Alpha.md")
    assert change.changed == {"Projects/Alpha.md"}
    assert change.relinked == {"Home.md"}
    assert "Projects/Alpha.md" not in vault.notes
    assert ("[[Alpha]]", "broken", None) in _statuses(vault, "Home.md")
    assert vault.incoming("Home.md") == []
    _same_as_fresh(vault)

    alpha.write_text(saved, encoding="utf-8")
    change = vault.update_file(alpha)  # an absolute path works too
    assert change.changed == {"Projects/Alpha.md"} and change.relinked == {"Home.md"}
    assert ("[[Alpha]]", "ok", "Projects/Alpha.md") in _statuses(vault, "Home.md")
    _same_as_fresh(vault)


def test_editing_a_heading_relinks_the_notes_that_use_it(links_vault: Path) -> None:
    vault = Vault.load(links_vault)
    alpha = links_vault / "Projects" / "Alpha.md"
    alpha.write_text(alpha.read_text(encoding="utf-8").replace("## Goals: first", "## Aims"), encoding="utf-8")
    change = vault.update_file("Projects/Alpha.md")
    assert change.relinked == {"Home.md"}
    assert ("[[Alpha#Goals first#Details]]", "broken-anchor", "Projects/Alpha.md") in _statuses(vault, "Home.md")
    _same_as_fresh(vault)
    # an edit that changes neither headings, block ids nor aliases relinks nobody
    alpha.write_text(alpha.read_text(encoding="utf-8") + "\nMore text.\n", encoding="utf-8")
    assert vault.update_file("Projects/Alpha.md").relinked == set()


def test_a_new_note_with_an_existing_name_makes_links_ambiguous(links_vault: Path) -> None:
    vault = Vault.load(links_vault)
    _write(links_vault, "Other/Some Note.md", "---\ntitle: other\n---\n")
    change = vault.update_file("Other/Some Note.md")
    assert change.relinked == {"Projects/beta.md"}  # Home's links to it use a full path
    beta = vault.resolutions("Projects/beta.md")[0]
    assert beta.status is LinkStatus.AMBIGUOUS and beta.target_path == "Projects/Some Note.md"
    assert vault.notes["Projects/Some Note.md"].id == "Projects/Some Note"  # the stem now collides
    _same_as_fresh(vault)


def test_aliases_and_slugs_update_hints_and_ids(links_vault: Path) -> None:
    vault = Vault.load(links_vault)
    beta = links_vault / "Projects" / "beta.md"
    beta.write_text("---\ntitle: Beta\nslug: home\n---\nBeta.\n", encoding="utf-8")
    change = vault.update_file("Projects/beta.md")
    assert "Home.md" in change.relinked  # the alias hint of [[Bêta-test]] is gone, [[beta]] unchanged
    hint = next(r for r in vault.resolutions("Home.md") if r.link.raw == "[[Bêta-test]]")
    assert hint.alias_of is None
    assert vault.notes["Home.md"].id == "Home"  # the slug `home` is no longer unique
    assert vault.notes["Projects/beta.md"].id == "beta"
    _same_as_fresh(vault)


def test_attachments_and_folders(links_vault: Path) -> None:
    vault = Vault.load(links_vault)
    (links_vault / "attachments" / "diagram.png").unlink()
    change = vault.remove_file("attachments/diagram.png")
    assert change.relinked == {"Home.md"} and change.changed == set()
    (links_vault / "attachments" / "diagram.png").write_bytes(b"")
    assert vault.update_file("attachments/diagram.png").relinked == {"Home.md"}
    shutil.rmtree(links_vault / "Projects")
    change = vault.remove_file("Projects")
    assert change.changed == {"Projects/Alpha.md", "Projects/Dup.md", "Projects/Some Note.md", "Projects/beta.md"}
    assert change.relinked == {"Home.md"}
    _same_as_fresh(vault)


def test_updates_ignore_excluded_paths_and_turn_bad_files_into_problems(links_vault: Path) -> None:
    vault = Vault.load(links_vault)
    _write(links_vault, "templates/New.md", "---\ntitle: t\n---\n[[Alpha]]\n")
    assert vault.update_file("templates/New.md") == LinkChange()
    assert "templates/New.md" not in vault.notes
    (links_vault / "Projects" / "beta.md").write_bytes(b"---\ntitle: [unclosed\n---\n\xff\n")
    vault.update_file("Projects/beta.md")
    assert {p.code for p in vault.notes["Projects/beta.md"].problems} == {"yaml-error", "not-utf8"}
    _same_as_fresh(vault)


def test_vault_problems_are_refreshed_by_updates(tmp_path: Path) -> None:
    os.symlink(tmp_path / "later.md", tmp_path / "link.md")  # dangling for now
    vault = Vault.load(tmp_path)
    assert [p.path for p in vault.problems] == ["link.md"]
    _write(tmp_path, "later.md", "---\ntitle: later\n---\n")
    vault.update_file("later.md")
    vault.update_file("link.md")  # the link now points at a real note
    assert vault.problems == []
    assert set(vault.notes) == {"later.md", "link.md"}


# -- compact storage ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        "---\ntitle: Été — x\ntags: [a, b]\naliases:\n  - un\n---\n# Titre\nCorps ’ [[b]]\n".encode(),
        b"\xef\xbb\xbf---\ntitle: bom\n---\nbody [[b]]\n",
        b"---\ntitle: bad \xff byte\n---\nbody\n",
        b"no frontmatter \xe2\x80\x94 [[b]]\n",
        b"---\nk: &a x\nl: *a\ntags: solo\n---\nbody\n",
        b"",
    ],
)
def test_note_storage_gives_back_what_was_read(raw: bytes) -> None:
    """Text, body, digest and positions read from a note equal what the parser gives for the same bytes,
    whatever the note keeps internally (bytes or str, positions computed on first access)."""
    import hashlib

    from grasbot.markdown.frontmatter import parse_bytes
    from grasbot import read_note

    parsed = parse_bytes(raw, "n.md")
    note = read_note("n.md", raw)
    assert note.text == parsed.text
    assert note.body == parsed.body
    assert note.text.endswith(note.body)
    assert note.digest == hashlib.blake2b(raw, digest_size=16).hexdigest()
    assert note.key_positions == parsed.key_positions
    assert note.item_positions == parsed.item_positions
    assert note.meta == parsed.meta


def test_note_built_by_hand_keeps_its_fields() -> None:
    from grasbot.model import Note

    note = Note(path="a.md", text="---\nx: 1\n---\nbody", meta={"x": 1}, body="body", body_line=4, has_frontmatter=True)
    assert (note.text, note.body, note.digest, note.key_positions, note.links) == ("---\nx: 1\n---\nbody", "body", "", {}, [])
    other = Note("b.md", "text", {}, "unrelated body", 1, False)  # a body that is not the tail of the text
    assert (other.text, other.body) == ("text", "unrelated body")
    other.text = "new text"
    assert (other.text, other.body) == ("new text", "unrelated body")
    assert note != other and note == Note(path="a.md", text="---\nx: 1\n---\nbody", meta={"x": 1}, body="body", body_line=4, has_frontmatter=True)


def test_dropping_a_vault_unfreezes_the_collector(tmp_path: Path) -> None:
    """Vault.load freezes the collector's view of the heap (speed); dropping the vault must undo it, or a
    process that reloads its vault would keep every frozen garbage cycle forever."""
    import gc

    _write(tmp_path, "a.md", "---\ntitle: a\n---\n[[b]]\n")
    _write(tmp_path, "b.md", "b\n")
    vault = Vault.load(tmp_path)
    assert gc.get_freeze_count() > 0
    cycle: list[object] = []
    cycle.append(cycle)  # garbage created while frozen is collectable once unfrozen
    del vault
    assert gc.get_freeze_count() == 0


def test_indexes_stay_right_through_updates_after_a_load(tmp_path: Path) -> None:
    """After a load the reverse indexes are compact tuples; updates turn them back into sets."""
    _write(tmp_path, "a.md", "[[c]] [[b]]\n")
    _write(tmp_path, "b.md", "[[c]]\n")
    _write(tmp_path, "c.md", "# H\n")
    vault = Vault.load(tmp_path)
    assert vault.incoming("c.md") == ["a.md", "b.md"]
    _write(tmp_path, "b.md", "nothing\n")
    vault.update_file("b.md")
    assert vault.incoming("c.md") == ["a.md"]
    (tmp_path / "c.md").unlink()
    change = vault.remove_file("c.md")
    assert change.relinked == {"a.md"}
    assert [r.status for r in vault.resolutions("a.md")] == [LinkStatus.BROKEN, LinkStatus.OK]
    _write(tmp_path, "c.md", "# H\n")
    assert vault.update_file("c.md").relinked == {"a.md"}
    assert vault.incoming("c.md") == ["a.md"]
    assert [r.target_path for r in vault.resolutions("a.md")] == ["c.md", "b.md"]


# -- the load's fast paths against the general ones ------------------------------------------------------

CORPORA = Path(os.environ.get("GRASBOT_CORPORA") or Path(__file__).resolve().parents[2] / "shared" / "corpora")


def _vaults_to_check() -> list[Path]:
    found = [FIXTURES / "links", FIXTURES / "broken", Path(__file__).parents[1] / "vault"]
    found += [CORPORA / name for name in ("obsidian-help-en", "grasbot-vault") if (CORPORA / name).is_dir()]
    return found


@pytest.mark.parametrize("root", _vaults_to_check(), ids=lambda p: p.name)
def test_load_resolves_and_indexes_as_note_by_note_updates_would(root: Path) -> None:
    """`Vault._resolve_all` and `Vault._build_reverse` give exactly what the general path
    (`Resolver.resolve_compact`, then `_set_resolutions` one note at a time) gives."""
    vault = Vault.load(root)
    vault.prepare_updates()
    loaded = (dict(vault._res), dict(vault._out), {k: set(v) for k, v in vault._in.items()},
              {k: set(v) for k, v in vault._dependents.items()}, {k: set(v) for k, v in vault._src_keys.items()})
    vault._res, vault._out, vault._in, vault._dependents, vault._src_keys = {}, {}, {}, {}, {}
    vault._resolver._unique.clear()
    for path, note in vault.notes.items():
        vault._set_resolutions(note, vault._resolver.resolve_compact(note.links, path, vault._anchor_table))
    general = (dict(vault._res), dict(vault._out), {k: set(v) for k, v in vault._in.items()},
               {k: set(v) for k, v in vault._dependents.items()}, {k: set(v) for k, v in vault._src_keys.items()})
    assert loaded == general


def test_a_load_leaves_the_reverse_index_to_the_first_use_that_needs_it(links_vault: Path) -> None:
    """A one-shot command never pays for the backlinks and the reverse index; `incoming`, `update_file` and
    `remove_file` build them first, and `prepare_updates` builds them once, on demand."""
    for first_use in ("incoming", "update_file", "remove_file", "prepare_updates"):
        vault = Vault.load(links_vault)
        assert not vault._reverse_ready and not vault._in and not vault._dependents
        if first_use == "incoming":
            assert vault.incoming("Home.md") == sorted(vault.incoming("Home.md")) != []
        elif first_use == "update_file":
            vault.update_file("Home.md")
        elif first_use == "remove_file":
            vault.remove_file("no-such-file.md")
        else:
            vault.prepare_updates()
        assert vault._reverse_ready and vault._in and vault._dependents
        built = ({k: set(v) for k, v in vault._in.items()}, {k: set(v) for k, v in vault._dependents.items()})
        vault.prepare_updates()  # once only
        assert built == ({k: set(v) for k, v in vault._in.items()}, {k: set(v) for k, v in vault._dependents.items()})


def test_prepare_updates_builds_once_when_two_threads_ask_at_once(links_vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The TUI may ask for backlinks on its UI thread while its first lint prepares the vault for updates."""
    import threading
    import time

    vault = Vault.load(links_vault)
    built = []
    real = Vault._build_reverse

    def slow_build(self: Vault) -> None:
        built.append(threading.get_ident())
        time.sleep(0.05)  # both threads are inside prepare_updates by now
        real(self)

    monkeypatch.setattr(Vault, "_build_reverse", slow_build)
    answers: list[list[str]] = []
    threads = [threading.Thread(target=lambda: answers.append(vault.incoming("Home.md"))) for _ in range(2)]
    threads.append(threading.Thread(target=vault.prepare_updates))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(built) == 1
    assert answers[0] == answers[1] == Vault.load(links_vault).incoming("Home.md") != []


def test_a_load_names_likely_targets_without_the_whole_alias_index(tmp_path: Path) -> None:
    """A load finds a broken link's likely target from a small index of the keys broken links ask for; the
    whole alias index waits for `prepare_updates`, and then equals the one built note by note."""
    _write(tmp_path, "a/Real.md", "---\naliases: [Nick, Other]\n---\n")
    _write(tmp_path, "b/Real Too.md", "---\naliases: [nick]\n---\n")
    _write(tmp_path, "b/Third.md", "---\naliases: [Unused, Unused]\n---\n")
    _write(tmp_path, "b/src.md", "[[Nick]] [[nobody]] [[Other#h]]\n")
    vault = Vault.load(tmp_path)
    assert vault._resolver.alias_owners == {}  # not built by the load
    likely = [(r.link.raw, r.status, r.alias_of) for r in vault.resolutions("b/src.md")]
    assert likely == [("[[Nick]]", LinkStatus.BROKEN, "b/Real Too.md"),  # the nearest of the two owners
                      ("[[nobody]]", LinkStatus.BROKEN, None),
                      ("[[Other#h]]", LinkStatus.BROKEN, "a/Real.md")]
    vault.prepare_updates()
    whole = {k: tuple(v) for k, v in vault._resolver.alias_owners.items()}
    one_by_one = Resolver()
    for path, note in vault.notes.items():
        one_by_one.add_aliases(path, note.aliases)
    assert whole == {k: tuple(v) for k, v in one_by_one.alias_owners.items()}
    assert whole["nick"] == ("a/Real.md", "b/Real Too.md") and whole["unused"] == ("b/Third.md",)
    # and an update after that resolves as a fresh load does
    _write(tmp_path, "b/src.md", "[[Nick]] [[Unused]]\n")
    vault.update_file("b/src.md")
    assert [r.alias_of for r in vault.resolutions("b/src.md")] == ["b/Real Too.md", "b/Third.md"]
    assert vault.resolutions("b/src.md") == Vault.load(tmp_path).resolutions("b/src.md")


def test_the_first_update_after_a_load_keeps_every_index_right(links_vault: Path) -> None:
    vault = Vault.load(links_vault)
    _write(links_vault, "Zed.md", "[[Home]]\n")
    vault.update_file("Zed.md")
    assert "Zed.md" in vault.incoming("Home.md")
    _same_as_fresh(vault)


def test_loaded_notes_keep_links_compactly_and_give_them_back(links_vault: Path) -> None:
    from grasbot.markdown.frontmatter import parse_text
    from grasbot.links import frontmatter_links, parse_body

    vault = Vault.load(links_vault)
    for path, note in vault.notes.items():
        parsed = parse_text(note.text, path)
        expected = frontmatter_links(parsed) + parse_body(parsed.body, parsed.body_line)[0]
        assert note.links == expected, path
        assert [r.link for r in vault.resolutions(path)] == expected, path
    note = next(iter(vault.notes.values()))
    note.links = []  # set by hand: kept as given
    assert note.links == [] and note._link_entries is None


_TARGET_BITS = ["a", "B", "/", ".md", ".MD", "é", "e\u0301", "x.png", " ", "#"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_TARGET_BITS), max_size=6).map("".join))
def test_reverse_index_keys_are_link_keys(target: str) -> None:
    from grasbot.links import link_key
    from grasbot.vault import _link_key_or_none

    assert _link_key_or_none(target) == (link_key(target) if target else None)
