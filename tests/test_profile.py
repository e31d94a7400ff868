"""Answering profiles (grasbot/answer/profile.py): the shipped ones, a vault's own, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from grasbot.answer.profile import PROFILE_FILE, ProfileError, load_profile, profile_problems, shipped


def write_profile(vault: Path, toml: str, **files: str) -> Path:
    folder = vault / PROFILE_FILE.parent
    folder.mkdir(parents=True, exist_ok=True)
    (vault / PROFILE_FILE).write_text(toml, encoding="utf-8")
    for name, text in files.items():
        (folder / name.replace("_", ".")).write_text(text, encoding="utf-8")
    return vault / PROFILE_FILE


def test_the_shipped_profiles() -> None:
    site, book = shipped("site"), shipped("textbook")
    assert site.citation == "slug" and "[push-swap]" in site.system_prompt
    assert "/portfolio pour les projets" in site.system_prompt and "/contact" in site.ungrounded_prompt
    assert site.temperature is None  # the service's own setting
    assert book.citation == "page" and book.temperature == 0.1
    assert "p. 28]" in book.system_prompt and "manuel" in book.system_prompt
    assert "{" not in site.system_prompt + site.ungrounded_prompt + book.system_prompt + book.ungrounded_prompt
    assert site.version != book.version and len(site.version) == 12


def test_default_is_site_and_a_name_picks_a_shipped_profile(tmp_path: Path) -> None:
    assert load_profile(tmp_path).name == "site"
    assert load_profile(tmp_path, "textbook").name == "textbook"
    with pytest.raises(ProfileError, match=r"GRASBOT_PROFILE=textbok: no profile of that name \(did you mean `textbook`\?\)"):
        load_profile(tmp_path, "textbok")


def test_a_vault_profile_extends_a_shipped_one(tmp_path: Path) -> None:
    write_profile(
        tmp_path,
        'name = "lycee"\nextends = "textbook"\ntemperature = 0.2\nsystem_prompt_file = "system.md"\n',
        system_md="Tu aides les élèves du lycée. {citation}",
    )
    profile = load_profile(tmp_path)
    assert profile.name == "lycee" and profile.citation == "page" and profile.temperature == 0.2
    assert profile.system_prompt.startswith("Tu aides les élèves du lycée. Cite tes sources")
    assert profile.ungrounded_prompt == shipped("textbook").ungrounded_prompt
    assert load_profile(tmp_path, "lycee") == profile
    assert load_profile(tmp_path, "site").name == "site"  # a shipped one can still be picked
    assert profile.describe()["origin"] == "vault"
    assert str(tmp_path / ".grasbot" / "system.md") in profile.files


@pytest.mark.parametrize(
    ("toml", "files", "message", "line"),
    [
        ('temprature = 0.1\n', {}, r"unknown key `temprature` \(did you mean `temperature`\?\)", 1),
        ('name = "x"\ncitation = "footnote"\n', {}, r"`citation` must be one of slug, page", 2),
        ('temperature = "hot"\n', {}, r"`temperature` must be a number", 1),
        ('temperature = 7\n', {}, r"between 0 and 2", 1),
        ('name = "x"\nextends = "sit"\n', {}, r"`extends` must name a shipped profile .*did you mean `site`", 2),
        ('system_prompt_file = "s.md"\n', {"s_md": "Réponds. Pas de citation."}, r"system prompt needs the placeholder \{citation\}", 0),
        ('system_prompt_file = "s.md"\n', {"s_md": "{citation} {sources}"}, r"unknown placeholder \{sources\}", 0),
        ('system_prompt_file = "s.md"\n', {"s_md": "{citation} a { b"}, r"stray brace", 0),
        ('ungrounded_prompt = "Rien."\n', {}, r"ungrounded prompt needs the placeholder \{pointers\}", 0),
        ('system_prompt_file = "absent.md"\n', {}, r"prompt file 'absent.md' cannot be read", 1),
        ('system_prompt_file = "../../etc/passwd"\n', {}, r"is outside", 1),
        ('name = \n', {}, r"not valid TOML", 1),
        ('pointers = [{ path = "/a" }]\n', {}, r"each of `pointers` is a table with a `path` and a `label`", 1),
    ],
)
def test_a_bad_profile_is_a_clear_error_naming_the_file_and_line(tmp_path: Path, toml, files, message, line) -> None:
    file = write_profile(tmp_path, toml, **files)
    with pytest.raises(ProfileError, match=message) as caught:
        load_profile(tmp_path)
    assert caught.value.path == file.as_posix() or caught.value.path.endswith(".md")
    assert caught.value.line == line
    problems = profile_problems(tmp_path)
    assert len(problems) == 1 and problems[0].message == caught.value.message


def test_literal_braces_and_an_empty_pointer_list(tmp_path: Path) -> None:
    write_profile(tmp_path, 'pointers = []\nsystem_prompt = "Format {{json}}. {citation}"\nungrounded_prompt = "Rien."\n')
    profile = load_profile(tmp_path)
    assert profile.system_prompt.startswith("Format {json}. Cite") and profile.ungrounded_prompt == "Rien."
    assert profile_problems(tmp_path) == []


def test_a_huge_or_binary_profile_is_refused(tmp_path: Path) -> None:
    file = write_profile(tmp_path, "")
    file.write_bytes(b"# " + b"x" * 300_000)
    with pytest.raises(ProfileError, match="too large"):
        load_profile(tmp_path)
    file.write_bytes(b"name = \"\xff\"\n")
    with pytest.raises(ProfileError, match="not UTF-8"):
        load_profile(tmp_path)
