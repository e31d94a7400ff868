"""The quick-clean test (`vaulttools.lint.rules.quick.build`: the gate, then each note rule's own quick
predicate) may only say "clean" of a note the note rules find nothing in.

It lets the usual clean note skip a dozen checks; a wrong "clean" would hide findings. Checked on every note
of the lint fixtures, the bundled vault, the real corpora (with and without their taxonomy) and a synthetic
vault, against the checks themselves; and rule by rule (a run with `--select` builds the test from the
selected rules' predicates only, so each must hold alone).
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import pytest

from grasbot.vault import Vault
from tests.conftest import CORPORA, REPO, SAMPLE_VAULT
from vaulttools.lint import LintConfig
from vaulttools.lint.engine import new_context
from vaulttools.lint.rules import quick
from vaulttools.lint.rules.families import NOTE_RULES
from vaulttools.taxonomy import find_taxonomy, load_taxonomy


def LintContext(vault, taxonomy, config, today):  # noqa: N802  (as the engine makes one)
    return new_context(vault, taxonomy, config, today=today)


class _Quick:
    """`is_clean(note, ctx)` with every note rule (or `rules`), as a run builds it."""

    @staticmethod
    def is_clean(note, ctx, rules=NOTE_RULES):
        test = quick.build(rules, ctx)
        assert test is not None, "a note rule has no quick predicate"
        return test(note)


def _findings(note, ctx, rules=NOTE_RULES):
    return [d for rule in rules for d in rule.run(note, ctx)]

FIXTURES = REPO / "tests" / "fixtures" / "lint"


def _compare(root: Path, with_taxonomy: bool = True, today: dt.date | None = None) -> tuple[int, int]:
    """(notes said clean, notes) after checking each "clean" against the real checks."""
    vault = Vault.load(root)
    found = find_taxonomy(root) if with_taxonomy else None
    taxonomy = load_taxonomy(found) if found else None
    ctx = LintContext(vault=vault, taxonomy=taxonomy, config=LintConfig(), today=today or dt.date.today())
    clean = 0
    test = quick.build(NOTE_RULES, ctx)
    for path, note in vault.notes.items():
        if test(note):
            clean += 1
            findings = _findings(note, ctx)
            assert findings == [], (path, findings)
    # rule by rule: each predicate alone, as `--select RULE` builds the test
    for rule in NOTE_RULES:
        alone = quick.build((rule,), ctx)
        for path, note in vault.notes.items():
            if alone(note):
                assert _findings(note, ctx, (rule,)) == [], (rule.name, path)
    return clean, len(vault.notes)


def test_every_note_rule_has_a_quick_predicate():
    assert [rule.name for rule in NOTE_RULES if rule.quick_factory is None] == []


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()))
def test_fixture_vaults(name):
    for with_taxonomy in (True, False):
        _compare(FIXTURES / name, with_taxonomy)


def test_sample_vault_is_mostly_quick():
    clean, total = _compare(SAMPLE_VAULT)
    assert clean > total // 2
    _compare(SAMPLE_VAULT, with_taxonomy=False, today=dt.date(2000, 1, 1))  # every `updated` in the future


@pytest.mark.parametrize("name", ["grasbot-vault", "obsidian-help-en", "obsidian-help-fr"])
def test_real_corpora(name):
    root = CORPORA / name
    if not root.is_dir():
        pytest.skip(f"corpus {name} not available")
    _compare(root)
    _compare(root, with_taxonomy=False)


def test_synthetic_vault(tmp_path):
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import synth
    finally:
        sys.path.pop(0)
    root = synth.generate(tmp_path / "synth", 400, seed=11)
    clean, total = _compare(root)
    assert clean > total // 2  # the point of it: most notes skip the checks
    _compare(root, with_taxonomy=False)


# -- notes made up to hit every condition the note checks test -------------------------------------------
#
# The corpora above only catch a drifting rule when one of their notes shows the new finding. These notes are
# drawn to sit on both sides of each rule's conditions (listed values and near misses, counts at and past
# their bounds, numbers written as text, dates today and tomorrow, NFC and NFD slugs, suppressions...), so a
# rule that starts reporting something `is_clean` does not look at is caught here, whatever the corpora hold.

import dataclasses  # noqa: E402

import yaml  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from grasbot import read_note  # noqa: E402

_TODAY = dt.date(2026, 6, 15)
_TAXONOMY = load_taxonomy(REPO / "TAXONOMIE.md")
_ABSENT = object()


def _near(values: list[str]) -> st.SearchStrategy[str]:
    """A listed value, or one spelled a little differently (case, `#`, blanks, `_`, an accent, a typo)."""
    listed = st.sampled_from(values)
    return st.one_of(
        listed,
        listed,
        listed.map(str.upper),
        listed.map(lambda v: "#" + v),
        listed.map(lambda v: v.replace("-", " ")),
        listed.map(lambda v: v.replace("-", "_")),
        listed.map(lambda v: " " + v),
        listed.map(lambda v: v[:-1]),
        listed.map(lambda v: v.replace("e", "é", 1)),
        st.sampled_from(["", " ", "autre-chose", "Deux Mots"]),
    )


def _odd_item() -> st.SearchStrategy[object]:
    return st.sampled_from([None, 3, 2.5, True, dt.date(2024, 1, 2), {"a": 1}, ["x"]])


def _list_of(items: st.SearchStrategy[object], max_size: int = 12) -> st.SearchStrategy[object]:
    mostly_strings = st.lists(items, max_size=max_size)
    mixed = st.lists(st.one_of(items, _odd_item()), max_size=max_size)
    return st.one_of(mostly_strings, mostly_strings, mixed, items, st.sampled_from([None, [], 7, {"k": "v"}]))


_WORDS = st.sampled_from(["GrasBot", "grasbot", "école", "ecole", "Rust", " ", "", "le bot", "le  bot"])
_SCALARS = st.sampled_from([None, "", 3, True, ["a"], {"a": 1}, dt.date(2024, 1, 1)])

def _unique(values: list[str], low: int, high: int) -> st.SearchStrategy[list[str]]:
    return st.lists(st.sampled_from(values), min_size=low, max_size=high, unique=True)


_VOCAB = {name: list(_TAXONOMY.vocabularies[name].values) for name in ("type", "domains", "tags")}
_ALIASES = ["GrasBot", "école", "Rust", "le bot", "vaulttools", "CLI", "TUI", "lint", "Obsidian", "API", "42"]
_QUESTIONS = ["Qui est-ce ?", "Quoi ?", "Pourquoi Rust ?", "Où ?", "Quand ?", "Comment ?"]

#: field -> (values no note check reports, values that sit on or past a condition of some check)
_FIELDS: dict[str, tuple[st.SearchStrategy[object], st.SearchStrategy[object]]] = {
    "title": (st.just("Une note"), _SCALARS),
    "type": (st.sampled_from(_VOCAB["type"]), st.one_of(_near(_VOCAB["type"]), _SCALARS)),
    "source": (st.just("manual"), st.one_of(st.sampled_from(["pdf/cv", "ailleurs"]), _SCALARS)),
    "domains": (_unique(_VOCAB["domains"], 1, 3), _list_of(_near(_VOCAB["domains"]), 5)),
    "tags": (_unique(_VOCAB["tags"], 0, 6), _list_of(_near(_VOCAB["tags"]), 6)),
    "aliases": (_unique(_ALIASES, 3, 10), _list_of(_WORDS)),
    "answers": (_unique(_QUESTIONS, 2, 5), _list_of(st.sampled_from(["Qui est-ce ?", "Quoi ?", " "]), 7)),
    "linked": (_unique(["[[a]]", "[[b]]"], 0, 2), _list_of(st.sampled_from(["[[a]]", "[[b]]", "[[a]]"]), 3)),
    "related": (_unique(["[[c]]", "[[d]]"], 0, 2), _list_of(st.sampled_from(["[[c]]", "[[d]]"]), 3)),
    "priority": (st.integers(1, 10), st.one_of(st.integers(-1, 12), st.sampled_from(["5", " 7 ", "cinq", True, 2.5, None, [1]]))),
    "updated": (
        st.dates(dt.date(2020, 1, 1), _TODAY),
        st.one_of(
            st.dates(_TODAY, dt.date(2027, 1, 1)),
            st.sampled_from(["2024-01-02", "hier", " 2024-01-02 ", 2024, None, dt.datetime(2026, 6, 16, 8, 0)]),
        ),
    ),
    "visibility": (st.sampled_from(["public", "private"]), st.sampled_from(["Public", "privé", "", 1, None, True])),
    "slug": (st.sampled_from(["Été note", "E\u0301te\u0301 note"]), st.sampled_from([" Été note ", "autre", "", 3, None])),
    "vaulttools-ignore": (st.just(["broken-link"]), st.sampled_from([["brokn-link"], "all", [3], None])),
}


@st.composite
def _meta(draw: st.DrawFn) -> dict[str, object]:
    """Every field absent or well-formed, but for one or two that hold an odd value: a note is then clean only
    if its odd values are harmless, which is where a check and `is_clean` may disagree."""
    names = list(_FIELDS)
    odd = draw(st.sets(st.sampled_from(names), min_size=1, max_size=2))
    meta = {}
    for name in names:
        good, bad = _FIELDS[name]
        if name in odd:
            meta[name] = draw(bad)
        elif name in _COUNTED or draw(st.integers(0, 4)):  # (an absent counted field is a finding already)
            meta[name] = draw(good)
    return meta


#: The fields whose count the bundled taxonomy bounds from below.
_COUNTED = ("domains", "aliases", "answers")


def _note(meta: dict[str, object]):
    text = "---\n" + yaml.safe_dump(meta, allow_unicode=True, sort_keys=False) + "---\nDu texte.\n"
    return read_note("Projets/Été note.md", text.encode("utf-8"))


@pytest.mark.parametrize("taxonomy", ["bundled", "required", "none"])
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(meta=_meta())
def test_made_up_notes(taxonomy, meta):
    tax = {
        "bundled": _TAXONOMY,
        "required": dataclasses.replace(_TAXONOMY, required=("slug", "title", "aliases")),
        "none": None,
    }[taxonomy]
    note = _note(meta)
    vault = Vault.__new__(Vault)  # the note checks read only the note and the taxonomy
    ctx = LintContext(vault=vault, taxonomy=tax, config=LintConfig(), today=_TODAY)
    if _Quick.is_clean(note, ctx):
        found = _findings(note, ctx)
        assert found == [], (meta, found)


def test_made_up_notes_are_often_clean():
    """The property above says something only if many drawn notes are called clean."""
    from hypothesis import find

    ctx = LintContext(vault=Vault.__new__(Vault), taxonomy=_TAXONOMY, config=LintConfig(), today=_TODAY)
    find(_meta(), lambda meta: len(meta) >= 10 and _Quick.is_clean(_note(meta), ctx))


#: A note no check reports on (with the bundled taxonomy), and one odd value at a time for each field: every
#: side of every condition of the note checks, tried deterministically (hypothesis above mixes them).
_GOOD: dict[str, object] = {
    "title": "Une note", "type": "projet", "source": "manual", "domains": ["ia", "backend"],
    "tags": ["moc", "cv"], "aliases": ["GrasBot", "école", "Rust"], "answers": ["Qui est-ce ?", "Quoi ?"],
    "linked": ["[[a]]"], "related": ["[[c]]"], "priority": 5, "updated": dt.date(2024, 1, 2),
    "visibility": "public", "slug": "Été note",
}
_TEXTS: list[object] = ["", " ", "a", "a b", "A", 3, 2.5, True, None, [], ["a"], {"k": "v"}, dt.date(2024, 1, 1)]
_ODD: dict[str, list[object]] = {
    "title": _TEXTS,
    "source": _TEXTS,
    "type": _TEXTS + ["Projet", "projets", " projet", "moc", "technique", "compétence", "autre"],
    "domains": _TEXTS + [["IA"], ["#ia"], ["ia", "IA"], ["ia", "ia"], ["i a"], ["autre"], ["énergie"], ["energie"],
                         ["ia", ""], ["ia", " "], ["ia", 3], ["ia", None], "ia", ["ia", "backend", "data", "devops"],
                         ["ia", "backend", "data"], ["data_science"], [" ia"]],
    "tags": _TEXTS + [["MOC"], ["#cv"], ["recherche emploi"], ["recherche_emploi"], ["autre-chose"], ["moc", "moc"],
                      ["moc", "MOC"], ["moc", ""], [" moc"], ["moc "], "moc", "#moc", [3], [None], [True],
                      ["Deux Mots"], ["café"], ["cafe\u0301"], ["moc", "#moc"]],
    "aliases": _TEXTS + [["a", "b"], ["a", "b", "c", "a"], ["a", "b", "A"], ["a", "b", " a"], ["a", "b", ""],
                         ["a", "b", " "], ["a", "b", 3], ["a", "b", None], ["a", "b", True], [str(i) for i in range(11)],
                         [str(i) for i in range(10)], ["a", "b", "c", "d", "école", "ecole"]],
    "answers": _TEXTS + [["q ?"], ["q ?", "q ?"], ["q ?", " q ?"], ["q ?", "r ?", ""], ["q ?", "r ?", 3],
                         [f"q{i} ?" for i in range(6)], [f"q{i} ?" for i in range(5)]],
    "linked": _TEXTS + [["[[a]]", "[[a]]"], ["[[a]]", 3], "[[a]]"],
    "related": _TEXTS + [["[[c]]", "[[c]]"], ["[[c]]", None]],
    "priority": [0, 1, 10, 11, -1, "5", " 7 ", "cinq", True, False, 2.5, None, [1], "", dt.date(2024, 1, 1)],
    "updated": [_TODAY, _TODAY + dt.timedelta(days=1), dt.datetime(2026, 6, 15, 8), dt.datetime(2026, 6, 16, 8),
                "2024-01-02", "2099-01-02", " 2024-01-02 ", "hier", 2024, None, "", [dt.date(2024, 1, 2)]],
    "visibility": ["public", "private", "Public", "PRIVATE", " public", "privé", "privte", "", 1, True, None, ["public"]],
    "slug": ["Été note", "E\u0301te\u0301 note", " Été note ", "été note", "autre", "", " ", 3, None, ["Été note"]],
    "vaulttools-ignore": [["broken-link"], ["brokn-link"], "all", ["all"], [3], None, [], "broken-link", True],
    # not the field, but read as it (fail closed), and reported
    "Visibility": ["public", "private", None],
    " VISIBILITY": ["private"],
}


@pytest.mark.parametrize("taxonomy", ["bundled", "required", "none"])
@pytest.mark.parametrize(("name", "value"), [(n, v) for n, values in _ODD.items() for v in values],
                         ids=lambda x: repr(x)[:30])
def test_one_odd_value(taxonomy, name, value):
    tax = {
        "bundled": _TAXONOMY,
        "required": dataclasses.replace(_TAXONOMY, required=("slug", "title", "aliases")),
        "none": None,
    }[taxonomy]
    ctx = LintContext(vault=Vault.__new__(Vault), taxonomy=tax, config=LintConfig(), today=_TODAY)
    for meta in (dict(_GOOD, **{name: value}), {name: value}):
        note = _note(meta)
        if _Quick.is_clean(note, ctx):
            found = _findings(note, ctx)
            assert found == [], (meta, found)
        for rule in NOTE_RULES:  # each predicate alone (`--select RULE`)
            if _Quick.is_clean(note, ctx, (rule,)):
                assert _findings(note, ctx, (rule,)) == [], (rule.name, meta)


@pytest.mark.parametrize("taxonomy", ["bundled", "required", "none"])
@pytest.mark.parametrize("text", ["Du texte.\n", "---\n---\nDu texte.\n", "---\ntitle: x\n", "---\n: [\n---\n",
                                  "---\n- a\n---\n", "---\nx\n---\n", "\ufeff---\ntitle: x\n---\n"])
def test_odd_files(taxonomy, text):
    tax = {"bundled": _TAXONOMY, "required": dataclasses.replace(_TAXONOMY, required=("slug",)), "none": None}[taxonomy]
    ctx = LintContext(vault=Vault.__new__(Vault), taxonomy=tax, config=LintConfig(), today=_TODAY)
    note = read_note("Projets/Été note.md", text.encode("utf-8"))
    if _Quick.is_clean(note, ctx):
        assert _findings(note, ctx) == []


def test_the_good_note_is_clean():
    ctx = LintContext(vault=Vault.__new__(Vault), taxonomy=_TAXONOMY, config=LintConfig(), today=_TODAY)
    assert _Quick.is_clean(_note(_GOOD), ctx)
