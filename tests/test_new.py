"""`vaulttools new`, the templates and vaulttools.authoring, on real files in tmp_path vaults."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml

from grasbot import Vault, read_note
from vaulttools import authoring
from vaulttools.authoring import (
    NOTE_TYPES,
    NoteExistsError,
    fill_placeholders,
    format_moment,
    slugify,
    starter_aliases,
    unique_slug,
    write_new_file,
)
from vaulttools.cli import main

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "vaulttools" / "templates"  # the one templates folder (README: "Templates in Obsidian")

TAXONOMY = """\
# Taxonomie de test

## Domaines (`domains:`)

Liste fermée. Entre 1 et 3 domaines par note.

| Slug | Libellé |
|---|---|
| `ia` | IA |
| `web` | Web |
| `parcours` | Parcours |
| `energie` | Énergie |

## Tags (`tags:`)

Liste ouverte.

| Tag | Usage |
|---|---|
| `python` | Python |

## Aliases (`aliases:`)

- Entre 3 et 10 aliases par note.

## Answers (`answers:`)

- 2 à 6 answers par note.

## Priority (`priority:`)

Entier de 1 à 10.

## Visibility (`visibility:`)

- `public` : lue par le bot
- `private` : jamais montrée
"""


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    root.mkdir()
    return root


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["new", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def front(path: Path) -> dict:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("\n---\n", 1)[0][4:])


def today_or_yesterday() -> set[dt.date]:
    today = dt.date.today()  # a run across midnight may stamp the day before
    return {today, today - dt.timedelta(days=1)}


# -- creation --------------------------------------------------------------------------------------------


def test_creates_a_private_projet(capsys, vault):
    code, out, err = run(capsys, "projet", "Inception", "--vault", str(vault))
    assert code == 0
    path = vault / "10-Projets" / "inception.md"
    assert out == f"{path}\n"  # the path alone on stdout, for scripts
    assert path.is_file()
    meta = front(path)
    assert meta["title"] == "Inception" and meta["slug"] == "inception" and meta["type"] == "projet"
    assert meta["source"] == "manual" and meta["visibility"] == "private"
    assert meta["updated"] in today_or_yesterday()
    assert meta["answers"] == ["Parle-moi d'Inception", "Comment fonctionne Inception ?", "Qu'est-ce qu'Inception ?"]
    assert meta["aliases"][:2] == ["inception", "projet inception"]
    assert meta["domains"] == [] and meta["tags"] == [] and meta["linked"] == [] and meta["related"] == []
    assert "{{" not in path.read_text(encoding="utf-8")
    assert "private" in err and "visibility: public" in err  # says so, and how to publish
    # The engine loads it without a problem, and as private.
    loaded = Vault.load(vault)
    note = loaded.notes["10-Projets/inception.md"]
    assert note.problems == [] and note.is_private and note.slug == "inception"
    assert [h.text for h in note.headings][:2] == ["Inception", "Résumé"]


@pytest.mark.parametrize("note_type", sorted(NOTE_TYPES))
def test_each_type_goes_to_its_folder_with_its_questions(capsys, vault, note_type):
    code, out, _err = run(capsys, note_type, "Énergie solaire", "--vault", str(vault))
    assert code == 0
    path = Path(out.strip())
    slug = "moc-energie-solaire" if note_type == "moc" else "energie-solaire"
    assert path == vault / NOTE_TYPES[note_type] / f"{slug}.md"
    meta = front(path)
    assert meta["type"] == note_type and meta["slug"] == slug == path.stem
    now = dt.datetime.now()
    expected = [fill_placeholders(a.replace("{title}", "{{title}}"), "Énergie solaire", now) for a in authoring.DEFAULT_ANSWERS[note_type]]
    assert meta["answers"] == expected  # the templates hold the same questions as the fallback
    assert len(meta["answers"]) >= 2 and all("Énergie solaire" in a for a in meta["answers"])
    assert "énergie solaire" in meta["aliases"] and "energie solaire" in meta["aliases"]
    assert read_note(path.relative_to(vault).as_posix(), path.read_bytes()).problems == []


def test_slug_is_unique_in_the_vault(capsys, vault):
    (vault / "30-Parcours").mkdir()
    # A note elsewhere whose frontmatter slug is taken counts, as does a file name in another folder.
    (vault / "30-Parcours" / "autre.md").write_text("---\nslug: 'bot-echecs'\n---\ntexte\n", encoding="utf-8")
    paths = [run(capsys, "projet", "Bot Échecs", "--vault", str(vault))[1].strip() for _ in range(3)]
    assert [Path(p).name for p in paths] == ["bot-echecs-2.md", "bot-echecs-3.md", "bot-echecs-4.md"]
    assert {front(Path(p))["slug"] for p in paths} == {"bot-echecs-2", "bot-echecs-3", "bot-echecs-4"}
    # The starter aliases come from the title, not from the `-2`.
    assert all("bot echecs 2" not in front(Path(p))["aliases"] for p in paths)
    (vault / "50-Technique").mkdir()
    (vault / "50-Technique" / "Cache.md").write_text("# x\n", encoding="utf-8")  # case-insensitive, as links are
    code, out, err = run(capsys, "projet", "cache", "--vault", str(vault))
    assert code == 0 and out.strip().endswith("cache-2.md") and "50-Technique/Cache.md" in err


def test_accents_and_symbols_in_title(capsys, vault):
    title = 'Système d\'exploitation & C++ : le "noyau"'
    code, out, _ = run(capsys, "technique", title, "--vault", str(vault))
    assert code == 0
    path = Path(out.strip())
    assert path.name == "systeme-d-exploitation-et-cpp-le-noyau.md"
    meta = front(path)
    assert meta["title"] == title  # quotes and colon survive: the YAML is written by a YAML emitter
    assert "systeme d exploitation et cpp le noyau" in meta["aliases"]
    assert meta["answers"][0] == f"Comment fonctionne {title} ?"


@pytest.mark.parametrize("title", ["no", "yes", "2024-01-01", "null", "12", "~ x", "#tag: value", "- x", "@x | y"])
def test_yaml_hostile_titles_stay_strings(capsys, vault, title):
    code, out, _ = run(capsys, "projet", title, "--vault", str(vault))
    assert code == 0
    meta = front(Path(out.strip()))  # PyYAML reads YAML 1.1: `no` would be False if left plain
    assert meta["title"] == title
    assert all(isinstance(a, str) for a in meta["aliases"] + meta["answers"])


def test_vault_default_from_environment(capsys, vault, monkeypatch):
    monkeypatch.setenv("VAULT_DIR", str(vault))
    code, out, _ = run(capsys, "competence", "Rust")
    assert code == 0 and Path(out.strip()) == vault / "20-Competences" / "rust.md"
    assert front(vault / "20-Competences" / "rust.md")["answers"][0] == "Quelles sont ses compétences en Rust ?"


def test_existing_folder_spelling_and_hub_link(capsys, vault):
    (vault / "10-projets").mkdir()  # the vault's own spelling of the folder is kept
    (vault / "00-MOC").mkdir()
    (vault / "00-MOC" / "MOC-Projets.md").write_text("---\ntype: moc\n---\n# Projets\n", encoding="utf-8")
    code, out, _ = run(capsys, "projet", "Carnet", "--vault", str(vault))
    assert code == 0 and Path(out.strip()) == vault / "10-projets" / "carnet.md"
    assert front(Path(out.strip()))["linked"] == ["[[MOC-Projets]]"]
    loaded = Vault.load(vault)
    assert [r.status.value for r in loaded.resolutions("10-projets/carnet.md")] == ["ok"]


# -- refusals --------------------------------------------------------------------------------------------


def test_refuses_to_overwrite(capsys, vault):
    target = vault / "10-Projets" / "inception.md"
    target.parent.mkdir()
    target.write_bytes(b"---\ntitle: mine\n---\nkeep me\n")
    code, out, err = run(capsys, "projet", "Autre chose", "--slug", "inception", "--vault", str(vault))
    assert code == 2 and out == ""
    assert f"{target} already exists; not overwriting it" in err
    assert target.read_bytes() == b"---\ntitle: mine\n---\nkeep me\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["inception.md"]  # no temp file left


def test_refuses_a_slug_used_elsewhere(capsys, vault):
    (vault / "notes.md").write_text("---\nslug: inception\n---\n", encoding="utf-8")
    code, _out, err = run(capsys, "projet", "X", "--slug", "inception", "--vault", str(vault))
    assert code == 2 and "already used by notes.md" in err
    assert not (vault / "10-Projets").exists()


def test_rejects_unknown_type(capsys, vault):
    code, out, err = run(capsys, "recette", "Tarte", "--vault", str(vault))
    assert code == 2 and out == ""
    assert "unknown note type 'recette'" in err
    assert "projet, competence, parcours, moc, technique" in err
    assert list(vault.iterdir()) == []


def test_type_ignores_case_and_accents(capsys, vault):
    code, out, _ = run(capsys, "Compétence", "Go", "--vault", str(vault))
    assert code == 0 and Path(out.strip()).parent.name == "20-Competences"


def test_rejects_missing_vault(capsys, tmp_path):
    code, out, err = run(capsys, "projet", "X", "--vault", str(tmp_path / "nowhere"))
    assert code == 2 and out == "" and "vault not found" in err
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["projet", "   "], "the title is empty"),
        (["projet", "deux\nlignes"], "single line"),
        (["projet", "!!!"], "cannot make a slug"),
        (["projet", "X", "--slug", "Pas Kebab"], "not kebab-case; try 'pas-kebab'"),
    ],
)
def test_rejects_bad_titles_and_slugs(capsys, vault, argv, words):
    code, out, err = run(capsys, *argv, "--vault", str(vault))
    assert code == 2 and out == "" and words in err
    assert list(vault.iterdir()) == []


# -- the taxonomy --------------------------------------------------------------------------------------


def test_uses_only_values_the_taxonomy_allows(capsys, vault):
    (vault / "TAXONOMIE.md").write_text(TAXONOMY, encoding="utf-8")
    # moc template has tags: [moc], not in this taxonomy; "Énergie" names the domain `energie`.
    code, out, err = run(capsys, "moc", "Énergie", "--vault", str(vault))
    assert code == 0
    meta = front(Path(out.strip()))
    assert meta["domains"] == ["energie"] and meta["tags"] == []
    assert "guessed energie" in err and "dropped the template's 'moc'" in err
    # parcours template has domains: [parcours], allowed here.
    code, out, err = run(capsys, "parcours", "Formation", "--vault", str(vault))
    assert front(Path(out.strip()))["domains"] == ["parcours"]
    # Nothing to guess: domains stay empty and the output says what to choose from.
    code, out, err = run(capsys, "projet", "Carnet", "--vault", str(vault))
    assert front(Path(out.strip()))["domains"] == []
    assert "domains: 0 now, TAXONOMIE.md asks 1–3; choose from: ia, web, parcours, energie" in err


def test_domain_and_tag_options(capsys, vault):
    (vault / "TAXONOMIE.md").write_text(TAXONOMY, encoding="utf-8")
    code, out, err = run(capsys, "projet", "Carnet", "--domain", "web", "--tag", "python", "--tag", "svelte",
                         "--vault", str(vault))  # fmt: skip
    assert code == 0
    meta = front(Path(out.strip()))
    assert meta["domains"] == ["web"] and meta["tags"] == ["python", "svelte"]
    assert "'svelte' is not listed" in err  # open list: kept, with a word
    code, out, err = run(capsys, "projet", "Autre", "--domain", "cuisine", "--vault", str(vault))
    assert code == 2 and "domains 'cuisine' is not in" in err and "allowed: ia, web, parcours, energie" in err


def test_options_are_written_as_lint_would_have_them(capsys, vault):
    (vault / "TAXONOMIE.md").write_text(TAXONOMY, encoding="utf-8")
    code, out, err = run(capsys, "projet", "Carnet", "--domain", "Énergie", "--tag", "#Python", "--tag", "Deux Mots",
                         "--vault", str(vault))  # fmt: skip
    assert code == 0, err
    meta = front(Path(out.strip()))
    assert meta["domains"] == ["energie"] and meta["tags"] == ["python", "deux-mots"]
    code, out, err = run(capsys, "projet", "Autre", "--domain", "energi", "--vault", str(vault))
    assert code == 2 and "did you mean 'energie'?" in err


def test_taxonomy_above_the_vault_and_explicit(capsys, tmp_path, vault):
    (tmp_path / "TAXONOMIE.md").write_text(TAXONOMY, encoding="utf-8")
    code, out, _ = run(capsys, "competence", "IA", "--vault", str(vault))
    assert front(Path(out.strip()))["domains"] == ["ia"]  # found in the folder above, then guessed
    broken = tmp_path / "broken.md"
    broken.write_text("## Domaines (`domains:`)\n\nListe fermée.\n", encoding="utf-8")
    code, out, err = run(capsys, "competence", "Web", "--vault", str(vault), "--taxonomy", str(broken))
    assert code == 2 and "cannot read the taxonomy" in err and str(broken) in err


def test_unreadable_found_taxonomy_is_a_warning(capsys, vault):
    (vault / "TAXONOMIE.md").write_text("## Domaines (`domains:`)\n\nEntre 4 et 1 domaines.\n", encoding="utf-8")
    code, out, err = run(capsys, "projet", "Carnet", "--vault", str(vault))
    assert code == 0 and Path(out.strip()).is_file()
    assert "taxonomy not used, it cannot be read" in err and "TAXONOMIE.md:3" in err


@pytest.mark.skipif(not (REPO / "vault").is_dir() or not (REPO / "TAXONOMIE.md").is_file(), reason="no sample vault")
def test_new_notes_pass_lint_in_the_sample_vault(capsys, tmp_path):
    """In a copy of the bundled vault, with a domain given, every type gives a note lint has nothing against."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "vault", root / "vault")
    shutil.copy(REPO / "TAXONOMIE.md", root / "TAXONOMIE.md")
    from vaulttools.taxonomy import load_taxonomy

    domain = next(iter(load_taxonomy(root / "TAXONOMIE.md").vocabulary("domains").values))
    created = []
    for note_type in sorted(NOTE_TYPES):
        code, out, _ = run(capsys, note_type, "Atelier de réparation", "--domain", domain, "--vault", str(root / "vault"))
        assert code == 0
        created.append(Path(out.strip()).relative_to(root / "vault").as_posix())
    main(["lint", str(root / "vault"), "--format", "json", "--exit-zero"])
    report = json.loads(capsys.readouterr().out)
    mine = [d for d in report["diagnostics"] if d["path"] in created or d["path"].endswith(tuple(created))]
    assert [d for d in mine if d["severity"] == "error"] == []


