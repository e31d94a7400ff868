"""`--fix` / `--diff`: what is fixed, and above all what is not touched.

Guarantees checked here on the hand-made nasty vault (comments, block scalars, quoting, and generated CRLF /
BOM / no-final-newline variants) and on copies of the three real corpora: the body is byte-for-byte the same;
every frontmatter line that no fix names is byte-for-byte the same; YAML comments, key order and quoting
style stay; the write is atomic and keeps the file mode; a file changed on disk since it was read is not
overwritten; a second `--fix` changes nothing.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from grasbot.markdown.frontmatter import split_frontmatter
from grasbot.vault import Vault
from tests.conftest import corpus_path
from vaulttools.cli import main
from vaulttools.lint import LintConfig, apply_fixes, lint_vault
from vaulttools.lint.diagnostics import Edit
from vaulttools.lint.fixes import FileChangedError, apply_edits_to_text, fix_bytes, write_fixed
from vaulttools.taxonomy import load_taxonomy

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lint"
NASTY = FIXTURES / "nasty-vault"


def _variants(src: Path, dest: Path, kind: str) -> Path:
    """A copy of `src` with every note turned into CRLF, BOM, or no-final-newline files."""
    shutil.copytree(src, dest)
    for path in dest.rglob("*.md"):
        if path.name == "TAXONOMIE.md":
            continue
        raw = path.read_bytes()
        if kind == "crlf":
            raw = raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        elif kind == "bom":
            raw = b"\xef\xbb\xbf" + raw
        elif kind == "no-eol":
            raw = raw.rstrip(b"\r\n")
        path.write_bytes(raw)
    return dest


def _split(raw: bytes) -> tuple[bytes, list[bytes], bytes]:
    """(prefix with BOM and opening fence, frontmatter lines, closing fence + body) of a note's bytes."""
    text = raw.decode("utf-8")
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    text = text[len(bom):]
    where = split_frontmatter(text)
    assert where is not None and where[1] >= 0
    start, end, _ = where
    return (bom + text[:start]).encode(), text[start:end].encode().splitlines(keepends=True), text[end:].encode()


def _check_lossless(before: bytes, after: bytes, allowed_changed_lines: int) -> None:
    """Outside the frontmatter nothing moved; inside it, only a few lines differ, and the rest are identical."""
    pre_a, fm_a, post_a = _split(before)
    pre_b, fm_b, post_b = _split(after)
    assert pre_a == pre_b
    assert post_a == post_b  # the body, byte for byte (CRLF, trailing spaces, missing final newline...)
    import difflib

    changed = [op for op in difflib.ndiff([l.decode() for l in fm_a], [l.decode() for l in fm_b]) if op[:1] in "+-"]
    removed = [l for l in changed if l.startswith("-")]
    assert len(removed) <= allowed_changed_lines
    # every line of the old frontmatter that is not removed is still there, in order
    kept = [l for l in fm_a if ("- " + l.decode()) not in removed]
    it = iter(fm_b)
    assert all(any(k == b for b in it) for k in kept)


def _fix_cli(root: Path, *extra: str) -> int:
    return main(["lint", str(root), "--no-cache", "--fix", "--exit-zero", *extra])


@pytest.mark.parametrize("kind", ["lf", "crlf", "bom", "no-eol"])
def test_fix_is_lossless_and_idempotent_on_nasty_notes(tmp_path, kind, capsys):
    root = _variants(NASTY, tmp_path / "v", kind) if kind != "lf" else Path(shutil.copytree(NASTY, tmp_path / "v"))
    before = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*.md")}
    assert _fix_cli(root) == 0
    after = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*.md")}
    assert after["clean.md"] == before["clean.md"]  # nothing to fix: not even rewritten
    assert after["empty-fm.md"] == before["empty-fm.md"]
    assert after["TAXONOMIE.md"] == before["TAXONOMIE.md"]
    for name in ("comments.md", "blocks.md", "quoted.md"):
        assert after[name] != before[name], name
        _check_lossless(before[name], after[name], allowed_changed_lines=8)
        if kind == "crlf":
            assert after[name].count(b"\n") == after[name].count(b"\r\n")
        if kind == "bom":
            assert after[name].startswith(b"\xef\xbb\xbf")
    # the second run changes nothing
    assert _fix_cli(root) == 0
    again = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*.md")}
    assert again == after


