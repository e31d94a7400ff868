"""Link resolution checked against two peers' own test cases (docs/links.md, "Checked against peers").

* obsidian-export (its test vaults, in `../shared/corpora/peers/obsidian-export`: skipped when absent):
  each input note's export shows where it resolved each link (a relative path) or that it did not; this
  resolver must agree on every link it has a claim about.
* quartz's link-strategy situations (`quartz/util/path.test.ts`, "link strategies"), recreated here as our
  own vault: the same seven files, the same links from the same notes, with what Obsidian does. Quartz's
  "absolute" and "shortest" strategies are Obsidian's two default link formats and agree with it; where
  quartz differs (its "relative" strategy reads a bare name relative to the note, it links to tag and
  folder pages, and it builds a path to a file that does not exist), the case says so.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from grasbot import LinkKind, LinkStatus, Vault
from tests.conftest import CORPORA

# -- quartz's situations ---------------------------------------------------------------------------------

QUARTZ_FILES = ["a/b/c.md", "a/b/d.md", "a/b/index.md", "e/f.md", "e/g/h.md", "index.md", "a/test.png"]

#: (linking note, link target as written, the file Obsidian opens or None, how quartz differs or "")
QUARTZ_CASES: list[tuple[str, str, str | None, str]] = [
    # "absolute" strategy: paths from the vault root
    ("a/b/c.md", "a/b/d", "a/b/d.md", ""),
    ("a/b/c.md", "a/b/index", "a/b/index.md", ""),
    ("a/b/c.md", "e/f", "e/f.md", ""),
    ("a/b/c.md", "e/g/h", "e/g/h.md", ""),
    ("a/b/c.md", "index", "index.md", ""),  # the root file, not a/b/index.md beside the note
    ("a/b/c.md", "index.png", None, "quartz writes a path to a file that does not exist"),
    ("a/b/c.md", "index#abc", "index.md", ""),
    ("a/b/c.md", "tag/test", None, "quartz links to its tag page"),
    ("a/b/c.md", "a/b/c#test", "a/b/c.md", ""),
    ("a/b/c.md", "a/test.png", "a/test.png", ""),
    ("a/b/index.md", "a/b/d", "a/b/d.md", ""),
    ("a/b/index.md", "a/b", None, "quartz links to its folder page"),
    ("a/b/index.md", "index", "index.md", ""),  # the root file, not the note itself
    ("index.md", "index", "index.md", ""),
    ("index.md", "a/b/c", "a/b/c.md", ""),
    ("index.md", "a/b/index", "a/b/index.md", ""),
    # "shortest" strategy: the bare name when it is unique, else the path
    ("a/b/c.md", "d", "a/b/d.md", ""),
    ("a/b/c.md", "h", "e/g/h.md", ""),
    ("a/b/c.md", "a/b/index.png", None, "quartz writes a path to a file that does not exist"),
    ("a/b/c.md", "a/b/index#abc", "a/b/index.md", ""),
    ("a/b/c.md", "test.png", "a/test.png", ""),
    ("a/b/index.md", "h", "e/g/h.md", ""),
    ("a/b/index.md", "d", "a/b/d.md", ""),
    ("index.md", "d", "a/b/d.md", ""),
    ("index.md", "h", "e/g/h.md", ""),
    # "relative" strategy: paths from the linking note's folder
    ("a/b/c.md", "../../e/g/h", "e/g/h.md", ""),
    ("a/b/c.md", "../../a/test.png", "a/test.png", ""),
    ("a/b/c.md", "../../index", "index.md", ""),
    ("a/b/c.md", "../../e/g/h#abc", "e/g/h.md", ""),
    ("a/b/c.md", "../../../e/g/h", None, "quartz counts the note itself as a folder (one `..` more)"),
    ("a/b/c.md", "../../../index", None, "quartz counts the note itself as a folder (one `..` more)"),
    ("a/b/index.md", "../../index", "index.md", ""),
    ("a/b/index.md", "../../e/g/h", "e/g/h.md", ""),
    ("a/b/index.md", "c", "a/b/c.md", ""),
    ("index.md", "e/g/h", "e/g/h.md", ""),
]


@pytest.fixture(scope="module")
def quartz_vault(tmp_path_factory: pytest.TempPathFactory) -> Vault:
    root = tmp_path_factory.mktemp("quartz")
    by_source: dict[str, list[str]] = {}
    for source, target, _, _ in QUARTZ_CASES:
        by_source.setdefault(source, []).append(target)
    for rel in QUARTZ_FILES:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith(".md"):
            links = "\n".join(f"- [[{target}]]" for target in by_source.get(rel, []))
            path.write_text(f"# {rel}\n\n{links}\n", encoding="utf-8")
        else:
            path.write_bytes(b"\x89PNG\r\n\x1a\n")
    return Vault.load(root, exclude=())


@pytest.mark.parametrize(("source", "target", "expected", "quartz"), QUARTZ_CASES)
def test_quartz_link_strategy_situations(quartz_vault: Vault, source: str, target: str, expected: str | None, quartz: str) -> None:
    found = [r for r in quartz_vault.resolutions(source) if r.link.raw == f"[[{target}]]"]
    assert len(found) == 1
    res = found[0]
    assert res.target_path == expected, (source, target, res)
    if expected is None:
        assert res.status is LinkStatus.BROKEN


def test_a_bare_name_that_is_a_root_path_stays_ambiguous(quartz_vault: Vault) -> None:
    """`[[index]]` in a/b/c.md opens index.md (its exact path from the root), and lint still warns:
    another file has the name. The same-folder file comes next among the candidates."""
    res = next(r for r in quartz_vault.resolutions("a/b/c.md") if r.link.raw == "[[index]]")
    assert res.status is LinkStatus.AMBIGUOUS
    assert res.candidates == ("index.md", "a/b/index.md")
    # a name that is no root path and is unique stays a plain link
    assert next(r for r in quartz_vault.resolutions("a/b/c.md") if r.link.raw == "[[d]]").status is LinkStatus.OK


def test_the_root_rule_follows_an_update(tmp_path: Path) -> None:
    """When index.md appears at the root, a link written beside a/b/index.md turns to it; when it goes,
    back to the nearest."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "index.md").write_text("B\n", encoding="utf-8")
    (tmp_path / "a" / "b" / "c.md").write_text("[[index]]\n", encoding="utf-8")
    vault = Vault.load(tmp_path, exclude=())
    vault.prepare_updates()
    assert vault.resolutions("a/b/c.md")[0].target_path == "a/b/index.md"
    (tmp_path / "index.md").write_text("Root\n", encoding="utf-8")
    change = vault.update_file("index.md")
    assert "a/b/c.md" in change.relinked
    assert vault.resolutions("a/b/c.md")[0].target_path == "index.md"
    (tmp_path / "index.md").unlink()
    vault.update_file("index.md")
    assert vault.resolutions("a/b/c.md")[0].target_path == "a/b/index.md"


