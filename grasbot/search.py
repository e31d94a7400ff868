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

Determinism: every accumulation runs in a fixed order (question tokens sorted, a note's phrases in
their order), ties are broken by id (`_rank`, the notes' id order; slots themselves are only storage);
nothing depends on set order, the hash seed or the file order, and an index brought up to date by
`update` answers exactly as a fresh `build` of the same vault (tests/test_search.py checks it on random
edits).
"""

from __future__ import annotations

import bisect
import gc
import math
import re
import time
from array import array
from collections import Counter
from functools import lru_cache
from itertools import compress
from dataclasses import dataclass, field
from operator import attrgetter, is_not, itemgetter, ne
from typing import Any

import numpy as np

from grasbot import grounding as _grounding, lexicon as _lexicon
from grasbot.notes import Note, visible_to_visitors
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
EXPANSION_EVIDENCE = 0.7  # a lexicon synonym/translation: evidence at this share, once per original word
EXPAND_MAX_DF = 0.1  # a question word held by more than this share of the notes is not expanded
FUZZY_MIN = 5  # shortest question token that spelling correction looks at (shorter: too many neighbours)
FUZZY_PREFIX_MIN = 6  # shortest token completed as the beginning of an index term
REAL_MATCH_COVERAGE = 0.5  # a note covering this share of the question's informative mass really matches
#: grounded when the best note's BM25F reaches this share of the question's ideal score. Chosen on the
#: question sets (benchmarks/questions-*.yaml, tests/eval/sample-questions.yaml): their off-topic
#: questions that share words with a vault reach 0.18-0.26, on-topic ones mostly 0.22 and above.
GROUND_EVIDENCE = 0.23
_SKIP_PROBLEMS = frozenset({"binary", "unreadable", "empty"})
_DEGRADE_PROBLEMS = frozenset({"yaml-error", "not-mapping", "unclosed-frontmatter"})


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
#: Twice each field weight: a short field's weighted frequency is counted as an integer (exact) and halved.
_TWICE: dict[str, int] = {name: round(2 * w) for name, w in FIELD_WEIGHTS.items()}
assert all(_TWICE[name] == 2 * w for name, w in FIELD_WEIGHTS.items()), "field weights must be multiples of 0.5"
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
    """One indexed note. Its term statistics live in the index's postings, not here (memory)."""

    note: Note
    id: str
    key: tuple[str, str]  # (path, digest or text length): re-tokenize only when this changes
    phrases: list[_Phrase]
    priority: int | None
    is_moc: bool
    out: tuple[str, ...] = ()  # paths it links to (vault.outgoing), turned into neighbours at query time


def note_id(note: Note) -> str:
    """The id a hit carries: the vault's id, else the slug, else the file name."""
    return note.id or note.slug or note.stem


def _indexable(note: Note) -> bool | None:
    """True: index fully; None: degraded (file name and body only); False: never a candidate."""
    if not visible_to_visitors(note):
        return False
    codes = {p.code for p in note.problems}
    if codes & _SKIP_PROBLEMS or not (note.body.strip() or note.meta):
        return False
    if codes & _DEGRADE_PROBLEMS:
        return None
    return True


_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def _headings(note: Note) -> list[str]:
    """The note's section titles (from the vault's parse, else read from the body)."""
    if note.headings:
        return [h.text for h in note.headings]
    return _HEADING.findall(note.body)


@lru_cache(maxsize=1 << 16)
def _phrase_tokens(text: str) -> tuple[str, ...]:
    return tuple(sorted(set(tokenize_short(text))))


def _words_of(texts: list[str]) -> list[str]:
    return [t for text in texts for t in tokenize_short(text)]


def _read_doc(note: Note, full: bool) -> tuple[_Doc, Counter[str], list[str], list[int]]:
    """The note's phrases; per token, twice its weighted frequency in the short fields (BM25F: the field
    weight summed over its occurrences; the weights are multiples of 0.5, so this is an exact integer,
    counted in C); and its body counts (tokens may repeat, "" is a stop word: the caller sums and drops)."""
    title = note.title if full else note.stem
    slug = (note.slug or "") if full else ""
    aliases = note.aliases if full else []
    answers = note.answers if full else []
    domains = note.domains if full else []
    tags = note.tags if full else []
    title_tokens = tokenize_short(title)
    slug_tokens = tokenize_short(slug)
    fm2 = Counter(
        list(title_tokens) * _TWICE["title"]
        + _words_of(aliases) * _TWICE["aliases"]
        + list(slug_tokens) * _TWICE["slug"]
        + _words_of(answers) * _TWICE["answers"]
        + _words_of(domains + tags) * _TWICE["labels"]
        + _words_of(_headings(note)) * _TWICE["headings"]
    )
    phrases: list[_Phrase] = []
    seen: set[tuple[int, tuple[str, ...]]] = set()
    title_key = (_K_TITLE, _phrase_tokens(title))
    with_slug = bool(slug) and (_K_TITLE, _phrase_tokens(slug)) != title_key
    for kind, texts in (
        (_K_TITLE, (title,)),
        (_K_SLUG, (slug,) if with_slug else ()),
        (_K_ALIAS, aliases),
        (_K_ANSWER, answers),
        (_K_DOMAIN, domains),
        (_K_TAG, tags),
    ):
        for text in texts:
            tokens = _phrase_tokens(text)
            if tokens:
                key = (kind, tokens)
                if key not in seen:  # `push swap`, `push-swap`, `push_swap`: one alias
                    seen.add(key)
                    phrases.append(_Phrase(kind, text, tokens))
    body_tokens, body_counts = token_counts(note.body)
    doc = _Doc(
        note=note,
        id=note_id(note),
        key=(note.path, note.digest or str(len(note.text))),
        phrases=phrases,
        priority=note.priority if full else None,
        is_moc=note.is_moc if full else False,
    )
    return doc, fm2, body_tokens, body_counts


# -- the index ---------------------------------------------------------------------------------------


def _csr(keys: np.ndarray, size: int) -> np.ndarray:
    """Offsets such that the entries of key k are [offsets[k], offsets[k+1]) once sorted by key."""
    offsets = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=size), out=offsets[1:])
    return offsets


