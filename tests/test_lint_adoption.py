"""Adopting the linter on a vault that already exists: baselines, inline suppression, notes and folders as
arguments with the vault found upward, --statistics and -q (issue 18)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO, corpus_path
from vaulttools.cli import main

TAXO_VAULT = REPO / "tests" / "fixtures" / "lint" / "taxo-vault"


def lint(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["lint", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    """A copy of the lint fixture vault (it has findings of every rule), its cache kept out of the folder."""
    root = tmp_path / "v"
    shutil.copytree(TAXO_VAULT, root)
    return root


def rows(out: str) -> list[dict]:
    return json.loads(out)["diagnostics"]


# -- baseline ---------------------------------------------------------------------------------------------


def test_write_baseline_then_baseline_exits_0_and_a_new_finding_is_the_only_one(capsys, vault, tmp_path):
    base = tmp_path / "lint-baseline.json"
    code, out, err = lint(capsys, str(vault), "--write-baseline", str(base))
    assert code == 0 and out == "" and f"Wrote {base}" in err
    data = json.loads(base.read_text(encoding="utf-8"))
    assert data["version"] == 1 and all({"rule", "path", "message", "count"} == set(e) for e in data["findings"])
    code, out, err = lint(capsys, str(vault), "--baseline", str(base), "--format", "json")
    assert code == 0 and rows(out) == []
    assert "baselined" in err and "no longer found" not in err
    # a new broken link: exit 1, and the only finding reported
    note = vault / "projets" / "push-swap.md"
    note.write_text(note.read_text(encoding="utf-8") + "\nVoir [[note-qui-n-existe-pas]].\n", encoding="utf-8")
    code, out, _ = lint(capsys, str(vault), "--baseline", str(base), "--format", "json")
    assert code == 1
    assert [(d["path"], d["rule"]) for d in rows(out)] == [("projets/push-swap.md", "broken-link")]


def test_baseline_ignores_lines_and_counts_gone_entries(capsys, vault, tmp_path):
    base = tmp_path / "b.json"
    assert lint(capsys, str(vault), "--write-baseline", str(base))[0] == 0
    note = vault / "projets" / "docker-notes.md"
    text = note.read_text(encoding="utf-8")
    # lines added above every body finding: they move, they are not new
    note.write_text(text.replace("# Notes Docker\n", "# Notes Docker\n\nUn paragraphe.\n\nUn autre.\n"), encoding="utf-8")
    code, out, _ = lint(capsys, str(vault), "--baseline", str(base), "--format", "json", "--no-cache")
    assert code == 0 and rows(out) == []
    # one broken link fixed: one entry gone, said on stderr
    note.write_text(note.read_text(encoding="utf-8").replace("[[pushswap]]", "[[push-swap]]"), encoding="utf-8")
    code, out, err = lint(capsys, str(vault), "--baseline", str(base), "--format", "json")
    assert rows(out) == [] and "1 entry of it no longer found" in err


def test_baseline_from_the_configuration_and_no_baseline(capsys, vault):
    assert lint(capsys, str(vault), "--write-baseline", str(vault / "lint-baseline.json"))[0] == 0
    (vault / "vaulttools.toml").write_text('[lint]\nbaseline = "lint-baseline.json"\n', encoding="utf-8")
    code, out, _ = lint(capsys, str(vault), "--format", "json")
    assert code == 0 and rows(out) == []
    code, out, _ = lint(capsys, str(vault), "--format", "json", "--no-baseline")
    assert code == 1 and rows(out)


@pytest.mark.parametrize("content, said", [
    (None, "baseline not found"),
    ("{", "invalid JSON"),
    ('{"version": 1, "findings": [{"rule": "x"}]}', "finding 1"),
    ('[]', "not a vaulttools baseline"),
])
def test_a_bad_baseline_is_a_clear_usage_error(capsys, vault, tmp_path, content, said):
    base = tmp_path / "b.json"
    if content is not None:
        base.write_text(content, encoding="utf-8")
    code, out, err = lint(capsys, str(vault), "--baseline", str(base))
    assert code == 2 and out == "" and said in err and str(base) in err and "Traceback" not in err


# -- inline suppression ------------------------------------------------------------------------------------


def _note(vault: Path, body: str) -> Path:
    path = vault / "projets" / "inline.md"
    path.write_text("---\ntitle: Inline\nslug: inline\n---\n" + body, encoding="utf-8")
    return path


_BODY_RULES = {"broken-link", "broken-anchor", "unused-suppression", "unknown-rule"}


def _found(out: str, path: str = "projets/inline.md") -> list[tuple[int, str]]:
    """The body findings of the note (its short frontmatter has taxonomy findings too, not looked at here)."""
    return [(d["line"], d["rule"]) for d in rows(out) if d["path"] == path and d["rule"] in _BODY_RULES]


@pytest.mark.parametrize("cache", [True, False])
def test_inline_suppression_same_line_next_line_bare_and_unused(capsys, vault, cache):
    _note(vault, "\n".join([
        "Un [[lien-casse]] ici. %% vaulttools-ignore: broken-link %%",      # line 5: silenced
        "%% vaulttools-ignore: broken-link %%",                            # line 6: silences line 7
        "Encore [[autre-casse]].",
        "Et [[troisieme-casse]] %% vaulttools-ignore %%",                    # line 8: every rule, used
        "Rien ici. %% vaulttools-ignore: broken-link, broken-anchor %%",   # line 9: both unused
        "Pas [[quatrieme-casse]] %% vaulttools-ignore: broken-anchor %%",  # line 10: unused, link reported
        "%% vaulttools-ignore: brokn-link %%",                             # line 11: no such rule
        "```",
        "%% vaulttools-ignore: broken-link %%",                            # code: text, not a directive
        "```",
        "",
    ]))
    extra = () if cache else ("--no-cache",)
    for _ in range(2):  # the second run answers from the cache: the same findings
        _, out, _ = lint(capsys, str(vault), "--format", "json", *extra)
        assert _found(out) == [(9, "unused-suppression"), (9, "unused-suppression"), (10, "broken-link"),
                               (10, "unused-suppression"), (11, "unknown-rule")]
    messages = {d["message"] for d in rows(out) if d["path"] == "projets/inline.md"}
    assert any("did you mean `broken-link`?" in m for m in messages)


def test_inline_suppression_used_once_fixed_becomes_unused(capsys, vault):
    path = _note(vault, "Un [[lien-casse]] ici. %% vaulttools-ignore: broken-link %%\n")
    _, out, _ = lint(capsys, str(vault), "--format", "json")
    assert _found(out) == []
    path.write_text(path.read_text(encoding="utf-8").replace("[[lien-casse]]", "[[push-swap]]"), encoding="utf-8")
    _, out, _ = lint(capsys, str(vault), "--format", "json")  # an incremental run through the cache
    assert _found(out) == [(5, "unused-suppression")]


def test_unused_suppression_is_not_reported_for_a_rule_that_is_off(capsys, vault):
    _note(vault, "Rien ici. %% vaulttools-ignore: broken-link %%\n")
    _, out, _ = lint(capsys, str(vault), "--format", "json", "--ignore", "broken-link")
    assert _found(out) == []
    _, out, _ = lint(capsys, str(vault), "--format", "json", "--ignore", "unused-suppression")
    assert _found(out) == []


# -- notes and folders as arguments; the vault found upward -------------------------------------------------


def test_a_note_from_inside_the_vault_resolves_links_against_the_whole_vault(capsys, vault, monkeypatch):
    monkeypatch.chdir(vault / "projets")
    code, out, _ = lint(capsys, "docker-notes.md", "--format", "json")
    found = rows(out)
    assert {d["path"] for d in found} == {"projets/docker-notes.md"}
    # its link to push-swap resolves (the other notes are known), its broken one does not
    assert [d["line"] for d in found if d["rule"] == "broken-link"] == [18, 19]
    assert json.loads(out)["vault"] == str(vault.resolve())
    code, text, _ = lint(capsys, "docker-notes.md")
    # the vault is not under the current folder: absolute paths, as for any vault elsewhere
    assert text.splitlines()[0].startswith(f"{vault.resolve()}/projets/docker-notes.md:")
    assert "in 1 of 1 note checked" in text


def test_folders_and_several_notes(capsys, vault, monkeypatch):
    monkeypatch.chdir(vault)
    _, out, _ = lint(capsys, "competences", "projets/push-swap.md", "--format", "json")
    paths = {d["path"] for d in rows(out)}
    assert paths and all(p.startswith("competences/") or p == "projets/push-swap.md" for p in paths)
    assert "projets/push-swap.md" in paths and json.loads(out)["notes"] == 5


def test_paths_that_do_not_exist_or_are_outside_the_vault(capsys, vault, tmp_path):
    code, _, err = lint(capsys, str(vault / "nope.md"))
    assert code == 2 and "nope.md" in err and "Traceback" not in err
    outside = tmp_path / "elsewhere.md"
    outside.write_text("x\n", encoding="utf-8")
    code, _, err = lint(capsys, "--vault", str(vault), str(outside))
    assert code == 2 and "not inside the vault" in err


def test_vault_found_from_a_subfolder_and_vault_option_wins(capsys, vault, tmp_path, monkeypatch):
    _, whole, _ = lint(capsys, str(vault), "--format", "json")
    monkeypatch.chdir(vault / "competences")
    code, out, _ = lint(capsys, "--format", "json")  # no PATH: the vault the current folder is in
    assert json.loads(out)["vault"] == str(vault.resolve()) and json.loads(out)["notes"] == json.loads(whole)["notes"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "n.md").write_text("---\ntitle: n\n---\n", encoding="utf-8")
    code, out, _ = lint(capsys, "--vault", str(other), "--format", "json")
    assert json.loads(out)["vault"] == str(other)


def test_obsidian_folder_beats_a_taxonomy_beside_the_vault(capsys, tmp_path, monkeypatch):
    """This repository's layout: TAXONOMIE.md beside `vault/`, which holds `.obsidian/`."""
    from vaulttools.discovery import find_vault_above

    repo = tmp_path / "repo"
    shutil.copytree(REPO / "vault", repo / "vault")
    shutil.copy2(REPO / "TAXONOMIE.md", repo / "TAXONOMIE.md")
    assert find_vault_above(repo / "vault" / "20-Competences") == (repo / "vault").resolve()
    monkeypatch.chdir(repo)
    _, out, _ = lint(capsys, "vault/20-Competences", "--format", "json")
    assert json.loads(out)["vault"] == str((repo / "vault").resolve())