# -- templates -----------------------------------------------------------------------------------------


def obsidian_fill(text: str, title: str) -> str:
    """What Obsidian's core Templates plugin does: only its own placeholders, no YAML awareness."""
    text = text.replace("{{title}}", title)
    text = re.sub(r"\{\{date:([^}]*)\}\}", lambda m: format_moment(m.group(1), dt.datetime(2026, 3, 7, 9, 5)), text)
    return text.replace("{{date}}", "2026-03-07").replace("{{time}}", "09:05")


@pytest.mark.parametrize("note_type", sorted(NOTE_TYPES))
def test_templates_work_inside_obsidian(note_type):
    text = (SHIPPED / f"{note_type}.md").read_text(encoding="utf-8")
    assert re.findall(r"\{\{(\w+)", text) and set(re.findall(r"\{\{(\w+)", text)) <= {"title", "date", "time"}
    title = "L'été d'Aurèle #2 [v1] & co"  # a file name Obsidian allows, with YAML-significant characters
    filled = obsidian_fill(text, title)
    meta = yaml.safe_load(filled.split("\n---\n", 1)[0][4:])
    assert meta["title"] == title and meta["slug"] == title  # Obsidian's {{title}} is the file name
    assert meta["type"] == note_type and meta["source"] == "manual" and meta["visibility"] == "private"
    assert str(meta["updated"]) == "2026-03-07"
    for key in ("domains", "tags", "aliases", "answers", "linked", "related"):
        assert isinstance(meta[key], list), key
    assert 1 <= meta["priority"] <= 10
    assert all(a.endswith(("?", title)) or title in a for a in meta["answers"])
    body = filled.split("\n---\n", 1)[1]
    assert body.startswith(f"# {title}\n") and body.count("\n## ") >= 2
    assert read_note(f"x/{note_type}.md", filled.encode("utf-8")).problems == []