def test_fix_results_exactly(tmp_path):
    root = Path(shutil.copytree(NASTY, tmp_path / "v"))
    _fix_cli(root)
    comments = (root / "comments.md").read_text(encoding="utf-8")
    assert comments.splitlines()[:18] == [
        "---",
        "# a comment before everything",
        'title: "Comments: everywhere"   # trailing comment on title',
        "slug: comments",
        """tags: [ "docker",  'tri' ]   # flow list, odd spacing""",
        "domains:",
        "  - ia          # upper case",
        "  - devops",
        "  - devops      # a repeat, with a comment: left alone",
        "aliases: ['conteneurs, docker']   # a string with a comma: must stay one alias",
        "answers:",
        "  # a comment inside the list",
        "  - Comment lancer un conteneur ?",
        "priority: 5",
        "visibility: public",
        "---",
        "# Body",
        "",
    ]
    assert "tags: [#NotFrontmatter]   # this is body text and must not change" in comments
    quoted = (root / "quoted.md").read_text(encoding="utf-8")
    assert '  - "data-ia"\n' in quoted and "  - 'docker'\n" in quoted and 'aliases: ["un alias"]' in quoted
    assert "title: 'It''s quoted'" in quoted and 'domains: ["ia"]' in quoted
    blocks = (root / "blocks.md").read_text(encoding="utf-8")
    assert 'tags: ["docker"]' in blocks
    assert "description: |\n  A literal block\n    keeps its indentation   # not a comment\n" in blocks
    assert "  - >-\n    A folded question\n    on two lines ?\n  - Plain question ?\nsummary: >-" in blocks


def test_diff_prints_and_writes_nothing(tmp_path, capsys):
    root = Path(shutil.copytree(NASTY, tmp_path / "v"))
    before = {p: p.read_bytes() for p in root.rglob("*")  if p.is_file()}
    code = main(["lint", str(root), "--no-cache", "--diff"])
    out = capsys.readouterr().out
    assert code == 1  # there is something to fix
    assert "--- a/comments.md" in out and "+slug: comments" in out and "-visibility: PUBLIC" in out
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
    assert not (root / ".vaulttools_cache").exists()


def test_write_keeps_mode_and_refuses_a_file_changed_meanwhile(tmp_path):
    root = Path(shutil.copytree(NASTY, tmp_path / "v"))
    target = root / "quoted.md"
    os.chmod(target, 0o640)
    vault = Vault.load(root)
    tax = load_taxonomy(root / "TAXONOMIE.md")
    result = lint_vault(vault, tax, LintConfig())
    plans = apply_fixes(vault, result.diagnostics, tax, write=False)
    plan = next(p for p in plans if p.path == "quoted.md")
    assert plan.changed and target.read_bytes() == plan.original  # write=False wrote nothing
    # an editor saves the file between our read and our write
    target.write_bytes(plan.original + b"\nedited by someone else\n")
    with pytest.raises(FileChangedError):
        write_fixed(root, plan)
    assert target.read_bytes().endswith(b"edited by someone else\n")
    # through the public API the refusal is reported, not raised, and nothing is written
    fixes = apply_fixes(vault, result.diagnostics, tax)
    # apply_fixes re-reads the file, so it fixes the new content; the refusal path is the race above
    assert all(f.error is None for f in fixes)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert not [p for p in root.iterdir() if p.name.endswith(".vaulttools-tmp")]



def test_fix_writes_through_a_symlink_inside_the_vault_never_outside_and_never_splits_hard_links(tmp_path, capsys):
    root = Path(shutil.copytree(NASTY, tmp_path / "v"))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    plain = Path(shutil.copytree(NASTY, tmp_path / "plain"))  # the same vault without links: what --fix writes
    assert _fix_cli(plain) == 0
    expected = (plain / "quoted.md").read_bytes()
    assert expected != (root / "quoted.md").read_bytes()
    # a note linked to a file inside the vault: followed, written where it points, the link kept
    (root / "sub").mkdir()
    inside = root / "sub" / "real.md"
    (root / "quoted.md").rename(inside)
    (root / "quoted.md").symlink_to(inside)
    # a note linked to a file outside the vault: not a note (symlink-outside-vault), never written
    real = outside / "real.md"
    real.write_bytes(expected.replace(b"Quoted", b"#Quoted"))  # something a fix would change
    escaped_before = real.read_bytes()
    (root / "escaped.md").symlink_to(real)
    twin = outside / "twin.md"
    os.link(root / "comments.md", twin)
    comments_before = twin.read_bytes()

    assert main(["lint", str(root), "--no-cache", "--fix", "--exit-zero"]) == 0
    captured = capsys.readouterr()
    err = captured.err
    # the link is still a link, and the file it points to got the fix
    assert (root / "quoted.md").is_symlink() and os.readlink(root / "quoted.md") == str(inside)
    assert inside.read_bytes() == expected
    # the link out of the vault: skipped and reported, its target untouched
    assert (root / "escaped.md").is_symlink() and real.read_bytes() == escaped_before
    assert "escaped.md:1:1: symbolic link to a target outside the vault" in captured.out + err
    assert not [p for p in outside.iterdir() if p.name.endswith(".vaulttools-tmp")]
    # the hard-linked note is left alone, both names, and the reason is given
    assert (root / "comments.md").read_bytes() == twin.read_bytes() == comments_before
    assert os.stat(twin).st_nlink == 2
    assert "comments.md: has 2 hard links" in err