# -- output -------------------------------------------------------------------------------------------------


def test_statistics_text_and_json(capsys, vault):
    _, out, _ = lint(capsys, str(vault), "--format", "json")
    found = rows(out)
    code, text, _ = lint(capsys, str(vault), "--statistics")
    assert code == 1
    lines = text.splitlines()
    by_rule = {line.split()[1]: int(line.split()[0]) for line in lines[:-1]}
    assert by_rule == {r: sum(d["rule"] == r for d in found) for r in {d["rule"] for d in found}}
    assert lines[-1].startswith(f"{len(found)} findings in ") and "checked" in lines[-1]
    _, js, _ = lint(capsys, str(vault), "--statistics", "--format", "json")
    data = json.loads(js)
    assert {r["rule"]: r["count"] for r in data} == by_rule
    assert sum(r["fixable"] for r in data) == sum(d["fix"] is not None for d in found)
    code, _, err = lint(capsys, str(vault), "--statistics", "--format", "sarif")
    assert code == 2 and "--statistics" in err


def test_quiet_prints_the_findings_only(capsys, vault, tmp_path):
    code, out, err = lint(capsys, str(vault), "-q")
    assert code == 1 and err == ""
    assert out and all(": error " in line or ": warning " in line for line in out.splitlines())
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "a.md").write_text("---\ntitle: a\n---\nx\n", encoding="utf-8")
    assert lint(capsys, str(clean), "-q") == (0, "", "")