def test_one_template_per_note_type_is_shipped():
    assert sorted(p.name for p in SHIPPED.glob("*.md")) == sorted(f"{t}.md" for t in NOTE_TYPES)
    assert not (REPO / "templates").exists()  # one folder: the package's (a copy would drift)


def test_template_lookup_order(capsys, tmp_path):
    root = tmp_path / "repo"
    vault = root / "vault"
    vault.mkdir(parents=True)
    # Nothing beside the vault: the copy shipped with the package.
    code, out, err = run(capsys, "projet", "Un", "--vault", str(vault))
    assert "(built in)" in err
    # The folder above the vault (a repository's own templates/, beside the vault).
    (root / "templates").mkdir()
    (root / "templates" / "projet.md").write_text(
        "---\ntitle: x\nupdated: {{date}}\ntags: [du-depot]\n---\n# {{title}} (dépôt)\n", encoding="utf-8"
    )
    code, out, err = run(capsys, "projet", "Deux", "--vault", str(vault))
    path = Path(out.strip())
    assert code == 0 and path.read_text(encoding="utf-8").endswith("# Deux (dépôt)\n")
    assert front(path)["tags"] == ["du-depot"]  # no taxonomy here: nothing to filter
    assert front(path)["answers"][0] == "Parle-moi de Deux"  # the template has none: the built-in questions
    # VAULT/templates wins over it, and Obsidian's configured folder over both.
    (vault / "templates").mkdir()
    (vault / "templates" / "projet.md").write_text("---\ntitle: x\n---\nvault {{date:YYYY}}\n", encoding="utf-8")
    code, out, _ = run(capsys, "projet", "Trois", "--vault", str(vault))
    years = {str(d.year) for d in today_or_yesterday()}
    assert Path(out.strip()).read_text(encoding="utf-8").rsplit("vault ", 1)[1].strip() in years
    (vault / ".obsidian").mkdir()
    (vault / ".obsidian" / "templates.json").write_text(json.dumps({"folder": "Modèles"}), encoding="utf-8")
    (vault / "Modèles").mkdir()
    (vault / "Modèles" / "projet.md").write_text("---\ntitle: x\n---\nobsidian\n", encoding="utf-8")
    code, out, err = run(capsys, "projet", "Quatre", "--vault", str(vault))
    assert Path(out.strip()).read_text(encoding="utf-8").endswith("---\nobsidian\n") and "Modèles" in err


