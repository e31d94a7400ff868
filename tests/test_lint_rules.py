"""The lint rules on a hand-made vault that breaks each of them once (tests/fixtures/lint/taxo-vault)."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest

from grasbot.text import fold
from grasbot.vault import Vault
from vaulttools.lint import LintConfig, Severity, lint_notes, lint_vault
from vaulttools.lint.registry import RULE_NAMES
from vaulttools.lint.rules import Suggester, did_you_mean
from vaulttools.taxonomy import load_taxonomy

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "lint"
TAXO_VAULT = FIXTURES / "taxo-vault"
TODAY = dt.date(2026, 11, 29)


def run(root: Path, config: LintConfig | None = None, taxonomy: bool = True):
    vault = Vault.load(root)
    tax = load_taxonomy(root / "TAXONOMIE.md") if taxonomy and (root / "TAXONOMIE.md").exists() else None
    return lint_vault(vault, tax, config or LintConfig(), today=TODAY)


@pytest.fixture(scope="module")
def result():
    return run(TAXO_VAULT)


def found(result, path: str, rule: str) -> list[tuple[int, int, str]]:
    return [(d.line, d.column, d.message) for d in result.diagnostics if d.path == path and d.rule == rule]


def one(result, path: str, rule: str) -> tuple[int, int, str]:
    hits = found(result, path, rule)
    assert len(hits) == 1, (path, rule, hits)
    return hits[0]


def test_clean_note_has_no_finding_but_the_ones_caused_by_others(result):
    # push-swap.md is clean itself; it only shares an alias with ia.md and links to a private note and a
    # missing heading
    rules = sorted(d.rule for d in result.diagnostics if d.path == "projets/push-swap.md")
    assert rules == ["alias-duplicate", "broken-anchor", "private-link"]


def test_frontmatter_invalid_points_at_the_yaml_error(result):
    line, col, message = one(result, "competences/bad-yaml.md", "frontmatter-invalid")
    assert line == 4 and "invalid YAML" in message
    # an unreadable frontmatter produces no other (meaningless) finding
    assert {d.rule for d in result.diagnostics if d.path == "competences/bad-yaml.md"} == {"frontmatter-invalid"}


def test_field_type_scalar_for_list_and_text_priority(result):
    hits = found(result, "projets/docker-notes.md", "field-type")
    assert (7, 10) == hits[0][:2] and "`aliases` is a string" in hits[0][2] and "[conteneurs docker]" in hits[0][2]
    assert (10, 11) == hits[1][:2] and "priority: 7" in hits[1][2]


def test_field_missing_slug_offers_the_file_name(result):
    line, col, message = one(result, "competences/no-slug.md", "field-missing")
    assert (line, col) == (1, 1) and "slug: no-slug" in message


def test_vocabulary_closed_is_error_open_is_warning(result):
    domains = [d for d in result.diagnostics if d.rule == "unknown-domain"]
    tags = [d for d in result.diagnostics if d.rule == "unknown-tag"]
    assert domains and all(d.severity is Severity.ERROR for d in domains)
    assert tags and all(d.severity is Severity.WARNING for d in tags)


def test_unknown_values_point_at_the_item_and_suggest(result):
    hits = found(result, "projets/docker-notes.md", "unknown-domain")
    assert [(l, c) for l, c, _ in hits] == [(5, 19), (5, 23)]
    assert "write it as listed: `ia`" in hits[0][2]
    assert "did you mean `devops`?" in hits[1][2]
    tris = [m for l, c, m in found(result, "projets/docker-notes.md", "unknown-tag") if "`tris`" in m]
    assert tris and "did you mean `tri`?" in tris[0]


def test_no_misleading_suggestion():
    assert did_you_mean("strapi", ["tri", "docker", "moc"]) is None
    assert did_you_mean("Sécurite", ["securite", "ia"]) == "securite"
    assert fold("  École   42 ") == "ecole 42"
    big = Suggester([f"note-{i:05d}" for i in range(5000)], strictness=4)
    assert big.suggest("note-0042") == "note-00042"  # one edit, found through the deletion index
    assert big.suggest("completely-different") is None


def test_tag_format(result):
    hits = found(result, "projets/docker-notes.md", "tag-format")
    assert [(l, c) for l, c, _ in hits] == [(6, 8), (6, 19)]
    assert "write `docker`" in hits[0][2] and "write `machine-learning`" in hits[1][2]


def test_duplicate_items(result):
    line, col, message = one(result, "competences/ia.md", "duplicate-item")
    assert (line, col) == (6, 17) and "data-ia" in message


def test_type_visibility_priority_updated(result):
    assert "did you mean `competence`?" in one(result, "competences/ia.md", "type-value")[2]
    assert one(result, "projets/docker-notes.md", "visibility-value")[:2] == (12, 13)
    assert one(result, "competences/ia.md", "priority-range")[:2] == (10, 11)
    future = one(result, "competences/ia.md", "updated-date")
    assert "future" in future[2]
    assert "not a date" in one(result, "projets/docker-notes.md", "updated-date")[2]


def test_counts(result):
    assert "4 domains" in one(result, "competences/ia.md", "domains-count")[2]
    assert "5 aliases" in one(result, "competences/ia.md", "aliases-count")[2]


def test_slug_rules(result):
    assert "rename the file" in one(result, "competences/ia.md", "slug-mismatch")[2]
    assert "b/index.md" in one(result, "a/index.md", "slug-duplicate")[2]
    assert "a/index.md" in one(result, "b/index.md", "slug-duplicate")[2]
    assert "projets/push-swap.md" in one(result, "competences/ia.md", "alias-duplicate")[2]


def test_link_rules(result):
    broken = found(result, "projets/docker-notes.md", "broken-link")
    assert [(l, c) for l, c, _ in broken] == [(18, 64), (19, 9)]
    assert "did you mean projets/push-swap.md" in broken[0][2]
    assert "[[push-swap|tri par piles]]" in broken[1][2]  # the alias's note, and how to write the link
    assert one(result, "projets/docker-notes.md", "broken-anchor")[:2] == (18, 91)
    assert "[[a/index]]" in one(result, "projets/docker-notes.md", "ambiguous-link")[2]
    assert "prive/mon-journal.md" in one(result, "projets/push-swap.md", "private-link")[2]


def test_suppression_and_unknown_rule(result):
    assert found(result, "competences/suppressed.md", "slug-mismatch") == []
    assert found(result, "competences/suppressed.md", "unknown-domain") == []
    assert found(result, "competences/suppressed.md", "aliases-count") == []  # 2 aliases: within 1-4
    assert "did you mean `answers-count`?" in one(result, "competences/ia.md", "unknown-rule")[2]


def test_every_finding_names_a_registered_rule_and_is_sorted(result):
    assert {d.rule for d in result.diagnostics} <= set(RULE_NAMES)
    keys = [d.sort_key for d in result.diagnostics]
    assert keys == sorted(keys)


def test_no_taxonomy_gives_structural_rules_only():
    res = run(TAXO_VAULT, taxonomy=False)
    rules = {d.rule for d in res.diagnostics}
    assert not rules & {"unknown-domain", "unknown-tag", "domains-count", "aliases-count", "answers-count",
                        "priority-range", "field-missing", "type-value"}
    assert {"broken-link", "slug-mismatch", "field-type", "visibility-value"} <= rules
    assert res.taxonomy is None


def test_select_and_ignore():
    res = run(TAXO_VAULT, LintConfig(select=frozenset({"broken-link"})))
    assert {d.rule for d in res.diagnostics} == {"broken-link"}
    res = run(TAXO_VAULT, LintConfig(ignore=frozenset({"broken-link", "alias-duplicate"})))
    assert not {d.rule for d in res.diagnostics} & {"broken-link", "alias-duplicate"}


def test_severity_override():
    res = run(TAXO_VAULT, LintConfig(severity={"alias-duplicate": Severity.ERROR}))
    assert all(d.severity is Severity.ERROR for d in res.diagnostics if d.rule == "alias-duplicate")


def test_answer_not_retrieved(tmp_path):
    root = tmp_path / "v"
    shutil.copytree(TAXO_VAULT, root)
    # ia.md claims a question that push-swap.md answers far better (alias, title, slug and the same answer)
    text = (root / "competences/ia.md").read_text(encoding="utf-8")
    text = text.replace("Quelle est la recette de la tarte aux pommes de grand-mère ?", "Comment fonctionne push swap ?")
    (root / "competences/ia.md").write_text(text, encoding="utf-8")
    res = run(root, LintConfig(select=frozenset({"answer-not-retrieved"}), answer_top_k=1))
    hits = found(res, "competences/ia.md", "answer-not-retrieved")
    assert len(hits) == 1 and hits[0][:2] == (9, 5) and "push-swap" in hits[0][2]
    # push-swap.md's own identical question does bring it first
    assert found(res, "projets/push-swap.md", "answer-not-retrieved") == []
    # private notes are never checked (never retrieved by design)
    assert found(res, "prive/mon-journal.md", "answer-not-retrieved") == []


def test_answer_check_limit_skips_with_a_notice():
    res = run(TAXO_VAULT, LintConfig(answer_check_limit=1))
    assert not [d for d in res.diagnostics if d.rule == "answer-not-retrieved"]
    assert any("answer-not-retrieved skipped" in n for n in res.notices)
    res = run(TAXO_VAULT, LintConfig(answer_check_limit=1, select=frozenset({"answer-not-retrieved"})))
    assert [d for d in res.diagnostics if d.rule == "answer-not-retrieved"]


def test_lint_notes_reports_only_given_paths_but_sees_the_vault():
    vault = Vault.load(TAXO_VAULT)
    tax = load_taxonomy(TAXO_VAULT / "TAXONOMIE.md")
    diags = lint_notes(vault, tax, ["a/index.md"], today=TODAY)
    assert {d.path for d in diags} == {"a/index.md"}
    assert any(d.rule == "slug-duplicate" for d in diags)  # needs b/index.md to know


def test_lint_notes_after_update_file(tmp_path):
    root = tmp_path / "v"
    shutil.copytree(TAXO_VAULT, root)
    vault = Vault.load(root)
    tax = load_taxonomy(root / "TAXONOMIE.md")
    assert any(d.rule == "broken-link" for d in lint_notes(vault, tax, ["projets/docker-notes.md"], today=TODAY))
    (root / "projets/pushswap.md").write_text("---\ntitle: x\nslug: pushswap\n---\nnew\n", encoding="utf-8")
    change = vault.update_file(root / "projets/pushswap.md")
    diags = lint_notes(vault, tax, change.changed | change.relinked, today=TODAY)
    assert not [d for d in diags if d.rule == "broken-link" and "[[pushswap]]" in d.message]


def test_results_are_deterministic():
    first = run(TAXO_VAULT).diagnostics
    second = run(TAXO_VAULT).diagnostics
    assert first == second


def test_broken_and_odd_files_never_crash(tmp_path):
    root = tmp_path / "v"
    root.mkdir()
    (root / "binary.md").write_bytes(b"\x00\x01\x02")
    (root / "latin1.md").write_bytes("---\ntitle: caf\xe9\n---\n".encode("latin-1"))
    (root / "list.md").write_text("---\n- a\n- b\n---\n", encoding="utf-8")
    (root / "unclosed.md").write_text("---\ntitle: x\n", encoding="utf-8")
    (root / "empty.md").write_text("", encoding="utf-8")
    (root / "nested.md").write_text("---\ntags: {a: 1}\naliases: [[x]]\nvisibility: [public]\n---\n", encoding="utf-8")
    res = run(root)
    rules = {(d.path, d.rule) for d in res.diagnostics}
    for path in ("binary.md", "latin1.md", "list.md", "unclosed.md"):
        assert (path, "frontmatter-invalid") in rules
    assert ("nested.md", "field-type") in rules
    assert not any(d.path == "empty.md" for d in res.diagnostics)


def test_lint_notes_sees_alias_changes_of_other_notes(tmp_path):
    root = tmp_path / "v"
    shutil.copytree(TAXO_VAULT, root)
    vault = Vault.load(root)
    tax = load_taxonomy(root / "TAXONOMIE.md")
    assert any(d.rule == "alias-duplicate" for d in lint_notes(vault, tax, ["projets/push-swap.md"], today=TODAY))
    ia = root / "competences/ia.md"
    ia.write_text(ia.read_text(encoding="utf-8").replace("push swap, ", ""), encoding="utf-8")
    vault.update_file(ia)
    assert not any(d.rule == "alias-duplicate" for d in lint_notes(vault, tax, ["projets/push-swap.md"], today=TODAY))


def test_suggestions_among_many_names_find_every_one_edit_neighbour():
    """Past `Suggester.LARGE` choices, candidates come from an index of halves: check it against brute force."""
    import random

    from grasbot.text import edit_distance, fold
    from vaulttools.lint.rules import Suggester

    rng = random.Random(5)
    alphabet = "abcdé- xyz"
    choices = sorted({"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 9))) for _ in range(600)})
    suggester = Suggester(choices, strictness=4)
    assert len(suggester.folded) > Suggester.LARGE
    for _ in range(400):
        word = list(rng.choice(choices))
        i = rng.randrange(len(word) + 1)
        edit = rng.randrange(3)
        if edit == 0 and i < len(word):
            word[i] = rng.choice(alphabet)
        elif edit == 1:
            word.insert(i, rng.choice(alphabet))
        elif i < len(word):
            del word[i]
        key = fold("".join(word))
        if not key:
            continue
        close = sorted((edit_distance(key, c), c) for c in suggester.folded if edit_distance(key, c) <= 1)
        expected = suggester.folded[close[0][1]] if close else None
        assert suggester.suggest(key) == expected, key


def test_link_problems_are_exactly_the_resolutions_the_link_rules_need():
    """The link rules read `Vault.link_problems(path, into)` rather than build every resolution: it must list,
    in link order, every resolution that is not plain OK, and the OK ones into `into`."""
    from grasbot.model import LinkStatus

    for root in [FIXTURES / name for name in sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())] + [
        Path(__file__).resolve().parents[1] / "vault"
    ]:
        vault = Vault.load(root)
        private = {path for path, note in vault.notes.items() if note.is_private}
        for path in vault.notes:
            every = vault.resolutions(path)
            assert vault.link_problems(path) == [r for r in every if r.status is not LinkStatus.OK], path
            assert vault.link_problems(path, private) == [
                r for r in every if r.status is not LinkStatus.OK or r.target_path in private
            ], path
    assert {"broken-link", "broken-anchor", "ambiguous-link", "private-link"} <= {d.rule for d in run(TAXO_VAULT).diagnostics}


def _vault_of(tmp_path: Path, files: dict[str, bytes | str]) -> Path:
    root = tmp_path / "v"
    root.mkdir()
    for name, content in files.items():
        (root / name).write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return root


def test_messages_say_where_and_what(tmp_path):
    root = _vault_of(tmp_path, {
        "TAXONOMIE.md": "# Taxonomie\n\nLes champs obligatoires : `slug`.\n",
        "s1.md": "---\ntitle: a\nslug: S1\n---\n",  # differs in case only
        "utf8-body.md": b"---\ntitle: ok\ntags: ['#X']\n---\nbody caf\xe9\n",
        "utf8-head.md": b"---\ntitle: caf\xe9\ntags: ['#X']\n---\nbody\n",
        "utf16.md": "---\ntitle: x\n---\n".encode("utf-16"),
        "quote.md": '---\ntitle: "abc\ntype: x\nslug: quote\n---\nbody\n',
        "dup.md": "---\ntitle: a\nslug: dup\ntags: [a]\ntags: [b]\n---\n",
        "Caf\u0065\u0301.md": "---\ntitle: a\n---\n",  # a decomposed file name, as macOS writes it
    })
    result = run(root)
    line, col, message = one(result, "s1.md", "slug-mismatch")
    assert "in case only: links resolve" in message and "will not resolve" not in message
    # bad bytes in the body: the field rules still run; in the frontmatter: they do not
    assert "in the body: save the file as UTF-8" in one(result, "utf8-body.md", "frontmatter-invalid")[2]
    assert found(result, "utf8-body.md", "tag-format")
    assert "in the frontmatter" in one(result, "utf8-head.md", "frontmatter-invalid")[2]
    assert not found(result, "utf8-head.md", "tag-format")
    assert one(result, "utf16.md", "frontmatter-invalid")[2].startswith("UTF-16 encoded")
    line, col, message = one(result, "quote.md", "frontmatter-invalid")
    assert (line, col) == (5, 1) and "starts at line 2, column 8" in message
    assert one(result, "dup.md", "frontmatter-invalid")[:2] == (5, 1)
    # the slug the fix inserts is the NFC form of the file name
    diag = next(d for d in result.diagnostics if d.rule == "field-missing" and d.path.startswith("Caf"))
    assert diag.fix is not None and diag.fix.edits[0].new == "Caf\u00e9"


def test_a_taxonomy_with_no_section_says_so(tmp_path):
    root = _vault_of(tmp_path, {"TAXONOMIE.md": "just some text\n", "a.md": "---\ntitle: a\ndomains: [zzz]\n---\n"})
    result = run(root)
    assert any("no list, count or range section found" in n for n in result.notices)
    assert not any("no list" in n for n in run(TAXO_VAULT).notices)


def test_frontmatter_obsidian_does_not_read_and_a_second_visibility_are_reported(tmp_path):
    root = _vault_of(tmp_path, {
        "blank.md": "\n---\ntitle: A\nvisibility: private\n---\nbody\n",
        "both.md": "---\ntitle: B\nvisibility: public\nVisibility: private\n---\nbody\n",
    })
    result = run(root)
    line, col, message = one(result, "blank.md", "frontmatter-invalid")
    assert (line, col) == (2, 1) and "does not start on line 1" in message
    line, col, message = one(result, "both.md", "visibility-value")
    assert (line, col) == (4, 1) and "keep one of the two" in message