def test_no_progress_bar_when_piped_or_not_text(capsys, vault, monkeypatch):
    """The bar is for people at a terminal: never on a pipe, never with a machine format or -q."""
    import vaulttools.commands.lint as command

    monkeypatch.setattr(command, "PROGRESS_MIN_NOTES", 1)
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    shown = []
    real = command._progress
    monkeypatch.setattr(command, "_progress", lambda total: (shown.append(total), real(0))[1])
    _, out, _ = lint(capsys, str(vault), "--no-cache", "--format", "json")
    lint(capsys, str(vault), "--no-cache", "-q")
    lint(capsys, str(vault), "--no-cache")
    assert shown == [0, 0, json.loads(out)["notes"]]


# -- the "done when", on a copy of the real GrasBot vault ---------------------------------------------


def test_done_when_on_the_real_grasbot_vault(capsys, tmp_path, monkeypatch):
    root = tmp_path / "grasbot-vault"
    shutil.copytree(corpus_path("grasbot-vault"), root)
    base = tmp_path / "baseline.json"
    assert lint(capsys, str(root), "--write-baseline", str(base))[0] == 0
    code, out, _ = lint(capsys, str(root), "--baseline", str(base), "--format", "json")
    assert code == 0 and rows(out) == []
    rust = root / "20-Competences" / "ia.md"  # (this vault has no rust.md; the sample vault has)
    text = rust.read_text(encoding="utf-8")
    rust.write_text(text + "\nVoir [[note-inexistante]].\n", encoding="utf-8")
    code, out, _ = lint(capsys, str(root), "--baseline", str(base), "--format", "json")
    assert code == 1 and [(d["path"], d["rule"]) for d in rows(out)] == [("20-Competences/ia.md", "broken-link")]
    rust.write_text(text + "\nVoir [[note-inexistante]]. %% vaulttools-ignore: broken-link %%\n"
                    "Rien. %% vaulttools-ignore: broken-link %%\n", encoding="utf-8")
    code, out, _ = lint(capsys, str(root), "--baseline", str(base), "--format", "json")
    assert [(d["path"], d["rule"]) for d in rows(out)] == [("20-Competences/ia.md", "unused-suppression")]
    monkeypatch.chdir(root)
    code, out, _ = lint(capsys, "20-Competences/ia.md", "--baseline", str(base))
    assert code == 0 and "20-Competences/ia.md" in out