class _Grow:
    """A 1-d numpy array that grows in place (amortised doubling); `view()` is the part in use."""

    __slots__ = ("a", "n")

    def __init__(self, values: Any, dtype: Any) -> None:
        self.a = np.array(values, dtype=dtype)
        self.n = int(self.a.size)

    def view(self) -> np.ndarray:
        return self.a[: self.n]

    def resize(self, size: int) -> None:
        """Make `size` entries usable; new ones are zero."""
        if size > self.a.size:
            bigger = np.zeros(max(size, 2 * self.a.size, 16), dtype=self.a.dtype)
            bigger[: self.n] = self.a[: self.n]
            self.a = bigger
        elif size > self.n:
            self.a[self.n : size] = 0
        self.n = max(self.n, size)

    def extend(self, values: Any) -> None:
        values = np.asarray(values, dtype=self.a.dtype)
        start = self.n
        self.resize(start + values.size)
        self.a[start : self.n] = values


_NOTE = attrgetter("note")
_ID = attrgetter("id")
_EMPTY_I = np.zeros(0, dtype=np.int32)
_EMPTY_F = np.zeros(0, dtype=np.float32)
_FULL_BY_KIND = np.zeros(len(_KINDS))
_PARTIAL_BY_KIND = np.zeros(len(_KINDS))
for _kind, _points in ((_K_TITLE, TITLE_POINTS), (_K_SLUG, SLUG_POINTS), (_K_ALIAS, ALIAS_POINTS), (_K_DOMAIN, DOMAIN_POINTS), (_K_TAG, TAG_POINTS)):
    _FULL_BY_KIND[_kind] = _points
_PARTIAL_BY_KIND[_K_TITLE] = TITLE_PARTIAL_POINTS


def _without(a: np.ndarray, at: int) -> np.ndarray:
    return np.concatenate((a[:at], a[at + 1 :]))


def _with(a: np.ndarray, at: int, value: float) -> np.ndarray:
    out = np.empty(a.size + 1, dtype=a.dtype)
    out[:at] = a[:at]
    out[at] = value
    out[at + 1 :] = a[at:]
    return out


def _outgoing(outgoing: Any, path: str) -> tuple[str, ...]:
    """The note's outgoing link targets; a vault without a link graph: none (no expansion, no crash)."""
    try:
        return tuple(outgoing(path)) if outgoing else ()
    except Exception:
        return ()