def test_write_fixed_refuses_a_link_swapped_to_outside_after_the_read(tmp_path):
    """The vault read a note inside; before the write its path became a link out of the vault: refused."""
    from vaulttools.lint.fixes import FileFix, FileNotWritableError, write_fixed

    root = tmp_path / "v"
    root.mkdir()
    outside = tmp_path / "out.md"
    original = b"---\ntags: [A]\n---\n"
    outside.write_bytes(original)
    (root / "n.md").symlink_to(outside)
    fix = FileFix(path="n.md", original=original, fixed=b"---\ntags: [a]\n---\n")
    with pytest.raises(FileNotWritableError, match="outside the vault"):
        write_fixed(root, fix)
    assert outside.read_bytes() == original


def test_stale_edit_is_skipped_not_misapplied():
    text = "---\ntags: [a, b]\n---\nbody\n"
    new, applied, skipped = apply_edits_to_text(text, [Edit("replace-item", "tags", index=1, old="c", new="x")])
    assert new == text and not applied and "changed" in skipped[0][1]


def test_unsafe_structures_are_left_alone():
    text = "---\naliases: |\n  one\n  two\n---\n"
    new, applied, skipped = apply_edits_to_text(text, [Edit("to-list", "aliases", old="one\ntwo\n")])
    assert new == text and skipped
    text = "---\ntags: &t [A]\nother: *t\n---\n"
    new, _, skipped = apply_edits_to_text(text, [Edit("replace-item", "tags", index=0, old="A", new="a")])
    # an anchored list is shared: editing one place would change the other; the read-back check refuses it
    assert new == text or "other: *t" in new
    text = "---\na: 1\na: 2\n---\n"
    new, _, skipped = apply_edits_to_text(text, [Edit("insert-key", "slug", new="x")])
    assert new == text and skipped


def test_fix_bytes_leaves_invalid_utf8_alone():
    raw = b"---\ntags: [\xff]\n---\n"
    from vaulttools.lint.diagnostics import Diagnostic, Fix, Severity

    diag = Diagnostic("x.md", 2, 8, 2, 9, "tag-format", Severity.WARNING, "m",
                      Fix("f", (Edit("replace-item", "tags", index=0, old="\ufffd", new="x"),)))
    out = fix_bytes("x.md", raw, [diag])
    assert out.fixed == raw and out.skipped


@pytest.mark.parametrize("name", ["grasbot-vault", "obsidian-help-en", "obsidian-help-fr"])
def test_fix_on_copies_of_the_real_vaults(tmp_path, name):
    src = corpus_path(name)
    root = Path(shutil.copytree(src, tmp_path / name))
    before = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert _fix_cli(root) == 0
    after = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert set(after) == set(before)
    changed = sorted(p for p in before if before[p] != after[p])
    for path in changed:
        assert path.endswith(".md")
        _check_lossless(before[path], after[path], allowed_changed_lines=4)
    if name == "grasbot-vault":
        # the one fixable thing in that vault: nothing, its lists are well-formed
        assert changed == []
    assert _fix_cli(root) == 0
    assert {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()} == after


