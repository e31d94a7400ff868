"""Retrieval: every scoring signal and its reason, privacy, degraded notes, the graph, grounding,
determinism, incremental updates, and vaults without GrasBot fields."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grasbot.model import visible_to_visitors
from grasbot.search.index import SearchConfig, SearchIndex
from grasbot.vault import Vault

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "retrieval"
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def basic(tmp_path: Path) -> Path:
    dest = tmp_path / "basic"
    shutil.copytree(FIXTURES / "basic", dest)
    return dest


@pytest.fixture
def index(basic: Path) -> SearchIndex:
    return SearchIndex.build(Vault.load(basic))


def hit(result, note_id: str):
    found = [h for h in result.hits if h.id == note_id]
    assert found, f"{note_id} not in {[h.id for h in result.hits]}"
    return found[0]


# -- signals and reasons -------------------------------------------------------------------------------


def test_alias_title_answers_and_bm25_reasons(index: SearchIndex) -> None:
    result = index.search("C'est quoi push_swap ?")
    first = result.hits[0]
    assert first.id == "push-swap"
    assert first.direct
    assert "alias:push swap" in first.reasons
    assert "title" in first.reasons
    assert "answers-full" in first.reasons
    assert any(r.startswith("bm25:") for r in first.reasons)
    assert result.grounded


def test_slug_reason_when_slug_differs_from_title(index: SearchIndex) -> None:
    first = index.search("cpp").hits[0]
    assert first.id == "cpp"
    assert "slug" in first.reasons


def test_partial_answer_similarity(index: SearchIndex) -> None:
    first = index.search("trier une pile rapidement").hits[0]
    assert first.id == "push-swap"
    partial = [r for r in first.reasons if r.startswith("answers-partial:")]
    assert partial and 0 < float(partial[0].split(":")[1]) < 0.8


def test_domain_and_tag_reasons(index: SearchIndex) -> None:
    assert "domain:ia" in hit(index.search("ia"), "ia").reasons
    assert "tag:llm" in hit(index.search("llm"), "ia").reasons
    assert "tag:tri" in hit(index.search("algorithme de tri"), "push-swap").reasons


def test_priority_and_moc_hub_only_when_already_scored(index: SearchIndex) -> None:
    result = index.search("projets")
    moc = hit(result, "MOC-Projets")
    assert "moc-hub" in moc.reasons and "priority" in moc.reasons
    # A question that matches nothing in the MOC does not bring it back for its priority alone.
    assert "MOC-Projets" not in [h.id for h in index.search("tomates courges").hits]


def test_cpp_question_finds_cpp_note(index: SearchIndex) -> None:
    first = index.search("Sait-il programmer en C++ ?").hits[0]
    assert first.id == "cpp"
    assert "alias:C++" in first.reasons


def test_shared_alias_is_worth_less_than_a_unique_one(tmp_path: Path) -> None:
    for name, aliases in (("a", ["robotique", "projet"]), ("b", ["projet"]), ("c", ["projet"])):
        (tmp_path / f"{name}.md").write_text(
            f"---\ntitle: Note {name}\nslug: {name}\naliases: {json.dumps(aliases)}\n---\nTexte neutre.\n",
            encoding="utf-8",
        )
    index = SearchIndex.build(Vault.load(tmp_path))
    unique = hit(index.search("robotique"), "a")
    shared = hit(index.search("projet"), "b")
    assert unique.score > shared.score


# -- privacy and bad notes -------------------------------------------------------------------------------


def test_private_notes_are_never_candidates(index: SearchIndex) -> None:
    assert "salaire-prive" not in index.ids
    for question in ("Quel salaire demande-t-il ?", "Zanzibar-confidentiel salaire prétentions", "salaire"):
        result = index.search(question, top_k=50)
        assert all(h.id != "salaire-prive" for h in result.hits)
        assert all(not h.note.is_private for h in result.hits)
        assert "Zanzibar" not in json.dumps(result.stats)


def test_broken_frontmatter_is_degraded_not_skipped(index: SearchIndex) -> None:
    result = index.search("kayak rivière")
    assert result.hits[0].id == "notes-cassees"
    # Its frontmatter did not parse: the alias written there is not a signal.
    assert all(h.id != "notes-cassees" for h in index.search("parapluie").hits)


def test_broken_frontmatter_that_mentions_private_is_skipped(index: SearchIndex) -> None:
    assert "brouillon-cache" not in index.ids
    assert index.search("Xylophonie-interne brouillon secret").hits == [] or all(
        h.id != "brouillon-cache" for h in index.search("Xylophonie-interne brouillon secret").hits
    )


#: Frontmatters that say "private" in a way the parsed fields alone do not show; each hides the note.
_HIDDEN_SHAPES = {
    "never-closed": "---\ntitle: Carnet\nvisibility: private\n\n# Carnet\n\n{secret}\n",
    "closed-by-dots": "---\ntitle: Carnet\nvisibility: private\n...\n\n{secret}\n",
    "a-list": "---\n- visibility: private\n---\n\n{secret}\n",
    "capital-key": "---\ntitle: Carnet\nVisibility: private\n---\n\n{secret}\n",
    "quoted-key-broken-yaml": "---\ntitle: [Carnet\n\"visibility\": private\n---\n\n{secret}\n",
    "private-then-public": "---\ntitle: Carnet\nvisibility: private\nvisibility: public\n---\n\n{secret}\n",
    "public-then-private": "---\ntitle: Carnet\nvisibility: public\nvisibility: private\n---\n\n{secret}\n",
    "empty-value": "---\ntitle: Carnet\nvisibility:\n---\n\n{secret}\n",
    "both-spellings": "---\ntitle: Carnet\nvisibility: public\nVisibility: private\n---\n\n{secret}\n",
    "spaced-quoted-key": "---\ntitle: Carnet\nvisibility: public\n\"visibility \": private\n---\n\n{secret}\n",
    "blank-line-first": "\n---\ntitle: Carnet\nvisibility: private\n---\n\n{secret}\n",
    "bom-then-blank": "\ufeff\n---\ntitle: Carnet\nvisibility: private\n---\n\n{secret}\n",
    "invisible-space-first": "\u200b---\ntitle: Carnet\nvisibility: private\n---\n\n{secret}\n",
    "four-dashes": "----\ntitle: Carnet\nvisibility: private\n----\n\n{secret}\n",
    "flow-mapping-broken": "---\n{{title: Carnet, visibility: private\n---\n\n{secret}\n",
}


@pytest.mark.parametrize("shape", sorted(_HIDDEN_SHAPES))
def test_every_way_of_saying_private_hides_the_note(tmp_path: Path, shape: str) -> None:
    secret = "Quokka-7731 carnet intime"
    (tmp_path / "carnet.md").write_text(_HIDDEN_SHAPES[shape].format(secret=secret), encoding="utf-8")
    (tmp_path / "public.md").write_text("---\ntitle: Ouvert\n---\n\nUn carnet ouvert.\n", encoding="utf-8")
    vault = Vault.load(tmp_path)
    assert not visible_to_visitors(vault.notes["carnet.md"])
    index = SearchIndex.build(vault)
    assert index.ids == ["public"]
    assert all(h.id != "carnet" for h in index.search("Quokka-7731 carnet intime", top_k=10).hits)


@pytest.mark.parametrize("text", [
    "---\ntitle: Ouvert\nvisibility: public\n\nnever closed\n",
    "---\ntitle: Ouvert\nVisibility: Public\n---\n",
    "---\ntitle: Ouvert\ntags: [a]\ntags: [b]\nvisibility: public\n---\n",
    "---\ntitle: Ouvert\nvisibility: public\nVisibility: Public\n---\n",
    "\n---\ntitle: Ouvert\nvisibility: public\n---\n",
    "---\n{title: Ouvert, visibility: public\n---\n",
])
def test_public_notes_with_odd_frontmatter_stay_public(tmp_path: Path, text: str) -> None:
    (tmp_path / "ouvert.md").write_text(text, encoding="utf-8")
    assert visible_to_visitors(Vault.load(tmp_path).notes["ouvert.md"])


def test_words_and_links_inside_comments_are_not_indexed(tmp_path: Path) -> None:
    (tmp_path / "alpha.md").write_text(
        "---\ntitle: Alpha\n---\nUn potager de tomates.\n%% [[beta]] brouillon zorglub %%\n<!-- [[gamma]] -->\n",
        encoding="utf-8")
    (tmp_path / "beta.md").write_text("---\ntitle: Beta\n---\nDes abeilles.\n", encoding="utf-8")
    (tmp_path / "gamma.md").write_text("---\ntitle: Gamma\n---\nDes oiseaux.\n", encoding="utf-8")
    index = SearchIndex.build(Vault.load(tmp_path))
    result = index.search("zorglub")
    assert result.hits == [] and not result.grounded
    # links in comments are not links: nothing is lifted from alpha through them
    assert [h.id for h in index.search("potager de tomates").hits] == ["alpha"]


def test_note_without_frontmatter_is_a_normal_note(index: SearchIndex) -> None:
    assert index.search("randonnée en montagne").hits[0].id == "simple"


# -- graph ------------------------------------------------------------------------------------------------


def test_graph_lifts_a_neighbour_below_its_seed_and_below_real_matches(index: SearchIndex) -> None:
    result = index.search("Comment trier une pile avec le moins de coups ?")
    seed = hit(result, "push-swap")
    lifted = [h for h in result.hits if any(r == "graph-from:push-swap" for r in h.reasons)]
    assert lifted, result.hits
    for h in lifted:
        assert h.score < seed.score
    real = [h for h in result.hits if h.direct and h.coverage >= 0.5]
    for h in lifted:
        assert all(h.score < r.score for r in real)


def test_graph_never_outranks_a_note_that_really_matches(tmp_path: Path) -> None:
    # `hub` is the top seed and links to `voisin`; `vrai` matches the question fully on its own.
    (tmp_path / "hub.md").write_text(
        "---\ntitle: Jardin potager\naliases: [jardin potager]\nlinked: ['[[voisin]]']\n---\n"
        "Le jardin potager, le jardin potager, tomates.\n[[voisin]]\n",
        encoding="utf-8",
    )
    (tmp_path / "vrai.md").write_text("---\ntitle: Potager\n---\nUn jardin potager en ville.\n", encoding="utf-8")
    (tmp_path / "voisin.md").write_text("---\ntitle: Voisin\n---\nRien à voir : des vélos.\n", encoding="utf-8")
    result = SearchIndex.build(Vault.load(tmp_path)).search("jardin potager")
    ranked = [h.id for h in result.hits]
    assert ranked.index("vrai") < ranked.index("voisin")
    assert "graph-from:hub" in hit(result, "voisin").reasons
    assert not hit(result, "voisin").direct


# -- grounding ------------------------------------------------------------------------------------------


def test_off_topic_question_sharing_a_common_word_is_not_grounded(index: SearchIndex) -> None:
    # "temps" appears in a note's body; nothing in the vault is about tomorrow's weather.
    result = index.search("Quel temps fait-il demain ?")
    assert not result.grounded
    assert not index.search("Quelle est la capitale de l'Australie ?").grounded


def test_on_topic_questions_are_grounded(index: SearchIndex) -> None:
    for question in ("Parle-moi de minishell", "Quelle est son expérience en IA ?", "potager associatif"):
        assert index.search(question).grounded, question


def test_grounded_does_not_depend_on_top_k(index: SearchIndex) -> None:
    for question in ("Parle-moi de minishell", "Quel temps fait-il demain ?", "compost enfants", "programmer"):
        verdicts = {index.search(question, top_k=k).grounded for k in (1, 2, 5, 50)}
        assert len(verdicts) == 1, question


def test_min_score_config_can_only_make_grounding_stricter(basic: Path) -> None:
    strict = SearchIndex.build(Vault.load(basic), SearchConfig(min_score=1000.0))
    assert not strict.search("Parle-moi de minishell").grounded


def test_empty_question_and_top_k(index: SearchIndex) -> None:
    assert index.search("").hits == [] and not index.search("").grounded
    assert index.search("?! le la").hits == []
    assert len(index.search("projet", top_k=2).hits) <= 2
    assert len(index.search("projet C++ ia potager shell pile", top_k=3).hits) == 3


def test_typo_is_corrected_for_ranking(index: SearchIndex) -> None:
    result = index.search("tempaltes")  # transposed letters
    assert result.hits[0].id == "cpp"
    assert result.stats["corrected"] == {"tempalt": "templat"}
    # A corrected word helps ranking but is no evidence that the vault covers the question.
    assert result.stats["evidence"] == 0.0


def _small_vault(root: Path) -> Path:
    """Ten notes: a Python skill (named, held by several notes), hobbies that mention a bike once, and
    subjects that make one note's word rare."""
    root.mkdir()
    notes = {
        "python": ("Python", ["python"], "Python pour les données, les scripts et les services web."),
        "competences": ("Compétences", ["compétences"], "Ses compétences : Python, Rust, SQL et Docker."),
        "loisirs": ("Centres d'intérêt", [], "Il a parcouru en 2024 le GR3 entre Saumur et Nantes. Il se déplace au quotidien à vélo."),
        "rust": ("Rust", [], "Rust pour les services réseau, depuis 2021."),
    }
    for i, subject in enumerate(["cartographie", "base de données", "conteneurs", "tests", "cuisine", "photographie"]):
        notes[f"sujet-{i}"] = (subject.capitalize(), [], f"Quelques lignes sur {subject}, avec Python.")
    for name, (title, aliases, body) in notes.items():
        alias_lines = "".join(f"  - {a}\n" for a in aliases)
        (root / f"{name}.md").write_text(
            f"---\ntitle: \"{title}\"\nslug: {name}\naliases:\n{alias_lines}visibility: public\n---\n\n{body}\n",
            encoding="utf-8",
        )
    return root