@pytest.mark.parametrize(
    ("template", "words"),
    [
        ("pas de frontmatter\n", "has no frontmatter"),
        ("---\ntitle: x\n", "not closed"),
        ("---\ntitle: [x\n---\n", "not valid YAML"),
        ("---\n- a\n- b\n---\n", "not a mapping"),
    ],
)
def test_broken_user_template(capsys, vault, template, words):
    (vault / "templates").mkdir()
    (vault / "templates" / "moc.md").write_text(template, encoding="utf-8")
    code, out, err = run(capsys, "moc", "Web", "--vault", str(vault))
    assert code == 2 and out == "" and words in err and str(vault / "templates" / "moc.md") in err


# -- the pieces ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("Mon Projet", "mon-projet"),
        ("Système d'exploitation", "systeme-d-exploitation"),
        ("Cours de C++ moderne", "cours-de-cpp-moderne"),
        ("C# et .NET", "csharp-et-net"),
        ("Œuvre & Cœur", "oeuvre-et-coeur"),
        ("  push_swap  ", "push-swap"),
        ("GrasBot — v3.0", "grasbot-v3-0"),
        ("Notepad++", "notepad"),
        ("日本語のノート", "日本語のノート"),
        ("!!!", ""),
    ],
)
def test_slugify(title, slug):
    assert slugify(title) == slug


