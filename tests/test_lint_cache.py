"""The lint cache: a second run reuses what did not change, and always gives the same findings as a fresh run."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path

import pytest

from grasbot.vault import Vault
from vaulttools.cli import main
from vaulttools.lint import LintConfig, lint_vault
from vaulttools.lint.cache import LintCache
from vaulttools.taxonomy import load_taxonomy

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lint"
TODAY = dt.date(2026, 11, 29)
CONFIG = LintConfig(ignore=frozenset({"answer-not-retrieved"}))


def cached_run(root: Path, config: LintConfig = CONFIG):
    """What `vaulttools lint` does with its cache; returns (how it was answered, findings)."""
    tax = load_taxonomy(root / "TAXONOMIE.md")
    cache = LintCache.open(root, tax, config, today=TODAY)
    result = cache.fast_result(tax, config, today=TODAY)
    if result is None:
        vault = Vault.load(root)
        result = lint_vault(vault, tax, config, cache=cache, today=TODAY)
        cache.record(vault, result, result.answers_checked)
        cache.mode = "full"
    cache.save()
    return cache.mode, result.diagnostics, cache


def fresh_run(root: Path, config: LintConfig = CONFIG):
    return lint_vault(Vault.load(root), load_taxonomy(root / "TAXONOMIE.md"), config, today=TODAY).diagnostics


def bump(path: Path) -> None:
    """Make sure the modification time moves even on coarse clocks."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURES / "taxo-vault", tmp_path / "v"))


def test_unchanged_vault_is_answered_from_the_cache(vault):
    mode, first, _ = cached_run(vault)
    assert mode == "full"
    mode, second, _ = cached_run(vault)
    assert mode == "unchanged" and second == first == fresh_run(vault)
    assert (vault / ".vaulttools_cache" / ".gitignore").read_text(encoding="utf-8").strip().endswith("*")


def test_body_edit_relints_only_that_note(vault):
    cached_run(vault)
    note = vault / "projets/docker-notes.md"
    text = note.read_text(encoding="utf-8")
    # add a line above the frontmatter's end and a broken link: positions move, a finding appears
    note.write_text(text.replace("domains: [devops", "# moved\ndomains: [devops") + "\nVoir [[nulle-part]].\n",
                    encoding="utf-8")
    bump(note)
    mode, diags, cache = cached_run(vault)
    assert mode == "incremental"
    assert diags == fresh_run(vault)
    assert any(d.rule == "broken-link" and "nulle-part" in d.message for d in diags)
    # and the next run is served whole again
    assert cached_run(vault)[0] == "unchanged"


def test_touched_but_identical_file_is_not_relinted(vault):
    cached_run(vault)
    bump(vault / "projets/push-swap.md")
    mode, diags, _ = cached_run(vault)
    assert mode == "unchanged" and diags == fresh_run(vault)