def test_a_confident_correction_counts_as_evidence(tmp_path: Path) -> None:
    index = SearchIndex.build(Vault.load(_small_vault(tmp_path / "v")))
    typed = index.search("competance en pyhton ?")
    assert typed.stats["corrected"] == {"compet": "competent", "pyhton": "python"}
    assert typed.hits[0].id in {"python", "competences"}
    assert typed.grounded and typed.stats["evidence"] > 0
    # A word one edit from a vault word but too short to tell from another word ranks, proves nothing.
    assert not index.search("Quel temps fera-t-il lundi ?").grounded


def test_a_word_typed_twice_weighs_once(tmp_path: Path) -> None:
    index = SearchIndex.build(Vault.load(_small_vault(tmp_path / "v")))
    alone = index.search("python").stats["evidence"]
    assert index.search("python pyhton").stats["evidence"] == alone  # the typo is the same word again
    assert index.search("pyhton pytohn").stats["evidence"] == index.search("pyhton").stats["evidence"]


def test_a_lone_mention_in_passing_does_not_ground_a_question(tmp_path: Path) -> None:
    index = SearchIndex.build(Vault.load(_small_vault(tmp_path / "v")))
    repair = index.search("Comment réparer un vélo ?")
    assert repair.hits and repair.hits[0].id == "loisirs"  # ranking is unchanged ...
    assert not repair.grounded  # ... but "vélo" once in a list of hobbies is no source on repairing bikes
    assert index.search("vélo ?").grounded  # the mention does answer the word alone
    # Question words that meet in one note corroborate each other.
    assert index.search("A-t-il parcouru le GR3 en 2024 ?").grounded