def test_slugify_caps_length_at_a_word():
    slug = slugify("mot " * 40)
    assert len(slug) <= 80 and not slug.endswith("-") and slug.startswith("mot-mot")


def test_unique_slug():
    assert unique_slug("a", []) == "a"
    assert unique_slug("a", ["A", "a-2"]) == "a-3"


def test_starter_aliases():
    assert starter_aliases("Énergie Solaire", "energie-solaire", "projet") == [
        "énergie solaire",
        "energie solaire",
        "energie-solaire",
        "projet énergie solaire",
    ]
    assert starter_aliases("Web", "moc-web", "moc") == ["web", "moc web"]


def test_format_moment():
    when = dt.datetime(2026, 3, 7, 15, 4, 9)
    assert format_moment("YYYY-MM-DD", when) == "2026-03-07"
    assert format_moment("DD/MM/YY HH:mm:ss", when) == "07/03/26 15:04:09"
    assert format_moment("D/M/YYYY h:m A", when) == "7/3/2026 3:4 PM"
    assert format_moment("[le] DD [à] HH[h]mm", when) == "le 07 à 15h04"


def test_fill_placeholders():
    when = dt.datetime(2026, 3, 7, 15, 4)
    assert fill_placeholders("{{title}} {{date}} {{time}}", "T", when) == "T 2026-03-07 15:04"
    assert fill_placeholders("{{ title }} {{date:YYYY}} {{time:HH[h]}}", "T", when) == "T 2026 15h"
    assert fill_placeholders("Parle-moi de {{title}}", "Inception", when) == "Parle-moi d'Inception"
    assert fill_placeholders("Que fait-il en {{title}} ?", "IA", when) == "Que fait-il en IA ?"
    assert fill_placeholders("Qu'est-ce que {{title}} ?", "Écluse", when) == "Qu'est-ce qu'Écluse ?"
    assert fill_placeholders("De {{title}}", "Orléans", when) == "D'Orléans"
    assert fill_placeholders("Parle-moi de {{title}}", "Rust", when) == "Parle-moi de Rust"
    assert fill_placeholders("{{unknown}} {{title", "T", when) == "{{unknown}} {{title"