def test_same_size_edit_with_the_old_modification_time_is_seen(vault):
    """`touch -d`, `cp -p`, `rsync -t` and tar put the modification time back; the size may not move
    either. The change time cannot be put back: the edit is still seen."""
    cached_run(vault)
    note = vault / "projets/push-swap.md"
    before = note.stat()
    text = note.read_text(encoding="utf-8")
    # same length: drop as many characters from the end of the body as the edit added
    edited = text.replace("\n---\n", "\nbroken: [\n---\n", 1)
    edited = edited[: len(text)]
    assert len(edited.encode("utf-8")) == before.st_size
    note.write_text(edited, encoding="utf-8")
    os.utime(note, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (note.stat().st_mtime_ns, note.stat().st_size) == (before.st_mtime_ns, before.st_size)
    mode, diags, _ = cached_run(vault)
    assert mode != "unchanged"
    assert diags == fresh_run(vault)
    assert any(d.rule == "frontmatter-invalid" and d.path == "projets/push-swap.md" for d in diags)


@pytest.mark.parametrize("change", ["heading", "alias", "visibility", "new-note", "removed-note", "taxonomy"])
def test_changes_seen_by_other_notes_trigger_a_full_run(vault, change):
    cached_run(vault)
    if change == "heading":  # docker-notes links to push-swap#Algo: a new heading repairs it
        path = vault / "projets/push-swap.md"
        path.write_text(path.read_text(encoding="utf-8") + "\n## Algo\n", encoding="utf-8")
    elif change == "alias":
        path = vault / "projets/push-swap.md"
        path.write_text(path.read_text(encoding="utf-8").replace("  - tri par piles\n", ""), encoding="utf-8")
    elif change == "visibility":
        path = vault / "prive/mon-journal.md"
        path.write_text(path.read_text(encoding="utf-8").replace("private", "public"), encoding="utf-8")
    elif change == "new-note":
        path = vault / "projets/pushswap.md"
        path.write_text("---\ntitle: P\nslug: pushswap\n---\n", encoding="utf-8")
    elif change == "removed-note":
        (vault / "a/index.md").unlink()
        path = None
    else:
        path = vault / "TAXONOMIE.md"
        path.write_text(path.read_text(encoding="utf-8").replace("entre 1 et 3 domaines", "entre 1 et 4 domaines"),
                        encoding="utf-8")
    if path is not None:
        bump(path)
    mode, diags, _ = cached_run(vault)
    assert mode == "full"
    assert diags == fresh_run(vault)


def test_answer_rule_active_means_full_runs_on_change(vault):
    config = LintConfig()
    cached_run(vault, config)
    note = vault / "projets/docker-notes.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nplus\n", encoding="utf-8")
    bump(note)
    mode, diags, _ = cached_run(vault, config)
    assert mode == "full" and diags == fresh_run(vault, config)


def test_unusable_cache_is_ignored(tmp_path, vault, capsys, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x", encoding="utf-8")
    monkeypatch.setenv("VAULTTOOLS_CACHE_DIR", str(blocker))
    code = main(["lint", str(vault), "--format", "json"])
    first = capsys.readouterr().out
    assert code == 1 and json.loads(first)["notes"] == 11
    # a corrupt cache file is ignored too
    monkeypatch.delenv("VAULTTOOLS_CACHE_DIR")
    main(["lint", str(vault), "--format", "json"])
    capsys.readouterr()
    (vault / ".vaulttools_cache" / "lint.bin").write_bytes(b"garbage")
    main(["lint", str(vault), "--format", "json"])
    assert json.loads(capsys.readouterr().out) == json.loads(first)


def test_a_damaged_snapshot_falls_back_to_a_full_run(vault):
    _, first, cache = cached_run(vault)
    note = vault / "projets/docker-notes.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nplus\n", encoding="utf-8")
    bump(note)
    cache.snapshot["notes"]["projets/push-swap.md"] = ("x", ("not", "exports"), ())  # wrong shape
    cache.dirty = True
    cache.save()
    mode, diags, _ = cached_run(vault)
    assert mode == "full" and diags == fresh_run(vault)


def test_no_cache_is_written_into_a_read_only_vault(vault, tmp_path, monkeypatch):
    os.chmod(vault, 0o555)
    try:
        mode, first, _ = cached_run(vault)
        assert not (vault / ".vaulttools_cache").exists()  # even as root, who could write there
        assert first == fresh_run(vault)
        monkeypatch.setenv("VAULTTOOLS_CACHE_DIR", str(tmp_path / "cache"))
        cached_run(vault)
        assert cached_run(vault)[0] == "unchanged"
        assert list((tmp_path / "cache").iterdir())
    finally:
        os.chmod(vault, 0o755)


def cli_report(capsys, root: Path, *args: str) -> tuple[int, str]:
    code = main(["lint", str(root), "--exit-zero", *args])
    return code, capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["json", "text", "github", "sarif"])
