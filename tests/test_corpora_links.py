"""Link resolution on the three real vaults of ../shared/corpora (skipped when the folder is absent).

The expected unresolved links are the ones checked by hand and explained in docs/links.md.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from grasbot.model import LinkStatus
from grasbot.vault import Vault


def _corpora() -> Path | None:
    candidates = []
    if os.environ.get("GRASBOT_CORPORA"):
        candidates.append(Path(os.environ["GRASBOT_CORPORA"]))
    candidates.append(Path(__file__).resolve().parents[1].parent / "shared" / "corpora")
    candidates.append(Path(__file__).resolve().parents[2] / "shared" / "corpora")
    for path in candidates:
        if path.is_dir():
            return path
    return None


CORPORA = _corpora()
pytestmark = pytest.mark.skipif(CORPORA is None, reason="../shared/corpora is not available")

_cache: dict[str, Vault] = {}


def _vault(name: str) -> Vault:
    assert CORPORA is not None
    path = CORPORA / name
    if not path.is_dir():
        pytest.skip(f"corpus {name} is not available")
    if name not in _cache:
        _cache[name] = Vault.load(path)
    return _cache[name]


def _with_status(vault: Vault, status: LinkStatus) -> list[tuple[str, str]]:
    return [
        (path, res.link.raw)
        for path, resolutions in vault.all_resolutions()
        for res in resolutions
        if res.status is status
    ]


def test_help_en_only_the_deliberate_example_links_are_unresolved() -> None:
    vault = _vault("obsidian-help-en")
    assert len(vault.notes) == 173
    assert vault.all_problems() == []
    broken = _with_status(vault, LinkStatus.BROKEN)
    assert broken == [
        ("Linking notes and files/Internal links.md", "[[Example]]"),
        ("Linking notes and files/Internal links.md", "[[Example#Details]]"),
        ("Linking notes and files/Internal links.md", "[[Example|Custom name]]"),
        ("Linking notes and files/Internal links.md", "[[Example#Details|Section name]]"),
        ("Linking notes and files/Internal links.md", "[Custom name](Example.md)"),
        ("Linking notes and files/Internal links.md", "[Section name](Example.md#Details)"),
    ]
    # every heading and block anchor of the English help resolves (Obsidian's loose heading matching)
    assert _with_status(vault, LinkStatus.BROKEN_ANCHOR) == []


def test_help_en_links_in_code_and_escaped_brackets_are_not_links() -> None:
    vault = _vault("obsidian-help-en")
    links = [link for note in vault.notes.values() for link in note.links]
    targets = {link.target for link in links}
    assert "Three laws of motion" not in targets  # only ever shown in inline code
    assert "Wikilinks" not in targets and not any("\\" in link.target for link in links)  # `Use \[\[Wikilinks\]\]`
    assert not any(link.raw.startswith("[[##") or link.raw.startswith("[[^^") for link in links)  # search syntax in code


def test_help_en_same_named_notes_are_ambiguous_and_the_nearest_wins() -> None:
    vault = _vault("obsidian-help-en")
    for path, resolutions in vault.all_resolutions():
        for res in resolutions:
            if res.status is LinkStatus.AMBIGUOUS:
                assert res.link.target == "Security and privacy"
                folder = path.rsplit("/", 1)[0]
                assert res.target_path == f"{folder}/Security and privacy.md"


def test_help_fr_unresolved_links() -> None:
    vault = _vault("obsidian-help-fr")
    assert len(vault.notes) == 173
    assert vault.all_problems() == []
    broken = [
        (path, res.link.raw, res.alias_of)
        for path, resolutions in vault.all_resolutions()
        for res in resolutions
        if res.status is LinkStatus.BROKEN
    ]
    example = "Lier des notes et des fichiers/Liens internes.md"
    assert broken == [
        (example, "[[Exemple]]", None),
        (example, "[[Exemple#Détails]]", None),
        (example, "[[Exemple|Nom personnalisé]]", None),
        (example, "[[Exemple#Détails|Nom de section]]", None),
        (example, "[Nom personnalisé](Exemple.md)", None),
        (example, "[Nom de section](Exemple.md#Détails)", None),
        # an alias of the note itself, not a file name: Obsidian leaves it unresolved too
        (
            "Obsidian Web Clipper/Interpréteur.md",
            "[[Interpréter des pages web#Modèles|modèles]]",
            "Obsidian Web Clipper/Interpréteur.md",
        ),
    ]


_HEADING_LINE = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def _naive(text: str) -> str:
    return " ".join(re.sub(r"[^\w'’ -]+", " ", text.lower()).split())


def test_help_fr_broken_anchors_are_really_missing_from_their_targets() -> None:
    """Each broken anchor is checked against the raw target file with a separate, naive reading."""
    vault = _vault("obsidian-help-fr")
    assert CORPORA is not None
    found = 0
    for _path, resolutions in vault.all_resolutions():
        for res in resolutions:
            if res.status is not LinkStatus.BROKEN_ANCHOR:
                continue
            found += 1
            assert res.target_path is not None and res.link.anchor
            raw = (CORPORA / "obsidian-help-fr" / res.target_path).read_text(encoding="utf-8")
            if res.link.anchor.startswith("^"):
                assert f"^{res.link.anchor[1:]}" not in raw
                continue
            headings = {_naive(m.group(1)) for line in raw.splitlines() if (m := _HEADING_LINE.match(line))}
            wanted = [_naive(part) for part in res.link.anchor.split("#") if part.strip()]
            assert not all(part in headings for part in wanted), res.link.raw
    assert found == 43  # the translation renamed headings the links still use: see docs/links.md


def test_grasbot_vault_has_exactly_one_unresolved_wikilink() -> None:
    vault = _vault("grasbot-vault")
    assert len(vault.notes) == 49
    assert "README.md" not in vault.notes and "TAXONOMIE.md" not in vault.notes
    assert _with_status(vault, LinkStatus.BROKEN) == [("20-Competences/impression-3d.md", "[[MOC-3d]]")]
    assert _with_status(vault, LinkStatus.BROKEN_ANCHOR) == []
    assert _with_status(vault, LinkStatus.AMBIGUOUS) == []
    # ids are the slugs, as the bot cites them
    assert all(note.id == note.slug for note in vault.notes.values())
    assert vault.incoming("00-MOC/MOC-Competences.md")
