"""`vaulttools lint` reports the vault's answering profile (rule `profile-invalid`) where the file is wrong,
with the loader the service uses, in every format and whatever the lint cache holds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from grasbot import PROFILE_FILE
from vaulttools.cli import main

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    dest = tmp_path / "vault"
    shutil.copytree(REPO / "vault", dest)
    return dest


def lint_json(vault: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, list[dict]]:
    code = main(["lint", str(vault), "--format", "json", *extra])
    out = json.loads(capsys.readouterr().out)
    return code, [d for d in out["diagnostics"] if d["rule"] == "profile-invalid"]


def test_a_bad_profile_is_a_finding_at_its_line(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert lint_json(vault, capsys)[1] == []  # no profile: nothing to say (and the cache is filled)
    (vault / PROFILE_FILE).parent.mkdir()
    (vault / PROFILE_FILE).write_text('extends = "textbook"\ntemprature = 0.1\n', encoding="utf-8")
    code, found = lint_json(vault, capsys)  # the cache from the run before must not hide it
    assert code == 1
    assert [(d["path"], d["line"], d["column"], d["severity"]) for d in found] == [(".grasbot/profile.toml", 2, 1, "error")]
    assert found[0]["message"] == "unknown key `temprature` (did you mean `temperature`?)"
    main(["lint", str(vault)])
    assert ".grasbot/profile.toml:2:1: error profile-invalid unknown key `temprature`" in capsys.readouterr().out
    assert lint_json(vault, capsys, "--ignore", "profile-invalid")[1] == []


def test_a_prompt_without_its_placeholder(vault: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (vault / PROFILE_FILE).parent.mkdir()
    (vault / PROFILE_FILE).write_text('name = "svt"\nextends = "textbook"\nsystem_prompt_file = "system.md"\n', encoding="utf-8")
    (vault / PROFILE_FILE).with_name("system.md").write_text("Réponds aux élèves.\n", encoding="utf-8")
    _, found = lint_json(vault, capsys)
    assert [(d["path"], d["line"], d["message"]) for d in found] == [
        (".grasbot/profile.toml", 1, "the system prompt needs the placeholder {citation}")
    ]
    (vault / PROFILE_FILE).with_name("system.md").write_text("Réponds aux élèves. {citation}\n", encoding="utf-8")
    assert lint_json(vault, capsys) == (0, [])
