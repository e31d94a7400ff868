"""vaulttools.taxonomy: the real TAXONOMIE.md, the sample vault's, hand-made fixtures, each phrasing, each error."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from vaulttools.taxonomy import Bounds, TaxonomyError, find_taxonomy, load_taxonomy

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "taxonomy"


def _corpora() -> Path:
    env = os.environ.get("GRASBOT_CORPORA")
    return Path(env) if env else REPO.parent / "shared" / "corpora"


REAL = _corpora() / "grasbot-vault" / "TAXONOMIE.md"
SAMPLE = REPO / "TAXONOMIE.md"


def write(tmp_path: Path, text: str, name: str = "TAXONOMIE.md") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


# -- the two real files ----------------------------------------------------------------------------------


@pytest.mark.skipif(not REAL.is_file(), reason="corpora not available")
def test_real_taxonomy_parses_unchanged():
    taxonomy = load_taxonomy(REAL)
    domains = taxonomy.vocabulary("domains")
    tags = taxonomy.vocabulary("tags")
    assert domains is not None and tags is not None
    assert len(domains.values) == 14 and domains.closed
    assert list(domains.values)[:3] == ["algorithmique", "c", "cpp"]
    assert "ecole-42" in domains.values and "parcours" in domains.values
    assert domains.values["ia"].startswith("Intelligence artificielle")
    assert len(tags.values) == 13 and not tags.closed
    assert "42-commun" in tags.values and "makefile" in tags.values
    assert taxonomy.counts == {"domains": Bounds(1, 4), "aliases": Bounds(3, 12), "answers": Bounds(2, 6)}
    assert taxonomy.ranges == {"priority": Bounds(1, 10)}
    visibility = taxonomy.vocabulary("visibility")
    assert visibility is not None and list(visibility.values) == ["public", "private"] and visibility.closed
    # The yaml fences of the real file are examples (aliases lists), not configuration.
    assert taxonomy.vocabulary("aliases") is None and taxonomy.vocabulary("answers") is None
    assert taxonomy.required == ()
    # Lines point at the headings and sentences, for diagnostics.
    lines = REAL.read_text(encoding="utf-8").splitlines()
    assert "(`domains:`)" in lines[domains.line - 1]
    assert "entre 1 et 4 domaines" in lines[taxonomy.counts["domains"].line - 1]
    assert "Entier de 1 à 10" in lines[taxonomy.ranges["priority"].line - 1]


@pytest.mark.skipif(not SAMPLE.is_file(), reason="the sample vault's TAXONOMIE.md is not written yet")
def test_sample_taxonomy_parses():
    taxonomy = load_taxonomy(SAMPLE)
    domains = taxonomy.vocabulary("domains")
    assert domains is not None and domains.closed and len(domains.values) >= 5
    assert "domains" in taxonomy.counts and "aliases" in taxonomy.counts and "answers" in taxonomy.counts
    assert taxonomy.ranges.get("priority") == Bounds(1, 10)
    visibility = taxonomy.vocabulary("visibility")
    assert visibility is not None and set(visibility.values) == {"public", "private"} and visibility.closed
    for vocabulary in taxonomy.vocabularies.values():  # values are clean slugs, not Markdown
        assert all(v and "`" not in v and "*" not in v and v == v.strip() for v in vocabulary.values)


# -- hand-made fixtures ----------------------------------------------------------------------------------


def test_complete_fixture():
    taxonomy = load_taxonomy(FIXTURES / "complete.md")
    type_ = taxonomy.vocabulary("type")
    assert type_ is not None and type_.closed  # "Liste FERMÉE", bullets with emphasis and a continuation line
    assert type_.values == {
        "projet": "un projet réalisé",
        "competence": "une compétence",
        "moc": "une carte de contenu, qui liste les notes d'un thème",
    }
    domains = taxonomy.vocabulary("domains")
    assert domains is not None and domains.closed  # "Liste fermee", no accent
    # Two backticked values in one cell, a plain cell, an escaped pipe; the "retired" subsection's table is not values.
    assert list(domains.values) == ["ia", "web", "frontend", "backend"]
    assert domains.values["web"] == "Web — Sites et interfaces | front"
    assert domains.values["ia"] == "IA — Modèles, agents"
    tags = taxonomy.vocabulary("tags")
    assert tags is not None and not tags.closed  # "Ce n'est pas une liste fermée"
    assert taxonomy.vocabulary("visibility").closed  # bullets, no word about closing: visibility always is
    # Prose: "Au moins un domaine et au plus trois domaines", "de 3 à 12" after "Nombre d'aliases",
    # "2–6 réponses"; "un à trois mots" is not about aliases and the plain yaml fence is an example.
    assert taxonomy.counts["domains"] == Bounds(1, 3)
    assert taxonomy.counts["aliases"] == Bounds(3, 12)
    assert taxonomy.counts["answers"] == Bounds(2, 6)
    # The vaulttools fence has the last word ("Pas plus de 6 tags" in the prose becomes 0–5).
    assert taxonomy.counts["tags"] == Bounds(0, 5)
    assert taxonomy.counts["related"] == Bounds(None, 8)
    assert taxonomy.ranges == {"priority": Bounds(1, 10)}
    assert taxonomy.required == ("title", "slug", "type")
    source = taxonomy.vocabulary("source")
    assert source is not None and source.closed and source.values == {"manual": "écrite à la main", "vault/generated": ""}
    # No count for `type` (a scalar: "exactement un type") and nothing from the HTML comment.
    assert "type" not in taxonomy.counts and taxonomy.vocabulary("comment") is None


def test_english_fixture():
    taxonomy = load_taxonomy(FIXTURES / "english.md")
    assert taxonomy.vocabulary("domains").closed and list(taxonomy.vocabulary("domains").values) == ["ai", "web"]
    assert not taxonomy.vocabulary("tags").closed
    assert taxonomy.counts == {
        "domains": Bounds(1, 4),
        "tags": Bounds(None, 5),
        "aliases": Bounds(3, 12),
        "answers": Bounds(2, 6),
    }
    assert taxonomy.ranges == {"priority": Bounds(1, 10)}


@pytest.mark.parametrize(
    ("name", "line", "section", "words"),
    [
        ("broken-no-table.md", 3, "Domaines (`domains:`)", "nothing to read for `domains:`"),
        ("broken-contradictory.md", 5, "Domaines (`domains:`)", "minimum 5 is above maximum 2"),
        ("broken-disagree.md", 6, "Aliases (`aliases:`)", "stated twice and disagrees"),
        ("broken-closed-empty.md", 3, "Domaines (`domains:`)", "closed list but its table has no rows"),
        ("broken-fence-yaml.md", 14, "Règles", "invalid YAML"),
        ("broken-fence-key.md", 6, "Règles", "unknown key 'requried'"),
        ("broken-duplicate.md", 9, "Encore des tags (`tags:`)", "described twice (first on line 3)"),
        ("broken-latin1.md", 7, None, "not valid UTF-8"),
    ],
)
def test_broken_fixtures(name, line, section, words):
    path = FIXTURES / name
    with pytest.raises(TaxonomyError) as caught:
        load_taxonomy(path)
    error = caught.value
    assert error.path == path and error.line == line and error.section == section
    message = str(error)
    assert message.startswith(f"{path}:{line}: ") and words in message
    if section:
        assert section in message


def test_unreadable_files(tmp_path):
    with pytest.raises(TaxonomyError, match="no such file") as caught:
        load_taxonomy(tmp_path / "missing.md")
    assert caught.value.path == tmp_path / "missing.md" and caught.value.line is None
    with pytest.raises(TaxonomyError, match="is a folder"):
        load_taxonomy(tmp_path)


def test_bom_crlf_and_frontmatter(tmp_path):
    path = tmp_path / "TAXONOMIE.md"
    text = "---\ntags: [x]\n---\n## Domaines (`domains:`)\n\nListe fermée, entre 1 et 2 domaines.\n\n| Slug |\n|---|\n| `ia` |\n"
    path.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode("utf-8"))
    taxonomy = load_taxonomy(path)
    assert taxonomy.vocabulary("domains").values == {"ia": ""} and taxonomy.vocabulary("domains").line == 4
    assert taxonomy.counts["domains"] == Bounds(1, 2)


# -- each phrasing -----------------------------------------------------------------------------------------

DOMAINS_SECTION = """
## Domaines (`domains:`)