def test_write_new_file_is_exclusive(tmp_path):
    target = tmp_path / "sub" / "n.md"
    write_new_file(target, "un\n")
    assert target.read_text(encoding="utf-8") == "un\n"
    with pytest.raises(NoteExistsError):
        write_new_file(target, "deux\n")
    assert target.read_text(encoding="utf-8") == "un\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["n.md"]


def test_write_new_file_without_hard_links(tmp_path, monkeypatch):
    def no_link(src, dst):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_link)
    target = tmp_path / "n.md"
    write_new_file(target, "un\n")
    assert target.read_text(encoding="utf-8") == "un\n"
    with pytest.raises(NoteExistsError):
        write_new_file(target, "deux\n")
    assert target.read_text(encoding="utf-8") == "un\n" and [p.name for p in tmp_path.iterdir()] == ["n.md"]


def test_lost_race_writes_nothing(tmp_path, monkeypatch):
    """Another writer creates the file between the check and the link: ours must not replace it."""
    target = tmp_path / "n.md"
    real_link = os.link

    def racing_link(src, dst):
        Path(dst).write_text("theirs\n", encoding="utf-8")
        return real_link(src, dst)

    monkeypatch.setattr(os, "link", racing_link)
    with pytest.raises(NoteExistsError):
        write_new_file(target, "ours\n")
    assert target.read_text(encoding="utf-8") == "theirs\n" and [p.name for p in tmp_path.iterdir()] == ["n.md"]


def test_values_that_yaml_would_misread_are_quoted(capsys, vault):
    code, out, _ = run(capsys, "projet", "X", "--tag", "no", "--tag", "2024", "--domain", "null", "--vault", str(vault))
    assert code == 0
    meta = front(Path(out.strip()))
    assert meta["tags"] == ["no", "2024"] and meta["domains"] == ["null"]
