"""The vault the lint rules read is a declared interface (vaulttools/lint/view.py), implemented by the real
vault and by every stand-in the incremental paths hand to the rules."""

from __future__ import annotations

import marshal
from pathlib import Path

from grasbot import LinkStatus, Vault, read_note
from vaulttools.lint.cache import _CachedVault
from vaulttools.lint.view import IdentityRowsView, LintVault, NotesView
from vaulttools.live import LiveVault, _LintView, _OneNote


def _vault(tmp_path: Path) -> Path:
    (tmp_path / "a.md").write_text("---\ntitle: A\naliases: [x]\n---\n[[b]] [[nulle-part]]\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("# B\n", encoding="utf-8")
    return tmp_path


def test_the_real_vault_and_the_live_view_are_lint_vaults(tmp_path: Path) -> None:
    root = _vault(tmp_path)
    vault = Vault.load(root)
    assert isinstance(vault, LintVault) and not isinstance(vault, IdentityRowsView)
    live = LiveVault.load(root)
    view = _LintView(live.vault, live._rows)  # what LiveVault hands its linter
    assert isinstance(view, LintVault) and isinstance(view, IdentityRowsView)
    assert [r.status for r in view.link_problems("a.md")] == [LinkStatus.BROKEN]
    one = _OneNote("a.md", vault.notes["a.md"])
    assert isinstance(one, NotesView) and not isinstance(one, LintVault)


def test_the_cached_vault_is_a_lint_vault(tmp_path: Path) -> None:
    root = _vault(tmp_path)
    changed = {"a.md": read_note("a.md", (root / "a.md").read_bytes())}
    names = ({"a": ["a.md"], "b": ["b.md"]}, {})
    snapshot = {"notes": {}, "files": [], "identity": marshal.dumps([]), "names": marshal.dumps(names)}
    cached = _CachedVault(root, snapshot, changed)
    assert isinstance(cached, LintVault) and isinstance(cached, IdentityRowsView)
    problems = cached.link_problems("a.md")
    assert [(r.link.target, r.status) for r in problems] == [("nulle-part", LinkStatus.BROKEN)]


def test_the_tuis_vault_copy_is_what_the_index_reads(tmp_path: Path) -> None:
    from grasbot.search.index import IndexedVault, SearchIndex
    from vaulttools.tui.backend import _VaultSnapshot

    vault = Vault.load(_vault(tmp_path))
    snapshot = _VaultSnapshot(vault)
    assert isinstance(vault, IndexedVault) and isinstance(snapshot, IndexedVault)
    assert SearchIndex.build(snapshot).search("B", 1).hits[0].id == SearchIndex.build(vault).search("B", 1).hits[0].id