Liste fermée. {sentence}

| Slug | Libellé |
|---|---|
| `ia` | IA |
"""


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Une note doit avoir entre 1 et 4 domaines.", {"domains": Bounds(1, 4)}),
        ("ENTRE 1 ET 4 DOMAINES PAR NOTE.", {"domains": Bounds(1, 4)}),
        ("Une note porte de 1 à 4 domaines.", {"domains": Bounds(1, 4)}),
        ("Une note porte de 1 a 4 domaines (sans accent).", {"domains": Bounds(1, 4)}),
        ("Une note porte 1–4 domaines.", {"domains": Bounds(1, 4)}),
        ("Une note porte 1 - 4 domaines.", {"domains": Bounds(1, 4)}),
        ("Une note porte 1 à 4 domaines.", {"domains": Bounds(1, 4)}),
        ("Au moins 1 domaine par note.", {"domains": Bounds(1, None)}),
        ("Au minimum 2 domaines.", {"domains": Bounds(2, None)}),
        ("Au plus 4 domaines.", {"domains": Bounds(None, 4)}),
        ("Au maximum 4 domaines.", {"domains": Bounds(None, 4)}),
        ("Pas plus de 4 domaines.", {"domains": Bounds(None, 4)}),
        ("Une note ne doit pas avoir plus de 4 domaines.", {"domains": Bounds(None, 4)}),
        ("Jusqu'à 4 domaines.", {"domains": Bounds(None, 4)}),
        ("Jusqu’à 4 domaines (apostrophe typographique).", {"domains": Bounds(None, 4)}),
        ("Moins de 5 domaines.", {"domains": Bounds(None, 4)}),
        ("Plus de 0 domaine.", {"domains": Bounds(1, None)}),
        ("Pas moins de 2 domaines.", {"domains": Bounds(2, None)}),
        ("1 domaine minimum, 4 domaines maximum.", {"domains": Bounds(1, 4)}),
        ("Au moins un domaine et au plus quatre domaines.", {"domains": Bounds(1, 4)}),
        ("Au moins 1 et au plus 4 domaines.", {"domains": Bounds(1, 4)}),
        ("Exactement 2 domaines.", {"domains": Bounds(2, 2)}),
        ("2 domaines ou plus.", {"domains": Bounds(2, None)}),
        ("Nombre de domaines : entre 1 et 4.", {"domains": Bounds(1, 4)}),
        ("Entre 1 et 4 valeurs par note.", {"domains": Bounds(1, 4)}),
        ("Entre 1 et 4 par note.", {"domains": Bounds(1, 4)}),
        ("Between 1 and 4 domains per note.", {"domains": Bounds(1, 4)}),
        ("At least 1 domain, at most 4 domains.", {"domains": Bounds(1, 4)}),
        ("From 1 to 4 domains.", {"domains": Bounds(1, 4)}),
        ("Up to 4 domains.", {"domains": Bounds(None, 4)}),
        ("≥ 1 domaine.", {"domains": Bounds(1, None)}),
        # Another field named in the sentence gets the bound.
        ("Entre 1 et 4 domaines, et 2 à 6 réponses.", {"domains": Bounds(1, 4), "answers": Bounds(2, 6)}),
        # Numbers that bound nothing the linter counts.
        ("Un libellé de un à trois mots.", {}),
        ("Mis à jour le 2026-04-23, 42 domaines au total dans le vault de 2024.", {}),
        ("Voir les notes 1 à 3 du tableau.", {}),
    ],
)
def test_count_phrasings(tmp_path, sentence, expected):
    taxonomy = load_taxonomy(write(tmp_path, DOMAINS_SECTION.format(sentence=sentence)))
    assert taxonomy.counts == expected
    assert taxonomy.ranges == {}


@pytest.mark.parametrize(
    "sentence",
    [
        "Entier de 1 à 10.",
        "Un entier entre 1 et 10.",
        "Nombre entier, de 1 à 10. Boost léger.",
        "Entier : 1–10.",
        "Entier, au moins 1 et au plus 10.",
        "Integer from 1 to 10.",
        "An integer between one and ten.",
    ],
)
def test_range_phrasings(tmp_path, sentence):
    text = f"## Priority (`priority:`)\n\n{sentence}\n\n| Valeur | Usage |\n|---|---|\n| 9–10 | CV |\n| 5 | Défaut |\n"
    taxonomy = load_taxonomy(write(tmp_path, text))
    assert taxonomy.ranges == {"priority": Bounds(1, 10)}
    assert taxonomy.counts == {}
    assert taxonomy.vocabulary("priority") is None  # the table lists usages, not values


@pytest.mark.parametrize(
    ("prose", "closed"),
    [
        ("Liste fermée.", True),
        ("LISTE FERMÉE.", True),
        ("Liste fermee.", True),
        ("C'est une liste close.", True),
        ("Closed list.", True),
        ("Vocabulaire fermé.", True),
        ("Liste ouverte.", False),
        ("Ce n'est pas une liste fermée.", False),
        ("Not a closed list.", False),
        ("Plus libres que les domaines.", False),
        ("Les tags forment une liste fermée.", True),
        ("Comme les domaines, les tags sont une liste fermée.", True),
        # Said of another field: not this section's rule.
        ("Contrairement aux domaines (liste fermée), les tags sont libres.", False),
        ("Les domaines sont une liste fermée, voir plus haut.", False),
    ],
)
def test_closed_phrasings(tmp_path, prose, closed):
    text = f"## Tags (`tags:`)\n\n{prose}\n\n| Tag | Usage |\n|---|---|\n| `cv` | CV |\n"
    assert load_taxonomy(write(tmp_path, text)).vocabulary("tags").closed is closed


def test_visibility_open_only_when_said(tmp_path):
    text = "## Visibility (`visibility:`)\n\nListe ouverte.\n\n- `public` : oui\n- `private` : non\n"
    assert load_taxonomy(write(tmp_path, text)).vocabulary("visibility").closed is False


def test_heading_with_bare_field_in_parentheses(tmp_path):
    taxonomy = load_taxonomy(write(tmp_path, "## Tags (`tags`)\n\n| Tag |\n|---|\n| `cv` |\n"))
    assert list(taxonomy.vocabulary("tags").values) == ["cv"]


def test_free_field_section_is_not_an_error(tmp_path):
    taxonomy = load_taxonomy(write(tmp_path, "## Titre (`title:`)\n\nLibre.\n"))
    assert taxonomy.vocabularies == {} and taxonomy.counts == {}


def test_headings_in_code_are_ignored(tmp_path):
    text = """
    ## Tags (`tags:`)

    | Tag |
    |---|
    | `cv` |

    ```markdown
    ## Domaines (`domains:`)
    Liste fermée.
    ```
    """
    taxonomy = load_taxonomy(write(tmp_path, text))
    assert set(taxonomy.vocabularies) == {"tags"}


# -- the yaml vaulttools fence -------------------------------------------------------------------------


def test_fence_adds_rules(tmp_path):
    text = """
    ## Tags (`tags:`)

    | Tag |
    |---|
    | `cv` |

    ```yaml vaulttools
    required: [title, slug]
    values:
      type: [projet, moc]
      tags: {bio: "présentation"}
    closed: [type, tags]
    counts: {tags: [1, null], linked: {max: 3}}
    ranges: {priority: [0, 5]}
    ```
    """
    taxonomy = load_taxonomy(write(tmp_path, text))
    assert taxonomy.required == ("title", "slug")
    assert taxonomy.vocabulary("type").values == {"projet": "", "moc": ""} and taxonomy.vocabulary("type").closed
    tags = taxonomy.vocabulary("tags")
    assert tags.values == {"cv": "", "bio": "présentation"} and tags.closed
    assert taxonomy.counts == {"tags": Bounds(1, None), "linked": Bounds(None, 3)}
    assert taxonomy.ranges == {"priority": Bounds(0, 5)}


def test_plain_yaml_fence_is_an_example(tmp_path):
    text = "## Aliases (`aliases:`)\n\nLibre.\n\n```yaml\nrequired: [title]\ncounts: {aliases: [1, 2]}\n```\n"
    taxonomy = load_taxonomy(write(tmp_path, text))
    assert taxonomy.required == () and taxonomy.counts == {}


@pytest.mark.parametrize(
    ("body", "words", "offset"),
    [
        ("- just\n- a list\n", "expected a mapping", 0),
        ("counts: {tags: [5, 1]}\n", "minimum 5 is above maximum 1", 0),
        ("counts: {tags: [one, 3]}\n", "is not a whole number", 0),
        ("counts: {tags: [-1, 3]}\n", "cannot be negative", 0),
        ("counts: {tags: 3}\n", "must be [min, max]", 0),
        ("closed: [domains]\n", "`domains` has no list of values", 0),
        ("required: title\nvalues: [a]\n", "`values` must map a field", 0),
        ("required: [1]\n", "must be a list of field names", 0),
        ("required: [title]\ncounts:\n  tags: [1, 2\n", "invalid YAML", 2),
    ],
)
def test_malformed_fences(tmp_path, body, words, offset):
    path = write(tmp_path, "# T\n\n## Config\n\n```yaml vaulttools\n" + body + "```\n")
    with pytest.raises(TaxonomyError) as caught:
        load_taxonomy(path)
    assert words in str(caught.value)
    assert caught.value.section == "Config" and caught.value.line == 6 + offset
    assert str(caught.value).startswith(f"{path}:{6 + offset}:")


def test_bounds_helpers():
    assert Bounds(1, 4).allows(1) and Bounds(1, 4).allows(4) and not Bounds(1, 4).allows(5)
    assert Bounds(None, 4).allows(0) and not Bounds(2, None).allows(1)
    assert [Bounds(1, 4).describe(), Bounds(2, 2).describe(), Bounds(3, None).describe(), Bounds(None, 6).describe()] == [
        "1–4",
        "2",
        "≥ 3",
        "≤ 6",
    ]
    assert Bounds(1, 4, line=3) == Bounds(1, 4)  # where it was read is not part of the value


# -- finding the file --------------------------------------------------------------------------------------


def test_find_taxonomy_from_inside_the_vault(tmp_path, monkeypatch):
    vault = tmp_path / "vault"
    vault.mkdir()
    (tmp_path / "TAXONOMIE.md").write_text("# T\n", encoding="utf-8")
    monkeypatch.chdir(vault)
    assert find_taxonomy(Path(".")).resolve() == (tmp_path / "TAXONOMIE.md").resolve()  # "." has no lexical parent


def test_find_taxonomy(tmp_path):
    vault = tmp_path / "vault"
    vault.mkdir()
    assert find_taxonomy(vault) is None
    above = tmp_path / "TAXONOMIE.md"
    above.write_text("# T\n", encoding="utf-8")
    assert find_taxonomy(vault) == above
    inside = vault / "Taxonomie.md"  # any case
    inside.write_text("# T\n", encoding="utf-8")
    assert find_taxonomy(vault) == inside
    explicit = tmp_path / "other.md"
    assert find_taxonomy(vault, explicit) == explicit  # returned even if missing: loading it reports that


# -- robustness ------------------------------------------------------------------------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_FRAGMENTS = st.sampled_from(
    [
        "## Domaines (`domains:`)", "## Tags (`tags`)", "### Sous-partie", "# Titre", "## Priorité (`priority:`)",
        "Liste fermée.", "Liste ouverte.", "Entre 1 et 4 domaines.", "entre 5 et 2 tags", "Entier de 1 à 10.",
        "au moins 3 aliases", "au plus", "de 2 à", "1–", "| Slug | Libellé |", "|---|---|", "| `ia` | IA |",
        "| `a` \\| b |", "|", "- `public` : oui", "- `private`", "-", "```yaml vaulttools", "```yaml", "```",
        "required: [title]", "counts: {tags: [1, 2]}", "counts: [", "values: {type: [a]}", "closed: [type]",
        "<!--", "-->", "---", "", "   ", "Libre.", "champs obligatoires : `title`", "\t", "`", "**",
    ]
)  # fmt: skip


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(_FRAGMENTS, st.text(max_size=30)), max_size=40))
def test_any_text_parses_or_raises_taxonomy_error(tmp_path, lines):
    """Whatever the file holds, the result is a Taxonomy or a TaxonomyError naming the file: never a traceback."""
    path = tmp_path / "TAXONOMIE.md"
    path.write_text("\n".join(lines), encoding="utf-8", errors="surrogatepass")
    try:
        taxonomy = load_taxonomy(path)
    except TaxonomyError as exc:
        assert str(exc).startswith(str(path))
        return
    for bounds in [*taxonomy.counts.values(), *taxonomy.ranges.values()]:
        assert bounds.min is None or bounds.max is None or bounds.min <= bounds.max
    for name, vocabulary in taxonomy.vocabularies.items():
        assert vocabulary.field == name and vocabulary.values


def test_pathological_lines_are_quick(tmp_path):
    text = "## Tags (`tags:`)\n\n" + "|" + "-" * 20000 + "x\n" + "1 " * 20000 + "\n" + "entre " * 5000 + "\n| `a` |\n"
    # No timing assertion (see HELPERS.md): the pytest timeout catches a catastrophic regex.
    with pytest.raises(TaxonomyError):
        load_taxonomy(write(tmp_path, text))