def test_a_note_of_the_sample_vault_from_inside_it(capsys, sample_vault_copy, monkeypatch):
    monkeypatch.chdir(sample_vault_copy)
    code, out, err = lint(capsys, "20-Competences/rust.md")
    assert code in (0, 1) and "not a folder" not in err and "vault not found" not in err
    assert out.splitlines()[-1].endswith("checked, no finding.") or "of 1 note checked" in out


def test_sarif_has_help_uris_and_fixes_that_make_the_fixed_file(capsys, vault, monkeypatch):
    from vaulttools.lint.fixes import fix_bytes
    from vaulttools.lint.urls import rule_url

    monkeypatch.chdir(vault)
    _, out, _ = lint(capsys, "--format", "sarif", "--no-cache")
    run = json.loads(out)["runs"][0]
    assert all(r["helpUri"] == rule_url(r["id"]) for r in run["tool"]["driver"]["rules"])
    _, js, _ = lint(capsys, "--format", "json", "--no-cache")
    fixable = [d for d in rows(js) if d["fix"] is not None]
    with_fixes = [r for r in run["results"] if "fixes" in r]
    assert fixable and len(with_fixes) == len(fixable)
    from grasbot.vault import Vault
    from vaulttools.lint import LintConfig, lint_vault
    from vaulttools.taxonomy import load_taxonomy

    diags = {(d.path, d.line, d.column, d.rule): d for d in
             lint_vault(Vault.load(vault), load_taxonomy(vault / "TAXONOMIE.md"), LintConfig()).diagnostics}
    for r in with_fixes:
        (change,) = r["fixes"][0]["artifactChanges"]
        path = change["artifactLocation"]["uri"]
        region = r["locations"][0]["physicalLocation"]["region"]
        d = diags[(path, region["startLine"], region["startColumn"], r["ruleId"])]
        (rep,) = change["replacements"]
        text = (vault / path).read_text(encoding="utf-8")
        lines = text.split("\n")
        at = lambda line, col: sum(len(x) + 1 for x in lines[: line - 1]) + col - 1  # noqa: E731
        dr = rep["deletedRegion"]
        start, end = at(dr["startLine"], dr["startColumn"]), at(dr["endLine"], dr["endColumn"])
        applied = text[:start] + rep["insertedContent"]["text"] + text[end:]
        assert applied.encode("utf-8") == fix_bytes(path, (vault / path).read_bytes(), [d]).fixed
