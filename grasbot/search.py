"""Retrieval: which public notes answer a question, with a score and the reasons for it.

How a question is scored (DESIGN §6 gives the original; this is the same family of signals, reworked
where the original was known to fail):

- **Field-weighted BM25 (BM25F)** over title, aliases, slug, answers, domains/tags and body, every field
  through the same French tokenizer (accents folded, stemmed). It is the backbone: it alone ranks a vault
  without GrasBot fields (Obsidian's help vault). Shown as `bm25:<points>`, normalised so the best note of
  the question gets `BM25_POINTS`.
- **Phrase signals** from the frontmatter: an alias, the whole title or every slug token present in the
  question (`alias:<alias>`, `title`, `slug`), a `domains`/`tags` label present (`domain:ia`, `tag:x`).
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
- **grounded**: true when the best direct note covers enough of the question's informative mass
  (`GROUND_COVERAGE`). Tokens the vault has never seen weigh the most, so "Quel temps fait-il demain ?"
  sharing `temps` with a note stays ungrounded. `SearchConfig.min_score` adds a plain score floor.

Private notes (any `visibility` but `public`) are never indexed. Notes with a problem: unreadable, binary
or empty files are skipped; a note whose frontmatter does not parse is *degraded* (indexed from its file
name and body only, no frontmatter signal), unless its raw frontmatter mentions a non-public
`visibility`, in which case it is skipped (fail closed: we cannot tell it is public). A plain Markdown
note without frontmatter is a normal note of an Obsidian vault and is indexed fully.

Determinism: notes are numbered in id order, every accumulation runs in a fixed order, ties are broken by
id; nothing depends on set or dict order of hashed keys, the hash seed or the file order.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grasbot.notes import Note
from grasbot.tokenize import tokenize
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
TITLE_POINTS = 8.0
TITLE_PARTIAL_POINTS = 6.0
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
REAL_MATCH_COVERAGE = 0.5  # a note covering this share of the question's informative mass really matches
#: grounded when the best direct note's BM25F reaches this share of the question's ideal score.
#: Measured on the question sets in benchmarks/ (off-topic questions reached 0.225, on-topic ones 0.22 and up).
GROUND_EVIDENCE = 0.23
_SKIP_PROBLEMS = frozenset({"binary", "unreadable", "empty"})
_DEGRADE_PROBLEMS = frozenset({"yaml-error", "not-mapping", "unclosed-frontmatter"})
_PRIVATE_HINT = re.compile(r"^\s*visibility\s*:\s*(?![\"']?public[\"']?\s*(?:#.*)?$).*$", re.MULTILINE | re.IGNORECASE)


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


@dataclass(slots=True)
class _Phrase:
    """A short frontmatter string (alias, title, slug, sample question, label) as a set of tokens."""

    kind: str  # alias | title | slug | answer | domain | tag
    text: str
    tokens: tuple[str, ...]  # unique, sorted


@dataclass(slots=True)
class _Doc:
    note: Note
    id: str
    key: tuple[str, str]  # (path, digest or text length): re-tokenize only when this changes
    fields: dict[str, Counter[str]]
    body_len: int
    phrases: list[_Phrase]
    priority: int | None
    is_moc: bool


def note_id(note: Note) -> str:
    """The id a hit carries: the vault's id, else the slug, else the file name."""
    return note.id or note.slug or note.stem


def _indexable(note: Note) -> bool | None:
    """True: index fully; None: degraded (body only); False: never a candidate."""
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


def _phrase(kind: str, text: str) -> _Phrase | None:
    tokens = tuple(sorted(set(tokenize(text))))
    return _Phrase(kind, text, tokens) if tokens else None