class SearchIndex:
    """Built once per vault load, brought up to date note by note; private notes are never candidates.

    Layout. Notes live in *slots* (`_docs[s]`, None for a free slot); `_rank[s]` is the note's place in
    id order, which breaks ties. Terms have ids in `_vocab` (only terms some note holds: a term no note
    holds any more leaves the vocabulary, as in a fresh build). Postings store raw statistics, not
    weights: for term t, the notes holding it (ascending slots), the weighted frequency of t in their
    short fields and its count in their body. BM25F weights depend on the number of notes, the document
    frequency and the average body length, which any update changes: they are computed at query time for
    the question's terms only (and cached until the next update), so an update touches only the changed
    note's own postings and a few running totals, and still answers exactly as a fresh build.

    Postings are CSR arrays from the last build (`_p_off`, `_p_doc`, `_p_fm`, `_p_body`) with per-term
    replacements for the terms an update touched (`_p_over`). Frontmatter phrases (title, slug, aliases,
    sample questions, labels) are numbered append-only, with their own term -> phrases postings (`_q_off`,
    `_q_phrase`, `_q_over`); a changed note's phrases are dropped from those postings and new ones appended.
    """

    def __init__(self, config: SearchConfig | None = None) -> None:
        self.config = config or SearchConfig()
        self._reset()

    def _reset(self) -> None:
        self._docs: list[_Doc | None] = []
        self._slot_of: dict[str, int] = {}  # path -> slot
        self._free: list[int] = []
        self._n = 0
        self._vocab: dict[str, int] = {"": 0}  # "" stands for stop words in body counts: never a posting
        self._terms: list[str] = [""]  # term id -> term (ids of terms that left the vocabulary stay here)
        self._dfg = _Grow([0], np.int64)
        self._df = self._dfg.view()
        self._lens = _Grow([], np.float64)  # body length per slot
        self._total_len = 0.0  # sum of body lengths (an exact integer)
        self._bonus = _Grow([], np.float64)  # priority and MOC points per slot, for notes with evidence
        self._p_off = np.zeros(2, dtype=np.int64)
        self._p_doc = _EMPTY_I
        self._p_fm = _EMPTY_F
        self._p_body = _EMPTY_F
        self._p_over: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._d_off = np.zeros(1, dtype=np.int64)  # slot -> its term ids (ascending), from the build ...
        self._d_tid = _EMPTY_I
        self._d_over: dict[int, np.ndarray] = {}  # ... or from an update
        self._ph_list: list[_Phrase | None] = []
        self._ph_doc = _Grow([], np.int32)
        self._ph_kind = _Grow([], np.int8)
        self._ph_len = _Grow([], np.int32)
        self._ph_group = _Grow([], np.int32)  # alias group (same token set), -1 for other kinds
        self._ph_tok = _Grow([], np.int32)  # the phrases' tokens, phrase after phrase ...
        self._ph_tok_of = _Grow([], np.int32)  # ... and the phrase of each
        self._ph_beg = _Grow([], np.int64)  # slot -> its phrases [beg, end)
        self._ph_end = _Grow([], np.int64)
        self._groups: dict[tuple[str, ...], int] = {}
        self._group_count = _Grow([], np.int64)  # notes holding each alias: an alias held by k notes counts 1/k
        self._q_off = np.zeros(2, dtype=np.int64)
        self._q_phrase = _EMPTY_I
        self._q_over: dict[int, np.ndarray] = {}
        self._deletes: dict[str, list[int]] | None = None  # built on the first unknown question word
        self._sorted_terms: list[tuple[str, int]] = []
        self._stale = True  # derived arrays (IDF, norms, phrase weights, rank) need recomputing
        self._order_dirty = True
        self._wcache: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._nb_cache: dict[int, list[int]] = {}
        self._corrections: dict[str, str | None] = {}  # a pure function of the index: reset on change

    # -- building ------------------------------------------------------------------------------------
    @classmethod
    def build(cls, vault: Vault, config: SearchConfig | None = None) -> SearchIndex:
        index = cls(config)
        index._rebuild(vault)
        return index

    def update(self, vault: Vault, change: LinkChange) -> None:
        """Bring the index up to date after `vault.update_file`/`remove_file` returned `change`.

        Only the changed notes are re-tokenized, and only their own postings change (milliseconds, not a
        rebuild); statistics every weight depends on (IDF, average length, alias holders) are recomputed
        from running totals before the next question, so the result is exactly what a fresh `build` of
        the new vault gives. Notes in `change.relinked` keep their tokens and get their new neighbours.
        The index is changed in place: a caller that searches from other threads meanwhile should build a
        new index and swap it.
        """
        enabled = gc.isenabled()
        gc.disable()
        try:
            notes = vault.notes
            for path in sorted(change.changed):
                self._set_note(vault, path, notes.get(path))
            outgoing = getattr(vault, "outgoing", None)
            for path in sorted(change.relinked):
                slot = self._slot_of.get(path)
                if slot is not None:
                    self._docs[slot].out = _outgoing(outgoing, path)  # type: ignore[union-attr]
            # Outside `change`: a note object replaced, or an id that changed because a same-named note
            # appeared or left (the vault renames its neighbours). Compared for every note in C-level
            # passes; the few that differ are looked at one by one.
            paths = list(self._slot_of)
            docs = list(map(self._docs.__getitem__, self._slot_of.values()))
            now = list(map(notes.get, paths))
            held = list(map(_NOTE, docs))
            differ = set(compress(range(len(paths)), map(is_not, now, held)))
            ids_now = [note.id if note is not None else "" for note in now] if differ else list(map(_ID, now))
            differ.update(compress(range(len(paths)), map(ne, ids_now, map(_ID, docs))))
            for i in sorted(differ):
                path, doc, note = paths[i], docs[i], now[i]
                if note is doc.note:
                    new_id = note_id(note)
                    if new_id != doc.id:
                        doc.id = new_id
                        self._order_dirty = True
                elif note is None or doc.key != (note.path, note.digest or str(len(note.text))) or doc.note.text != note.text:
                    self._set_note(vault, path, note)
                else:
                    doc.note = note
                    if note_id(note) != doc.id:
                        doc.id = note_id(note)
                        self._order_dirty = True
        finally:
            if enabled:
                gc.enable()
        self._stale = True

    @property
    def size(self) -> int:
        """Number of candidate (public, readable) notes."""
        return self._n

    @property
    def ids(self) -> list[str]:
        """The candidates' ids, in id order."""
        self._refresh()
        live = [s for s, d in enumerate(self._docs) if d is not None]
        live.sort(key=self._rank.__getitem__)
        return [self._docs[s].id for s in live]  # type: ignore[union-attr]

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

    def _tids(self, terms: list[str]) -> list[int]:
        """Term ids of `terms` (new terms get the next ids, in sorted order), by one C-level multi-get."""
        if not terms:
            return []
        vocab = self._vocab
        missing = set(terms).difference(vocab)
        if missing:
            for term in sorted(missing):
                tid = len(self._terms)
                vocab[term] = tid
                self._terms.append(term)
                if self._deletes is not None:
                    self._index_term(tid)
        if len(terms) == 1:
            return [vocab[terms[0]]]
        return list(itemgetter(*terms)(vocab))

    def _rebuild_now(self, vault: Vault) -> None:
        self._reset()
        # Notes take slots in path order (the id order is `_rank`, computed below). Every (term, note)
        # entry of every field goes into compact C arrays as the note is read, so the per-note token
        # lists never pile up; one sort then groups the entries by term and note, summing the short
        # fields' weighted frequencies and the body counts per pair (exact sums).
        docs: list[_Doc] = []
        tids = array("q")
        fm_vals = array("q")
        fm_sizes = array("q")
        b_tids = array("q")
        b_vals = array("q")
        b_sizes = array("q")
        notes = vault.notes
        for path in sorted(notes):
            note = notes[path]
            mode = _indexable(note)
            if mode is False:
                continue
            doc, fm2, body_tokens, body_counts = _read_doc(note, mode is True)
            docs.append(doc)
            if fm2:
                tids.extend(self._tids(list(fm2)))
                fm_vals.extend(fm2.values())
            fm_sizes.append(len(fm2))
            b_tids.extend(self._tids(body_tokens))
            b_vals.extend(body_counts)
            b_sizes.append(len(body_tokens))
        s_count = len(docs)
        self._docs = list(docs)
        self._slot_of = {d.note.path: i for i, d in enumerate(docs)}
        self._n = s_count
        v = len(self._terms)
        t_arr = np.concatenate([np.frombuffer(tids, dtype=np.int64), np.frombuffer(b_tids, dtype=np.int64)])
        slots = np.arange(s_count, dtype=np.int64)
        s_arr = np.concatenate([np.repeat(slots, np.frombuffer(fm_sizes, dtype=np.int64)), np.repeat(slots, np.frombuffer(b_sizes, dtype=np.int64))])
        fm_arr = np.concatenate([np.frombuffer(fm_vals, dtype=np.int64) * 0.5, np.zeros(len(b_tids))])
        b_arr = np.concatenate([np.zeros(len(tids)), np.frombuffer(b_vals, dtype=np.int64).astype(np.float64)])
        del tids, fm_vals, b_tids, b_vals
        keep = t_arr != 0  # "" (stop words)
        if not keep.all():
            t_arr, s_arr, fm_arr, b_arr = t_arr[keep], s_arr[keep], fm_arr[keep], b_arr[keep]
        width = max(s_count, 1)
        key = t_arr * width + s_arr
        order = np.argsort(key)
        key = key[order]
        first = np.ones(key.size, dtype=bool)
        first[1:] = key[1:] != key[:-1]
        starts = np.flatnonzero(first)
        key = key[starts]
        p_fm = np.add.reduceat(fm_arr[order], starts) if starts.size else np.zeros(0)
        p_body = np.add.reduceat(b_arr[order], starts) if starts.size else np.zeros(0)
        del order, fm_arr, b_arr, t_arr, s_arr
        p_term = key // width
        p_slot = key % width
        self._p_off = _csr(p_term, v + 1)
        self._p_doc = p_slot.astype(np.int32)
        self._p_fm = p_fm.astype(np.float32)  # multiples of 0.5: exact
        self._p_body = p_body.astype(np.float32)  # counts: exact
        self._dfg = _Grow(np.bincount(p_term, minlength=v), np.int64)
        lens = np.bincount(p_slot, weights=p_body, minlength=s_count)
        self._lens = _Grow(lens, np.float64)
        self._total_len = float(lens.sum())
        # The same pairs note by note (an update needs a note's terms to take it out of the postings).
        by_doc = np.sort(p_slot * (v + 1) + p_term)
        self._d_off = _csr(p_slot, s_count)
        self._d_tid = (by_doc % (v + 1)).astype(np.int32)
        del by_doc, key, p_term, p_slot

        # Phrases and their term index.
        ph_list = [p for d in docs for p in d.phrases]
        sizes = [len(d.phrases) for d in docs]
        m = len(ph_list)
        self._ph_list = list(ph_list)
        self._ph_doc = _Grow(np.repeat(slots.astype(np.int32), sizes), np.int32)
        ends = np.cumsum(sizes, dtype=np.int64) if s_count else np.zeros(0, dtype=np.int64)
        self._ph_end = _Grow(ends, np.int64)
        self._ph_beg = _Grow(ends - np.asarray(sizes, dtype=np.int64), np.int64)
        self._ph_kind = _Grow([p.kind for p in ph_list], np.int8)
        lengths = [len(p.tokens) for p in ph_list]
        self._ph_len = _Grow(lengths, np.int32)
        qt = np.asarray(self._tids([t for p in ph_list for t in p.tokens]), dtype=np.int64)
        self._ph_tok = _Grow(qt, np.int32)
        self._ph_tok_of = _Grow(np.repeat(np.arange(m, dtype=np.int32), lengths), np.int32)
        groups = self._groups
        group_ids = [groups.setdefault(p.tokens, len(groups)) if p.kind == _K_ALIAS else -1 for p in ph_list]
        self._ph_group = _Grow(group_ids, np.int32)
        g = np.asarray(group_ids, dtype=np.int64)
        self._group_count = _Grow(np.bincount(g[g >= 0], minlength=len(groups)), np.int64)
        qp = np.repeat(np.arange(m, dtype=np.int64), lengths)
        by_term = np.sort(qt * max(m, 1) + qp)
        self._q_off = _csr(qt, len(self._terms) + 1)
        self._q_phrase = (by_term % max(m, 1)).astype(np.int32)
        if len(self._terms) > v:  # a phrase token that is in no field (cannot happen today): no posting
            self._dfg.resize(len(self._terms))

        bonus = np.zeros(s_count)
        for i, d in enumerate(docs):
            if d.priority is not None:
                bonus[i] += (max(1, min(10, d.priority)) - 5) * PRIORITY_STEP
            if d.is_moc:
                bonus[i] += MOC_POINTS
        self._bonus = _Grow(bonus, np.float64)
        outgoing = getattr(vault, "outgoing", None)
        for d in docs:
            d.out = _outgoing(outgoing, d.note.path)
        self._stale = True
        self._order_dirty = True
        self._refresh()

    # -- incremental changes -------------------------------------------------------------------------
    def _postings(self, tid: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        found = self._p_over.get(tid)
        if found is not None:
            return found
        if tid + 1 < self._p_off.size:
            a, b = int(self._p_off[tid]), int(self._p_off[tid + 1])
            return self._p_doc[a:b], self._p_fm[a:b], self._p_body[a:b]
        return _EMPTY_I, _EMPTY_F, _EMPTY_F

    def _phrase_postings(self, tid: int) -> np.ndarray:
        found = self._q_over.get(tid)
        if found is not None:
            return found
        if tid + 1 < self._q_off.size:
            return self._q_phrase[int(self._q_off[tid]) : int(self._q_off[tid + 1])]
        return _EMPTY_I

    def _doc_tids(self, slot: int) -> np.ndarray:
        found = self._d_over.get(slot)
        if found is not None:
            return found
        if slot + 1 < self._d_off.size:
            return self._d_tid[int(self._d_off[slot]) : int(self._d_off[slot + 1])]
        return _EMPTY_I

    def _set_note(self, vault: Vault, path: str, note: Note | None) -> None:
        """Take the note at `path` out of the index (if it was in) and put its new version in (if any).
        An edited note keeps its slot: the terms it keeps are updated in place, the others removed or
        inserted."""
        old = self._slot_of.pop(path, None)
        mode = _indexable(note) if note is not None else False
        parsed = self._parse(note, mode is True) if mode is not False else None  # type: ignore[arg-type]
        old_id = None
        if old is not None:
            old_id = self._docs[old].id  # type: ignore[union-attr]
            self._remove(old, parsed[1] if parsed is not None else {})
        if parsed is not None:
            self._place(parsed[0], parsed[1], getattr(vault, "outgoing", None), old)
        if old is None or parsed is None or parsed[0].id != old_id:
            self._order_dirty = True  # an edit that keeps the note's id keeps the id order

    def _parse(self, note: Note, full: bool) -> tuple[_Doc, dict[int, list[float]]]:
        """The note read, and per term id: [weighted short-field frequency, body count] (exact sums)."""
        doc, fm2, body_tokens, body_counts = _read_doc(note, full)
        stats: dict[int, list[float]] = {}
        for tid, twice in zip(self._tids(list(fm2)), fm2.values()):
            stats[tid] = [twice * 0.5, 0.0]
        for tid, count in zip(self._tids(body_tokens), body_counts):
            if tid:
                entry = stats.get(tid)
                if entry is None:
                    stats[tid] = [0.0, float(count)]
                else:
                    entry[1] += count
        return doc, stats

    def _remove(self, slot: int, keep: dict[int, list[float]]) -> None:
        """Free `slot`; the postings of the terms in `keep` stay (the caller updates them in place)."""
        doc = self._docs[slot]
        assert doc is not None
        # Its phrases first (their tokens are still in the vocabulary): out of the phrase postings.
        beg, end = int(self._ph_beg.a[slot]), int(self._ph_end.a[slot])
        vocab = self._vocab
        for pid in range(beg, end):
            phrase = self._ph_list[pid]
            assert phrase is not None
            for term in phrase.tokens:
                tid = vocab[term]
                ph = self._phrase_postings(tid)
                lo, hi = np.searchsorted(ph, [beg, end]).tolist()
                if hi > lo:
                    self._q_over[tid] = np.concatenate([ph[:lo], ph[hi:]])
            group = int(self._ph_group.a[pid])
            if group >= 0:
                self._group_count.a[group] -= 1
            self._ph_list[pid] = None
        df = self._dfg.a
        for tid in self._doc_tids(slot).tolist():
            if tid in keep:
                continue
            docs, fm, body = self._postings(tid)
            at = int(np.searchsorted(docs, slot))
            self._p_over[tid] = (_without(docs, at), _without(fm, at), _without(body, at))
            df[tid] -= 1
            if df[tid] == 0:  # no note holds it any more: out of the vocabulary, as in a fresh build
                del self._vocab[self._terms[tid]]
        self._d_over[slot] = _EMPTY_I
        self._ph_beg.a[slot] = self._ph_end.a[slot] = 0
        self._total_len -= float(self._lens.a[slot])
        self._lens.a[slot] = 0.0
        self._bonus.a[slot] = 0.0
        self._docs[slot] = None
        self._free.append(slot)
        self._n -= 1

    def _place(self, doc: _Doc, stats: dict[int, list[float]], outgoing: Any, reuse: int | None) -> None:
        note = doc.note
        if reuse is not None and reuse in self._free:  # the same note again: its slot, its place in id order
            self._free.remove(reuse)
            slot = reuse
        elif self._free:
            self._free.sort()
            slot = self._free.pop(0)
        else:
            slot = len(self._docs)
            self._docs.append(None)
            for arr in (self._lens, self._bonus, self._ph_beg, self._ph_end):
                arr.resize(slot + 1)
        doc.out = _outgoing(outgoing, note.path)
        self._dfg.resize(len(self._terms))
        df = self._dfg.a
        order = sorted(stats)
        length = 0.0
        for tid in order:
            fm_value, count = stats[tid]
            length += count
            docs, fms, bodies = self._postings(tid)
            at = int(np.searchsorted(docs, slot))
            if at < docs.size and docs[at] == slot:  # a term the note keeps: in place
                fms[at] = fm_value
                bodies[at] = count
            else:
                self._p_over[tid] = (_with(docs, at, slot), _with(fms, at, fm_value), _with(bodies, at, count))
                df[tid] += 1
        self._d_over[slot] = np.asarray(order, dtype=np.int32)
        self._lens.a[slot] = length
        self._total_len += length
        bonus = 0.0
        if doc.priority is not None:
            bonus += (max(1, min(10, doc.priority)) - 5) * PRIORITY_STEP
        if doc.is_moc:
            bonus += MOC_POINTS
        self._bonus.a[slot] = bonus
        # Its phrases, appended (phrase ids only grow, so appending keeps every phrase posting sorted).
        beg = len(self._ph_list)
        for phrase in doc.phrases:
            pid = len(self._ph_list)
            self._ph_list.append(phrase)
            tids = self._tids(list(phrase.tokens))
            self._ph_tok.extend(tids)
            self._ph_tok_of.extend([pid] * len(tids))
            for tid in tids:
                self._q_over[tid] = np.append(self._phrase_postings(tid), np.int32(pid))
            group = -1
            if phrase.kind == _K_ALIAS:
                group = self._groups.setdefault(phrase.tokens, len(self._groups))
                self._group_count.resize(len(self._groups))
                self._group_count.a[group] += 1
            self._ph_group.extend([group])
        self._ph_doc.extend([slot] * len(doc.phrases))
        self._ph_kind.extend([p.kind for p in doc.phrases])
        self._ph_len.extend([len(p.tokens) for p in doc.phrases])
        self._ph_beg.a[slot] = beg
        self._ph_end.a[slot] = len(self._ph_list)
        self._dfg.resize(len(self._terms))
        self._docs[slot] = doc
        self._slot_of[note.path] = slot
        self._n += 1

    def _refresh(self) -> None:
        """Recompute what depends on the whole vault (IDF, length norms, phrase weights, id order)."""
        if not self._stale:
            return
        n = self._n
        v = len(self._terms)
        self._dfg.resize(v)
        df = self._df = self._dfg.view()
        self._idf = np.log1p((n - df + 0.5) / (df + 0.5))
        self._idf_unseen = float(math.log1p((n + 0.5) / 0.5))
        avg = self._total_len / n if n else 1.0
        self._norm = 1.0 / (1.0 - BM25_B + BM25_B * self._lens.view() / (avg or 1.0))
        m = len(self._ph_list)
        lengths = self._ph_len.view()
        qt = self._ph_tok.view()
        qp = self._ph_tok_of.view()
        self._ph_norm = np.maximum(np.sqrt(np.bincount(qp, weights=self._idf[qt] ** 2, minlength=m)), 1e-12) if m else np.zeros(0)
        kind = self._ph_kind.view().astype(np.int64)
        group = self._ph_group.view()
        holders = self._group_count.view()[np.maximum(group, 0)] if self._group_count.n else np.ones(m, dtype=np.int64)
        divisor = np.where(group >= 0, np.maximum(holders, 1), 1)
        self._ph_full = _FULL_BY_KIND[kind] / divisor
        self._ph_partial = _PARTIAL_BY_KIND[kind]
        self._ph_answer = kind == _K_ANSWER
        self._ph_best_of = (kind == _K_ALIAS) | self._ph_answer
        self._ph_doc_view = self._ph_doc.view()
        self._ph_len_view = lengths
        self._bonus_view = self._bonus.view()
        if self._order_dirty:
            live = sorted((d.id, d.note.path, s) for s, d in enumerate(self._docs) if d is not None)
            rank = np.full(len(self._docs), len(self._docs), dtype=np.int64)
            rank[[s for _i, _p, s in live]] = np.arange(len(live), dtype=np.int64)
            self._rank = rank
            self._order_dirty = False
        self._wcache = {}
        self._nb_cache: dict[int, list[int]] = {}
        self._corrections = {}
        self._stale = False

    def _weights(self, tid: int) -> tuple[np.ndarray, np.ndarray]:
        """The notes holding term `tid` and their BM25F weight times the term's IDF (cached until a change)."""
        found = self._wcache.get(tid)
        if found is None:
            docs, fm, body = self._postings(tid)
            # BM25F: a pseudo term frequency mixing the fields by weight; only the body is
            # length-normalised (titles, aliases and labels are short by nature).
            pseudo = fm + body * self._norm[docs]
            sat = pseudo * (BM25_K1 + 1.0) / (pseudo + BM25_K1)
            found = (docs, sat * self._idf[tid])
            if len(self._wcache) >= 4096:
                self._wcache.clear()
            self._wcache[tid] = found
        return found

    def _neighbours(self, slot: int) -> list[int]:
        """Slots of the candidates `slot` links to (cached until the next change)."""
        found = self._nb_cache.get(slot)
        if found is None:
            doc = self._docs[slot]
            assert doc is not None
            slot_of = self._slot_of
            found = self._nb_cache[slot] = [slot_of[p] for p in doc.out if p in slot_of and p != doc.note.path]
        return found

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

    def _index_term(self, tid: int) -> None:
        """Add one term to the spelling structures (kept up to date once built)."""
        term = self._terms[tid]
        if len(term) >= FUZZY_MIN - 1:
            for variant in sorted(_deletions(term) | {term}):
                self._deletes.setdefault(variant, []).append(tid)  # type: ignore[union-attr]
        bisect.insort(self._sorted_terms, (term, tid))

    def _live(self, tid: int) -> bool:
        """A term id some note holds (ids of terms that left the vocabulary stay in the spelling index)."""
        return self._vocab.get(self._terms[tid]) == tid and tid != 0

    def _correct_uncached(self, token: str) -> str | None:
        if len(token) < FUZZY_MIN or token.isdigit():
            return None
        if self._deletes is None:
            deletes: dict[str, list[int]] = {}
            for term, tid in self._vocab.items():
                if len(term) >= FUZZY_MIN - 1 and tid:
                    for variant in _deletions(term) | {term}:
                        deletes.setdefault(variant, []).append(tid)
            self._deletes = deletes
            self._sorted_terms = sorted((term, tid) for term, tid in self._vocab.items() if tid)
        candidates: set[int] = set()
        for variant in _deletions(token) | {token}:
            for tid in self._deletes.get(variant, ()):
                if self._live(tid) and _one_edit(token, self._terms[tid]):
                    candidates.add(tid)
        if not candidates and len(token) >= FUZZY_PREFIX_MIN:
            ordered = self._sorted_terms
            at = bisect.bisect_left(ordered, (token, -1))
            while at < len(ordered) and ordered[at][0].startswith(token):
                if self._live(ordered[at][1]):
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
        self._refresh()
        n = self._n  # notes
        slots = len(self._docs)  # array sizes (a free slot scores nothing)
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
        common = {t for t in originals if t in vocab and self._df[vocab[t]] > EXPAND_MAX_DF * n}
        for e in _lexicon.expand(originals, vocab, keep=common):
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
        scores = np.zeros(slots)
        bm25 = scores
        covered = scores
        evidence_bm25 = scores
        best_bm25 = 0.0
        if known:
            parts = [self._weights(tid) for tid in known]
            lengths = np.asarray([len(part[0]) for part in parts], dtype=np.int64)
            if len(known) == 1:
                doc_ids, w = parts[0]
            else:
                doc_ids = np.concatenate([part[0] for part in parts])
                w = np.concatenate([part[1] for part in parts])
            if soft:  # lexicon hook: soft terms rank at their weight, count as evidence once per word
                is_exact = np.asarray([tid in exact for tid in known])
                groups = sorted({v[2] for v in soft.values()})
                group = np.asarray([-1 if e else groups.index(soft[t][2]) for t, e in zip(known_terms, is_exact)])
                ev_w = np.asarray([1.0 if e else soft[t][1] for t, e in zip(known_terms, is_exact)])
                bm25, evidence_bm25 = _grounding.combine(doc_ids, w, lengths, factor, ev_w, group, slots)
                covered = np.bincount(doc_ids, weights=np.repeat(np.where(is_exact, idf_known, 0.0), lengths), minlength=slots)
            else:
                bm25 = np.bincount(doc_ids, weights=w, minlength=slots)
                evidence_bm25 = bm25
                covered = np.bincount(doc_ids, weights=np.repeat(idf_known, lengths), minlength=slots)
            best_bm25 = float(bm25.max())
            if best_bm25 > 0:
                scores = bm25 * (BM25_POINTS / best_bm25)
        coverage = covered / mass

        # Phrase signals, vectorized over the phrases that share a token with the question.
        if known:
            q_parts = [self._phrase_postings(tid) for tid in known]
            q_len = np.asarray([part.size for part in q_parts], dtype=np.int64)
            ph = np.concatenate(q_parts) if len(q_parts) > 1 else q_parts[0]
        else:
            ph = np.zeros(0, dtype=np.int32)
        matched: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        if ph.size:
            idf_rep = np.repeat(idf_known * factor, q_len)
            m = len(self._ph_list)
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
            full = hits == self._ph_len_view[touched]
            share = inside / mass
            # Per phrase: its points when every token is in the question (title, slug, alias / holders,
            # labels), when only some are (title only), and for a sample question its similarity.
            points = np.where(full, self._ph_full[touched], self._ph_partial[touched]) * share
            answer = self._ph_answer[touched]
            if answer.any():
                sim = squares / (q_norm * self._ph_norm[touched])
                points = np.where(answer & (sim >= ANSWERS_MIN), ANSWERS_POINTS * sim, points)
            owner = self._ph_doc_view[touched]
            matched = (touched, owner, full, points)
            # One alias and one sample question count per note (the best); title, slug and labels add up.
            best_of = self._ph_best_of[touched]
            if best_of.any():
                add = np.bincount(owner[~best_of], weights=points[~best_of], minlength=slots).astype(np.float64)
                # The best alias and the best sample question of each note: one max over (note, group).
                slot = owner[best_of].astype(np.int64) * 2 + self._ph_answer[touched[best_of]]
                top2 = np.zeros(2 * slots)
                np.maximum.at(top2, slot, points[best_of])
                add += top2[0::2] + top2[1::2]
            else:
                add = np.bincount(owner, weights=points, minlength=slots)
            scores = scores + add
        scored = scores > 0
        scores = scores + np.where(scored, self._bonus_view, 0.0)
        scores[scored & (scores <= 0)] = 1e-6  # a matching note with a low priority is still a candidate

        direct = scores
        candidates = int(np.count_nonzero(scored))
        seeds = [i for i in _top(direct, GRAPH_SEEDS, self._rank) if direct[i] > 0]

        # Graph: a neighbour of a seed is lifted to a share of the seed's score (never above its seed),
        # and strictly below every note that really matches the question.
        lifted: dict[int, tuple[float, str]] = {}
        real = direct[(coverage >= REAL_MATCH_COVERAGE) & scored]
        ceiling = math.nextafter(float(real.min()), 0.0) if real.size else math.inf
        seed_set = set(seeds)
        for s in seeds:
            for nb in self._neighbours(s):
                if nb in seed_set:
                    continue
                value = min(GRAPH_SHARE * float(direct[s]), ceiling)
                if value > direct[nb] and (nb not in lifted or value > lifted[nb][0]):
                    lifted[nb] = (value, self._docs[s].id)
        final = direct.copy() if lifted else direct
        for nb, (value, _seed) in lifted.items():
            final[nb] = value

        top = [i for i in _top(final, k, self._rank) if final[i] > 0]
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
        bounds = np.searchsorted(touched, self._ph_beg.a[np.asarray(top)], side="left").tolist()
        ends = np.searchsorted(touched, self._ph_end.a[np.asarray(top)], side="left").tolist()
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


def _top(scores: np.ndarray, k: int, rank: np.ndarray) -> list[int]:
    """Slots of the k best scores, best first, ties by `rank` (the notes' id order).

    Every note scoring at least the k-th best value is kept before sorting, so a tie at the boundary is
    broken by id too, never by the partition's internal order."""
    n = scores.shape[0]
    if n == 0 or k <= 0:
        return []
    if n <= 4096:  # a full sort of a small array is one call
        order = np.lexsort((rank, -scores))
        return order[:k].tolist()
    if k < n:
        kth = np.partition(scores, n - k)[n - k]
        pool = np.flatnonzero(scores >= kth)
    else:
        pool = np.arange(n)
    pool_scores = scores[pool]
    order = np.lexsort((rank[pool], -pool_scores))
    return [int(pool[j]) for j in order[:k]]