# -- obsidian-export's test vaults -------------------------------------------------------------------------

EXPORT = CORPORA / "peers" / "obsidian-export"
#: Vaults exported whole (`single-file` and `start-at` export a part of theirs: links out of it are text).
WHOLE_EXPORTS = ("filter-by-tags", "infinite-recursion", "main-samples", "non-ascii", "postprocessors",
                 "same-filename-different-directories")  # fmt: skip
_MD_LINK = re.compile(r"\[(?:\\.|[^\]\\])*\]\(([^)\s]+)\)")


def _export_targets(note_path: str, exported: str) -> set[str]:
    """The vault paths the exported note links to (its links are relative to the note's folder)."""
    out = set()
    for m in _MD_LINK.finditer(exported):
        dest = unquote(m[1]).split("#", 1)[0]
        if dest and ":" not in dest:
            out.add(posixpath.normpath(posixpath.join(posixpath.dirname(note_path), dest)))
    return out


def test_obsidian_export_agrees_on_every_link_it_has_a_claim_about() -> None:
    if not EXPORT.is_dir():
        pytest.skip(f"obsidian-export's test vaults not available at {EXPORT}")
    checked, disagreements = 0, []
    for name in WHOLE_EXPORTS:
        vault = Vault.load(EXPORT / "input" / name, exclude=())
        for path, note in vault.notes.items():
            expected_file = EXPORT / "expected" / name / path
            if not expected_file.is_file():
                continue  # not exported (filtered out): no claim
            exported = expected_file.read_text(encoding="utf-8")
            targets = _export_targets(path, exported)
            for res in vault.resolutions(path):
                kind, target = res.link.kind, res.target_path
                if kind is LinkKind.FRONTMATTER:
                    continue  # obsidian-export leaves frontmatter as it is
                if kind is LinkKind.EMBED and target is not None and vault.notes.get(target) is not None:
                    # a note embedded: its text is inlined (or left out when the embed loops back)
                    # (rewritten by the export: compared on the start of a line of prose)
                    lines = [line.strip()[:18] for line in vault.notes[target].body.splitlines()]
                    agrees = any(len(line) >= 8 and not line.startswith(("#", "-")) and line in exported for line in lines)
                    agrees = agrees or name == "infinite-recursion"  # (the loop is cut where it comes back)
                elif target is None:
                    # broken: exported as text, never as a link to a file of the vault
                    agrees = not any(t in vault.notes or t in vault.files for t in targets if t.endswith(res.link.target))
                else:
                    agrees = target in targets
                checked += 1
                if not agrees:
                    disagreements.append(f"{name}/{path}: {res.link.raw} -> {target} ({res.status.value})")
    assert checked >= 40
    assert not disagreements, "\n".join(disagreements)
