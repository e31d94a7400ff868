"""The linter on the three real vaults (skipped when ../shared/corpora is absent).

For grasbot-vault the expected findings are computed here independently of the linter, the way a careful
reader checks the notes against its TAXONOMIE.md: plain PyYAML on each note, the lists and bounds read off
that file (14 domains, closed; 13 tags, open; 1-4 domains, 3-12 aliases, 2-6 answers; priority 1-10), and the
one unresolved wikilink the corpus README names. The linter must find exactly those, and nothing else of
those kinds. See docs/lint-real-vaults.md.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from pathlib import Path

import yaml

from grasbot.vault import Vault
from tests.conftest import corpus_path
from vaulttools.lint import LintConfig, lint_vault
from vaulttools.taxonomy import load_taxonomy

DOMAINS = {"algorithmique", "c", "cpp", "systeme", "reseau", "web", "devops", "securite", "ia", "graphique", "3d",
           "domotique", "ecole-42", "parcours"}
TAGS = {"moc", "cv", "parcours", "alternance", "reconversion", "data-ia", "42-commun", "42-piscine", "42-tronc", "tri",
        "concurrence", "docker", "makefile"}
COUNTS = {"domains": (1, 4), "aliases": (3, 12), "answers": (2, 6)}


def _notes(root: Path):
    for path in sorted(root.rglob("*.md")):
        rel = path.relative_to(root).as_posix()
        if rel in ("README.md", "TAXONOMIE.md"):
            continue
        text = path.read_text(encoding="utf-8")
        fm = text.split("---\n", 2)[1]
        yield rel, yaml.safe_load(fm)


def _fold(text: str) -> str:
    return " ".join("".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).casefold().split())


def test_grasbot_vault_findings_are_exactly_what_a_reader_finds():
    root = corpus_path("grasbot-vault")
    expected: set[tuple[str, str, str]] = set()
    alias_owners: dict[str, set[str]] = defaultdict(set)
    for rel, meta in _notes(root):
        for tag in meta.get("tags") or []:
            if tag not in TAGS:
                expected.add((rel, "unknown-tag", tag))
        for domain in meta.get("domains") or []:
            if domain not in DOMAINS:
                expected.add((rel, "unknown-domain", domain))
        for field, (low, high) in COUNTS.items():
            n = len(meta.get(field) or [])
            if not low <= n <= high:
                expected.add((rel, f"{field}-count", str(n)))
        if not 1 <= meta.get("priority", 5) <= 10:
            expected.add((rel, "priority-range", str(meta["priority"])))
        for alias in {_fold(str(a)) for a in meta.get("aliases") or []}:  # `- 42` is the alias "42"
            alias_owners[alias].add(rel)
    expected.add(("20-Competences/impression-3d.md", "broken-link", "[[MOC-3d]]"))

    result = lint_vault(Vault.load(root), load_taxonomy(root / "TAXONOMIE.md"), LintConfig())
    got: set[tuple[str, str, str]] = set()
    shared: set[tuple[str, str]] = set()
    for d in result.diagnostics:
        if d.rule in ("unknown-tag", "unknown-domain"):
            got.add((d.path, d.rule, re.match(r"`([^`]*)`", d.message).group(1)))
        elif d.rule.endswith("-count"):
            got.add((d.path, d.rule, d.message.split()[0]))
        elif d.rule == "priority-range":
            got.add((d.path, d.rule, d.message.split("`priority: ")[1].split("`")[0]))
        elif d.rule == "broken-link":
            got.add((d.path, d.rule, d.message.split(":")[0]))
        elif d.rule == "alias-duplicate":
            shared.add((d.path, _fold(re.search(r"alias `([^`]*)`", d.message).group(1))))
        else:
            raise AssertionError(f"unexpected finding {d.rule} on {d.path}:{d.line}: {d.message}")
    assert got == expected
    assert len([e for e in expected if e[1] == "unknown-tag"]) == 45
    assert len([e for e in expected if e[1] == "domains-count"]) == 12
    assert len([e for e in expected if e[1] == "answers-count"]) == 2
    # every alias shared by several notes, on each of them, and nothing else
    assert shared == {(path, alias) for alias, owners in alias_owners.items() if len(owners) > 1 for path in owners}
    # the only error-level findings are the domain counts and the broken link
    assert {d.rule for d in result.diagnostics if d.severity.value == "error"} == {"domains-count", "broken-link"}
    # answer-not-retrieved ran (49 notes, 158 questions) and every note's own questions retrieve it
    assert result.answers_checked and result.notices == []


def test_obsidian_help_vaults_have_no_false_broken_link():
    for name, example in (("obsidian-help-en", "Example"), ("obsidian-help-fr", "Exemple")):
        root = corpus_path(name)
        result = lint_vault(Vault.load(root), None, LintConfig())
        broken = [d for d in result.diagnostics if d.rule == "broken-link"]
        # the help page on links shows the syntax with a note that does not exist, on purpose (corpus README)
        teaching = [d for d in broken if d.path.endswith(("Internal links.md", "Liens internes.md"))]
        assert len(teaching) == 6 and all(example in d.message for d in teaching)
        others = [d for d in broken if d not in teaching]
        if name == "obsidian-help-en":
            assert others == []
        else:
            # a link written with another note's alias: Obsidian does not resolve aliases either (docs/links.md);
            # the message says which note has that alias and how to write the link
            assert len(others) == 1 and "is an alias of Obsidian Web Clipper/Interpréteur.md" in others[0].message
        # no taxonomy: only structural rules
        assert not {d.rule for d in result.diagnostics} & {"unknown-tag", "unknown-domain", "domains-count",
                                                          "answers-count", "aliases-count", "field-missing"}
        assert result.taxonomy is None
