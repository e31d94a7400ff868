"""A re-implementation of the original GrasBot scoring (its published scoring table), as a baseline only.

It reproduces the original's design, including its known defects, so that the benchmark compares the
new engine against what it replaces: a tokenizer that keeps trailing punctuation and does not stem; an
answers test that stops at the first partial hit; a body BM25 computed in pure Python over every note for
every question; a graph step that adds 60 % of a seed's score to its neighbours, which can put a neighbour
above a note that really matches; `grounded` as "best score ≥ SEARCH_MIN_SCORE". The one defect not
reproduced is the hash-seed dependence (ties are broken by path here), so that the benchmark is
repeatable. Never used by the product.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

SEARCH_MIN_SCORE = 3.0
_STOP = frozenset(
    """le la les un une des de du d l et ou à a au aux en dans sur pour par avec sans ce cet cette ces
    qui que quoi quel quelle quels quelles est sont il elle ils elles on je tu nous vous se sa son ses
    mon ma mes ton ta tes leur leurs ne pas plus comment pourquoi quand où y""".split()
)


def _fold(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def tokenize_fr(text: str) -> list[str]:
    """The original tokenizer: lowercase, accents folded, c++/c#, split on blanks, `-`, `_` and `'`,
    stop words dropped. Punctuation glued to a word stays (`swap?`): a known defect."""
    text = _fold(text.lower()).replace("c++", "cpp").replace("c#", "csharp")
    out = []
    for raw in re.split(r"[\s\-_'’/]+", text):
        token = raw.strip("\"«»()[],.;:!*`")  # `?` is not stripped: the original's trailing-? defect
        if token and token not in _STOP and len(token) > 1:
            out.append(token)
    return out


@dataclass
class _Doc:
    id: str
    path: str
    title: str
    title_tokens: list[str]
    slug_tokens: list[str]
    aliases: list[str]
    answers: list[list[str]]
    domains: list[str]
    tags: list[str]
    body: Counter
    body_len: int
    priority: int | None
    is_moc: bool
    neighbours: list[str]


class OriginalScoring:
    """`build(vault)` then `search(question, top_k)` -> (ranked [(id, score, reasons)], grounded)."""

    def __init__(self, vault) -> None:
        docs = []
        for path in sorted(vault.notes):
            note = vault.notes[path]
            if note.is_private:
                continue
            nid = note.id or note.slug or note.stem
            neighbours = [vault.notes[p].id for p in vault.outgoing(path) if p in vault.notes]
            body = tokenize_fr(note.body)
            docs.append(
                _Doc(
                    nid,
                    path,
                    _fold(note.title.lower()),
                    tokenize_fr(note.title),
                    tokenize_fr(note.slug or note.stem),
                    [_fold(a.lower()) for a in note.aliases if a.strip()],
                    [tokenize_fr(a) for a in note.answers],
                    [_fold(d.lower()) for d in note.domains],
                    [_fold(t.lower()) for t in note.tags],
                    Counter(body),
                    len(body),
                    note.priority,
                    note.is_moc,
                    neighbours,
                )
            )
        self.docs = docs
        self.by_id = {d.id: d for d in docs}
        self.avgdl = (sum(d.body_len for d in docs) / len(docs)) if docs else 1.0
        df: Counter = Counter()
        for d in docs:
            df.update(d.body.keys())
        self.df = df

    def _bm25(self, tokens: list[str]) -> dict[str, float]:
        n, k1, b = len(self.docs), 1.5, 0.75
        out = {}
        for d in self.docs:  # pure Python over every note, as the original
            s = 0.0
            for t in tokens:
                tf = d.body.get(t, 0)
                if not tf:
                    continue
                idf = math.log(1 + (n - self.df[t] + 0.5) / (self.df[t] + 0.5))
                s += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * d.body_len / (self.avgdl or 1)))
            out[d.id] = s
        return out

    def search(self, question: str, top_k: int = 5) -> tuple[list[tuple[str, float, list[str]]], bool]:
        q = _fold(question.lower())
        tokens = tokenize_fr(question)
        qset = set(tokens)
        bm25 = self._bm25(tokens)
        bmax = max(bm25.values(), default=0.0) or 1.0
        scored: dict[str, tuple[float, list[str]]] = {}
        for d in self.docs:
            s, why = 0.0, []
            for alias in d.aliases:
                if alias and alias in q:
                    s += 10
                    why.append(f"alias:{alias}")
                    break
            if len(d.title) >= 4 and d.title in q:
                s += 8
                why.append("title")
            elif sum(t in qset for t in d.title_tokens) >= 2:
                s += 4
                why.append("title-partial")
            if d.slug_tokens and all(t in qset for t in d.slug_tokens):
                s += 8
                why.append("slug")
            for answer in d.answers:  # stops at the first hit, full or partial (a known defect)
                shared = len(qset & set(answer))
                if shared >= 3:
                    s += 12
                    why.append("answers-full")
                    break
                if shared >= 2:
                    s += 5
                    why.append("answers-partial")
                    break
            for dom in d.domains:
                if dom in qset:
                    s += 5
                    why.append(f"domain:{dom}")
            for tag in d.tags:
                if tag in qset:
                    s += 3
                    why.append(f"tag:{tag}")
            if bm25[d.id] > 0:
                part = 5 * bm25[d.id] / bmax
                s += part
                why.append(f"bm25:{part:.2f}")
            if s > 0:
                if d.priority is not None:
                    s += (d.priority - 5) * 0.3
                if d.is_moc:
                    s += 1
                scored[d.id] = (s, why)
        ranked = sorted(scored.items(), key=lambda kv: (-kv[1][0], self.by_id[kv[0]].path))
        for seed, (s, _why) in ranked[:3]:
            for nb in self.by_id[seed].neighbours:
                if nb in self.by_id:
                    old, why = scored.get(nb, (0.0, []))
                    scored[nb] = (old + 0.6 * s, why + [f"graph-from:{seed}"])
        ranked = sorted(scored.items(), key=lambda kv: (-kv[1][0], self.by_id[kv[0]].path))[:top_k]
        grounded = bool(ranked) and ranked[0][1][0] >= SEARCH_MIN_SCORE
        return [(i, round(s, 4), why) for i, (s, why) in ranked], grounded