def _read_doc(note: Note, full: bool) -> _Doc:
    nid = note_id(note)
    title = note.title if full else note.stem
    fields: dict[str, Counter[str]] = {
        "title": Counter(tokenize(title)),
        "aliases": Counter(),
        "slug": Counter(),
        "answers": Counter(),
        "labels": Counter(),
        "headings": Counter(tokenize(" \n".join(_headings(note)))),
        "body": Counter(tokenize(note.body)),
    }
    phrases: list[_Phrase] = []
    for kind, text in (("title", title),):
        p = _phrase(kind, text)
        if p:
            phrases.append(p)
    if full:
        slug = note.slug
        if slug:
            fields["slug"].update(tokenize(slug))
            p = _phrase("slug", slug)
            if p and (not phrases or p.tokens != phrases[0].tokens):
                phrases.append(p)
        seen: set[tuple[str, ...]] = set()
        for alias in note.aliases:
            toks = tokenize(alias)
            fields["aliases"].update(toks)
            p = _phrase("alias", alias)
            if p and p.tokens not in seen:  # `push swap`, `push-swap`, `push_swap`: one alias
                seen.add(p.tokens)
                phrases.append(p)
        for answer in note.answers:
            fields["answers"].update(tokenize(answer))
            p = _phrase("answer", answer)
            if p:
                phrases.append(p)
        for kind, values in (("domain", note.domains), ("tag", note.tags)):
            for value in values:
                fields["labels"].update(tokenize(value))
                p = _phrase(kind, value)
                if p:
                    phrases.append(p)
    return _Doc(
        note=note,
        id=nid,
        key=(note.path, note.digest or str(len(note.text))),
        fields=fields,
        body_len=sum(fields["body"].values()),
        phrases=phrases,
        priority=note.priority if full else None,
        is_moc=note.is_moc if full else False,
    )


# -- the index ---------------------------------------------------------------------------------------


