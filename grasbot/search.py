"""Retrieval: which public notes answer a question, with a score and the reasons for it.

How a question is scored (DESIGN §6 gives the original; this is the same family of signals, reworked
where the original was known to fail):

- **Field-weighted BM25 (BM25F)** over title, aliases, slug, answers, domains/tags, headings and body,
  every field through the same French tokenizer (accents folded, stemmed). It is the backbone: it alone ranks a vault
  without GrasBot fields (Obsidian's help vault). Shown as `bm25:<points>`, normalised so the best note of
  the question gets `BM25_POINTS`.
- **Phrase signals** from the frontmatter: an alias, the whole title or every slug token present in the
  question (`alias:<alias>`, `title`, `slug`), part of the title (`title-partial`), a `domains`/`tags`
  label present (`domain:ia`, `tag:x`).
  Each is worth its constant × the share of the question's *informative mass* it covers (sum of the IDF
  of the question's tokens): an alias such as `42`, held by many notes and made of a common token, no
  longer outweighs the subject of the question. An alias held by k notes names none of them: ÷ k.
- **Answers by similarity**: the best of the note's sample questions, IDF-weighted cosine with the
  question (`answers-full` ≥ 0.8, else `answers-partial:<sim>`), not a token count that stops at the
  first partial hit.
- `priority` ((p − 5) × 0.3) and `moc-hub` (+1) only for a note that already has lexical evidence.
- **Graph expansion**: a neighbour (outgoing links: linked, related, body wikilinks) of one of the best
  direct notes is lifted to `GRAPH_SHARE` of that seed's score when it scored less (`graph-from:<seed>`),
  capped strictly below every note that really matches the question (covers at least half of its
  informative mass): the graph lifts a neighbour past weak matches, never past its seed or a real match.
- **Spelling**: a question token the vault has never seen is matched to the most frequent index term one
  edit away (or that it begins), for ranking only, at half weight (`stats["corrected"]`).
- **grounded**: the evidence of the best direct note, its BM25F score as a share of the score of an ideal
  note holding every question token strongly, must reach `GROUND_EVIDENCE`. Each token weighs its IDF and
  tokens the vault has never seen weigh the most, so "Quel temps fait-il demain ?" sharing `temps` with a
  note's body stays ungrounded, and a body-only single mention counts little. `SearchConfig.min_score`
  adds a plain score floor on top.

Private notes (any `visibility` but `public`) are never indexed. Notes with a problem: unreadable, binary
or empty files are skipped; a note whose frontmatter does not parse is *degraded* (indexed from its file
name and body only, no frontmatter signal), unless its raw frontmatter mentions a non-public
`visibility`, in which case it is skipped (fail closed: we cannot tell it is public). A plain Markdown
note without frontmatter is a normal note of an Obsidian vault and is indexed fully.

Determinism: notes are numbered in id order, every accumulation runs in a fixed order (question tokens
sorted), ties are broken by id; nothing depends on set order, the hash seed or the file order, and an
index brought up to date by `update` answers exactly as a fresh `build` of the same vault.
"""

from __future__ import annotations

import bisect
import gc
import math
import re
import time
from collections import Counter
from operator import itemgetter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grasbot import grounding as _grounding, lexicon as _lexicon
from grasbot.notes import Note
from grasbot.tokenize import token_counts, tokenize, tokenize_short
from grasbot.vault import LinkChange, Vault