#: Help pages that only fill a small help vault's vocabulary.
_HELP_FILLER = {
    "onglets": ("Onglets", "Ouvrir, fermer et épingler des onglets."),
    "plier": ("Plier", "Plier une section pour masquer son contenu."),
    "coffre": ("Créer un coffre", "Un coffre est un dossier de notes."),
    "themes": ("Thèmes", "Changer les couleurs de l'interface."),
}


def _write_titled(root: Path, notes: dict[str, tuple[str, str]]) -> Path:
    """`root` with a note `name.md` of that title and body for each of `notes`."""
    for name, (title, body) in notes.items():
        (root / f"{name}.md").write_text(f"---\ntitle: \"{title}\"\n---\n\n{body}\n", encoding="utf-8")
    return root


def _git_vault(root: Path) -> Path:
    """A help vault where one note says "pousser" again and again in its body (git push), another names
    "Pousser" in a heading, and the rest fill the vocabulary."""
    root.mkdir()
    notes = {
        "synchroniser": ("Synchroniser vos notes", "Avec git, poussez les modifications. Pousser souvent. "
                         "Il faut pousser puis récupérer les modifications, et pousser encore."),
        "publier": ("Publier", "## Pousser vers le site\n\nPousser les pages vers le site publié."),
        **_HELP_FILLER,
    }
    return _write_titled(root, notes)


def test_a_plain_word_a_body_repeats_does_not_ground_an_unseen_subject(tmp_path: Path) -> None:
    index = SearchIndex.build(Vault.load(_git_vault(tmp_path / "v")))
    # "tomates" is a word the vault has never seen; "pousser" only fills the git note's body: the note is
    # not about growing anything, however often it says the word (grasbot/search/grounding.py, body-only).
    tomatoes = index.search("Comment faire pousser des tomates ?")
    assert tomatoes.hits and tomatoes.hits[0].id in {"synchroniser", "publier"}  # ranking unchanged
    assert not tomatoes.grounded
    # Corroborated by another question word in the same note, the body is a source.
    assert index.search("Comment pousser les modifications avec git ?").grounded
    # A one-word question is never discounted: the mention answers the word alone.
    assert index.search("pousser ?").grounded


# -- determinism -----------------------------------------------------------------------------------------