class SearchIndex:
    """Built once per vault load; private notes are never candidates.

    Layout: notes are numbered 0..N-1 in id order. For every term, `_postings[term]` holds the numbers of
    the notes that contain it (int32) and their BM25F weight already multiplied by the term's IDF
    (float64), so scoring a question is one concatenation and one `bincount` per question, whatever the
    vault size. Frontmatter phrases have their own small inverted index (`_phrase_index`).
    """

    def __init__(self, config: SearchConfig | None = None) -> None:
        self.config = config or SearchConfig()
        self._docs: list[_Doc] = []
        self._cache: dict[str, _Doc] = {}  # path -> tokenized note, reused by `update`
        self._postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._idf: dict[str, float] = {}
        self._idf_unseen = 0.0
        self._phrase_index: dict[str, list[tuple[int, int]]] = {}
        self._neighbours: list[tuple[int, ...]] = []
        self._bonus_if_scored: np.ndarray = np.zeros(0)
        self._by_path: dict[str, int] = {}

    # -- building ------------------------------------------------------------------------------------
    @classmethod
    def build(cls, vault: Vault, config: SearchConfig | None = None) -> SearchIndex:
        index = cls(config)
        index._rebuild(vault)
        return index

    def update(self, vault: Vault, change: LinkChange) -> None:
        """Bring the index up to date after `vault.update_file`/`remove_file` returned `change`.

        Only the changed notes are re-tokenized (the expensive part); the numeric arrays are then
        recomputed from the cached token counts, because one note changes the IDF and the average length
        that every weight depends on: the result is exactly what a fresh `build` would give.
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
        docs: list[_Doc] = []
        cache: dict[str, _Doc] = {}
        for path in sorted(vault.notes):
            note = vault.notes[path]
            mode = _indexable(note)
            if mode is False:
                continue
            key = (note.path, note.digest or str(len(note.text)))
            doc = self._cache.get(path)
            if doc is None or doc.key != key or doc.note is not note and doc.note.text != note.text:
                doc = _read_doc(note, full=mode is True)
            else:
                doc.note = note
            cache[path] = doc
            docs.append(doc)
        docs.sort(key=lambda d: (d.id, d.note.path))
        self._docs = docs
        self._cache = cache
        self._by_path = {d.note.path: i for i, d in enumerate(docs)}
        n = len(docs)

        # BM25F: a per-note pseudo term frequency mixing the fields by weight; only the body is
        # length-normalised (titles, aliases and labels are short by nature).
        avg_body = (sum(d.body_len for d in docs) / n) if n else 1.0
        avg_body = avg_body or 1.0
        df: Counter[str] = Counter()
        pseudo: list[dict[str, float]] = []
        w_body = FIELD_WEIGHTS["body"]
        short = [(name, FIELD_WEIGHTS[name]) for name in ("title", "aliases", "slug", "answers", "labels", "headings")]
        for d in docs:
            norm = w_body / (1.0 - BM25_B + BM25_B * d.body_len / avg_body)
            tf: dict[str, float] = {t: c * norm for t, c in d.fields["body"].items()}
            for name, weight in short:
                for t, c in d.fields[name].items():
                    tf[t] = tf.get(t, 0.0) + c * weight
            df.update(tf.keys())
            pseudo.append(tf)
        self._idf = {t: _idf(n, c) for t, c in df.items()}
        self._idf_unseen = _idf(n, 0)

        lists: dict[str, tuple[list[int], list[float]]] = {}
        k1 = BM25_K1
        for i, tf in enumerate(pseudo):
            for t, f in tf.items():
                entry = lists.get(t)
                if entry is None:
                    entry = lists[t] = ([], [])
                entry[0].append(i)
                entry[1].append(f * (k1 + 1.0) / (f + k1))
        idf = self._idf
        self._postings = {
            t: (np.asarray(ids, dtype=np.int32), np.asarray(ws, dtype=np.float64) * idf[t])
            for t, (ids, ws) in lists.items()
        }

        phrase_index: dict[str, list[tuple[int, int]]] = {}
        for i, d in enumerate(docs):
            for j, p in enumerate(d.phrases):
                for t in p.tokens:
                    phrase_index.setdefault(t, []).append((i, j))
        self._phrase_index = phrase_index
        # How many notes carry each alias (as a token set): a shared alias names none of them.
        alias_holders: Counter[tuple[str, ...]] = Counter()
        for d in docs:
            alias_holders.update({p.tokens for p in d.phrases if p.kind == "alias"})
        self._alias_holders = alias_holders

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

    # -- searching -----------------------------------------------------------------------------------
    def search(self, query: str, top_k: int | None = None) -> SearchResult:
        started = time.perf_counter()
        k = self.config.top_k if top_k is None else top_k
        tokens = tuple(tokenize(query))
        unique = sorted(set(tokens))
        n = len(self._docs)
        if not unique or n == 0 or k <= 0:
            return SearchResult(query, tokens, [], False, {"candidates": 0, "elapsed_ms": _ms(started)})

        idf = self._idf
        unseen = self._idf_unseen
        q_idf = {t: idf.get(t, unseen) for t in unique}
        mass = sum(q_idf.values())

        # BM25F and coverage (IDF mass of the question found in each note), one pass over the postings.
        present = [t for t in unique if t in self._postings]
        if present:
            post = [self._postings[t] for t in present]
            doc_ids = np.concatenate([p[0] for p in post])
            bm25 = np.bincount(doc_ids, weights=np.concatenate([p[1] for p in post]), minlength=n)
            covered = np.bincount(
                doc_ids, weights=np.repeat([q_idf[t] for t in present], [len(p[0]) for p in post]), minlength=n
            )
        else:
            bm25 = np.zeros(n)
            covered = np.zeros(n)
        best_bm25 = float(bm25.max()) if present else 0.0
        coverage = covered / mass
        scores = bm25 * (BM25_POINTS / best_bm25) if best_bm25 > 0 else np.zeros(n)

        # Phrase signals: only phrases sharing a token with the question are touched.
        qset = set(unique)
        touched: dict[tuple[int, int], int] = {}
        for t in unique:
            for ref in self._phrase_index.get(t, ()):
                touched[ref] = touched.get(ref, 0) + 1
        extra: dict[int, list[tuple[float, str]]] = {}
        q_norm = math.sqrt(sum(v * v for v in q_idf.values()))
        for (i, j), hits in sorted(touched.items()):
            p = self._docs[i].phrases[j]
            if p.kind == "answer":
                shared = sum(q_idf[t] ** 2 for t in p.tokens if t in qset)
                a_norm = math.sqrt(sum(idf.get(t, unseen) ** 2 for t in p.tokens))
                sim = shared / (q_norm * a_norm) if a_norm else 0.0
                if sim >= ANSWERS_MIN:
                    reason = "answers-full" if sim >= ANSWERS_FULL else f"answers-partial:{sim:.2f}"
                    extra.setdefault(i, []).append((ANSWERS_POINTS * sim, reason))
                continue
            share = sum(q_idf[t] for t in p.tokens if t in qset) / mass
            if p.kind == "title" and hits < len(p.tokens):
                # Part of the title: the note's name still says what it is about.
                extra.setdefault(i, []).append((TITLE_PARTIAL_POINTS * share, "title-partial"))
                continue
            if hits < len(p.tokens):
                continue  # every token of the phrase must be in the question
            if p.kind == "alias":
                points, reason = ALIAS_POINTS * share / self._alias_holders[p.tokens], f"alias:{p.text}"
            elif p.kind == "title":
                points, reason = TITLE_POINTS * share, "title"
            elif p.kind == "slug":
                points, reason = SLUG_POINTS * share, "slug"
            elif p.kind == "domain":
                points, reason = DOMAIN_POINTS * share, f"domain:{p.text}"
            else:
                points, reason = TAG_POINTS * share, f"tag:{p.text}"
            extra.setdefault(i, []).append((points, reason))

        reasons: dict[int, list[str]] = {}
        for i, items in extra.items():
            # One alias and one sample question count (the best); labels and title/slug add up.
            best: dict[str, tuple[float, str]] = {}
            total = 0.0
            kept: list[str] = []
            for points, reason in items:
                group = reason.split(":", 1)[0] if reason.startswith(("alias:", "answers")) else reason
                if group.startswith("answers"):
                    group = "answers"
                if group in ("alias", "answers"):
                    if group not in best or points > best[group][0]:
                        best[group] = (points, reason)
                else:
                    total += points
                    kept.append(reason)
            for group in ("alias", "answers"):
                if group in best:
                    total += best[group][0]
                    kept.insert(0 if group == "alias" else len(kept), best[group][1])
            scores[i] += total
            reasons[i] = kept
        scored = scores > 0
        scores = scores + np.where(scored, self._bonus_if_scored, 0.0)
        scores[scored & (scores <= 0)] = 1e-6  # a matching note with a low priority is still a candidate

        direct = scores.copy()
        candidates = int(np.count_nonzero(scored))
        order = _top(direct, GRAPH_SEEDS)
        seeds = [i for i in order if direct[i] > 0]

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
        final = direct
        for nb, (value, _seed) in sorted(lifted.items()):
            final[nb] = value

        top = _top(final, k)
        hits: list[Hit] = []
        for i in top:
            if final[i] <= 0:
                break
            d = self._docs[i]
            why = list(reasons.get(i, ()))
            if bm25[i] > 0:
                why.append(f"bm25:{BM25_POINTS * bm25[i] / best_bm25:.2f}")
            if scored[i]:
                if d.priority is not None and d.priority != 5:
                    why.append("priority")
                if d.is_moc:
                    why.append("moc-hub")
            if i in lifted:
                why.append(f"graph-from:{lifted[i][1]}")
            hits.append(
                Hit(d.note, d.id, round(float(final[i]), 4), tuple(why), direct=bool(scored[i]), coverage=round(float(coverage[i]), 4))
            )

        best_cov = max((h.coverage for h in hits if h.direct), default=0.0)
        # Evidence: the best direct note's BM25F as a share of what a note holding every question token
        # strongly would get. Unseen tokens count at full IDF, body-only single mentions count little.
        ideal = mass * (BM25_K1 + 1.0)
        evidence = max((float(bm25[i]) / ideal for i in top if scored[i]), default=0.0)
        grounded = evidence >= GROUND_EVIDENCE
        if self.config.min_score is not None and (not hits or hits[0].score < self.config.min_score):
            grounded = False
        stats = {
            "tokens": list(tokens),
            "vault_size": n,
            "candidates": candidates,
            "seeds": [self._docs[i].id for i in seeds],
            "bm25_max": round(best_bm25, 4),
            "coverage": round(best_cov, 4),
            "evidence": round(evidence, 4),
            "elapsed_ms": _ms(started),
        }
        return SearchResult(query, tokens, hits, grounded, stats)


def _idf(n: int, df: int) -> float:
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 3)


def _top(scores: np.ndarray, k: int) -> list[int]:
    """Indices of the k best scores, best first, ties by index (= by id, since notes are in id order).

    Every note scoring at least the k-th best value is kept before sorting, so a tie at the boundary is
    broken by id too, never by the partition's internal order."""
    n = scores.shape[0]
    if n == 0 or k <= 0:
        return []
    if k < n:
        kth = np.partition(scores, n - k)[n - k]
        pool = np.flatnonzero(scores >= kth)
    else:
        pool = np.arange(n)
    pool_scores = scores[pool]
    order = np.lexsort((pool, -pool_scores))
    return [int(pool[j]) for j in order[:k]]