# -- constants (starting points from DESIGN §6, reworked where measurement said so) -----------------
BM25_K1 = 1.2
BM25_B = 0.75  # body length normalisation; the short fields are not length-normalised
#: BM25F field weights: a term in the title says more about the subject than one in the body.
FIELD_WEIGHTS: dict[str, float] = {
    "title": 3.0,
    "aliases": 1.5,
    "slug": 1.0,
    "answers": 1.5,
    "labels": 1.0,
    "headings": 2.0,
    "body": 1.0,
}
BM25_POINTS = 10.0  # the best note's BM25 share of the score
ALIAS_POINTS = 10.0
TITLE_POINTS = 16.0  # the whole title (the note's own name) in the question: the strongest lexical sign
TITLE_PARTIAL_POINTS = 3.0
SLUG_POINTS = 8.0
ANSWERS_POINTS = 12.0
ANSWERS_FULL = 0.8  # similarity from which the reason reads `answers-full`
ANSWERS_MIN = 0.25  # below this, a sample question is not evidence
DOMAIN_POINTS = 5.0
TAG_POINTS = 3.0
PRIORITY_STEP = 0.3
MOC_POINTS = 1.0
GRAPH_SHARE = 0.6  # a neighbour is lifted to this share of its seed's score ...
GRAPH_SEEDS = 3  # ... from the best direct notes only
UNSEEN_WEIGHT = 1.0  # share of an unseen word's IDF counted in the question's informative mass
CORRECTION_WEIGHT = 0.5  # a spelling-corrected token weighs half in ranking ...
CORRECTION_EVIDENCE = 0.0  # ... and nothing as evidence that the vault covers the question
FUZZY_MIN = 5  # shortest question token that spelling correction looks at (shorter: too many neighbours)
FUZZY_PREFIX_MIN = 6  # shortest token completed as the beginning of an index term
REAL_MATCH_COVERAGE = 0.5  # a note covering this share of the question's informative mass really matches
#: grounded when the best note's BM25F reaches this share of the question's ideal score. Chosen on the
#: question sets (benchmarks/questions-*.yaml, tests/eval/sample-questions.yaml): their off-topic
#: questions that share words with a vault reach 0.18-0.26, on-topic ones mostly 0.22 and above.
GROUND_EVIDENCE = 0.23
_SKIP_PROBLEMS = frozenset({"binary", "unreadable", "empty"})
_DEGRADE_PROBLEMS = frozenset({"yaml-error", "not-mapping", "unclosed-frontmatter"})
_PRIVATE_HINT = re.compile(r"^[ \t]*visibility[ \t]*:(?![ \t]*[\"']?public[\"']?[ \t]*(?:#.*)?$).*$", re.MULTILINE | re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class SearchConfig:
    top_k: int = 5
    min_score: float | None = None  # None: the engine's calibrated default


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved note. `reasons` are short strings such as `alias:push swap`, `slug`, `answers-full`,
    `domain:ia`, `bm25:2.12`, `graph-from:push-swap`. `direct` is False for a note lifted by the graph only."""

    note: Note
    id: str
    score: float
    reasons: tuple[str, ...]
    direct: bool = True
    coverage: float = 0.0  # share of the question's informative mass this note contains


@dataclass(frozen=True, slots=True)
class SearchResult:
    query: str
    tokens: tuple[str, ...]
    hits: list[Hit]
    grounded: bool
    stats: dict[str, Any] = field(default_factory=dict)  # candidates, seeds, bm25 stats, elapsed_ms


# -- one note, tokenized once ------------------------------------------------------------------------

_FIELDS: tuple[str, ...] = ("title", "aliases", "slug", "answers", "labels", "headings", "body")
_BODY = _FIELDS.index("body")
_KINDS: tuple[str, ...] = ("title", "slug", "alias", "answer", "domain", "tag")
_K_TITLE, _K_SLUG, _K_ALIAS, _K_ANSWER, _K_DOMAIN, _K_TAG = range(len(_KINDS))


@dataclass(slots=True)
class _Phrase:
    """A short frontmatter string (alias, title, slug, sample question, label) as a set of tokens."""

    kind: int  # index in _KINDS
    text: str
    tokens: tuple[str, ...]  # unique, sorted


@dataclass(slots=True)
class _Doc:
    note: Note
    id: str
    key: tuple[str, str]  # (path, digest or text length): re-tokenize only when this changes
    # Term counts, packed (a dict per field would cost ~10x the memory on a large vault): term ids in
    # the index's vocabulary, the field of each (index in _FIELDS), and the count.
    tids: np.ndarray
    tfield: np.ndarray
    tcount: np.ndarray
    phrases: list[_Phrase]
    ph_tids: np.ndarray  # the phrases' tokens as term ids, phrase after phrase
    priority: int | None
    is_moc: bool


def note_id(note: Note) -> str:
    """The id a hit carries: the vault's id, else the slug, else the file name."""
    return note.id or note.slug or note.stem


def _indexable(note: Note) -> bool | None:
    """True: index fully; None: degraded (file name and body only); False: never a candidate."""
    if note.is_private:
        return False
    codes = {p.code for p in note.problems}
    if codes & _SKIP_PROBLEMS or not (note.body.strip() or note.meta):
        return False
    if codes & _DEGRADE_PROBLEMS:
        head = note.text[: len(note.text) - len(note.body)] if note.body and note.text.endswith(note.body) else note.text
        return None if not _PRIVATE_HINT.search(head) else False
    return True


_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def _headings(note: Note) -> list[str]:
    """The note's section titles (from the vault's parse, else read from the body)."""
    if note.headings:
        return [h.text for h in note.headings]
    return _HEADING.findall(note.body)


def _counts(texts: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for text in texts:
        for t in tokenize_short(text):
            out[t] = out.get(t, 0) + 1
    return out


def _term_ids(vocab: dict[str, int], terms: list[str]) -> list[int]:
    """Vocabulary ids of `terms` (new terms get the next ids, in sorted order), by one C-level multi-get."""
    if not terms:
        return []
    missing = set(terms).difference(vocab)
    for term in sorted(missing):
        vocab[term] = len(vocab)
    if len(terms) == 1:
        return [vocab[terms[0]]]
    return list(itemgetter(*terms)(vocab))


def _read_doc(note: Note, full: bool, vocab: dict[str, int]) -> _Doc:
    title = note.title if full else note.stem
    slug = (note.slug or "") if full else ""
    aliases = note.aliases if full else []
    answers = note.answers if full else []
    domains = note.domains if full else []
    tags = note.tags if full else []
    fields = [
        _counts([title]),
        _counts(aliases),
        _counts([slug]),
        _counts(answers),
        _counts(domains + tags),
        _counts(_headings(note)),
    ]
    phrases: list[_Phrase] = []
    seen: set[tuple[int, tuple[str, ...]]] = set()

    def add(kind: int, text: str) -> None:
        tokens = tuple(sorted(set(tokenize_short(text))))
        if tokens and (kind, tokens) not in seen:  # `push swap`, `push-swap`, `push_swap`: one alias
            seen.add((kind, tokens))
            phrases.append(_Phrase(kind, text, tokens))

    add(_K_TITLE, title)
    if slug and (_K_TITLE, tuple(sorted(set(tokenize_short(slug))))) not in seen:
        add(_K_SLUG, slug)
    for alias in aliases:
        add(_K_ALIAS, alias)
    for answer in answers:
        add(_K_ANSWER, answer)
    for value in domains:
        add(_K_DOMAIN, value)
    for value in tags:
        add(_K_TAG, value)
    tids: list[int] = []
    tfield: list[int] = []
    tcount: list[int] = []
    for f, tf in enumerate(fields):
        if tf:
            tids.extend(_term_ids(vocab, list(tf)))
            tfield.extend([f] * len(tf))
            tcount.extend(tf.values())
    # The body, the bulk of the text: token entries may repeat (summed at build) and "" is a stop word.
    body_tokens, body_counts = token_counts(note.body)
    body_ids = np.asarray(_term_ids(vocab, body_tokens), dtype=np.int32)
    body_counts_arr = np.asarray(body_counts, dtype=np.int32)
    keep = body_ids != vocab[""]
    body_ids, body_counts_arr = body_ids[keep], body_counts_arr[keep]
    ph_tids = _term_ids(vocab, [t for p in phrases for t in p.tokens])
    return _Doc(
        note=note,
        id=note_id(note),
        key=(note.path, note.digest or str(len(note.text))),
        tids=np.concatenate([np.asarray(tids, dtype=np.int32), body_ids]),
        tfield=np.concatenate([np.asarray(tfield, dtype=np.int8), np.full(body_ids.size, _BODY, dtype=np.int8)]),
        tcount=np.concatenate([np.asarray(tcount, dtype=np.int32), body_counts_arr]),
        phrases=phrases,
        ph_tids=np.asarray(ph_tids, dtype=np.int32),
        priority=note.priority if full else None,
        is_moc=note.is_moc if full else False,
    )


# -- the index ---------------------------------------------------------------------------------------


def _csr(keys: np.ndarray, size: int) -> np.ndarray:
    """Offsets such that the entries of key k are [offsets[k], offsets[k+1]) once sorted by key."""
    offsets = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=size), out=offsets[1:])
    return offsets