_PROBE = """
import json, sys
from grasbot.search.index import SearchIndex
from grasbot.vault import Vault
index = SearchIndex.build(Vault.load(sys.argv[1]))
out = {}
for q in sys.argv[2:]:
    r = index.search(q, top_k=10)
    out[q] = [r.grounded, r.stats["corrected"], r.stats["evidence"], [(h.id, h.score, list(h.reasons)) for h in r.hits]]
print(json.dumps(out, sort_keys=True))
"""
QUESTIONS = ["projets", "trier une pile", "programmer en C++ ou en C", "Quel temps fait-il demain ?", "potager ia shell"]


def _shuffled_copy(src: Path, dest: Path, seed: int) -> Path:
    """Copy `src` creating files in a shuffled order (directory listing order follows creation)."""
    files = sorted(p for p in src.rglob("*") if p.is_file())
    random.Random(seed).shuffle(files)
    for path in files:
        target = dest / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    return dest


def _probe(vault: Path, seed: str, questions: list[str]) -> str:
    """`_PROBE`'s answers to `questions` on `vault`, in a fresh interpreter with this hash seed."""
    env = dict(os.environ, PYTHONHASHSEED=seed)
    run = subprocess.run(
        [sys.executable, "-c", _PROBE, str(vault), *questions],
        capture_output=True, text=True, env=env, cwd=REPO, check=True,
    )
    return run.stdout


def test_results_do_not_depend_on_hash_seed_or_file_order(tmp_path: Path) -> None:
    outputs = set()
    for n, seed in enumerate(("0", "1", "4242", "random")):
        vault = _shuffled_copy(FIXTURES / "basic", tmp_path / f"v{n}", n)
        outputs.add(_probe(vault, seed, QUESTIONS))
    assert len(outputs) == 1, outputs


def test_corrections_and_evidence_do_not_depend_on_hash_seed_or_file_order(tmp_path: Path) -> None:
    questions = ["competance en pyhton ?", "tempaltes", "Comment réparer un vélo ?", "cpp tempalte shel", "Quel temps fait-il demain ?"]
    outputs = set()
    for n, seed in enumerate(("0", "1", "4242")):
        root = _small_vault(tmp_path / f"s{n}")
        shutil.copytree(FIXTURES / "basic", root / "basic")
        vault = _shuffled_copy(root, tmp_path / f"v{n}", n)
        outputs.add(_probe(vault, seed, questions))
    assert len(outputs) == 1, outputs


def test_ties_are_broken_by_id(tmp_path: Path) -> None:
    for name in ("zeta", "alpha", "mid"):
        (tmp_path / f"{name}.md").write_text("---\ntitle: Note\n---\nUn texte identique sur les piles.\n", encoding="utf-8")
    result = SearchIndex.build(Vault.load(tmp_path)).search("piles")
    assert [h.id for h in result.hits] == ["alpha", "mid", "zeta"]
    assert len({h.score for h in result.hits}) == 1


# -- incremental update ----------------------------------------------------------------------------------


def _snapshot(index: SearchIndex) -> list:
    return _full_snapshot(index, QUESTIONS + ["kayak", "voilier"], top_k=10)


def test_update_after_edit_create_and_delete_matches_a_fresh_build(basic: Path) -> None:
    vault = Vault.load(basic)
    index = SearchIndex.build(vault)

    note = basic / "10-Projets" / "minishell.md"
    note.write_text(note.read_text(encoding="utf-8").replace("inspiré de bash", "inspiré de bash, avec un voilier"), encoding="utf-8")
    index.update(vault, vault.update_file(note))
    assert hit(index.search("voilier"), "minishell")
    assert _snapshot(index) == _snapshot(SearchIndex.build(Vault.load(basic)))

    created = basic / "10-Projets" / "voilier.md"
    created.write_text("---\ntitle: Voilier\nslug: voilier\n---\nUn voilier construit en bois.\n", encoding="utf-8")
    index.update(vault, vault.update_file(created))
    assert index.search("voilier").hits[0].id == "voilier"
    assert _snapshot(index) == _snapshot(SearchIndex.build(Vault.load(basic)))

    created.unlink()
    index.update(vault, vault.remove_file(created))
    assert "voilier" not in index.ids
    assert _snapshot(index) == _snapshot(SearchIndex.build(Vault.load(basic)))


def test_update_making_a_note_private_removes_it(basic: Path) -> None:
    vault = Vault.load(basic)
    index = SearchIndex.build(vault)
    note = basic / "10-Projets" / "jardin-partage.md"
    note.write_text(note.read_text(encoding="utf-8").replace("visibility: public", "visibility: private"), encoding="utf-8")
    index.update(vault, vault.update_file(note))
    assert "jardin-partage" not in index.ids
    assert all(h.id != "jardin-partage" for h in index.search("potager tomates compost").hits)


# -- vaults without GrasBot fields ---------------------------------------------------------------------


def test_plain_obsidian_vault_ids_fall_back_to_names_and_paths(tmp_path: Path) -> None:
    dest = tmp_path / "plain"
    shutil.copytree(FIXTURES / "plain", dest)
    index = SearchIndex.build(Vault.load(dest))
    assert sorted(index.ids) == ["A/Guide", "B/Guide", "Raccourcis clavier"]
    assert index.search("synchroniser mes notes entre appareils").hits[0].id == "A/Guide"
    first = index.search("raccourcis clavier").hits[0]
    assert first.id == "Raccourcis clavier" and "title" in first.reasons


# -- real vaults (skipped when ../shared/corpora is absent) ---------------------------------------------


def test_question_set_on_the_real_grasbot_vault() -> None:
    from tests.conftest import corpus_path
    from vaulttools.evaluation import evaluate, load_questions

    vault = corpus_path("grasbot-vault")
    index = SearchIndex.build(Vault.load(vault))
    summary = evaluate(load_questions(REPO / "benchmarks" / "questions-grasbot-vault.yaml"), index.search).summary()
    assert summary["hit@1"] >= 0.85
    assert summary["hit@5"] >= 0.95
    assert summary["offtopic_rejected"] >= 0.9