def test_reports_from_the_cache_are_the_fresh_reports(vault, capsys, fmt):
    """The stored per-note report parts give the same bytes as a fresh run, also after an incremental run."""
    config = ["--ignore", "answer-not-retrieved", "--format", fmt]
    fresh = cli_report(capsys, vault, "--no-cache", *config)
    assert cli_report(capsys, vault, *config) == fresh  # fills the cache
    assert cli_report(capsys, vault, *config) == fresh  # answered from it
    note = vault / "projets/docker-notes.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nVoir [[nulle-part]].\n", encoding="utf-8")
    bump(note)
    fresh = cli_report(capsys, vault, "--no-cache", *config)
    assert "nulle-part" in fresh[1]
    assert cli_report(capsys, vault, *config) == fresh  # incremental
    assert cli_report(capsys, vault, *config) == fresh  # from the main file and its delta


def test_an_edit_is_saved_as_a_small_delta_beside_the_cache(vault):
    cached_run(vault)
    folder = vault / ".vaulttools_cache"
    main_bytes = (folder / "lint.bin").read_bytes()
    note = vault / "projets/docker-notes.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nVoir [[nulle-part]].\n", encoding="utf-8")
    bump(note)
    mode, diags, _ = cached_run(vault)
    assert mode == "incremental" and diags == fresh_run(vault)
    assert (folder / "lint.bin").read_bytes() == main_bytes  # not rewritten
    assert (folder / "lint.delta").exists()
    mode, diags, _ = cached_run(vault)  # the main file plus its delta: nothing left to re-check
    assert mode == "unchanged" and diags == fresh_run(vault)
    # a delta that cannot be read is ignored: the main file alone is an older, consistent state
    (folder / "lint.delta").write_bytes(b"garbage")
    mode, diags, _ = cached_run(vault)
    assert mode == "incremental" and diags == fresh_run(vault)
    # a full run rewrites the main file and drops the delta
    (vault / "projets/new-note.md").write_text("---\ntitle: N\nslug: new-note\n---\n", encoding="utf-8")
    mode, diags, _ = cached_run(vault)
    assert mode == "full" and diags == fresh_run(vault)
    assert not (folder / "lint.delta").exists()


def test_a_delta_of_another_cache_file_is_ignored(vault):
    cached_run(vault)
    folder = vault / ".vaulttools_cache"
    note = vault / "projets/docker-notes.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nVoir [[nulle-part]].\n", encoding="utf-8")
    bump(note)
    cached_run(vault)
    delta = (folder / "lint.delta").read_bytes()
    # the main file is written again (another day's run, say): the old delta must not be applied to it
    note.write_text(note.read_text(encoding="utf-8").replace("\nVoir [[nulle-part]].\n", "\n"), encoding="utf-8")
    bump(note)
    (vault / "a/index.md").unlink()  # a full run: new main file
    assert cached_run(vault)[0] == "full"
    (folder / "lint.delta").write_bytes(delta)
    mode, diags, _ = cached_run(vault)
    assert mode == "unchanged" and diags == fresh_run(vault)
    assert not any("nulle-part" in d.message for d in diags)


def test_a_relative_and_an_absolute_vault_path_share_the_cache(vault, monkeypatch):
    """The taxonomy's path is part of the cache key: as a resolved path, so that `lint v` and `lint /abs/v`
    (or `--taxonomy` written either way) are one cache, not two that overwrite each other."""
    monkeypatch.chdir(vault.parent)
    mode, first, _ = cached_run(Path(vault.name))
    assert mode == "full"
    mode, second, _ = cached_run(vault.resolve())
    assert mode == "unchanged" and second == first
    tax = load_taxonomy(Path(vault.name) / "TAXONOMIE.md")
    relative = LintCache.open(Path(vault.name), tax, CONFIG, today=TODAY).key
    absolute = LintCache.open(vault.resolve(), load_taxonomy(vault.resolve() / "TAXONOMIE.md"), CONFIG, today=TODAY).key
    assert relative == absolute