class SearchIndex:
    """Built once per vault load; private notes are never candidates.

    Layout (all numpy, so a question costs a handful of vector operations whatever the vault size):
    notes are numbered 0..N-1 in id order; terms have ids in `_vocab`. Term postings are CSR arrays:
    for term t, `_p_doc[_p_off[t]:_p_off[t+1]]` are the notes containing it (ascending) and `_p_w` their
    BM25F weight already multiplied by the term's IDF. Frontmatter phrases (title, slug, aliases, sample
    questions, labels) are numbered too, with their own term -> phrases CSR (`_q_off`, `_q_phrase`).
    """

    def __init__(self, config: SearchConfig | None = None) -> None:
        self.config = config or SearchConfig()
        self._docs: list[_Doc] = []
        self._cache: dict[str, _Doc] = {}  # path -> tokenized note, reused by `update`
        self._by_path: dict[str, int] = {}
        self._vocab: dict[str, int] = {"": 0}  # "" stands for stop words in body counts: never a posting
        self._idf = np.zeros(0)
        self._idf_unseen = 0.0
        self._p_off = np.zeros(1, dtype=np.int64)
        self._p_doc = np.zeros(0, dtype=np.int32)
        self._p_w = np.zeros(0)
        self._q_off = np.zeros(1, dtype=np.int64)
        self._q_phrase = np.zeros(0, dtype=np.int32)
        self._ph_doc = np.zeros(0, dtype=np.int32)
        self._ph_kind = np.zeros(0, dtype=np.int8)
        self._ph_len = np.zeros(0, dtype=np.int32)
        self._ph_norm = np.zeros(0)
        self._ph_full = np.zeros(0)
        self._ph_start = np.zeros(1, dtype=np.int64)
        self._ph_partial = np.zeros(0)
        self._ph_answer = np.zeros(0, dtype=bool)
        self._ph_best_of = np.zeros(0, dtype=bool)
        self._ph_list: list[_Phrase] = []
        self._bonus_if_scored = np.zeros(0)
        self._neighbours: list[tuple[int, ...]] = []
        self._df = np.zeros(0, dtype=np.int64)
        self._terms: list[str] = []
        self._deletes: dict[str, list[int]] | None = None  # built on the first unknown question word
        self._sorted_terms: list[tuple[str, int]] = []
        self._corrections: dict[str, str | None] = {}  # a pure function of the index: reset on rebuild

    # -- building ------------------------------------------------------------------------------------
    @classmethod
    def build(cls, vault: Vault, config: SearchConfig | None = None) -> SearchIndex:
        index = cls(config)
        index._rebuild(vault)
        return index

    def update(self, vault: Vault, change: LinkChange) -> None:
        """Bring the index up to date after `vault.update_file`/`remove_file` returned `change`.

        Only the changed notes are re-tokenized (the expensive part); the arrays are then recomputed from
        the cached term counts, because one note changes the IDF and the average length every weight
        depends on: the result is exactly what a fresh `build` of the new vault gives. Notes in
        `change.relinked` keep their tokens and get their new neighbours. The index is changed in place:
        a caller that searches from other threads meanwhile should build a new index and swap it.
        """
        for path in change.changed:
            self._cache.pop(path, None)
        self._rebuild(vault)

    @property
    def size(self) -> int:
        """Number of candidate (public, readable) notes."""
        return len(self._docs)

    @property
    def ids(self) -> list[str]:
        return [d.id for d in self._docs]

    def _rebuild(self, vault: Vault) -> None:
        # Building allocates many small objects and frees few: the cyclic GC would rescan the vault's
        # large heap again and again for nothing (superlinear on 50k notes).
        enabled = gc.isenabled()
        gc.disable()
        try:
            self._rebuild_now(vault)
        finally:
            if enabled:
                gc.enable()

    def _rebuild_now(self, vault: Vault) -> None:
        docs: list[_Doc] = []
        cache: dict[str, _Doc] = {}
        for path in sorted(vault.notes):
            note = vault.notes[path]
            mode = _indexable(note)
            if mode is False:
                continue
            doc = self._cache.get(path)
            if doc is None or doc.key != (note.path, note.digest or str(len(note.text))) or doc.note.text != note.text:
                doc = _read_doc(note, mode is True, self._vocab)
            else:
                doc.note = note
                doc.id = note_id(note)  # a new same-named file elsewhere can change a note's id
            cache[path] = doc
            docs.append(doc)
        docs.sort(key=lambda d: (d.id, d.note.path))
        self._docs = docs
        self._cache = cache
        self._by_path = {d.note.path: i for i, d in enumerate(docs)}
        n = len(docs)

        # Term ids come from a vocabulary kept across updates (ids never change; a term no note holds
        # any more just has no postings). Results never depend on the ids, only on the terms.
        vocab = self._vocab
        v = len(vocab)
        if n:
            t_arr = np.concatenate([d.tids for d in docs]).astype(np.int64)
            f_arr = np.concatenate([d.tfield for d in docs]).astype(np.int64)
            c_arr = np.concatenate([d.tcount for d in docs]).astype(np.float64)
            d_arr = np.repeat(np.arange(n, dtype=np.int64), [d.tids.size for d in docs])
        else:
            t_arr = f_arr = d_arr = np.zeros(0, dtype=np.int64)
            c_arr = np.zeros(0)

        # BM25F: a per-note pseudo term frequency mixing the fields by weight; only the body is
        # length-normalised (titles, aliases and labels are short by nature).
        body = f_arr == _BODY
        body_len = np.bincount(d_arr[body], weights=c_arr[body], minlength=n)
        avg = float(body_len.mean()) if n else 1.0
        norm = 1.0 / (1.0 - BM25_B + BM25_B * body_len / (avg or 1.0))
        weights = np.asarray([FIELD_WEIGHTS[name] for name in _FIELDS])
        pseudo = c_arr * weights[f_arr] * np.where(body, norm[d_arr] if n else 1.0, 1.0)
        keys, inverse = np.unique(d_arr * max(v, 1) + t_arr, return_inverse=True)
        pseudo = np.bincount(inverse, weights=pseudo)
        p_doc = keys // max(v, 1)
        p_term = keys % max(v, 1)
        df = np.bincount(p_term, minlength=v)
        self._df = df
        self._terms = list(vocab)
        self._deletes = None
        self._corrections = {}
        self._idf = np.log1p((n - df + 0.5) / (df + 0.5))
        self._idf_unseen = float(math.log1p((n + 0.5) / 0.5))
        sat = pseudo * (BM25_K1 + 1.0) / (pseudo + BM25_K1)
        order = np.argsort(p_term, kind="stable")  # keys are sorted by note, so notes stay ascending
        self._p_off = _csr(p_term, v)
        self._p_doc = p_doc[order].astype(np.int32)
        self._p_w = (sat * self._idf[p_term])[order]

        # Phrases and their term index.
        ph_list = [p for d in docs for p in d.phrases]
        m = len(ph_list)
        self._ph_list = ph_list
        self._ph_doc = np.repeat(np.arange(n, dtype=np.int32), [len(d.phrases) for d in docs]) if n else np.zeros(0, dtype=np.int32)
        self._ph_start = np.zeros(n + 1, dtype=np.int64)
        if n:
            np.cumsum([len(d.phrases) for d in docs], out=self._ph_start[1:])
        self._ph_kind = np.asarray([p.kind for p in ph_list], dtype=np.int8)
        self._ph_len = np.asarray([len(p.tokens) for p in ph_list], dtype=np.int32)
        qt = np.concatenate([d.ph_tids for d in docs]).astype(np.int64) if n else np.zeros(0, dtype=np.int64)
        qp = np.repeat(np.arange(m, dtype=np.int64), self._ph_len)
        self._ph_norm = np.sqrt(np.bincount(qp, weights=self._idf[qt] ** 2, minlength=m)) if m else np.zeros(0)
        order = np.argsort(qt, kind="stable")
        self._q_off = _csr(qt, v)
        self._q_phrase = qp[order].astype(np.int32)
        # How many notes carry each alias (as a token set): a shared alias names none of them.
        holders: Counter[tuple[str, ...]] = Counter()
        for d in docs:
            holders.update({p.tokens for p in d.phrases if p.kind == _K_ALIAS})
        full_points = {_K_TITLE: TITLE_POINTS, _K_SLUG: SLUG_POINTS, _K_ALIAS: ALIAS_POINTS, _K_DOMAIN: DOMAIN_POINTS, _K_TAG: TAG_POINTS}
        self._ph_full = np.asarray(
            [full_points.get(p.kind, 0.0) / (holders[p.tokens] if p.kind == _K_ALIAS else 1) for p in ph_list],
            dtype=np.float64,
        )
        self._ph_partial = np.asarray([TITLE_PARTIAL_POINTS if p.kind == _K_TITLE else 0.0 for p in ph_list], dtype=np.float64)
        self._ph_answer = self._ph_kind == _K_ANSWER
        self._ph_best_of = (self._ph_kind == _K_ALIAS) | self._ph_answer
        self._ph_norm = np.maximum(self._ph_norm, 1e-12)

        bonus = np.zeros(n)
        for i, d in enumerate(docs):
            if d.priority is not None:
                bonus[i] += (max(1, min(10, d.priority)) - 5) * PRIORITY_STEP
            if d.is_moc:
                bonus[i] += MOC_POINTS
        self._bonus_if_scored = bonus

        by_path = self._by_path
        neighbours: list[tuple[int, ...]] = []
        outgoing = getattr(vault, "outgoing", None)
        for d in docs:
            try:
                targets = outgoing(d.note.path) if outgoing else []
            except Exception:  # a vault without a link graph: no expansion, never a crash
                targets = []
            neighbours.append(tuple(sorted({by_path[p] for p in targets if p in by_path and p != d.note.path})))
        self._neighbours = neighbours

    # -- spelling -------------------------------------------------------------------------------------
    def _correct(self, token: str) -> str | None:
        """The index term a misspelled question token most likely means, or None.

        Two rules, both on stems: one edit away (insertion, deletion, substitution, transposition) for a
        token of at least `FUZZY_MIN` characters, or the token is the beginning of an index term (a word
        cut short, or a suffix the stemmer read differently: `competance` -> `compet` -> `competent`). The
        most frequent candidate wins (ties: alphabetical), as a spelling corrector would.
        """
        if token in self._corrections:
            return self._corrections[token]
        fixed = self._correct_uncached(token)
        if len(self._corrections) < 100_000:
            self._corrections[token] = fixed
        return fixed

    def _correct_uncached(self, token: str) -> str | None:
        if len(token) < FUZZY_MIN or token.isdigit():
            return None
        if self._deletes is None:
            deletes: dict[str, list[int]] = {}
            for tid, term in enumerate(self._terms):
                if len(term) >= FUZZY_MIN - 1 and self._df[tid] > 0:
                    for variant in _deletions(term) | {term}:
                        deletes.setdefault(variant, []).append(tid)
            self._deletes = deletes
            self._sorted_terms = sorted((term, tid) for tid, term in enumerate(self._terms) if self._df[tid] > 0)
        candidates: set[int] = set()
        for variant in _deletions(token) | {token}:
            for tid in self._deletes.get(variant, ()):
                if _one_edit(token, self._terms[tid]):
                    candidates.add(tid)
        if not candidates and len(token) >= FUZZY_PREFIX_MIN:
            ordered = self._sorted_terms
            at = bisect.bisect_left(ordered, (token, -1))
            while at < len(ordered) and ordered[at][0].startswith(token):
                candidates.add(ordered[at][1])
                at += 1
        if not candidates:
            return None
        best = min(candidates, key=lambda tid: (-int(self._df[tid]), self._terms[tid]))
        return self._terms[best]

    # -- searching -----------------------------------------------------------------------------------
    def search(self, query: str, top_k: int | None = None) -> SearchResult:
        started = time.perf_counter()
        k = self.config.top_k if top_k is None else top_k
        tokens = tuple(tokenize(query))
        unique = sorted(set(tokens))
        n = len(self._docs)
        if not unique or n == 0 or k <= 0:
            return SearchResult(query, tokens, [], False, {"tokens": list(tokens), "candidates": 0, "elapsed_ms": _ms(started)})

        vocab = self._vocab
        corrected: dict[str, str] = {}
        for t in unique:
            if t not in vocab and not _lexicon.knows(t):  # lexicon hook: a known word is no misspelling
                fixed = self._correct(t)
                if fixed is not None:
                    corrected[t] = fixed
        # A corrected token helps ranking (at a reduced weight) but is no evidence that the vault covers
        # the question: `mass` keeps the misspelled token at the IDF of an unseen word.
        originals = [t for t in unique if t not in corrected]
        # -- lexicon hook (grasbot/lexicon.py, grasbot/grounding.py): soft terms are corrections and
        # synonyms/translations; term -> (ranking weight, evidence weight, original word it stands for).
        soft: dict[str, tuple[float, float, str]] = {}
        for t, fixed in sorted(corrected.items()):
            soft.setdefault(fixed, (CORRECTION_WEIGHT, CORRECTION_EVIDENCE, t))
        for e in _lexicon.expand(originals, vocab):
            soft.setdefault(e.term, (e.weight, EXPANSION_EVIDENCE, e.source))
        soft = {t: v for t, v in soft.items() if t not in originals}
        if soft:
            unique = sorted(set(originals) | set(soft))
        # -- end of lexicon hook -----------------------------------------------------------------------
        known = [vocab[t] for t in unique if t in vocab]
        idf_known = self._idf[known] if known else np.zeros(0)
        exact = {vocab[t] for t in originals if t in vocab}
        mass = float(sum(float(self._idf[vocab[t]]) for t in originals if t in vocab))
        mass += UNSEEN_WEIGHT * self._idf_unseen * (len(originals) - len(exact) + len(corrected))
        q_norm = math.sqrt(float((idf_known**2).sum()) + self._idf_unseen**2 * (len(originals) - len(exact)))
        known_terms = [t for t in unique if t in vocab]
        factor = np.asarray([1.0 if tid in exact else soft[t][0] for t, tid in zip(known_terms, known)]) if known else np.zeros(0)

        # BM25F and coverage (IDF mass of the question found in each note), one pass over the postings.
        scores = np.zeros(n)
        bm25 = scores
        covered = scores
        evidence_bm25 = scores
        best_bm25 = 0.0
        if known:
            starts = self._p_off[known]
            ends = self._p_off[np.asarray(known) + 1]
            lengths = ends - starts
            if len(known) == 1:
                doc_ids = self._p_doc[starts[0] : ends[0]]
                w = self._p_w[starts[0] : ends[0]]
            else:
                doc_ids = np.concatenate([self._p_doc[a:b] for a, b in zip(starts.tolist(), ends.tolist())])
                w = np.concatenate([self._p_w[a:b] for a, b in zip(starts.tolist(), ends.tolist())])
            if corrected:
                scale = np.repeat(factor, lengths)
                true_w = np.where(scale == 1.0, w, w * CORRECTION_EVIDENCE)
                evidence_bm25 = np.bincount(doc_ids, weights=true_w, minlength=n)
                w = w * scale
                covered = np.bincount(doc_ids, weights=np.repeat(np.where(factor == 1.0, idf_known, 0.0), lengths), minlength=n)
            bm25 = np.bincount(doc_ids, weights=w, minlength=n)
            if not corrected:
                evidence_bm25 = bm25
                covered = np.bincount(doc_ids, weights=np.repeat(idf_known, lengths), minlength=n)
            best_bm25 = float(bm25.max())
            if best_bm25 > 0:
                scores = bm25 * (BM25_POINTS / best_bm25)
        coverage = covered / mass

        # Phrase signals, vectorized over the phrases that share a token with the question.
        if known:
            q_starts = self._q_off[known]
            q_ends = self._q_off[np.asarray(known) + 1]
            q_len = q_ends - q_starts
            ph = np.concatenate([self._q_phrase[a:b] for a, b in zip(q_starts.tolist(), q_ends.tolist())])
        else:
            ph = np.zeros(0, dtype=np.int32)
        matched: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        if ph.size:
            idf_rep = np.repeat(idf_known * factor, q_len)
            m = self._ph_len.size
            if m <= _DENSE_PHRASES:  # small vault: dense counts are fewer operations than a sort
                inside = np.bincount(ph, weights=idf_rep, minlength=m)
                touched = np.flatnonzero(inside)
                hits = np.bincount(ph, minlength=m)[touched]
                squares = np.bincount(ph, weights=idf_rep * idf_rep, minlength=m)[touched]
                inside = inside[touched]
            else:
                touched, inverse = np.unique(ph, return_inverse=True)
                hits = np.bincount(inverse)
                inside = np.bincount(inverse, weights=idf_rep)
                squares = np.bincount(inverse, weights=idf_rep * idf_rep)
            full = hits == self._ph_len[touched]
            share = inside / mass
            # Per phrase: its points when every token is in the question (title, slug, alias / holders,
            # labels), when only some are (title only), and for a sample question its similarity.
            points = np.where(full, self._ph_full[touched], self._ph_partial[touched]) * share
            answer = self._ph_answer[touched]
            if answer.any():
                sim = squares / (q_norm * self._ph_norm[touched])
                points = np.where(answer & (sim >= ANSWERS_MIN), ANSWERS_POINTS * sim, points)
            owner = self._ph_doc[touched]
            matched = (touched, owner, full, points)
            # One alias and one sample question count per note (the best); title, slug and labels add up.
            best_of = self._ph_best_of[touched]
            if best_of.any():
                add = np.bincount(owner[~best_of], weights=points[~best_of], minlength=n).astype(np.float64)
                # The best alias and the best sample question of each note: one max over (note, group).
                slot = owner[best_of].astype(np.int64) * 2 + self._ph_answer[touched[best_of]]
                top2 = np.zeros(2 * n)
                np.maximum.at(top2, slot, points[best_of])
                add += top2[0::2] + top2[1::2]
            else:
                add = np.bincount(owner, weights=points, minlength=n)
            scores = scores + add
        scored = scores > 0
        scores = scores + np.where(scored, self._bonus_if_scored, 0.0)
        scores[scored & (scores <= 0)] = 1e-6  # a matching note with a low priority is still a candidate

        direct = scores
        candidates = int(np.count_nonzero(scored))
        seeds = [i for i in _top(direct, GRAPH_SEEDS) if direct[i] > 0]

        # Graph: a neighbour of a seed is lifted to a share of the seed's score (never above its seed),
        # and strictly below every note that really matches the question.
        lifted: dict[int, tuple[float, str]] = {}
        real = direct[(coverage >= REAL_MATCH_COVERAGE) & scored]
        ceiling = math.nextafter(float(real.min()), 0.0) if real.size else math.inf
        seed_set = set(seeds)
        for s in seeds:
            for nb in self._neighbours[s]:
                if nb in seed_set:
                    continue
                value = min(GRAPH_SHARE * float(direct[s]), ceiling)
                if value > direct[nb] and (nb not in lifted or value > lifted[nb][0]):
                    lifted[nb] = (value, self._docs[s].id)
        final = direct.copy() if lifted else direct
        for nb, (value, _seed) in lifted.items():
            final[nb] = value

        top = [i for i in _top(final, k) if final[i] > 0]
        phrase_reasons = self._reasons(matched, top)
        hits_out: list[Hit] = []
        for i in top:
            d = self._docs[i]
            why = phrase_reasons.get(i, [])
            if bm25[i] > 0:
                why.append(f"bm25:{BM25_POINTS * bm25[i] / best_bm25:.2f}")
            if scored[i]:
                if d.priority is not None and d.priority != 5:
                    why.append("priority")
                if d.is_moc:
                    why.append("moc-hub")
            if i in lifted:
                why.append(f"graph-from:{lifted[i][1]}")
            hits_out.append(
                Hit(d.note, d.id, round(float(final[i]), 4), tuple(why), direct=bool(scored[i]), coverage=round(float(coverage[i]), 4))
            )

        best_cov = max((h.coverage for h in hits_out if h.direct), default=0.0)
        # Evidence: the best direct note's BM25F as a share of what a note holding every question token
        # strongly would get. Unseen tokens count at full IDF, body-only single mentions count little.
        ideal = mass * (BM25_K1 + 1.0)
        # Over every note, not only the returned ones: `grounded` must not depend on top_k.
        evidence = float(evidence_bm25.max()) / ideal if known and n else 0.0
        grounded = evidence >= GROUND_EVIDENCE
        if self.config.min_score is not None and (not hits_out or hits_out[0].score < self.config.min_score):
            grounded = False
        stats = {
            "tokens": list(tokens),
            "vault_size": n,
            "candidates": candidates,
            "seeds": [self._docs[i].id for i in seeds],
            "bm25_max": round(best_bm25, 4),
            "coverage": round(best_cov, 4),
            "evidence": round(evidence, 4),
            "corrected": corrected,
            "elapsed_ms": _ms(started),
        }
        return SearchResult(query, tokens, hits_out, grounded, stats)

    def _reasons(self, matched: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None, top: list[int]) -> dict[int, list[str]]:
        """The phrase reasons of the returned notes, from the phrase scores already computed, in a
        stable order: alias, title/slug, sample question, labels."""
        out: dict[int, list[str]] = {}
        if matched is None or not top:
            return out
        touched, owner, full, points = matched
        best: dict[tuple[int, int], tuple[float, int]] = {}
        parts: dict[int, list[list[str]]] = {}
        # Phrases are numbered note after note, and `touched` is sorted: a note's entries are one run.
        bounds = np.searchsorted(touched, self._ph_start[np.asarray(top)], side="left").tolist()
        ends = np.searchsorted(touched, self._ph_start[np.asarray(top) + 1], side="left").tolist()
        selected = [j for lo, hi in zip(bounds, ends) for j in range(lo, hi)]
        for j in selected:
            i = int(owner[j])
            t = int(touched[j])
            phrase = self._ph_list[t]
            kind = phrase.kind
            slot = parts.setdefault(i, [[], [], [], []])
            if kind == _K_TITLE:
                slot[1].append("title" if full[j] else "title-partial")
            elif kind == _K_ANSWER:
                if points[j] > 0:
                    key = (i, kind)
                    if key not in best or points[j] > best[key][0]:
                        best[key] = (float(points[j]), t)
            elif not full[j]:
                continue
            elif kind == _K_SLUG:
                slot[1].append("slug")
            elif kind == _K_ALIAS:
                key = (i, kind)
                if key not in best or points[j] > best[key][0]:
                    best[key] = (float(points[j]), t)
            else:
                slot[3].append(f"{'domain' if kind == _K_DOMAIN else 'tag'}:{phrase.text}")
        for (i, kind), (value, t) in best.items():
            slot = parts.setdefault(i, [[], [], [], []])
            if kind == _K_ALIAS:
                slot[0].append(f"alias:{self._ph_list[t].text}")
            else:
                sim = value / ANSWERS_POINTS
                slot[2].append("answers-full" if sim >= ANSWERS_FULL else f"answers-partial:{sim:.2f}")
        for i, slot in parts.items():
            out[i] = slot[0] + slot[1] + slot[2] + slot[3]
        return out