def test_fix_with_a_relative_vault_path_reports_what_is_left(tmp_path, monkeypatch, capsys):
    """Adjacent duplicates are fixed over two passes: nothing is said to be left, nothing stale is shown."""
    (tmp_path / "v").mkdir()
    note = tmp_path / "v" / "n.md"
    note.write_bytes(b'---\r\ntitle: A\r\ntags: ["#Rust", rust, Rust]\r\n---\r\nx\r\n')
    monkeypatch.chdir(tmp_path)
    assert main(["lint", "v", "--no-cache", "--fix"]) == 0
    out, err = capsys.readouterr()
    assert note.read_bytes() == b'---\r\ntitle: A\r\ntags: ["rust"]\r\n---\r\nx\r\n'
    assert "not fixed" not in err and "Fixed 5 findings in 1 file." in err
    assert "All good" in out and "#Rust" not in out


def test_fix_and_diff_together_is_a_usage_error(tmp_path, capsys):
    root = Path(shutil.copytree(NASTY, tmp_path / "v"))
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert main(["lint", str(root), "--no-cache", "--fix", "--diff"]) == 2
    assert "--fix and --diff" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before


def test_messages_show_what_the_fix_writes_and_block_scalars_get_no_fix(tmp_path, capsys):
    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "a.md").write_text(
        '---\ntitle: A\naliases: a, b, c\ntags: "#One"\nanswers: |\n  Qui ?\n  Quoi ?\n---\nx\n', encoding="utf-8")
    main(["lint", str(tmp_path / "v"), "--no-cache", "--exit-zero", "--format", "json"])
    import json

    findings = {(f["rule"], f["message"].split(":")[0]): f for f in json.loads(capsys.readouterr().out)["diagnostics"]}
    aliases = findings[("field-type", "`aliases` is a string but must be a list")]
    assert 'write `aliases: ["a, b, c"]` (one item' in aliases["message"]
    tags = findings[("field-type", "`tags` is a string but must be a list")]
    assert 'write `tags: ["#One"]`' in tags["message"]  # valid YAML, as the fix writes it
    answers = findings[("field-type", "`answers` is a string but must be a list")]
    assert answers["fix"] is None and "\n" not in answers["message"] and "Qui ?\\nQuoi ?" in answers["message"]
    assert main(["lint", str(tmp_path / "v"), "--no-cache", "--diff"]) == 1
    diff = capsys.readouterr().out
    assert '+aliases: ["a, b, c"]' in diff and '+tags: ["one"]' in diff and "+answers" not in diff


def test_diff_of_a_name_with_a_space_applies_with_patch_and_git(tmp_path, capsys, monkeypatch):
    """From the folder the command ran in (here: the vault's parent): paths relative to it, `a/` `b/`
    prefixes, a name with a space C-quoted as git quotes it (no trailing tab); real `patch -p1` and `git apply`."""
    import subprocess

    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "Une note.md").write_text("---\ntitle: A\naliases: x\n---\nx\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    main(["lint", "v", "--no-cache", "--diff"])
    diff = capsys.readouterr().out
    assert diff.startswith('--- "a/v/Une note.md"\n+++ "b/v/Une note.md"\n') and "\t" not in diff
    if shutil.which("git") is not None:
        subprocess.run(["git", "init", "-q", "."], cwd=tmp_path, check=True)
        subprocess.run(["git", "apply", "--check", "-"], input=diff.encode(), cwd=tmp_path, check=True)
    if shutil.which("patch") is None:
        pytest.skip("GNU patch is not installed")
    subprocess.run(["patch", "-p1", "--quiet"], input=diff.encode(), cwd=tmp_path, check=True)
    assert (tmp_path / "v" / "Une note.md").read_text(encoding="utf-8") == "---\ntitle: A\naliases: [x]\n---\nx\n"


def test_a_read_only_note_is_not_fixed_even_by_root(tmp_path, capsys):
    root = Path(shutil.copytree(NASTY, tmp_path / "v"))
    target = root / "quoted.md"
    before = target.read_bytes()
    os.chmod(target, 0o444)
    assert main(["lint", str(root), "--no-cache", "--fix", "--exit-zero"]) == 0
    assert target.read_bytes() == before and stat.S_IMODE(os.stat(target).st_mode) == 0o444
    assert "quoted.md: read-only file" in capsys.readouterr().err


def test_output_dash_is_standard_output(tmp_path, capsys, monkeypatch):
    root = Path(shutil.copytree(NASTY, tmp_path / "v"))
    monkeypatch.chdir(tmp_path)
    main(["lint", str(root), "--no-cache", "--exit-zero", "--format", "json", "--output", "-"])
    assert capsys.readouterr().out.startswith('{"version": 1')
    assert not (tmp_path / "-").exists()
