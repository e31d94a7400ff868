"""The vault rule of every command (vaulttools.discovery, README "The commands"), and output for pipes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


from tests.conftest import REPO
from vaulttools.cli import main
from vaulttools.discovery import resolve_vault


def test_ask_takes_a_first_folder_as_the_vault(capsys, sample_vault_copy, monkeypatch):
    monkeypatch.chdir(sample_vault_copy.parent)
    assert main(["ask", "--json", "vault", "Rust"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["query"] == "Rust" and data["results"][0]["slug"] == "rust"
    # a one-word question is a question, even when a folder has that name
    assert main(["ask", "--json", "vault"]) == 0
    assert json.loads(capsys.readouterr().out)["query"] == "vault"
    # --vault wins: every positional is the question
    assert main(["ask", "--json", "--vault", str(sample_vault_copy), "vault", "Rust"]) == 0
    assert json.loads(capsys.readouterr().out)["query"] == "vault Rust"


def test_ask_from_inside_a_vault_finds_it(capsys, sample_vault_copy, monkeypatch):
    monkeypatch.chdir(sample_vault_copy / "20-Competences")
    assert main(["ask", "--json", "Rust"]) == 0
    assert json.loads(capsys.readouterr().out)["results"][0]["path"] == "20-Competences/rust.md"


def test_eval_and_new_take_the_vault_first(capsys, sample_vault_copy, monkeypatch):
    monkeypatch.chdir(sample_vault_copy.parent)
    questions = REPO / "tests" / "eval" / "sample-questions.yaml"
    assert main(["eval", "--json", "vault", str(questions)]) == 0
    assert json.loads(capsys.readouterr().out)
    assert main(["new", "vault", "competence", "Rust embarqué"]) == 0
    out = capsys.readouterr().out.strip()
    assert Path(out).resolve() == (sample_vault_copy / "20-Competences" / "rust-embarque.md").resolve()
    assert main(["new", "not-a-folder", "competence", "X"]) == 2
    assert "too many arguments" in capsys.readouterr().err


def test_the_order_of_the_rule(tmp_path):
    vault = tmp_path / "v"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / "sub").mkdir()
    env = {"VAULT_DIR": str(tmp_path / "env-vault")}
    assert resolve_vault(str(tmp_path / "opt"), str(vault / "sub"), env, cwd=tmp_path) == tmp_path / "opt"
    assert resolve_vault(None, str(vault / "sub"), env, cwd=tmp_path) == vault.resolve()
    assert resolve_vault(None, None, env, cwd=vault / "sub") == tmp_path / "env-vault"
    assert resolve_vault(None, None, {}, cwd=vault / "sub") == vault.resolve()
    (tmp_path / "w" / "vault").mkdir(parents=True)
    assert resolve_vault(None, None, {}, cwd=tmp_path / "w") == tmp_path / "w" / "vault"


def test_ask_table_piped_is_whole_lines(sample_vault_copy):
    """Piped, no cell is folded or cut: one tab-separated line per note."""
    done = subprocess.run([sys.executable, "-m", "vaulttools.cli", "ask", "--vault", str(sample_vault_copy),
                           "--top-k", "8", "Quels projets dans l'énergie solaire et la télémétrie ?"],
                          capture_output=True, text=True, timeout=60, cwd=sample_vault_copy, env={**os.environ, "COLUMNS": "40"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = lines.index("#\tslug\ttitle\ttype\tscore\tprompt\treasons")
    rows = [line.split("\t") for line in lines[header + 1:] if "\t" in line]
    stems = {p.stem for p in sample_vault_copy.rglob("*.md")}  # the sample vault's slugs are its file names
    assert rows and all(len(r) == 7 for r in rows)
    assert all(r[1] in stems for r in rows)  # whole slugs, never cut at 40 columns


def test_a_taxonomy_above_counts_only_where_the_user_is(tmp_path):
    """A stray TAXONOMIE.md in an upper folder (e.g. /tmp) does not make that folder the vault; from inside a
    vault that has only its TAXONOMIE.md, a note or a folder of it finds it."""
    top = tmp_path / "top"
    (top / "v" / "sub").mkdir(parents=True)
    (top / "TAXONOMIE.md").write_text("# Taxonomie\n", encoding="utf-8")
    note = top / "v" / "sub" / "n.md"
    note.write_text("x\n", encoding="utf-8")
    elsewhere = REPO  # not below `top` (nor below /tmp, which may hold a stray TAXONOMIE.md of its own)
    assert resolve_vault(None, str(top / "v"), {}, cwd=elsewhere) == top / "v"
    assert resolve_vault(None, str(note), {}, cwd=elsewhere) == top / "v" / "sub"
    assert resolve_vault(None, str(note), {}, cwd=top / "v") == top.resolve()
    assert resolve_vault(None, str(top), {}, cwd=elsewhere) == top  # named itself: its own TAXONOMIE.md


def test_a_stray_taxonomy_in_the_home_or_temporary_folder_is_no_vault(tmp_path, monkeypatch):
    """(The temporary folder itself may hold a stray TAXONOMIE.md on this machine: the test passes either way.)"""
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: tmp_path))  # the home folder, for this test
    (tmp_path / "TAXONOMIE.md").write_text("# stray\n", encoding="utf-8")
    work = tmp_path / "work" / "v"
    work.mkdir(parents=True)
    (work / "n.md").write_text("x\n", encoding="utf-8")
    assert resolve_vault(None, str(work / "n.md"), {}, cwd=work) == work
    assert resolve_vault(None, None, {}, cwd=work) == work / "vault"  # nothing found: ./vault, said missing