def _deletions(word: str) -> set[str]:
    return {word[:i] + word[i + 1 :] for i in range(len(word))}


def _one_edit(a: str, b: str) -> bool:
    """True when `b` is one insertion, deletion, substitution or adjacent transposition away from `a`."""
    if a == b:
        return True
    la, lb = len(a), len(b)
    if abs(la - lb) > 1:
        return False
    if la == lb:
        diff = [i for i in range(la) if a[i] != b[i]]
        if len(diff) == 1:
            return True
        return len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]]
    short, long_ = (a, b) if la < lb else (b, a)
    i = 0
    while i < len(short) and short[i] == long_[i]:
        i += 1
    return short[i:] == long_[i + 1 :]


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 3)


_DENSE_PHRASES = 20_000


def _top(scores: np.ndarray, k: int) -> list[int]:
    """Indices of the k best scores, best first, ties by index (= by id, since notes are in id order).

    Every note scoring at least the k-th best value is kept before sorting, so a tie at the boundary is
    broken by id too, never by the partition's internal order."""
    n = scores.shape[0]
    if n == 0 or k <= 0:
        return []
    if n <= 4096:  # a full sort of a small array is one call
        order = np.lexsort((np.arange(n), -scores))
        return order[:k].tolist()
    if k < n:
        kth = np.partition(scores, n - k)[n - k]
        pool = np.flatnonzero(scores >= kth)
    else:
        pool = np.arange(n)
    pool_scores = scores[pool]
    order = np.lexsort((pool, -pool_scores))
    return [int(pool[j]) for j in order[:k]]