def _full_snapshot(index: SearchIndex, questions: list[str], top_k: int = 8) -> list:
    """Everything a question returns, except the timing."""
    out = []
    for q in questions:
        r = index.search(q, top_k=top_k)
        stats = {k: v for k, v in r.stats.items() if k != "elapsed_ms"}
        out.append((q, r.grounded, stats, [(h.id, h.score, h.reasons, h.direct, h.coverage) for h in r.hits]))
    return out


def test_random_edits_deletes_and_creates_keep_the_index_equal_to_a_fresh_build(sample_vault_copy: Path) -> None:
    """Incremental `update` after each random change (body words added and removed, aliases shared with
    another note, a note made private, same-named notes created, notes deleted, links added) answers
    exactly as `SearchIndex.build` on the vault as it now is."""
    root = sample_vault_copy
    rng = random.Random(20261129)
    vault = Vault.load(root)
    index = SearchIndex.build(vault)
    words = ["voilier", "kayak", "compilateur", "jardin", "pile", "réseau", "sécurité", "python", "docker", "tomates"]
    questions = ["voilier kayak", "compilateur python", "Parle-moi de docker", "jardin potager", "securite reseau", "voiliers", "kayac", "projets", "Quel temps fait-il demain ?"]
    notes = sorted(p for p in root.rglob("*.md") if p.name != "README.md")
    questions += [p.stem.replace("-", " ") for p in rng.sample(notes, 6)]
    created = 0
    made: list[str] = []
    actions = []
    plan = ["body", "body", "alias", "private", "create", "create", "delete", "link"] * 4
    rng.shuffle(plan)
    for step, action in enumerate(plan):
        notes = sorted(p for p in root.rglob("*.md"))
        target = rng.choice(notes)
        text = target.read_text(encoding="utf-8")
        if action == "body":  # add some words, drop a line
            lines = text.splitlines()
            if len(lines) > 8:
                del lines[rng.randrange(len(lines) // 2, len(lines))]
            lines.append(" ".join(rng.choice(words) for _ in range(rng.randint(1, 6))))
            target.write_text("\n".join(lines) + "\n", encoding="utf-8")
        elif action == "alias" and text.startswith("---\n"):  # an alias another note may hold too
            target.write_text(text.replace("---\n", f"---\naliases: [{rng.choice(words)}]\n", 1) if "aliases:" not in text else text.replace("aliases:", f"aliases:\n  - {rng.choice(words)}", 1), encoding="utf-8")
        elif action == "private" and "visibility: public" in text:
            target.write_text(text.replace("visibility: public", "visibility: private"), encoding="utf-8")
        elif action == "create":  # sometimes the same file name as an existing note (ids change)
            created += 1
            # A file name already used: the vault renames the other note's id (no slug: id = name).
            name = rng.choice([target.stem, *made]) if rng.random() < 0.5 else f"nouvelle-{created}"
            made.append(name)
            folder = root / rng.choice(["", "10-Projets", "Divers"])
            folder.mkdir(exist_ok=True)
            target = folder / f"{name}.md"
            if target.exists():
                target = folder / f"{name}-{created}.md"
            link = f"[[{rng.choice(notes).stem}]]"
            target.write_text(f"---\ntitle: Note {created} {rng.choice(words)}\nvisibility: public\n---\n{' '.join(rng.choices(words, k=5))} {link}\n", encoding="utf-8")
        elif action == "delete":
            target.unlink()
        else:  # a new link in the body (the graph)
            target.write_text(text + f"\nVoir [[{rng.choice(notes).stem}]].\n", encoding="utf-8")
        change = vault.remove_file(target) if not target.exists() else vault.update_file(target)
        actions.append(action)
        index.update(vault, change)
        fresh = SearchIndex.build(Vault.load(root))
        assert index.ids == fresh.ids, f"step {step} ({action} {target.name})"
        assert _full_snapshot(index, questions) == _full_snapshot(fresh, questions), f"step {step} ({action} {target.name})"
    assert {"body", "alias", "private", "create", "delete", "link"} <= set(actions)

    # A word whose last note is deleted leaves the vocabulary: the question is then spelling-corrected
    # to its neighbour, exactly as in a fresh build.
    for name, word in (("chalet", "chalet"), ("chalutier", "chalut")):
        (root / f"{name}.md").write_text(f"---\ntitle: {name.title()} bleu\n---\nUn {word} rouge.\n", encoding="utf-8")
        index.update(vault, vault.update_file(root / f"{name}.md"))
    (root / "chalet.md").unlink()
    index.update(vault, vault.remove_file(root / "chalet.md"))
    fresh = SearchIndex.build(Vault.load(root))
    assert fresh.search("chalet").stats["corrected"] == {"chalet": "chalut"}
    assert _full_snapshot(index, ["chalet", "chalut rouge"]) == _full_snapshot(fresh, ["chalet", "chalut rouge"])


# -- the index's layout: batches, the general summing path, updates ------------------------------------


def test_build_in_small_batches_answers_as_one_batch(sample_vault_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A vault larger than one build batch: the batches' pairs placed term by term give the same index."""
    import grasbot.search.index as search_module

    vault = Vault.load(sample_vault_copy)
    one = SearchIndex.build(vault)
    monkeypatch.setattr(search_module, "_BUILD_BATCH", 3)
    many = SearchIndex.build(vault)
    questions = ["voilier kayak", "compilateur python", "Parle-moi de docker", "jardin potager", "projets", "pyhton"]
    assert many.ids == one.ids
    assert _full_snapshot(many, questions) == _full_snapshot(one, questions)


def test_sum_pairs_general_path_matches_the_packed_one() -> None:
    """Counts too large to pack in one integer take the general path, to the same sums."""
    import numpy as np

    from grasbot.search.index import _sum_pairs

    fm_tid = [5, 7, 5, 9]  # note 0: title 5 7, slug 5; note 1: heading 9
    fm_sizes = [2, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0]  # per note: title, aliases, slug, answers, labels, headings, lead
    b_tid = [5, 0, 5, 9, 7]
    small = [3, 4, 2, 1, 6]
    b_n = [3, 2]
    packed = _sum_pairs(fm_tid, fm_sizes, b_tid, b_count=small, b_n=b_n)
    # (term 5, note 0): title and slug, 3 + 2 in the body; (7, 0): title; (7, 1): body; (9, 1): heading, body.
    # Pairs per term id, slots, the pairs with short-field values and those values, body counts.
    assert [a.tolist() for a in packed] == [[0, 0, 0, 0, 0, 1, 0, 2, 0, 1], [0, 0, 1, 1], [0, 1, 3], [4.0, 3.0, 2.0], [5, 0, 6, 1]]
    huge = [3 << 45, 4, 2, 1, 6]
    general = _sum_pairs(fm_tid, fm_sizes, b_tid, huge, b_n)
    assert general[4].tolist() == [float(np.float32((3 << 45) + 2)), 0.0, 6.0, 1.0]
    assert [a.tolist() for a in general[:4]] == [a.tolist() for a in packed[:4]]


def test_update_after_a_note_changed_in_place_rebuilds(basic: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The index reads a note again to take it out; a note object changed in place since it was indexed
    cannot be taken out term by term: the index is rebuilt, and still answers as a fresh build."""
    vault = Vault.load(basic)
    index = SearchIndex.build(vault)
    path = "10-Projets/jardin-partage.md"
    vault.notes[path].meta["title"] = "Chalutier rouge"  # behind the index's back
    rebuilt: list[int] = []
    rebuild = SearchIndex._rebuild_now
    monkeypatch.setattr(SearchIndex, "_rebuild_now", lambda self, v: rebuilt.append(1) or rebuild(self, v))
    (basic / path).write_text((basic / path).read_text(encoding="utf-8") + "\nUn chalutier rouge.\n", encoding="utf-8")
    index.update(vault, vault.update_file(basic / path))
    assert rebuilt == [1]
    fresh = SearchIndex.build(Vault.load(basic))
    assert _full_snapshot(index, ["chalutier rouge", "potager tomates"]) == _full_snapshot(fresh, ["chalutier rouge", "potager tomates"])


def test_update_looks_only_at_the_changed_notes_and_their_namesakes(sample_vault_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After the first update, an edit compares only the notes that share a name with the changed one,
    and a private namesake that renames a public note's id is still seen."""
    import grasbot.search.index as search_module

    root = sample_vault_copy
    vault = Vault.load(root)
    index = SearchIndex.build(vault)
    first = sorted(p for p in root.rglob("*.md") if p.name != "README.md")[3]
    first.write_text(first.read_text(encoding="utf-8") + "\nUne ligne de plus.\n", encoding="utf-8")
    index.update(vault, vault.update_file(first))  # builds the name index
    looked: list[set[str]] = []
    around = search_module._Names.around
    monkeypatch.setattr(search_module._Names, "around", lambda self, paths, notes: looked.append(around(self, paths, notes)) or looked[-1])
    first.write_text(first.read_text(encoding="utf-8") + "\nEncore une.\n", encoding="utf-8")
    index.update(vault, vault.update_file(first))
    assert looked and len(looked[-1]) < 5 < len(vault.notes)
    # A private note named like a public one: the vault renames the public note's id.
    twin = root / "Divers" / first.name
    twin.parent.mkdir(exist_ok=True)
    twin.write_text("---\ntitle: Jumeau\nvisibility: private\n---\nSecret.\n", encoding="utf-8")
    index.update(vault, vault.update_file(twin))
    fresh = SearchIndex.build(Vault.load(root))
    assert index.ids == fresh.ids
    questions = [first.stem.replace("-", " "), "ligne de plus"]
    assert _full_snapshot(index, questions) == _full_snapshot(fresh, questions)


# -- generalisation classes (issue 17): general rules, each on a small hand-made vault ---------------------


def _write(folder: Path, name: str, text: str) -> None:
    (folder / f"{name}.md").write_text(text, encoding="utf-8")


def test_a_hub_holding_the_subject_as_alias_ranks_below_the_note_about_it(tmp_path: Path) -> None:
    # The hub gathers the notes of a field and names their subjects among its aliases; the subject's own
    # note says it in its body. A hub names a collection: the note about the subject comes first.
    _write(tmp_path, "MOC-Materiel", "---\ntitle: Matériel\ntype: moc\naliases: [carte graphique, processeur, clavier, écran, souris]\n"
           "---\nLe matériel : [[station-de-calcul]], [[poste-bureautique]].\n")
    _write(tmp_path, "station-de-calcul", "---\ntitle: Station de calcul\n---\n"
           "La station entraîne les modèles de langue sur une carte graphique de vingt-quatre gigaoctets.\n")
    _write(tmp_path, "poste-bureautique", "---\ntitle: Poste bureautique\n---\nUn poste simple pour écrire.\n")
    for i in range(4):
        _write(tmp_path, f"autre-{i}", f"---\ntitle: Autre {i}\n---\nUne note sur le jardin numéro {i}.\n")
    result = SearchIndex.build(Vault.load(tmp_path)).search("Quelle carte graphique entraîne les modèles de langue ?")
    assert [h.id for h in result.hits[:2]] == ["station-de-calcul", "MOC-Materiel"]


def test_a_title_word_few_titles_share_is_a_stronger_sign_than_one_most_share(tmp_path: Path) -> None:
    # `zorbix` and `atelier` are held by as many notes (same IDF): `zorbix` in most titles, `atelier` in one
    # title and in bodies. Part of a title counts by its rarity among titles: the `Atelier` note first
    # (without the rule the two notes tie and the `zorbix` ones come first by id).
    for i, topic in enumerate(("jardin", "cuisine", "musique", "voyage", "lecture", "peinture", "cinéma")):
        _write(tmp_path, f"a-{i}", f"---\ntitle: Zorbix {topic}\n---\nDes idées de {topic}.\n")
        _write(tmp_path, f"c-{i}", f"---\ntitle: Carnet {topic}\n---\nUn atelier de {topic}.\n")
    _write(tmp_path, "a-7", "---\ntitle: Zorbix danse\n---\nDes idées de danse.\n")
    _write(tmp_path, "velo", "---\ntitle: Atelier vélo\n---\nDes idées de réparation.\n")
    result = SearchIndex.build(Vault.load(tmp_path)).search("zorbix atelier")
    assert result.hits[0].id == "velo"
    assert result.hits[0].score > result.hits[1].score


def test_a_misspelling_that_stems_to_a_rare_real_word_is_also_read_as_the_vault_name(tmp_path: Path) -> None:
    # `cliper` stems to `clip`, a real word of one note; the vault names `clipper` in a title and in
    # several notes. The token as typed stays, and the name one edit away is looked for too: the
    # Clipper note first (without the rule only the note that says `clip` matches).
    _write(tmp_path, "montage", "---\ntitle: Montage vidéo\n---\nChaque clip dure dix secondes.\n")
    _write(tmp_path, "clipper", "---\ntitle: Web Clipper\n---\nLe clipper capture une page dans le coffre.\n")
    for i in range(5):
        _write(tmp_path, f"guide-{i}", f"---\ntitle: Guide {i}\n---\nLe clipper garde la page numéro {i}.\n")
    for i, topic in enumerate(("jardin", "cuisine", "musique", "voyage", "lecture", "peinture", "cinéma", "danse")):
        _write(tmp_path, f"autre-{i}", f"---\ntitle: Carnet {topic}\n---\nDes idées de {topic} pour le week-end.\n")
    index = SearchIndex.build(Vault.load(tmp_path))
    result = index.search("comment installer le cliper ?")
    assert result.stats["respelled"] == {"clip": "clipp"}
    assert result.hits[0].id == "clipper"
    # the name itself is not respelled, nor a word too short to be a misspelling, nor a name written
    # with a capital (`Cliper` could be a proper name)
    assert index.search("le clipper").stats["respelled"] == {}
    assert index.search("chaque clip").stats["respelled"] == {}
    assert index.search("comment installer Cliper ?").stats["respelled"] == {}


def test_a_generic_word_with_many_expansions_lifts_a_note_once_not_per_synonym(tmp_path: Path) -> None:
    # `changer` expands (grasbot/search/lexicon.py) to `configurer`, `modifier`, `personnaliser`,
    # `paramètres`, `réglages`...: a note that lists them all says "change" again and again, not more
    # about the question's subject. Ranking counts a word's synonyms at their best in the note (plus a
    # share of the others, `grounding.RANK_OTHER_SHARE`), as the evidence does: the note about the colours
    # first (with the plain sum, `RANK_OTHER_SHARE = 1`, the list of synonyms wins).
    _write(tmp_path, "couleurs", "---\ntitle: Apparence\n---\nLes couleurs de l'interface se choisissent.\n")
    _write(tmp_path, "options", "---\ntitle: Options\n---\nConfigurer, modifier, personnaliser : les paramètres et les "
           "réglages de l'interface.\n")
    for i in range(6):
        _write(tmp_path, f"autre-{i}", f"---\ntitle: Autre {i}\n---\nUne note sur le jardin numéro {i}.\n")
    result = SearchIndex.build(Vault.load(tmp_path)).search("Comment changer les couleurs de l'interface ?")
    assert [h.id for h in result.hits[:2]] == ["couleurs", "options"]


def test_an_identifier_keeps_its_stop_words(tmp_path: Path) -> None:
    # `expand_by_graph` is one name: its `by` is part of it. Without it the question is "expand graph",
    # and the note that says both words often outranks the one that names the function.
    _write(tmp_path, "recherche", "---\ntitle: Recherche\n---\nLa fonction expand_by_graph ajoute les voisins.\n")
    _write(tmp_path, "graphe", "---\ntitle: Vue\n---\nExpand the graph, expand every graph node.\n")
    for i in range(6):
        _write(tmp_path, f"autre-{i}", f"---\ntitle: Autre {i}\n---\nUne note sur le jardin numéro {i}.\n")
    index = SearchIndex.build(Vault.load(tmp_path))
    result = index.search("que fait expand_by_graph ?")
    assert result.tokens == ("expand", "by", "graph")
    assert result.hits[0].id == "recherche"
    # the same words written apart are plain words: `by` stays a stop word
    assert index.search("expand by graph").tokens == ("expand", "graph")


def test_a_plan_name_made_of_a_stop_word_keeps_it(tmp_path: Path) -> None:
    # "Sync Plus" is a plan: its `Plus`, written with a capital after a capitalised word, is part of the
    # name, not the stop word `plus`. Without it the question is "Sync", and any note on Sync may come first.
    _write(tmp_path, "a-sync", "---\ntitle: Coffres\n---\nSync synchronise le coffre. Sync chiffre les notes.\n")
    _write(tmp_path, "forfaits", "---\ntitle: Forfaits\n---\nLe forfait Sync Plus garde les versions un an, "
           "de plus il offre dix gigaoctets.\n")
    for i in range(6):
        _write(tmp_path, f"autre-{i}", f"---\ntitle: Autre {i}\n---\nUne note sur le jardin numéro {i}, plus petite.\n")
    index = SearchIndex.build(Vault.load(tmp_path))
    result = index.search("Que comprend Sync Plus ?")
    assert "plus" in result.tokens
    assert result.hits[0].id == "forfaits"
    # `plus` written as a plain word stays a stop word, in questions and notes
    assert "plus" not in index.search("Sync est plus rapide ?").tokens
    # and the notes' plain "plus" ("plus petite") is not indexed: only the note naming the plan and
    # the one on Sync match
    assert [h.id for h in index.search("Sync Plus").hits] == ["forfaits", "a-sync"]


def test_a_title_named_but_for_words_most_titles_share_is_named_whole(tmp_path: Path) -> None:
    # "Importer depuis Zorg Notes": the question holds every word of it but `depuis`, which most titles
    # share: the title is named whole (`TITLE_NAMED_SHARE`), and its note comes before a sibling whose
    # body says every word of the question, `iphone` more often (with the rule off, 1.1, the sibling wins).
    _write(tmp_path, "zorg-notes", "---\ntitle: Importer depuis Zorg Notes\n---\nMigrer vers le coffre, avec les dossiers, "
           "les pièces jointes, les étiquettes, les dates de création et les liens de chaque carnet.\n")
    _write(tmp_path, "zorg-journal", "---\ntitle: Importer depuis Zorg Journal\n---\nSur iphone, Zorg Journal remplace les "
           "notes de Zorg. Importer depuis l'iphone : l'iphone exporte le journal.\n")
    for name in ("Bear", "Craft", "Evernote", "Keep", "Notion", "Roam"):
        _write(tmp_path, f"import-{name.lower()}", f"---\ntitle: Importer depuis {name}\n---\nMigrer depuis {name}.\n")
    index = SearchIndex.build(Vault.load(tmp_path))
    result = index.search("Can I import my Zorg Notes from my iphone?")
    assert result.hits[0].id == "zorg-notes" and "title" in result.hits[0].reasons
    # a title missing one of its rare words is only part of it
    assert "title-partial" in next(h for h in result.hits if h.id == "zorg-journal").reasons


def _help_vault(root: Path, graph_lead: str) -> Path:
    """A help vault where the graph view's page says in its first paragraph what the view is for, in
    words its title does not hold, and a sibling page says them too, further down its body."""
    root.mkdir()
    notes = {
        "vue-graphique": ("Vue graphique", f"{graph_lead}\n\n## Réglages\n\nLes filtres, les groupes et les forces de la vue."),
        "liens": ("Liens internes", "Créer des liens entre les notes avec des crochets.\n\n## Usages\n\nLes liens "
                  "servent aussi à visualiser les relations entre les notes."),
        **_HELP_FILLER,
    }
    return _write_titled(root, notes)


def test_a_note_definition_ranks_it_for_its_own_words(tmp_path: Path) -> None:
    # The first paragraph names the page's subject ("vue graphique"): it is its definition, and its words
    # rank it for a question in those words rather than the sibling that repeats them further down.
    lead = "La vue graphique permet de visualiser les relations entre les notes de votre coffre."
    index = SearchIndex.build(Vault.load(_help_vault(tmp_path / "v", lead)))
    assert index.search("Comment visualiser les relations entre mes notes ?").hits[0].id == "vue-graphique"


def test_a_first_paragraph_that_does_not_name_the_note_is_no_definition(tmp_path: Path) -> None:
    # The same words, in a first paragraph that does not name the page's subject: a narrative opening,
    # counted as the body it is.
    lead = "Elle permet de visualiser les relations entre les notes de votre coffre."
    index = SearchIndex.build(Vault.load(_help_vault(tmp_path / "v", lead)))
    assert index.search("Comment visualiser les relations entre mes notes ?").hits[0].id == "liens"


def test_a_word_of_the_definition_alone_is_still_a_mention_in_passing(tmp_path: Path) -> None:
    root = tmp_path / "v"
    _small_vault(root)
    # a first paragraph that names its note (it is its definition), with a pump and an installation in it
    (root / "automates.md").write_text(
        "---\ntitle: \"Automates programmables\"\nslug: automates\nvisibility: public\n---\n\n"
        "Il a programmé des automates qui pilotent les pompes de dosage installées à la tannerie.\n\n"
        "## Chantier\n\nLes automates, leur programme et la tannerie.\n",
        encoding="utf-8",
    )
    index = SearchIndex.build(Vault.load(root))
    heat = index.search("Comment installer une pompe à chaleur ?")
    assert heat.hits and heat.hits[0].id == "automates"  # the definition ranks the note ...
    assert not heat.grounded  # ... it does not make every word of it the note's subject
    assert index.search("Quels automates a-t-il programmés ?").grounded


# -- word families the stemmer leaves apart (benchmarks/README.md, "Fourth round") ---------------------


def _notes(root: Path, bodies: dict[str, str]) -> Path:
    """The notes, and twenty others on other subjects (a word of one note in five is no rare word)."""
    root.mkdir(parents=True)
    others = ("jardin", "cuisine", "musique", "montagne", "voile", "peinture", "lecture", "cinéma", "théâtre", "échecs")
    fillers = {f"Autre {i}": f"Quelques lignes sur {others[i % 10]} et la saison {i}." for i in range(20)}
    for name, body in {**bodies, **fillers}.items():
        (root / f"{name}.md").write_text(body + "\n", encoding="utf-8")
    return root


def test_another_form_of_a_question_word_finds_the_note_that_uses_it(tmp_path: Path) -> None:
    # Snowball stems `vidéo` to `video` and `vidéos` to `videos`, `financier` to `financi`, `financières` to
    # `financier` and `financement` to `financ`: other forms of one word, which the vault's own words join.
    vault = _notes(
        tmp_path / "v",
        {
            "Lecteur": "Le lecteur ouvre une vidéo à la fois.",
            "Formats": "Les vidéos en mp4 et en webm sont acceptées.",
            "Plage": "Une photo de la plage au soleil.",
            "Contributions": "Les contributions financières aident l'équipe à vivre.",
            "Budget": "Le financement du budget de la mairie.",
        },
    )
    index = SearchIndex.build(Vault.load(vault))
    assert {"Lecteur", "Formats"} <= {h.id for h in index.search("Une vidéo ?").hits}
    assert "Plage" not in {h.id for h in index.search("Une vidéo ?").hits}
    assert "Contributions" in {h.id for h in index.search("un soutien financier").hits}


def test_two_forms_of_one_word_in_a_note_count_once(tmp_path: Path) -> None:
    # "vidéo" twice says the word more than "vidéo" once and "vidéos" once: the family form counts only
    # beyond the word as typed, not on top of it.
    vault = _notes(
        tmp_path / "v",
        {
            "Alpha": "La vidéo montre la vidéo du jour.",
            "Beta": "La vidéo montre les vidéos du jour.",
            "Gamma": "Les vidéos du mois dernier.",
            "Delta": "Un texte sans rapport du jour.",
            "Epsilon": "Un autre texte du mois.",
        },
    )
    index = SearchIndex.build(Vault.load(vault))
    assert [h.id for h in index.search("la vidéo").hits[:2]] == ["Alpha", "Beta"]
