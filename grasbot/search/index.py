"""Retrieval: which public notes answer a question, with a score and the reasons for it.

How a question is scored (`benchmarks/original_scoring.py` re-implements the original GrasBot scoring; this
is the same family of signals, reworked where the original was known to fail):

- **Field-weighted BM25 (BM25F)** over title, aliases, slug, answers, domains/tags, headings, the
  note's definition (its first paragraph of prose when it names the note's subject, `LEAD_WEIGHT`: for
  ranking, never for grounding) and body, every field through the same French tokenizer (accents folded, stemmed). It is the backbone: it alone ranks a vault
  without GrasBot fields (Obsidian's help vault). Shown as `bm25:<points>`, normalised so the best note of
  the question gets `BM25_POINTS`.
- **Phrase signals** from the frontmatter: an alias, the whole title or every slug token present in the
  question (`alias:<alias>`, `title`, `slug`), part of the title (`title-partial`), a `domains`/`tags`
  label present (`domain:ia`, `tag:x`).
  Each is worth its constant × the share of the question's *informative mass* it covers (sum of the IDF
  of the question's tokens): an alias such as `42`, held by many notes and made of a common token, no
  longer outweighs the subject of the question. An alias held by k notes names none of them: ÷ k.
  Part of a title counts each word by its rarity among the titles (its IDF over titles ÷ that of a word
  in no title): a word most titles share (the product's name) is no sign of which note a question is
  about. A title the question holds but for such words (≥ `TITLE_NAMED_SHARE` of its rarity mass:
  "Importer depuis Apple Notes" for "import my Apple Notes", `depuis` being in many titles) is named
  whole (`title`), and so outranks a sibling title it names only part of ("... Apple Journal"). A hub's (MOC's) title, slug and aliases weigh `HUB_NAME_SHARE`: a hub names a collection, often
  with the subjects of the notes it gathers as aliases, and must not outrank the note about the subject.
- **Answers by similarity**: the best of the note's sample questions, IDF-weighted cosine with the
  question (`answers-full` ≥ 0.8, else `answers-partial:<sim>`), not a token count that stops at the
  first partial hit.
- `priority` ((p − 5) × 0.3) and `moc-hub` (+1) only for a note that already has lexical evidence.
- **Graph expansion**: a neighbour (outgoing links: linked, related, body wikilinks) of one of the best
  direct notes is lifted to `GRAPH_SHARE` of that seed's score when it scored less (`graph-from:<seed>`),
  capped strictly below every note that really matches the question (covers at least half of its
  informative mass): the graph lifts a neighbour past weak matches, never past its seed or a real match.
- **Spelling** (`grasbot.search.spelling`): a question token the vault has never seen (and the lexicon does not
  know) is matched to the index term it most likely stands for: Damerau–Levenshtein on stems (two edits
  from 8 letters) and one edit on the typed word (`competance` -> `compétence`), first letter kept, fewest
  edits, then names (title, alias, slug), then document frequency (`stats["corrected"]`). It ranks at
  `CORRECTION_WEIGHT` and is no evidence, unless the correction is *confident* (long enough not to be
  another word of the language, not a word of one note, clearly likelier than the runner-up): then it ranks
  at `SURE_CORRECTION_WEIGHT` and counts as evidence at `SURE_CORRECTION_EVIDENCE`, the question's mass
  taking the corrected term's IDF instead of an unseen word's. First, though, an unseen word that is another
  inflection of a vault term (`mangent`, `pointent`, `metre` for the notes' `manger`, `pointer`, `mettre`:
  `Speller.inflect`) is that term, as if typed in the vault's form (`stats["inflected"]`): the singular
  `mange` would rank and ground exactly so. A token the vault *does* hold, but in one note only, one edit
  from a name (title, alias, slug) that five times as many notes hold is looked for as that name too
  (`cliper` stems to `clip`, a word of one note, where the vault names `clipper`; `stats["respelled"]`):
  the name ranks as a confident correction, the word as typed as an unconfident one, no evidence added.
- **Word families** (`grasbot.search.lexicon.family`): another form of a question word that the French
  stemmer leaves apart (`financier` stems to `financi`, `financière` to `financier`, `finance` to
  `financ`; `vidéo` to `video`, `vidéos` to `videos`) and the vault holds ranks as that word at
  `lexicon.FAMILY_WEIGHT` and is evidence like a synonym, but only beyond what the word as typed counts in
  the same note (`_beside_original`): a note holding both forms scores the better one, not their sum.
- **grounded**: the evidence of the best direct note, its BM25F score as a share of the score of an ideal
  note holding every question token strongly, must reach `GROUND_EVIDENCE`. Each token weighs its IDF and
  tokens the vault has never seen weigh the most, so "Quel temps fait-il demain ?" sharing `temps` with a
  note's body stays ungrounded. A word a note holds in its body only (no title, alias, heading, label...)
  does not say the note is about it: it counts at `grounding.PASSING_EVIDENCE`, more as other question
  words in the same note corroborate it ("réparer un vélo" is not grounded on a note that says "il se
  déplace à vélo", nor "faire pousser des tomates" on one that says "poussez les modifications"). Lexicon
  expansions and confident corrections count at a discount, once per question word (`grasbot.search.grounding`).
  `SearchConfig.min_score` adds a plain score floor on top.

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

import dataclasses
import gc
import math
import re
import time
from itertools import chain, compress
from dataclasses import dataclass, field
from operator import attrgetter, is_not, itemgetter, ne
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from grasbot.search import grounding as _grounding, lexicon as _lexicon, semantic as _semantic, spelling as _spelling
from grasbot.model import Note, visible_to_visitors
from grasbot.text import name_key_fast
from grasbot.search.tokenize import SEPARATOR, raw_word_counts, raw_words_of, raw_words_tokens, stem, token_counts, tokenize, words
from grasbot.vault import LinkChange

# -- constants (starting points from the original scoring, reworked where measurement said so) -----------------
#: Term-frequency saturation for ranking. BM25F's pseudo-frequencies are field-weighted (one title word
#: counts 3), so the classic 1.2 saturates a note at its first mentions and leaves the body's repetitions
#: nothing to say; 2.0 raised hit@1 and MRR on every question set, none lower, the large sets built
#: mechanically from the corpora included (benchmarks/compare_quality.py --auto; benchmarks/README.md).
BM25_K1 = 2.0
#: The saturation `grounded` reads the same postings with: the one GROUND_EVIDENCE was calibrated at, so
#: that a ranking change does not move the grounded decision.
EVIDENCE_K1 = 1.2
BM25_B = 0.75  # body length normalisation; the short fields are not length-normalised
#: A note's definition: the first paragraph of prose of its body (`_lead`), when it names the note's own
#: subject (holds a word of its title): where a page says in its own words what it is about, in words a
#: question may share where the title does not ("La vue graphique ... vous permet de visualiser les
#: relations entre les notes"). Its distinct words weigh this much on top of their body count, for ranking
#: only: a word of the lead alone is still a mention in passing for grounding (`grounding.in_passing`).
#: It must stay below every other field's weight (that is how a posting tells a lead-only word). Measured
#: on every set of compare_quality.py: 0.5 gains five questions (hit@1 or hit@5) and loses none; 1.0 loses
#: two (a narrative first paragraph's generic verbs); a lead not required to name the title loses two on
#: the bundled vault; the first sentence alone gains nothing.
LEAD_WEIGHT = 0.5
LEAD_MAX_WORDS = 60
#: BM25F field weights: a term in the title says more about the subject than one in the body.
FIELD_WEIGHTS: dict[str, float] = {
    "title": 3.0,
    "aliases": 1.5,
    "slug": 1.0,
    "answers": 1.5,
    "labels": 1.0,
    "headings": 2.0,
    "lead": LEAD_WEIGHT,
    "body": 1.0,
}
BM25_POINTS = 10.0  # the best note's BM25 share of the score
ALIAS_POINTS = 10.0
TITLE_POINTS = 16.0  # the whole title (the note's own name) in the question: the strongest lexical sign
TITLE_PARTIAL_POINTS = 5.0  # part of a title, its words counted by their rarity among titles (see `_refresh`)
#: A title whose words the question holds for this share of their rarity mass is named whole. Measured on
#: every question set: 0.8 lifts help-fr-fresh hit@1 0.750 -> 0.778 and three MRRs, none lower; 0.9 gains
#: less, 0.7 loses a help-fr-test question.
TITLE_NAMED_SHARE = 0.8
SLUG_POINTS = 8.0
ANSWERS_POINTS = 12.0
ANSWERS_FULL = 0.8  # similarity from which the reason reads `answers-full`
ANSWERS_MIN = 0.25  # below this, a sample question is not evidence
DOMAIN_POINTS = 5.0
TAG_POINTS = 3.0
PRIORITY_STEP = 0.3
MOC_POINTS = 1.0
HUB_NAME_SHARE = 0.5  # a hub's (MOC's) title, slug and aliases weigh this share of a note's (see `_refresh`)
GRAPH_SHARE = 0.6  # a neighbour is lifted to this share of its seed's score ...
GRAPH_SEEDS = 3  # ... from the best direct notes only
UNSEEN_WEIGHT = 1.0  # share of an unseen word's IDF counted in the question's informative mass
#: A question token the vault holds in at most this many notes, one edit from a name term that at least
#: `RESPELL_FACTOR` times as many notes hold, is looked for as that name too (`stats["respelled"]`): a
#: misspelling that happens to stem to a rare real word (`cliper` -> `clip`, for `clipper`).
RESPELL_MAX_DF = 1
RESPELL_FACTOR = 5
CORRECTION_WEIGHT = 0.5  # a spelling-corrected token weighs half in ranking ...
CORRECTION_EVIDENCE = 0.0  # ... and nothing as evidence that the vault covers the question, unless
SURE_CORRECTION_WEIGHT = 0.8  # ... the correction is confident (grasbot.search.spelling): then it ranks at this
SURE_CORRECTION_EVIDENCE = 0.8  # ... and is evidence at this share, the question's mass taking its IDF
EXPANSION_EVIDENCE = 0.7  # a lexicon synonym/translation: evidence at this share, once per original word
EXPAND_MAX_DF = 0.1  # a question word held by more than this share of the notes is not expanded
REAL_MATCH_COVERAGE = 0.5  # a note covering this share of the question's informative mass really matches
#: grounded when the best note's BM25F reaches this share of the question's ideal score. Chosen on the
#: question sets (benchmarks/questions-*.yaml, tests/eval/sample-questions.yaml): with body-only words
#: discounted (grasbot/search/grounding.py), their off-topic questions that share words with a vault reach
#: 0.10-0.228 ("tulipes"), on-topic ones mostly 0.23 and above; the best balanced accuracy over the
#: five dev sets is at 0.231 (0.983; AUC 0.993), so the threshold stays.
GROUND_EVIDENCE = 0.23
_SKIP_PROBLEMS = frozenset({"binary", "unreadable", "empty"})
_DEGRADE_PROBLEMS = frozenset({"yaml-error", "not-mapping", "unclosed-frontmatter"})


@runtime_checkable
class IndexedVault(Protocol):
    """What the index reads of a vault: its notes by path and, when it has them, each note's outgoing links
    (`Vault`, or a copy such as the TUI's `_VaultSnapshot` taken under a lock)."""

    @property
    def notes(self) -> Mapping[str, Note]: ...

    def outgoing(self, path: str) -> list[str]: ...


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

_FIELDS: tuple[str, ...] = ("title", "aliases", "slug", "answers", "labels", "headings", "lead", "body")
#: Twice each field weight: a short field's weighted frequency is counted as an integer (exact) and halved.
_TWICE: dict[str, int] = {name: round(2 * w) for name, w in FIELD_WEIGHTS.items()}
assert all(_TWICE[name] == 2 * w for name, w in FIELD_WEIGHTS.items()), "field weights must be multiples of 0.5"
_KINDS: tuple[str, ...] = ("title", "slug", "alias", "answer", "domain", "tag")
_K_TITLE, _K_SLUG, _K_ALIAS, _K_ANSWER, _K_DOMAIN, _K_TAG = range(len(_KINDS))


#: A note's phrases, the short frontmatter strings (title, slug, aliases, sample questions, labels), as
#: parallel lists: their kinds (index in _KINDS), texts, and distinct tokens' term ids (ordered as the
#: tokens are). Only while a note is read: the index keeps phrases in arrays.
_Phrases = tuple[list[int], list[str], list[tuple[int, ...]]]


@dataclass(slots=True)
class _Doc:
    """One indexed note. Its term statistics and phrases live in the index's arrays, not here (memory);
    an update reads them again from `note` (the very object indexed, never mutated) to take it out."""

    note: Note
    id: str
    full: bool  # read with its frontmatter (False: degraded, file name and body only)
    priority: int | None
    is_moc: bool
    out: tuple[str, ...] = ()  # paths it links to (vault.outgoing), turned into neighbours at query time


def _content_key(note: Note) -> tuple[str, str]:
    """(path, digest or text length): an update re-tokenizes a note only when this changes. Taken from
    the indexed note object itself when needed (not kept per note, and no digest computed by a build)."""
    return (note.path, note.digest or str(len(note.text)))


def note_id(note: Note) -> str:
    """The id a hit carries: the vault's id, else the slug, else the file name."""
    return note.id or note.slug or note.stem


def _indexable(note: Note) -> bool | None:
    """True: index fully; None: degraded (file name and body only); False: never a candidate."""
    if not visible_to_visitors(note):
        return False
    codes = {p.code for p in note.problems}
    if codes & _SKIP_PROBLEMS or not (note.meta or note.body.strip()):  # (meta first: no copy of the body)
        return False
    if codes & _DEGRADE_PROBLEMS:
        return None
    return True


_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def _for_visitors(redact: Callable[[str, str], str] | None, path: str, texts: list[str]) -> list[str]:
    """Short fields (a title, aliases, sample questions) as a visitor may read them: each that may hold a
    link is passed through `redact` (the vault's `visitor_text`); the list itself when none may."""
    if redact is None or not any("[" in x or "<" in x for x in texts):
        return texts
    return [redact(x, path) if "[" in x or "<" in x else x for x in texts]


def _visitor_body(note: Note, redact: Callable[[str, str], str] | None) -> str:
    """The body as the index reads it: the reader's (comments out), without the links to hidden notes."""
    body = note.reader_body
    return body if redact is None else redact(body, note.path)


def _headings(note: Note) -> list[str]:
    """The note's section titles (from the vault's parse, else read from the body)."""
    headings = note.headings
    if headings:
        return [h.text for h in headings]
    return _HEADING.findall(note.reader_body)


_LEAD_SKIP = re.compile(r"^\s*(?:#|>|!\[\[|\||```|~~~|<|---|- \[|\$\$)")


def _lead(body: str) -> str:
    """The first paragraph of prose of `body` (no heading, quote or callout, embed, table, code, HTML),
    its first `LEAD_MAX_WORDS` words: where a note says what it is about."""
    lines: list[str] = []
    fence = False
    for line in body.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            fence = not fence
            continue
        if fence:
            continue
        if not stripped:
            if lines:
                break
            continue
        if _LEAD_SKIP.match(line):
            if lines:
                break
            continue
        lines.append(stripped)
    words = " ".join(lines).split()
    return " ".join(words[:LEAD_MAX_WORDS])


_SEPARATOR_ID = -2  # the term id `_Reader` gives the raw word `SEPARATOR`


class _Reader:
    """Reads notes into term ids for one index, for one build or one update.

    Its caches live as long as it does (a build's are dropped with it, so nothing vault-sized stays in
    memory, and no LRU bound makes a 10k-note vault's 70k distinct frontmatter strings miss every time):
    a short text's tokens as term ids (the recurring ones: labels, headings), and a raw word's term id (a
    vault has a few thousand distinct words, so a body is counted and mapped with C-level passes,
    `token_counts` without its strings, and a build maps short texts the same way)."""

    __slots__ = ("tids_of", "terms", "short", "repeats", "raw", "multi", "bulk", "redact")

    def __init__(
        self, tids_of: Any, terms: list[str], bulk: bool = True, redact: Callable[[str, str], str] | None = None
    ) -> None:
        # `redact(text, path)`: the text a visitor may read, without the links to hidden notes
        # (`grasbot.vault.Vault.visitor_text`, what the prompt quotes): the index never holds words that only
        # a link to a private note brings, so that neither `grounded` nor a source confirms them
        self.redact = redact
        self.tids_of = tids_of  # SearchIndex._tids: term ids, new terms added to the vocabulary
        self.terms = terms  # SearchIndex._terms: term id -> term
        self.bulk = bulk  # a build: cache raw words (else one note: the tokenizer's own caches do)
        self.short: dict[str, tuple[int, ...]] = {}  # text -> its distinct tokens' ids, in token order
        self.repeats: dict[str, tuple[int, ...]] = {}  # text -> every token's id, when one repeats
        self.raw: dict[bytes, int] = {SEPARATOR: _SEPARATOR_ID}  # raw word -> term id (0: stop word, -1: several tokens)
        # a raw word of several tokens -> them (here, not in the tokenizer's cache, which would keep them)
        self.multi: dict[bytes, tuple[str, ...]] = {}

    def phrase(self, text: str, keep: bool = True) -> tuple[int, ...]:
        """The distinct tokens of a short text as term ids, ordered as the tokens are; kept for the next
        time unless `keep` is false (a text that rarely repeats: memory)."""
        found = self.short.get(text)
        if found is None:
            tokens = tokenize(text)
            distinct = sorted(set(tokens))
            found = tuple(self.tids_of(distinct))
            if keep:
                self.short[text] = found
            if len(distinct) != len(tokens):
                self.repeats[text] = tuple(self.tids_of(tokens))
        return found

    def phrases(self, texts: list[str], found: list[tuple[int, ...] | None], keep_from: int) -> list[tuple[int, ...]]:
        """`found` (a note's short texts' ids from the cache, None where not there) completed as `phrase`
        does, the texts from `keep_from` on kept. A build maps the missing texts as it maps bodies: one
        encode, translate and split of them all, one multi-get of their raw words (no token strings, no
        call per text); a text's words end with `SEPARATOR`."""
        missing = [i for i, f in enumerate(found) if f is None]
        words = raw_words_of([texts[i] for i in missing]) if self.bulk else None
        if words is None:  # one note, or a text to rewrite first (`c++`...): text by text
            phrase = self.phrase
            return [f if f is not None else phrase(x, i >= keep_from) for i, (f, x) in enumerate(zip(found, texts))]
        raw = self.raw
        try:
            ids = list(map(raw.__getitem__, words))
        except KeyError:
            self._learn(words)
            ids = list(map(raw.__getitem__, words))
        if 0 in ids or -1 in ids:  # stop words out, a raw word with several tokens expanded
            expanded: list[int] = []
            for word, tid in zip(words, ids):
                if tid > 0 or tid == _SEPARATOR_ID:
                    expanded.append(tid)
                elif tid == -1:
                    expanded += self.tids_of(self.multi[word])
            ids = expanded
        out: list[tuple[int, ...] | None] = list(found)
        terms = self.terms
        start = 0
        for i in missing:
            end = ids.index(_SEPARATOR_ID, start)
            every = ids[start:end]
            start = end + 1
            # (the distinct ids ordered by their terms, as `phrase` gives them)
            tids = tuple(sorted(set(every), key=terms.__getitem__)) if len(every) > 1 else tuple(every)
            if len(tids) != len(every):
                self.repeats[texts[i]] = tuple(every)
            if i >= keep_from:
                self.short[texts[i]] = tids
            out[i] = tids
        return out  # type: ignore[return-value]

    def body(self, text: str) -> tuple[Sequence[int], Sequence[int]]:
        """Term ids of the body's tokens and their counts, one entry per distinct raw word: an id may
        appear twice (`pile`, `piles`) and 0 stands for stop words (the caller sums and drops)."""
        if not self.bulk:
            tokens, values = token_counts(text)
            return self.tids_of(tokens), values
        counts = raw_word_counts(text)
        if not counts:
            return (), ()
        raw = self.raw
        try:  # after the first notes, every word of a note is known: one C-level multi-get
            tids: Sequence[int] = itemgetter(*counts)(raw) if len(counts) > 1 else (raw[next(iter(counts))],)
        except KeyError:
            self._learn(counts)
            tids = itemgetter(*counts)(raw) if len(counts) > 1 else (raw[next(iter(counts))],)
        values: Sequence[int] = list(counts.values())
        if -1 in tids:  # a raw word with several tokens (non-ASCII punctuation inside): one entry each
            tids, values = list(tids), list(values)
            for word, count in counts.items():
                if raw[word] == -1:
                    extra = self.tids_of(self.multi[word])
                    tids.extend(extra)
                    values.extend([count] * len(extra))
            values = [c for t, c in zip(tids, values) if t != -1]
            tids = [t for t in tids if t != -1]
        return tids, values

    def _learn(self, words: Iterable[bytes]) -> None:
        """Map the raw words not seen yet to their term ids (new terms in one `tids_of` call)."""
        raw = self.raw
        singles = []
        firsts = []
        new = sorted(set(words).difference(raw))
        for word, tokens in zip(new, raw_words_tokens(new)):  # (stemmed at once, the tokenizer's caches untouched)
            if len(tokens) == 1:
                singles.append(word)
                firsts.append(tokens[0])
            else:
                raw[word] = -1 if tokens else 0
                if tokens:
                    self.multi[word] = tokens
        for word, tid in zip(singles, self.tids_of(firsts)):
            raw[word] = tid

    def read(self, note: Note, full: bool) -> tuple[_Doc, _Phrases, list[int], tuple[int, ...], Sequence[int], Sequence[int]]:
        """The note read: its phrases (kinds, texts, term ids); its short fields' tokens (term ids), one
        entry per occurrence, field after field (title, aliases, slug, answers, labels, headings), and the
        number in each field (BM25F: a token's weighted frequency is the sum of its entries' field
        weights; the weights are multiples of 0.5, so twice the sum is an exact integer); and its body
        counts (see `body`). The caller sums the entries per term (in C).

        A build reads 10k notes and 200k short strings: list-level operations, no call per string."""
        if full:
            title, slug = note.title, note.slug or ""
            aliases, answers, domains, tags = note.aliases, note.answers, note.domains, note.tags
        else:
            title, slug, aliases, answers, domains, tags = note.stem, "", [], [], [], []
        headings = _headings(note)
        # Fields in BM25F order: title, aliases, slug, answers, domains + tags, headings.
        # (a title, an alias or a sample question may hold a link, as a body does)
        title, *rest = _for_visitors(self.redact, note.path, [title, *aliases, *answers])
        aliases, answers = rest[: len(aliases)], rest[len(aliases) :]
        texts = [title, *aliases, slug, *answers, *domains, *tags, *headings]
        found: list[tuple[int, ...] | None] = list(map(self.short.get, texts))
        a = 1 + len(aliases)  # the slug's place
        b = a + 1 + len(answers)  # the labels' start
        c = b + len(domains) + len(tags)  # the headings' start
        if None in found:
            # Only labels and headings are kept: they recur from note to note, where titles, slugs, sample
            # questions and most aliases are one of a kind (memory).
            found = self.phrases(texts, found, b)
        occ = found
        repeats = self.repeats
        if repeats and not repeats.keys().isdisjoint(texts):
            occ = [repeats.get(x, f) for x, f in zip(texts, found)]
        sizes = list(map(len, occ))  # type: ignore[arg-type]
        fm = list(chain.from_iterable(occ))  # type: ignore[arg-type]
        # the lead paragraph: what the note says it is about, in its own words (read from the visitor's body)
        body = _visitor_body(note, self.redact)
        lead = _lead(body)
        # (as the short texts, in bulk: `phrase` would fill the tokenizer's caches with the vault's lead words)
        lead_ids = list(self.phrases([lead], [None], 1)[0]) if lead else []
        if lead_ids and not set(found[0] or ()).intersection(lead_ids):
            lead_ids = []  # a first paragraph that does not name the note's subject is no definition of it
        field_sizes = (sizes[0], sum(sizes[1:a]), sizes[a], sum(sizes[a + 1 : b]), sum(sizes[b:c]), sum(sizes[c:]), len(lead_ids))
        fm = fm + lead_ids
        # Phrases in their order (title, slug, aliases, answers, domains, tags), a (kind, tokens) pair
        # once (`push swap`, `push-swap`, `push_swap`: one alias); the slug only when it is not the title.
        places = [0, a, *range(1, a), *range(a + 1, c)]
        kinds = [_K_TITLE, _K_SLUG] + [_K_ALIAS] * (a - 1) + [_K_ANSWER] * len(answers) + [_K_DOMAIN] * len(domains) + [_K_TAG] * len(tags)
        if not slug or found[a] == found[0]:
            del places[1], kinds[1]
        first: dict[tuple[int, tuple[int, ...]], int] = {}
        for kind, i in zip(kinds, places):
            tids = found[i]
            if tids:
                first.setdefault((kind, tids), i)  # type: ignore[arg-type]
        p_kinds = [k for k, _t in first]
        p_tids = [t for _k, t in first]
        p_texts = list(map(texts.__getitem__, first.values()))
        body_tids, body_counts = self.body(body)
        doc = _Doc(
            note=note,
            id=note_id(note),
            full=full,
            priority=note.priority if full else None,
            is_moc=note.is_moc if full else False,
        )
        return doc, (p_kinds, p_texts, p_tids), fm, field_sizes, body_tids, body_counts


def _name_keys(note: Note) -> tuple[str, ...]:
    """The names by which the vault tells notes apart when it gives them ids (file name, path without
    `.md`, slug, the id itself), case-folded: notes that share none cannot change each other's id (a
    superset of the vault's own groups: grasbot/vault.py, `_id_neighbours`)."""
    path = note.path
    base = path[:-3] if path.lower().endswith(".md") else path
    slug = note.slug
    names = [base, base.rsplit("/", 1)[-1], (slug or "").strip(), note.id or ""]
    return tuple(sorted({name_key_fast(name) for name in names if name}))


class _Names:
    """Every note of the vault (indexed or not) by name key: what an update looks at for the ids the vault
    changed beside the notes it re-read, instead of every note."""

    __slots__ = ("keys_of", "paths_of")

    def __init__(self, notes: Mapping[str, Note]) -> None:
        self.keys_of: dict[str, tuple[str, ...]] = {}
        self.paths_of: dict[str, list[str]] = {}
        for path, note in notes.items():
            self._add(path, note)

    def _add(self, path: str, note: Note) -> None:
        keys = self.keys_of[path] = _name_keys(note)
        for key in keys:
            self.paths_of.setdefault(key, []).append(path)

    def _drop(self, path: str) -> None:
        for key in self.keys_of.pop(path, ()):
            paths = self.paths_of[key]
            paths.remove(path)
            if not paths:
                del self.paths_of[key]

    def around(self, paths: Iterable[str], notes: Mapping[str, Note]) -> set[str]:
        """`paths` and the notes sharing a name key with them (as they were and as they are now), two
        steps out: the vault renames a note's namesakes and the namesakes of those."""
        found = set(paths)
        fresh = found
        for _step in range(3):
            keys: set[str] = set()
            for path in fresh:
                keys.update(self.keys_of.get(path, ()))
                note = notes.get(path)
                if note is not None:
                    keys.update(_name_keys(note))
            fresh = set(chain.from_iterable(self.paths_of.get(key, ()) for key in keys)) - found
            if not fresh:
                break
            found |= fresh
        return found

    def refresh(self, paths: Iterable[str], notes: Mapping[str, Note]) -> None:
        """Record the name keys of `paths` as they now are (gone when the note is)."""
        for path in paths:
            self._drop(path)
            note = notes.get(path)
            if note is not None:
                self._add(path, note)


class _Stale(Exception):
    """A note held by the index no longer reads as it did when indexed (changed in place): rebuild."""


#: Notes whose (term, note) entries are summed in one batch while building (bounds the transient arrays;
#: a slot within a batch is stored on 2 bytes).
_BUILD_BATCH = 512
assert _BUILD_BATCH <= 1 << 16
#: One batch of notes' (term, note) pairs, sorted by term then note (`_sum_pairs`): per term id, its number
#: of pairs (uint16); per pair, its slot in the batch (uint16) and its body count (`_narrow_count`); the
#: pairs whose short-field weighted frequency is not 0 (int32) and those frequencies (`_narrow`).
_Batch = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


# -- the index ---------------------------------------------------------------------------------------


def _compact(arrays: list[np.ndarray], lists: tuple[list[int], ...]) -> list[np.ndarray]:
    """Phrase kinds, lengths, tokens, groups and counts per note appended to their compact arrays
    (`_append`: no concatenation at the end); the lists emptied."""
    out = [_append(array, np.array(values, dtype=array.dtype)) for array, values in zip(arrays, lists)]
    for values in lists:
        values.clear()
    return out


#: Twice the field weights of the short fields, in the order of `_Reader.read`'s field sizes.
_TW_ORDER = np.array([_TWICE[name] for name in _FIELDS if name != "body"], dtype=np.int64)


def _sum_pairs(fm_tid: list[int], fm_sizes: list[int], b_tid: list[int], b_count: list[int], b_n: list[int]) -> _Batch:
    """One batch of notes' (term, note) entries summed per pair, sorted by term then note (`_Batch`):
    short-field weighted frequencies are twice-weights summed, then halved (exact). Stop words (term id 0)
    are dropped. `fm_sizes`: per note, its number of tokens in each short field."""
    count = len(b_n)
    width = max(count, 1)
    local = np.arange(count, dtype=np.uint64)
    nf = len(fm_tid)
    sizes = np.array(fm_sizes, dtype=np.int64).reshape(count, len(_TW_ORDER))
    t = np.array(fm_tid + b_tid, dtype=np.uint64)
    s = np.concatenate((np.repeat(local, sizes.sum(axis=1)), np.repeat(local, np.array(b_n, dtype=np.int64))))
    twice = np.repeat(np.tile(_TW_ORDER, count), sizes.ravel())
    counts = np.array(b_count, dtype=np.int64)
    keep = t != 0
    # Fast path: pair, body count and twice-weight packed in one integer, sorted in place (no argsort,
    # no gathers), the runs of a pair summed at once. Each field is wide enough for its batch-wide sum,
    # so a sum never carries into the next field; a vault beyond those bounds takes the general path.
    twice_bits = max(int(twice.sum()), 1).bit_length() if twice.size else 1
    count_bits = max(int(counts.sum()), 1).bit_length() if counts.size else 1
    pair_bits = (int(t.max()) * width + width).bit_length() if t.size else 1
    if pair_bits + count_bits + twice_bits <= 64:
        packed = (t * np.uint64(width) + s) << np.uint64(count_bits + twice_bits)
        del t, s
        packed[:nf] |= twice.astype(np.uint64)
        packed[nf:] |= counts.astype(np.uint64) << np.uint64(twice_bits)
        packed = packed[keep]
        packed.sort()
        pair = packed >> np.uint64(count_bits + twice_bits)
        first = np.ones(pair.size, dtype=bool)
        np.not_equal(pair[1:], pair[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        pair = pair[starts]
        if starts.size:
            sums = np.add.reduceat(packed & np.uint64((1 << (count_bits + twice_bits)) - 1), starts)
        else:
            sums = np.zeros(0, dtype=np.uint64)
        del packed
        fm_sum = (sums & np.uint64((1 << twice_bits) - 1)).astype(np.float64) * 0.5
        body_sum = (sums >> np.uint64(twice_bits)).astype(np.float64)
    else:
        fm = np.zeros(t.size)
        fm[:nf] = twice
        body = np.zeros(t.size)
        body[nf:] = counts
        t, s, fm, body = t[keep], s[keep], fm[keep], body[keep]
        key = t * np.uint64(width) + s
        del t, s
        order = np.argsort(key)  # the sums are exact: their order does not matter
        key = key[order]
        first = np.ones(key.size, dtype=bool)
        np.not_equal(key[1:], key[:-1], out=first[1:])
        starts = np.flatnonzero(first)
        if starts.size:
            fm_sum = np.add.reduceat(fm[order], starts) * 0.5
            body_sum = np.add.reduceat(body[order], starts)
        else:
            fm_sum = body_sum = np.zeros(0)
        pair = key[starts]
    w = np.uint64(width)
    # The batches wait for the placement, so they are a peak of memory: a count of pairs per term instead
    # of a term id per pair (a term's pairs are one run), and the short fields' values only where they are
    # not 0 (most pairs are body words only).
    per_term = np.bincount((pair // w).astype(np.int64)).astype(np.uint16)  # (at most _BUILD_BATCH each)
    fm_at = np.flatnonzero(fm_sum).astype(np.int32)
    return per_term, (pair % w).astype(np.uint16), fm_at, _narrow(fm_sum[fm_at]), _narrow_count(body_sum)


#: Every multiple of 0.5 up to this is exact in a float16 (11 significant bits): short-field weighted
#: frequencies and body counts are stored on 2 bytes when they fit (memory), else on 4 (float32: exact).
_F16_EXACT = 1024.0
_U16_SLOTS = 1 << 16  # slots stored on 2 bytes (uint16) while a vault has at most this many


def _narrow(values: np.ndarray) -> np.ndarray:
    """Exact sums (multiples of 0.5) on 2 bytes when every one fits, else on 4."""
    if not values.size or float(values.max()) <= _F16_EXACT:
        return values.astype(np.float16)
    return values.astype(np.float32)


def _append(column: np.ndarray, values: np.ndarray) -> np.ndarray:
    """`column` (an array that owns its data, with no views) with `values` appended, in place: a realloc,
    so that a growing column is never held twice (as by a concatenation); widened first if `values` need it."""
    start = column.size
    if not np.can_cast(values.dtype, column.dtype):
        column = column.astype(np.result_type(column, values))
    column.resize(start + values.size, refcheck=False)
    column[start:] = values
    return column


def _narrow_count(values: np.ndarray) -> np.ndarray:
    """Exact counts (integers) on 1 byte when every one fits (body counts of a batch, almost always), else
    as `_narrow`."""
    if not values.size or float(values.max()) <= 255:
        return values.astype(np.uint8)
    return _narrow(values)


def _fits(docs: np.ndarray, fms: np.ndarray, bodies: np.ndarray, slot: int, fm_value: float, count: float) -> bool:
    """Whether a posting (slot, fm_value, count) is stored exactly in these arrays' dtypes."""
    if docs.dtype == np.uint16 and slot >= _U16_SLOTS:
        return False
    if fms.dtype == np.float16 and fm_value > _F16_EXACT:
        return False
    return not (bodies.dtype == np.float16 and count > _F16_EXACT)


def _widen(docs: np.ndarray, fms: np.ndarray, bodies: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A copy of a term's postings on 4 bytes per value."""
    return docs.astype(np.int32), fms.astype(np.float32), bodies.astype(np.float32)


def _find(docs: np.ndarray, slot: int) -> int:
    """Where `slot` is or would go in a term's sorted note slots."""
    if docs.dtype == np.uint16 and slot >= _U16_SLOTS:
        return int(docs.size)
    return int(docs.searchsorted(docs.dtype.type(slot)))  # (same dtype: no conversion of the array)


def _csr(keys: np.ndarray, size: int) -> np.ndarray:
    """Offsets such that the entries of key k are [offsets[k], offsets[k+1]) once sorted by key."""
    offsets = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=size), out=offsets[1:])
    return offsets


class _Grow:
    """A 1-d numpy array that grows in place (amortised doubling); `view()` is the part in use."""

    __slots__ = ("a", "n")

    def __init__(self, values: Any, dtype: Any) -> None:
        self.a = np.asarray(values, dtype=dtype)  # (an array of that dtype is taken over, not copied)
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
_EMPTY_B = np.zeros(0, dtype=bool)
_FULL_BY_KIND = np.zeros(len(_KINDS))
_PARTIAL_BY_KIND = np.zeros(len(_KINDS))
for _kind, _points in ((_K_TITLE, TITLE_POINTS), (_K_SLUG, SLUG_POINTS), (_K_ALIAS, ALIAS_POINTS), (_K_DOMAIN, DOMAIN_POINTS), (_K_TAG, TAG_POINTS)):
    _FULL_BY_KIND[_kind] = _points
_PARTIAL_BY_KIND[_K_TITLE] = TITLE_PARTIAL_POINTS
_PARTIAL_BY_KIND_F16 = _PARTIAL_BY_KIND.astype(np.float16)
assert (_PARTIAL_BY_KIND_F16 == _PARTIAL_BY_KIND).all()


def _without(a: np.ndarray, at: int) -> np.ndarray:
    return np.concatenate((a[:at], a[at + 1 :]))


def _with(a: np.ndarray, at: int, value: float) -> np.ndarray:
    out = np.empty(a.size + 1, dtype=a.dtype)
    out[:at] = a[:at]
    out[at] = value
    out[at + 1 :] = a[at:]
    return out


def _bonus_points(doc: _Doc) -> float:
    """The points a note with lexical evidence gets for its `priority` and for being a MOC."""
    bonus = 0.0
    if doc.priority is not None:
        bonus += (max(1, min(10, doc.priority)) - 5) * PRIORITY_STEP
    if doc.is_moc:
        bonus += MOC_POINTS
    return bonus


def _outgoing_of(vault: IndexedVault) -> Callable[[str], Sequence[str]] | None:
    """How to ask `vault` for a note's outgoing links: the tuples it keeps when it gives them
    (`Vault.outgoing_paths`: held, not copied), else `outgoing`; None for a vault without a link graph."""
    return getattr(vault, "outgoing_paths", None) or getattr(vault, "outgoing", None)


def _outgoing(outgoing: Any, path: str) -> tuple[str, ...]:
    """The note's outgoing link targets; a vault without a link graph: none (no expansion, no crash)."""
    try:
        found = outgoing(path) if outgoing else ()
        return found if found.__class__ is tuple else tuple(found)
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
    replacements for the terms an update touched (`_p_over`), on 2 bytes per value while every value fits
    exactly (uint16 slots up to 65,536 notes, float16 halves and counts up to `_F16_EXACT`), else on 4; an
    update that brings a value too wide widens that term's postings (`_fits`). Frontmatter phrases (title, slug, aliases,
    sample questions, labels) are numbered append-only, in arrays (kind, owner, tokens, alias group; only
    their texts are Python objects), with their own term -> phrases postings (`_q_off`, `_q_phrase`,
    `_q_over`); a changed note's phrases are dropped from those postings and new ones appended.

    Memory. Nothing per note but its `_Doc` and a few array cells: no token lists, no per-note term list
    (to take a note out, an update reads it again from the very `Note` object it indexed, which the vault
    replaces and never changes; a note found changed in place makes the update rebuild). A build reads
    notes through a `_Reader` whose caches (raw body word -> term id, short text -> term ids) die with
    the build, and sums (term, note) entries batch by batch (`_sum_pairs`), so its transient arrays stay
    a fraction of the postings'.

    Updates are proportional to the change: the notes re-read, the notes relinked, and the notes sharing
    a name with a changed one (`_Names`, built by the first update), whose ids the vault may have changed.
    """

    def __init__(self, config: SearchConfig | None = None) -> None:
        self.config = config or SearchConfig()
        self._redact: Callable[[str, str], str] | None = None  # the vault's `visitor_text` (see `_Reader`)
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
        self._hub = _Grow([], bool)  # per slot: a MOC (its own names weigh `HUB_NAME_SHARE`)
        self._p_off = np.zeros(2, dtype=np.int64)
        self._p_doc = _EMPTY_I
        self._p_fm = _EMPTY_F
        self._p_body = _EMPTY_F
        self._p_over: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._nterms = _Grow([], np.int32)  # distinct terms per slot (checks an update's re-reading)
        self._names: _Names | None = None  # built by the first update
        self._ph_text: list[str | None] = []  # phrase id -> its text (None once its note left)
        self._ph_doc = _Grow([], np.int32)
        self._ph_kind = _Grow([], np.int8)
        self._ph_len = _Grow([], np.int32)
        self._ph_group = _Grow([], np.int32)  # alias group (same token set), -1 for other kinds
        self._ph_tok = _Grow([], np.int32)  # the phrases' tokens, phrase after phrase ...
        self._ph_tok_of = _Grow([], np.int32)  # ... and the phrase of each
        self._ph_beg = _Grow([], np.int64)  # slot -> its phrases [beg, end)
        self._ph_end = _Grow([], np.int64)
        # alias token ids -> its group; None once a build is done (`_alias_groups` rebuilds it for an update)
        self._groups: dict[tuple[int, ...], int] | None = {}
        self._group_count = _Grow([], np.int64)  # notes holding each alias: an alias held by k notes counts 1/k
        self._q_off = np.zeros(2, dtype=np.int64)
        self._q_phrase = _EMPTY_I
        self._q_over: dict[int, np.ndarray] = {}
        self._speller: _spelling.Speller | None = None  # built on the first unknown question word
        self._stale = True  # derived arrays (IDF, norms, phrase weights, rank) need recomputing
        self._order_dirty = True
        self._wcache: dict[int, tuple[Any, ...]] = {}  # term -> its per-question record, until a change
        self._floor: float | None = None  # the least priority/MOC bonus of any note, until a change
        self._nb_cache: dict[int, list[int]] = {}
        self._corrections: dict[tuple[str, str], _spelling.Correction | None] = {}  # reset on change
        self._families: dict[str, list[str]] = {}  # question token -> its family in the vocabulary, until a change

    # -- building ------------------------------------------------------------------------------------
    @classmethod
    def build(cls, vault: IndexedVault, config: SearchConfig | None = None) -> SearchIndex:
        index = cls(config)
        index._rebuild(vault)
        return index

    def update(self, vault: IndexedVault, change: LinkChange) -> None:
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
            self._update(vault, change)
        except _Stale:  # a note object was changed in place since it was indexed: start again from the vault
            self._rebuild_now(vault)
        finally:
            if enabled:
                gc.enable()
        self._stale = True

    def _update(self, vault: IndexedVault, change: LinkChange) -> None:
        notes = vault.notes
        self._redact = getattr(vault, "visitor_text", None)
        flipped: list[str] = []  # notes that became hidden or visible: the links to them are read anew
        for path in sorted(change.changed):
            was = path in self._slot_of
            self._set_note(vault, path, notes.get(path))
            if was != (path in self._slot_of) and path in notes:
                flipped.append(path)
        reread: set[str] = set()
        incoming = getattr(vault, "incoming", None)
        if flipped and incoming is not None:
            for path in flipped:
                reread.update(incoming(path))
        hidden = getattr(vault, "hidden_paths", None)
        if change.relinked and hidden is not None and hidden():
            # a link that now resolves elsewhere may now reach a hidden note, or no longer reach one
            reread.update(change.relinked)
        for path in sorted(reread - change.changed):
            if path in self._slot_of and path in notes:
                self._set_note(vault, path, notes[path])
        outgoing = _outgoing_of(vault)
        for path in sorted(change.relinked):
            slot = self._slot_of.get(path)
            if slot is not None:
                self._docs[slot].out = _outgoing(outgoing, path)  # type: ignore[union-attr]
        # Beside the notes it re-read, the vault may give other notes another id (a same-named note came
        # or left). Only notes sharing a name with a changed one can be concerned (`_Names`): they are
        # compared one by one. The first update has no name index yet: it compares every note, in
        # C-level passes, then builds it from the vault as it now is.
        names = self._names
        if names is None:
            paths = list(self._slot_of)
            docs = list(map(self._docs.__getitem__, self._slot_of.values()))
            now = list(map(notes.get, paths))
            differ = set(compress(range(len(paths)), map(is_not, now, map(_NOTE, docs))))
            ids_now = [note.id if note is not None else "" for note in now] if differ else list(map(_ID, now))
            differ.update(compress(range(len(paths)), map(ne, ids_now, map(_ID, docs))))
            around = [paths[i] for i in differ]
        else:
            around = names.around(change.changed | change.relinked, notes)
        for path in sorted(around):
            slot = self._slot_of.get(path)
            note = notes.get(path)
            if slot is None:
                continue
            doc = self._docs[slot]
            assert doc is not None
            if note is doc.note:
                new_id = note_id(note)
                if new_id != doc.id:
                    doc.id = new_id
                    self._order_dirty = True
            elif note is None or _content_key(doc.note) != _content_key(note) or doc.note.text != note.text:
                self._set_note(vault, path, note)
            else:
                doc.note = note
                if note_id(note) != doc.id:
                    doc.id = note_id(note)
                    self._order_dirty = True
        if names is None:
            self._names = _Names(notes)
        else:
            names.refresh(around, notes)

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

    def notes(self) -> list[Note]:
        """The candidate notes (public, readable), in id order: what a filter may restrict retrieval to
        (grasbot/search/filters.py), never a note the index would not return."""
        self._refresh()
        live = [s for s, d in enumerate(self._docs) if d is not None]
        live.sort(key=self._rank.__getitem__)
        return [self._docs[s].note for s in live]  # type: ignore[union-attr]

    def _rebuild(self, vault: IndexedVault) -> None:
        # Building allocates many small objects and frees few: the cyclic GC would rescan the vault's
        # large heap again and again for nothing (superlinear on 50k notes).
        enabled = gc.isenabled()
        gc.disable()
        try:
            self._rebuild_now(vault)
        finally:
            if enabled:
                gc.enable()

    def _tids(self, terms: Sequence[str]) -> list[int]:
        """Term ids of `terms` (new terms get the next ids, in sorted order), by one C-level multi-get."""
        if not terms:
            return []
        vocab = self._vocab
        try:  # most calls: every term known (no set built)
            return list(map(vocab.__getitem__, terms))
        except KeyError:
            pass
        missing = set(terms).difference(vocab)
        if missing:
            for term in sorted(missing):
                tid = len(self._terms)
                vocab[term] = tid
                self._terms.append(term)
        if len(terms) == 1:
            return [vocab[terms[0]]]
        return list(itemgetter(*terms)(vocab))

    def _rebuild_now(self, vault: IndexedVault) -> None:
        self._reset()
        # Notes take slots in path order (the id order is `_rank`, computed below). A note's (term, note)
        # entries go into compact C arrays as it is read; every `_BUILD_BATCH` notes one numpy sort sums
        # them per pair (exact sums) and keeps only the pairs, so neither per-note token lists nor the raw
        # entries of the whole vault pile up (peak memory). The pairs are then placed term by term (a
        # counting sort: each term's postings stay in slot order).
        # (Plain lists while reading: list.extend copies pointers, array.extend converts every int.)
        docs: list[_Doc] = []
        # The batches' columns (`_Batch`), each appended to one array grown in place (`_append`), and per
        # batch its numbers of terms, pairs and short-field values.
        kept = [np.zeros(0, dtype=dtype) for dtype in (np.uint16, np.uint16, np.int32, np.float16, np.uint8)]
        shapes: list[tuple[int, int, int]] = []
        fm_tid: list[int] = []
        fm_sizes: list[int] = []  # per note, its tokens in each short field (BM25F order)
        b_tid: list[int] = []
        b_count: list[int] = []
        b_n: list[int] = []
        ph_text: list[str | None] = []
        ph_kind: list[int] = []
        ph_len: list[int] = []
        ph_tok: list[int] = []
        ph_count: list[int] = []
        ph_group: list[int] = []
        ph_lists = (ph_kind, ph_len, ph_tok, ph_group, ph_count)
        ph_arrays = [np.zeros(0, dtype=dtype) for dtype in (np.int8, np.int32, np.int32, np.int32, np.int32)]  # (`_compact`)
        groups: dict[tuple[int, ...], int] = {}
        setgroup = groups.setdefault
        self._redact = getattr(vault, "visitor_text", None)
        read = _Reader(self._tids, self._terms, redact=self._redact).read
        batch_start = 0
        notes = vault.notes
        for path in sorted(notes):
            note = notes[path]
            mode = _indexable(note)
            if mode is False:
                continue
            doc, phrases, fm, sizes, body_tids, body_counts = read(note, mode is True)
            docs.append(doc)
            fm_tid += fm
            fm_sizes += sizes
            b_tid += body_tids
            b_count += body_counts
            b_n.append(len(body_tids))
            p_kinds, p_texts, p_tids = phrases
            ph_text += p_texts
            ph_kind += p_kinds
            ph_len += map(len, p_tids)
            ph_tok += chain.from_iterable(p_tids)
            ph_group += [setgroup(t, len(groups)) if k == _K_ALIAS else -1 for k, t in zip(p_kinds, p_tids)]
            ph_count.append(len(p_kinds))
            if len(docs) - batch_start >= _BUILD_BATCH:
                batch = _sum_pairs(fm_tid, fm_sizes, b_tid, b_count, b_n)
                kept = [_append(column, part) for column, part in zip(kept, batch)]
                shapes.append((batch[0].size, batch[1].size, batch[2].size))
                del batch
                fm_tid, fm_sizes, b_tid, b_count, b_n = [], [], [], [], []
                ph_arrays = _compact(ph_arrays, ph_lists)
                batch_start = len(docs)
        if len(docs) > batch_start:
            batch = _sum_pairs(fm_tid, fm_sizes, b_tid, b_count, b_n)
            kept = [_append(column, part) for column, part in zip(kept, batch)]
            shapes.append((batch[0].size, batch[1].size, batch[2].size))
            del batch
        ph_arrays = _compact(ph_arrays, ph_lists)
        del fm_tid, fm_sizes, b_tid, b_count, b_n, read  # (the reader's caches with it)
        s_count = len(docs)
        self._docs = list(docs)
        self._slot_of = {d.note.path: i for i, d in enumerate(docs)}
        self._n = s_count
        v = len(self._terms)
        df = np.zeros(v, dtype=np.int64)
        start = 0
        for n_terms, _pairs, _fms in shapes:  # (a batch counts the terms known when it was summed)
            df[:n_terms] += kept[0][start : start + n_terms]
            start += n_terms
        p_off = np.zeros(v + 1, dtype=np.int64)
        np.cumsum(df, out=p_off[1:])
        total = int(p_off[-1])
        # The pairs go to their place term by term: each term's pairs of a batch are one run (sorted by
        # term then slot), after those of the earlier batches. One output array at a time, each column of
        # the batches freed once placed, so the batches and the postings are never all in memory at once.
        lens = np.zeros(s_count)
        nterms = np.zeros(s_count, dtype=np.int64)
        placed: dict[int, np.ndarray] = {}
        for column in (4, 1, 3):  # body (the slots still there: lengths per note), slot, short fields
            if column == 1:
                out = np.empty(total, dtype=np.uint16 if s_count <= _U16_SLOTS else np.int32)
            else:  # (exact: multiples of 0.5 and counts, float16 when every batch's fit; short fields sparse)
                out = np.zeros(total, dtype=np.result_type(np.float16, kept[column]))
            cursor = p_off[:-1].copy()
            t = p = f = 0  # the batch's start in the per-term counts, the pairs, the short-field values
            for b, (n_terms, n_pairs, n_fms) in enumerate(shapes):
                counts = kept[0][t : t + n_terms].astype(np.int64)
                # A pair's place: its term's cursor, plus its rank among the term's pairs of the batch.
                at = np.repeat(cursor[:n_terms] - (np.cumsum(counts) - counts), counts)
                at += np.arange(n_pairs)
                cursor[:n_terms] += counts
                if column == 1:  # slots are stored within the batch (2 bytes)
                    out[at] = kept[1][p : p + n_pairs].astype(np.int32) + np.int32(b * _BUILD_BATCH)
                elif column == 3:
                    out[at[kept[2][f : f + n_fms]]] = kept[3][f : f + n_fms]
                else:  # per note: its body length and its number of terms
                    part = kept[4][p : p + n_pairs]
                    slots_b = kept[1][p : p + n_pairs].astype(np.int64)
                    offset = b * _BUILD_BATCH
                    lens[offset : offset + _BUILD_BATCH] = np.bincount(slots_b, weights=part, minlength=_BUILD_BATCH)[: s_count - offset]
                    nterms[offset : offset + _BUILD_BATCH] = np.bincount(slots_b, minlength=_BUILD_BATCH)[: s_count - offset]
                    out[at] = part
                    del part, slots_b
                del at, counts
                t, p, f = t + n_terms, p + n_pairs, f + n_fms
            placed[column] = out
            kept[column] = _EMPTY_I
            del out, cursor
        del kept
        p_fm, p_body, p_doc = placed[3], placed[4], placed[1]
        del placed
        self._p_off = p_off
        self._p_doc = p_doc
        self._p_fm = p_fm
        self._p_body = p_body
        self._dfg = _Grow(df, np.int64)
        self._lens = _Grow(lens, np.float64)
        self._total_len = float(lens.sum())
        self._nterms = _Grow(nterms, np.int32)

        # (The id order now, while the batches' freed memory can hold its transient arrays: peak memory.)
        self._rank_notes()

        # Phrases and their term index.
        ph_kind, ph_len, ph_tok, ph_group, ph_count = ph_arrays
        del ph_arrays, ph_lists
        m = len(ph_text)
        sizes = ph_count.astype(np.int64)
        slots = np.arange(s_count, dtype=np.int32)
        self._ph_text = ph_text
        self._ph_doc = _Grow(np.repeat(slots, sizes), np.int32)
        ends = np.cumsum(sizes, dtype=np.int64)
        self._ph_end = _Grow(ends, np.int64)
        self._ph_beg = _Grow(ends - sizes, np.int64)
        self._ph_kind = _Grow(ph_kind, np.int8)
        lengths = ph_len
        self._ph_len = _Grow(lengths, np.int32)
        qt = ph_tok  # (int32)
        self._ph_tok = _Grow(qt, np.int32)
        qp = np.repeat(np.arange(m, dtype=np.int32), lengths)
        self._ph_tok_of = _Grow(qp, np.int32)
        g = ph_group
        self._ph_group = _Grow(g, np.int32)
        self._group_count = _Grow(np.bincount(g[g >= 0], minlength=len(groups)), np.int64)
        self._groups = None  # (its keys are in the arrays: only an update needs it, `_alias_groups`)
        del groups
        # Term -> its phrases, ascending: tokens are listed phrase after phrase and a phrase's tokens are
        # distinct, so a stable sort by term alone orders each term's phrases.
        self._q_off = _csr(qt, len(self._terms) + 1)
        self._q_phrase = qp[np.argsort(qt, kind="stable")]
        del qp, qt
        if len(self._terms) > v:  # a phrase token that is in no field (cannot happen today): no posting
            self._dfg.resize(len(self._terms))

        self._bonus = _Grow([_bonus_points(d) for d in docs], np.float64)
        self._hub = _Grow([d.is_moc for d in docs], bool)
        outgoing = _outgoing_of(vault)
        for d in docs:
            d.out = _outgoing(outgoing, d.note.path)
        forget = getattr(vault, "forget_lookups", None)
        if forget is not None:  # (what reading every note through `visitor_text` filled: `Vault.forget_lookups`)
            forget()
        self._stale = True
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

    def _old_tids(self, slot: int) -> list[int]:
        """The term ids of the note in `slot`, read again from the note object it was indexed from (the
        index keeps no per-note term list: memory). Raises `_Stale` if it no longer reads the same."""
        doc = self._docs[slot]
        assert doc is not None
        stats = self._parse(doc.note, doc.full)[2]
        length = sum(count for _fm, count in stats.values())
        if len(stats) != int(self._nterms.a[slot]) or float(length) != float(self._lens.a[slot]):
            raise _Stale(doc.note.path)
        return sorted(stats)

    def _set_note(self, vault: IndexedVault, path: str, note: Note | None) -> None:
        """Take the note at `path` out of the index (if it was in) and put its new version in (if any).
        An edited note keeps its slot: the terms it keeps are updated in place, the others removed or
        inserted."""
        old = self._slot_of.pop(path, None)
        mode = _indexable(note) if note is not None else False
        parsed = self._parse(note, mode is True) if mode is not False else None  # type: ignore[arg-type]
        old_id = None
        if old is not None:
            old_id = self._docs[old].id  # type: ignore[union-attr]
            self._remove(old, parsed[2] if parsed is not None else {})
        if parsed is not None:
            self._place(parsed[0], parsed[1], parsed[2], getattr(vault, "outgoing", None), old)
        if (old is not None or parsed is not None) and (old is None or parsed is None or parsed[0].id != old_id):
            self._order_dirty = True  # an edit that keeps the note's id keeps the id order

    def _parse(self, note: Note, full: bool) -> tuple[_Doc, _Phrases, dict[int, list[float]]]:
        """The note read: its doc, its phrases, and per term id [weighted short-field frequency, body
        count] (exact sums)."""
        doc, phrases, fm, sizes, body_tids, body_counts = _Reader(
            self._tids, self._terms, bulk=False, redact=self._redact
        ).read(note, full)
        fm_twice = [w for w, size in zip(_TW_ORDER.tolist(), sizes) for _ in range(size)]
        stats: dict[int, list[float]] = {}
        for tid, twice in zip(fm, fm_twice):
            entry = stats.get(tid)
            if entry is None:
                stats[tid] = [twice * 0.5, 0.0]
            else:
                entry[0] += twice * 0.5
        for tid, count in zip(body_tids, body_counts):
            if tid:
                entry = stats.get(tid)
                if entry is None:
                    stats[tid] = [0.0, float(count)]
                else:
                    entry[1] += count
        return doc, phrases, stats

    def _remove(self, slot: int, keep: dict[int, list[float]]) -> None:
        """Free `slot`; the postings of the terms in `keep` stay (the caller updates them in place)."""
        doc = self._docs[slot]
        assert doc is not None
        old_tids = self._old_tids(slot)  # before any change: raises _Stale if the note cannot be re-read
        # Its phrases first: out of the phrase postings (a note's phrases are one run of phrase ids, and
        # their tokens one run of `_ph_tok`).
        beg, end = int(self._ph_beg.a[slot]), int(self._ph_end.a[slot])
        if end > beg:
            # (bounds of the arrays' own dtype: a list of Python ints would make numpy copy the array)
            bounds = np.array([beg, end], dtype=np.int32)
            lo, hi = np.searchsorted(self._ph_tok_of.view(), bounds).tolist()
            for tid in sorted(set(self._ph_tok.a[lo:hi].tolist())):
                ph = self._phrase_postings(tid)
                a, b = np.searchsorted(ph, bounds).tolist()
                if b > a:
                    self._q_over[tid] = np.concatenate([ph[:a], ph[b:]])
            for pid in range(beg, end):
                group = int(self._ph_group.a[pid])
                if group >= 0:
                    self._group_count.a[group] -= 1
                self._ph_text[pid] = None
        df = self._dfg.a
        for tid in old_tids:
            if tid in keep:
                continue
            docs, fm, body = self._postings(tid)
            at = _find(docs, slot)
            if at >= docs.size or docs[at] != slot:
                raise _Stale(doc.note.path)
            self._p_over[tid] = (_without(docs, at), _without(fm, at), _without(body, at))
            df[tid] -= 1
            if df[tid] == 0:  # no note holds it any more: out of the vocabulary, as in a fresh build
                del self._vocab[self._terms[tid]]
        self._nterms.a[slot] = 0
        self._ph_beg.a[slot] = self._ph_end.a[slot] = 0
        self._total_len -= float(self._lens.a[slot])
        self._lens.a[slot] = 0.0
        self._bonus.a[slot] = 0.0
        self._hub.a[slot] = False
        self._docs[slot] = None
        self._free.append(slot)
        self._n -= 1

    def _place(self, doc: _Doc, phrases: _Phrases, stats: dict[int, list[float]], outgoing: Any, reuse: int | None) -> None:
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
            for arr in (self._lens, self._bonus, self._hub, self._ph_beg, self._ph_end, self._nterms):
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
            if not _fits(docs, fms, bodies, slot, fm_value, count):  # a value too wide for 2 bytes: 4
                docs, fms, bodies = _widen(docs, fms, bodies)
                self._p_over[tid] = (docs, fms, bodies)
            at = _find(docs, slot)
            if at < docs.size and docs[at] == slot:  # a term the note keeps: in place
                fms[at] = fm_value
                bodies[at] = count
            else:
                self._p_over[tid] = (_with(docs, at, slot), _with(fms, at, fm_value), _with(bodies, at, count))
                df[tid] += 1
        self._nterms.a[slot] = len(order)
        self._lens.a[slot] = length
        self._total_len += length
        self._bonus.a[slot] = _bonus_points(doc)
        self._hub.a[slot] = doc.is_moc
        # Its phrases, appended (phrase ids only grow, so appending keeps every phrase posting sorted).
        beg = len(self._ph_text)
        for kind, text, tokens in zip(*phrases):
            pid = len(self._ph_text)
            self._ph_text.append(text)
            tids = list(tokens)
            self._ph_tok.extend(tids)
            self._ph_tok_of.extend([pid] * len(tids))
            for tid in tids:
                self._q_over[tid] = np.append(self._phrase_postings(tid), np.int32(pid))
            group = -1
            if kind == _K_ALIAS:
                groups = self._alias_groups()
                group = groups.setdefault(tokens, len(groups))
                self._group_count.resize(len(groups))
                self._group_count.a[group] += 1
            self._ph_group.extend([group])
        self._ph_doc.extend([slot] * len(phrases[0]))
        self._ph_kind.extend(phrases[0])
        self._ph_len.extend([len(t) for t in phrases[2]])
        self._ph_beg.a[slot] = beg
        self._ph_end.a[slot] = len(self._ph_text)
        self._dfg.resize(len(self._terms))
        self._docs[slot] = doc
        self._slot_of[note.path] = slot
        self._n += 1

    def _alias_groups(self) -> dict[tuple[int, ...], int]:
        """Alias token ids (a phrase's distinct term ids, in order) -> its group: what the build numbered,
        read back from the phrase arrays on the first update (a build does not keep it: some MiB on 10k
        notes, that only an update that adds an alias needs). Every group a phrase ever had is there."""
        groups = self._groups
        if groups is None:
            groups = self._groups = {}
            group = self._ph_group.view()
            lengths = self._ph_len.view().astype(np.int64)
            starts = np.cumsum(lengths) - lengths
            tokens = self._ph_tok.view()
            for pid in np.flatnonzero(group >= 0).tolist():
                start = int(starts[pid])
                groups.setdefault(tuple(tokens[start : start + int(lengths[pid])].tolist()), int(group[pid]))
        return groups

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
        m = len(self._ph_text)
        lengths = self._ph_len.view()
        qt = self._ph_tok.view()
        qp = self._ph_tok_of.view()
        # A phrase's norm: the root of its tokens' squared IDFs, summed in token order (bincount). By runs
        # of phrases (a phrase's tokens are one run of `_ph_tok`, phrase ids ascending), so that the
        # per-token transient stays small: this runs last in a build, at its peak of memory.
        norms = np.empty(m)
        squares = np.square(self._idf)
        step = 1 << 15
        starts = np.searchsorted(qp, np.arange(0, m + step, step, dtype=qp.dtype)).tolist()  # (their tokens')
        for lo, first, end in zip(range(0, m, step), starts, starts[1:]):
            norms[lo : lo + step] = np.bincount(qp[first:end] - lo, weights=squares[qt[first:end]], minlength=min(step, m - lo))
        np.sqrt(norms, out=norms)
        self._ph_norm = np.maximum(norms, 1e-12, out=norms)
        kind = self._ph_kind.view()  # (int8: indexes the per-kind tables as it is)
        group = self._ph_group.view()
        # An alias held by k notes is worth 1/k (other phrases have no group: their points as they are).
        full = _FULL_BY_KIND[kind]
        alias = np.flatnonzero(group >= 0)
        if alias.size:
            full[alias] /= np.maximum(self._group_count.view()[group[alias]], 1)
        del alias
        # A hub (MOC) names a collection, not a subject: its title, slug and aliases (often the subjects of
        # the notes it gathers) must not outrank the note about the subject when that one matches too.
        hub = self._hub.view()
        if hub.any():  # (in place: no second array of every phrase at the build's peak)
            full[hub[self._ph_doc.view()] & (kind <= _K_ALIAS)] *= HUB_NAME_SHARE  # title, slug, alias
        self._ph_full = full
        self._ph_partial = _PARTIAL_BY_KIND_F16[kind]  # (0 or 5 points: exact on 2 bytes)
        # A word's rarity among the titles (its IDF over titles, over that of a word in no title): a part
        # of a title is a sign of the subject only when few titles share it ("Obsidian" in half the titles
        # says nothing of which page a question is about).
        # A title is live when it lies in its note's run (a note that left, or was re-read, has others).
        # (By runs of phrases, as the norms: the per-phrase transients stay small.)
        owner = self._ph_doc.view()
        live_title = np.empty(m, dtype=bool)
        for lo in range(0, m, step):
            pid = np.arange(lo, min(lo + step, m))
            at = owner[lo : lo + step]
            live_title[lo : lo + step] = (self._ph_beg.a[at] <= pid) & (pid < self._ph_end.a[at]) & (kind[lo : lo + step] == _K_TITLE)
        # Titles holding each term (a word twice in one title counts twice: rare, and not worth a sort).
        t_df = np.bincount(qt[live_title[qp]], minlength=v).astype(np.float64)
        titles = float(np.count_nonzero(live_title)) or 1.0
        self._title_rarity = np.log1p((np.maximum(titles - t_df, 0.0) + 0.5) / (t_df + 0.5)) / math.log1p((titles + 0.5) / 0.5)
        del owner, live_title, t_df
        # A title's own mass, its words by their rarity among titles (`TITLE_NAMED_SHARE`), in token order.
        weights = self._idf * self._title_rarity  # (per term: the same products as per token)
        rare = np.empty(m)
        for lo, first, end in zip(range(0, m, step), starts, starts[1:]):
            rare[lo : lo + step] = np.bincount(qp[first:end] - lo, weights=weights[qt[first:end]], minlength=min(step, m - lo))
        self._ph_rare = rare
        self._ph_answer = kind == _K_ANSWER
        self._ph_best_of = (kind == _K_ALIAS) | self._ph_answer
        self._ph_doc_view = self._ph_doc.view()
        self._ph_len_view = lengths
        self._bonus_view = self._bonus.view()
        if self._order_dirty:
            self._rank_notes()
        self._wcache = {}
        self._nb_cache: dict[int, list[int]] = {}
        self._corrections = {}
        self._families = {}
        self._speller = None  # the vocabulary may have changed: rebuilt on the next unknown word
        self._floor = None
        self._stale = False

    def _rank_notes(self) -> None:
        """Each slot's place in id order, then path (ids are unique in a vault): one numpy sort of the
        strings (code point order, as Python's: ids and paths hold no NUL), not a Python sort of tuples
        (a fifth of a second on 50k notes). As UTF-8 bytes (the same order, a quarter of the memory of 'U')."""
        docs = self._docs
        live = [s for s, d in enumerate(docs) if d is not None]
        rank = np.full(len(docs), len(docs), dtype=np.int64)
        if live:
            ids = np.array([docs[s].id.encode("utf-8", "surrogatepass") for s in live])  # type: ignore[union-attr]
            paths = np.array([docs[s].note.path.encode("utf-8", "surrogatepass") for s in live])  # type: ignore[union-attr]
            rank[np.asarray(live)[np.lexsort((paths, ids))]] = np.arange(len(live), dtype=np.int64)
            del ids, paths
        self._rank = rank
        self._order_dirty = False

    def _term(self, tid: int) -> tuple[Any, ...]:
        """What a question needs of term `tid`, computed once and cached until the next change (`_refresh`
        empties the cache): the notes holding it, their BM25F weight times its IDF, per posting whether
        it is a body-only mention (grounding) and whether any is, its IDF and document frequency as
        Python numbers, the phrases holding it, and the weights read with the evidence's saturation
        (`EVIDENCE_K1`). Fields: `_T_*`."""
        found = self._wcache.get(tid)
        if found is None:
            docs, fm, body = self._postings(tid)
            # BM25F: a pseudo term frequency mixing the fields by weight; only the body is
            # length-normalised (titles, aliases and labels are short by nature).
            pseudo = fm + body * self._norm[docs]
            idf = self._idf[tid]
            weight = pseudo * (BM25_K1 + 1.0) / (pseudo + BM25_K1) * idf
            passing = _grounding.in_passing(fm, LEAD_WEIGHT)
            # the evidence reads a lead-only term as the body mention it is (the lead ranks, never grounds)
            plain = np.where(passing, body * self._norm[docs], pseudo) if LEAD_WEIGHT else pseudo
            evidence = plain * (EVIDENCE_K1 + 1.0) / (plain + EVIDENCE_K1) * idf
            # Note and phrase ids as intp: a question indexes and counts with them, and numpy converts any
            # narrower integer type (the index stores them narrow) on every such call.
            phrases = self._phrase_postings(tid).astype(np.intp)
            found = (docs.astype(np.intp), weight, passing, bool(passing.any()), float(idf), int(self._df[tid]), phrases, evidence)
            if len(self._wcache) >= 4096:
                self._wcache.clear()
            self._wcache[tid] = found
        return found

    def _name_terms(self) -> frozenset[str]:
        """Tokens of the notes' titles, aliases and slugs: a correction to one of them is preferred."""
        m = len(self._ph_text)
        if not m:
            return frozenset()
        # A phrase is live when it lies in its note's run (a note that left, or was re-read, has others).
        pid = np.arange(m)
        owner = self._ph_doc.view()
        live = (self._ph_beg.a[owner] <= pid) & (pid < self._ph_end.a[owner]) & np.isin(self._ph_kind.view(), (_K_TITLE, _K_SLUG, _K_ALIAS))
        tids = np.unique(self._ph_tok.view()[live[self._ph_tok_of.view()]])
        terms = self._terms
        return frozenset(terms[t] for t in tids.tolist())

    def _neighbours(self, slot: int) -> np.ndarray:
        """Slots of the candidates `slot` links to, in link order (cached until the next change)."""
        found = self._nb_cache.get(slot)
        if found is None:
            doc = self._docs[slot]
            assert doc is not None
            slot_of = self._slot_of
            found = np.asarray([slot_of[p] for p in doc.out if p in slot_of and p != doc.note.path], dtype=np.int64)
            self._nb_cache[slot] = found  # type: ignore[assignment]
        return found  # type: ignore[return-value]

    # -- spelling -------------------------------------------------------------------------------------
    def _correct(self, token: str, word: str) -> _spelling.Correction | None:
        """What a question token the vault has never seen most likely stands for (grasbot/search/spelling.py),
        from the token and the visitor's folded `word` it comes from; cached until the index changes."""
        key = (token, word)
        if key in self._corrections:
            return self._corrections[key]
        if self._speller is None:
            self._speller = _spelling.Speller(_Frequencies(self._vocab, self._df), self._name_terms(), _spelling.stem_words)
        fixed = self._speller.correct(token, word or None)
        if len(self._corrections) < 100_000:
            self._corrections[key] = fixed
        return fixed

    def _respell(self, token: str, word: str, at_least: int) -> _spelling.Correction | None:
        """`Speller.respell` of a rare held token, cached with the corrections until the index changes."""
        key = ("\0respell", token, word, at_least)
        if key in self._corrections:
            return self._corrections[key]
        if self._speller is None:
            self._speller = _spelling.Speller(_Frequencies(self._vocab, self._df), self._name_terms(), _spelling.stem_words)
        fixed = self._speller.respell(token, word or None, at_least)
        if len(self._corrections) < 100_000:
            self._corrections[key] = fixed
        return fixed

    # -- searching -----------------------------------------------------------------------------------
    def search(self, query: str, top_k: int | None = None) -> SearchResult:
        # Cost: per question, a fixed number of numpy operations on the question's postings and a few
        # dense arrays; what depends on one term only (its weights, body-only mentions, IDF, phrases) is
        # computed once per term until the next change (`_term`), and reasons only for the returned notes.
        started = time.perf_counter()
        k = self.config.top_k if top_k is None else top_k
        want = k
        ranker = _semantic.active()
        if ranker is not None and 0 < k < _semantic.POOL:
            k = _semantic.POOL  # the pool that `_rerank` re-orders; its first `want` are returned
        tokens = tuple(tokenize(query))
        unique = sorted(set(tokens))
        self._refresh()
        n = self._n  # notes
        slots = len(self._docs)  # array sizes (a free slot scores nothing)
        if not unique or n == 0 or k <= 0:
            return SearchResult(query, tokens, [], False, {"tokens": list(tokens), "candidates": 0, "elapsed_ms": _ms(started)})

        vocab = self._vocab
        term = self._term
        corrected: dict[str, str] = {}
        sure: dict[str, str] = {}  # the confident corrections
        inflected: dict[str, str] = {}  # another form of the typed word (`mangent` -> `mang`): as if typed so
        unknown = [t for t in unique if t not in vocab and not _lexicon.knows(t)]  # a known word is no misspelling
        if unknown:
            typed = _typed_words(query)
            for t in unknown:
                fix = self._correct(t, typed.get(t, ""))
                if fix is not None and fix.inflection:
                    inflected[t] = fix.term
                elif fix is not None:
                    corrected[t] = fix.term
                    if fix.confident:
                        sure[t] = fix.term
        respelled: dict[str, str] = {}  # a held but rare token -> the name it may be a misspelling of
        rare = [t for t in unique if t in vocab and term(vocab[t])[_T_DF] <= RESPELL_MAX_DF and not _lexicon.knows(t)]
        if rare:
            typed = _typed_words(query)
            names = _capitalised_words(query)
            for t in rare:
                if typed.get(t, "") in names:
                    continue  # "Paris", "Berlin": a name as written, not a misspelling
                fix = self._respell(t, typed.get(t, ""), RESPELL_FACTOR * int(term(vocab[t])[_T_DF]))
                if fix is not None and fix.term not in unique:
                    respelled[t] = fix.term
        if inflected:  # ranks, covers and is evidence as the vault's form of the word would (grasbot/search/spelling.py)
            unique = sorted((set(unique) - inflected.keys()) | set(inflected.values()))
        # A corrected token helps ranking (at a reduced weight). An unconfident one is no evidence that
        # the vault covers the question: `mass` keeps it at the IDF of an unseen word. A confident one
        # stands for its term: evidence at a discount, and the term's IDF in `mass`.
        originals = [t for t in unique if t not in corrected]
        # -- lexicon hook (grasbot/search/lexicon.py, grasbot/search/grounding.py): soft terms are corrections and
        # synonyms/translations; term -> (ranking weight, evidence weight, original word it stands for).
        soft: dict[str, tuple[float, float, str]] = {}
        also_for: dict[str, tuple[str, ...]] = {}  # further original words an expansion stands for
        for t, fixed in sorted(corrected.items(), key=lambda item: (item[0] not in sure, item[0])):  # sure first
            if t in sure:
                soft.setdefault(fixed, (SURE_CORRECTION_WEIGHT, SURE_CORRECTION_EVIDENCE, t))
            else:
                soft.setdefault(fixed, (CORRECTION_WEIGHT, CORRECTION_EVIDENCE, t))
        # Beside the token as typed, which stays: the two are one question word, each as likely. The name
        # ranks as a confident correction, the rare word as typed as an unconfident one; no evidence added.
        for t, fixed in sorted(respelled.items()):
            soft.setdefault(fixed, (SURE_CORRECTION_WEIGHT, CORRECTION_EVIDENCE, t))
        own_terms = [(t, term(vocab[t])) for t in originals if t in vocab]
        common = {t for t, rec in own_terms if rec[_T_DF] > EXPAND_MAX_DF * n}
        for e in _lexicon.expand(originals, vocab, keep=common):
            if soft.setdefault(e.term, (e.weight, EXPANSION_EVIDENCE, e.source))[2] == e.source and len(e.sources) > 1:
                also_for[e.term] = e.sources[1:]
        # Another form of a question word the stemmer leaves apart (`financier` / `financ` of `finance`,
        # `video` / `videos`): the same word, ranked at FAMILY_WEIGHT, never on top of the word as typed
        # in a note that holds both (`_beside_original`).
        family_of: dict[str, int] = {}  # family term -> the term id of the question word it is a form of
        for t in originals:
            if t not in common:
                for other in self._family(t):
                    if other not in soft:  # a correction or a synonym of the table comes first
                        soft[other] = (_lexicon.FAMILY_WEIGHT, EXPANSION_EVIDENCE, t)
                        if t in vocab:
                            family_of[other] = vocab[t]
        soft = {t: v for t, v in soft.items() if t not in originals}
        if soft:
            unique = sorted(set(originals) | set(soft))
        # -- end of lexicon hook -----------------------------------------------------------------------
        known_terms = [t for t in unique if t in vocab]
        known = [vocab[t] for t in known_terms]
        recs = [term(tid) for tid in known]
        idf_known = np.array([rec[_T_IDF] for rec in recs]) if known else np.zeros(0)
        exact = {vocab[t] for t in originals if t in vocab}
        mass = float(sum(rec[_T_IDF] for _t, rec in own_terms))
        # A confident correction weighs its term's IDF, once per term: to a term the question already holds
        # as typed, or twice, it is one word twice.
        stood_for = sorted({fixed for fixed in sure.values() if fixed in soft})
        mass += sum(term(vocab[fixed])[_T_IDF] for fixed in stood_for)
        mass += UNSEEN_WEIGHT * self._idf_unseen * (len(originals) - len(exact) + len(corrected) - len(sure))
        # Without soft terms every known term is an original one (ranking weight 1).
        factor = np.asarray([(CORRECTION_WEIGHT if t in respelled else 1.0) if tid in exact else soft[t][0] for t, tid in zip(known_terms, known)]) if soft and known else None

        # BM25F and coverage (IDF mass of the question found in each note), one pass over the postings.
        scores = np.zeros(slots)
        bm25 = scores
        covered = scores
        evidence_bm25 = scores
        best_bm25 = 0.0
        if known:
            single = len(recs) == 1
            doc_ids = recs[0][_T_DOCS] if single else np.concatenate([rec[_T_DOCS] for rec in recs])
            w = recs[0][_T_W] if single else np.concatenate([rec[_T_W] for rec in recs])
            we = recs[0][_T_WE] if single else np.concatenate([rec[_T_WE] for rec in recs])
            n_words = len(originals) + len(corrected)
            if family_of.keys() & soft.keys():
                w, we = self._beside_original(family_of, soft, known_terms, recs, doc_ids, w, we, slots)
            # grounding: a word held in a body only is weak evidence unless corroborated (grasbot/search/grounding.py).
            any_passing = any(rec[_T_ANY_PASSING] for rec in recs)
            if soft or (any_passing and n_words >= 2):
                passing = recs[0][_T_PASSING] if single else np.concatenate([rec[_T_PASSING] for rec in recs])
            else:  # not looked at (no body-only mention, or one word: no discount)
                passing = _EMPTY_B
            if soft:  # lexicon hook: soft terms rank at their weight, count as evidence once per word
                assert factor is not None
                lengths = np.asarray([rec[_T_DOCS].size for rec in recs], dtype=np.int64)
                is_exact = [tid in exact for tid in known]
                groups = sorted({v[2] for v in soft.values()} | {g for extra in also_for.values() for g in extra})
                group = np.asarray([-1 if e else groups.index(soft[t][2]) for t, e in zip(known_terms, is_exact)])
                also = [() if e else tuple(groups.index(g) for g in also_for.get(t, ())) for t, e in zip(known_terms, is_exact)]
                ev_w = np.asarray([1.0 if e else soft[t][1] for t, e in zip(known_terms, is_exact)])
                covered = np.bincount(doc_ids, weights=np.where(is_exact, idf_known, 0.0).repeat(lengths), minlength=slots)
                bm25, evidence_bm25 = _grounding.combine(doc_ids, w, lengths, factor, ev_w, group, slots, passing, n_words, also, idf_known, covered, we)
            else:
                own = idf_known.repeat([rec[_T_DOCS].size for rec in recs])  # each posting's term IDF
                bm25 = np.bincount(doc_ids, weights=w, minlength=slots)
                covered = np.bincount(doc_ids, weights=own, minlength=slots)
                bm25_evidence = bm25 if we is w else np.bincount(doc_ids, weights=we, minlength=slots)
                evidence_bm25 = _grounding.plain(doc_ids, we, passing, own, covered, n_words, bm25_evidence, any_passing)
            best_bm25 = float(np.maximum.reduce(bm25))
            if best_bm25 > 0:
                scores = bm25 * (BM25_POINTS / best_bm25)
        # coverage (a note's share of the question's mass): covered / mass, computed where it is needed.

        # Phrase signals, vectorized over the phrases that share a token with the question.
        matched: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None
        q_parts = [rec[_T_PHRASES] for rec in recs]
        ph = (np.concatenate(q_parts) if len(q_parts) > 1 else q_parts[0]) if q_parts else _EMPTY_I
        if ph.size:
            idf_rep = (idf_known if factor is None else idf_known * factor).repeat([part.size for part in q_parts])
            m = len(self._ph_text)
            if m <= _DENSE_PHRASES:  # small vault: dense counts are fewer operations than a sort
                inside = np.bincount(ph, weights=idf_rep, minlength=m)
                touched = inside.nonzero()[0]
                hits = np.bincount(ph, minlength=m)[touched]
                inside = inside[touched]
            else:
                touched, inverse = np.unique(ph, return_inverse=True)
                hits = np.bincount(inverse)
                inside = np.bincount(inverse, weights=idf_rep)
            full = hits == self._ph_len_view[touched]
            share = inside / mass
            # Part of a title: its words by their rarity among titles (`_refresh`).
            rare_rep = idf_rep * self._title_rarity[known].repeat([part.size for part in q_parts])
            if m <= _DENSE_PHRASES:
                part_share = np.bincount(ph, weights=rare_rep, minlength=m)[touched] / mass
            else:
                part_share = np.bincount(inverse, weights=rare_rep) / mass
            # Per phrase: its points when every token is in the question (title, slug, alias / holders,
            # labels), when only some are (title only), and for a sample question its similarity.
            # A title is named whole when the question holds all of it but words most titles share
            # ("Importer depuis Apple Notes" for "import my Apple Notes": `depuis` is in many titles).
            named = (self._ph_kind.a[touched] == _K_TITLE) & ~full
            if named.any():
                rare = self._ph_rare[touched]
                named &= (rare > 0) & (part_share * mass >= TITLE_NAMED_SHARE * rare)
                full = full | named
            points = np.where(full, self._ph_full[touched] * share, self._ph_partial[touched] * part_share)
            answer = self._ph_answer[touched]
            if np.count_nonzero(answer):  # sample questions: IDF-weighted cosine with the question
                if m <= _DENSE_PHRASES:
                    squares = np.bincount(ph, weights=idf_rep * idf_rep, minlength=m)[touched]
                else:
                    squares = np.bincount(inverse, weights=idf_rep * idf_rep)
                q_norm = math.sqrt(float(np.add.reduce(idf_known**2)) + self._idf_unseen**2 * (len(originals) - len(exact)))
                sim = squares / (q_norm * self._ph_norm[touched])
                points = np.where(answer & (sim >= ANSWERS_MIN), ANSWERS_POINTS * sim, points)
            owner = self._ph_doc_view[touched]
            matched = (touched, owner, full, points)
            # One alias and one sample question count per note (the best); title, slug and labels add up.
            best_of = self._ph_best_of[touched]
            if np.count_nonzero(best_of):
                # The best alias and the best sample question of each note: one max over (note, group).
                # Points are ≥ 0, so a phrase of the other kind can take part as 0 (a max with 0 and a sum
                # with 0 change nothing): no selection of either kind, fewer numpy calls.
                top2 = np.zeros(2 * slots)
                np.maximum.at(top2, np.multiply(owner, 2, dtype=np.intp) + answer, np.where(best_of, points, 0.0))
                add = top2[0::2] + top2[1::2]  # float64, even when no other phrase matched
                add += np.bincount(owner, weights=np.where(best_of, 0.0, points), minlength=slots)
            else:
                add = np.bincount(owner, weights=points, minlength=slots)
            scores = scores + add
        scored = scores > 0
        scores = scores + np.where(scored, self._bonus_view, 0.0)
        if self._bonus_floor() < 0:
            scores[scored & (scores <= 0)] = 1e-6  # a matching note with a low priority is still a candidate

        direct = scores
        candidates = int(np.count_nonzero(scored))
        # One ranking serves the seeds and, when the graph lifts nothing, the answer.
        order = _top(direct, max(k, GRAPH_SEEDS), self._rank)
        head = [(i, direct.item(i)) for i in order]
        seeds = [i for i, value in head[:GRAPH_SEEDS] if value > 0]

        # Graph: a neighbour of a seed is lifted to a share of the seed's score (never above its seed),
        # and strictly below every note that really matches the question. Seeds come best first, so a
        # seed's lift is never above an earlier one's: a neighbour keeps the first lift it gets. A lift
        # below the k-th direct score cannot reach the answer (lifts only raise scores): not computed.
        lifted: dict[int, tuple[float, str]] = {}
        kth = head[k - 1][1] if len(head) >= k else 0.0
        ceiling: float | None = None
        seed_set = set(seeds)
        for s, seed_value in head[:GRAPH_SEEDS]:
            if seed_value <= 0 or GRAPH_SHARE * seed_value < kth:
                break
            nbs = self._neighbours(s)
            if not nbs.size:
                continue
            if ceiling is None:
                real = direct[(covered / mass >= REAL_MATCH_COVERAGE) & scored]
                ceiling = math.nextafter(float(real.min()), 0.0) if real.size else math.inf
            value = min(GRAPH_SHARE * seed_value, ceiling)
            if value < kth:
                break
            seed_id = self._docs[s].id  # type: ignore[union-attr]
            for nb, current in zip(nbs.tolist(), direct[nbs].tolist()):
                if value > current and nb not in seed_set and nb not in lifted:
                    lifted[nb] = (value, seed_id)
        # The final scores: the direct ones, lifted ones replaced. Only the k best direct notes and the
        # lifted ones can be among the k best (a lift only raises a score): ranked here, ties by id order.
        final = dict(head[:k])
        if lifted:
            final.update((nb, value) for nb, (value, _seed) in lifted.items())
            pool = np.fromiter(final, dtype=np.int64, count=len(final))
            values = np.fromiter(final.values(), dtype=np.float64, count=len(final))
            order = pool[np.lexsort((self._rank[pool], -values))[:k]].tolist()
        top = [i for i in order[:k] if final[i] > 0]
        phrase_reasons = self._reasons(matched, top)
        hits_out: list[Hit] = []
        best_cov = 0.0
        for i in top:
            d = self._docs[i]
            assert d is not None
            why = phrase_reasons.get(i, [])
            b = bm25.item(i)
            if b > 0:
                why.append(f"bm25:{BM25_POINTS * b / best_bm25:.2f}")
            is_direct = bool(scored.item(i))
            if is_direct:
                if d.priority is not None and d.priority != 5:
                    why.append("priority")
                if d.is_moc:
                    why.append("moc-hub")
            if i in lifted:
                why.append(f"graph-from:{lifted[i][1]}")
            cov = round(covered.item(i) / mass, 4)
            if is_direct and cov > best_cov:
                best_cov = cov
            hits_out.append(Hit(d.note, d.id, round(final[i], 4), tuple(why), direct=is_direct, coverage=cov))

        # Evidence: the best direct note's BM25F as a share of what a note holding every question token
        # strongly would get. Unseen tokens count at full IDF, body-only mentions little unless corroborated.
        ideal = mass * (EVIDENCE_K1 + 1.0)
        # Over every note, not only the returned ones: `grounded` must not depend on top_k.
        evidence = float(np.maximum.reduce(evidence_bm25)) / ideal if known and n else 0.0
        grounded = evidence >= GROUND_EVIDENCE
        if self.config.min_score is not None and (not hits_out or hits_out[0].score < self.config.min_score):
            grounded = False
        if ranker is not None and len(hits_out) > 1:
            hits_out = self._rerank(ranker, query, hits_out[: _semantic.POOL]) + hits_out[_semantic.POOL :]
        del hits_out[want:]
        stats = {
            "tokens": list(tokens),
            "vault_size": n,
            "candidates": candidates,
            "seeds": [self._docs[i].id for i in seeds],  # type: ignore[union-attr]
            "bm25_max": round(best_bm25, 4),
            "coverage": round(best_cov, 4),
            "evidence": round(evidence, 4),
            "corrected": corrected,
            "inflected": inflected,
            "respelled": respelled,
            "elapsed_ms": _ms(started),
        }
        return SearchResult(query, tokens, hits_out, grounded, stats)

    def _rerank(self, ranker: _semantic.SemanticRanker, query: str, hits: list[Hit]) -> list[Hit]:
        """`hits` re-ordered by `ranker` (grasbot/search/semantic.py), each with its cosine as a reason.
        The passages are read as the index reads the notes: the visitor's text, without links to hidden
        notes. A model that fails leaves the engine's order (logged): an answer never depends on it."""
        passages = []
        for hit in hits:
            note = hit.note
            title, *aliases = _for_visitors(self._redact, note.path, [note.title, *note.aliases])
            passages.append(ranker.passage(title, aliases, _visitor_body(note, self._redact)))
        try:
            order = ranker.rerank(query, [h.score for h in hits], passages)
        except Exception as exc:  # noqa: BLE001 - a native model's failure must not fail a search
            _semantic.log.warning("semantic re-ranking failed, engine order kept: %s", type(exc).__name__)
            return hits
        return [
            dataclasses.replace(hits[i], score=round(score, 4), reasons=(*hits[i].reasons, f"semantic:{cos:.3f}"))
            for i, score, cos in order
        ]

    def _family(self, token: str) -> list[str]:
        """`lexicon.family` of a question token in the index's vocabulary, cached until the next change."""
        found = self._families.get(token)
        if found is None:
            if len(self._families) >= 4096:
                self._families.clear()
            found = self._families[token] = _lexicon.family(token, self._vocab)
        return found

    def _beside_original(
        self,
        family_of: Mapping[str, int],
        soft: Mapping[str, tuple[float, float, str]],
        known_terms: Sequence[str],
        recs: Sequence[tuple[Any, ...]],
        doc_ids: np.ndarray,
        w: np.ndarray,
        we: np.ndarray,
        slots: int,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The postings' ranking and evidence weights (`w`, `we`, concatenated in `known_terms` order)
        with each family term's counting in a note only beyond what the question word it is a form of
        counts there: a note scores the better of the two forms, not their sum (`video` and `videos` in
        one note are one word said twice, which BM25 already saturates). Copies; the cached term
        weights are left as they are."""
        w, we = w.copy(), we.copy()
        start = 0
        for t, rec in zip(known_terms, recs):
            size = rec[_T_DOCS].size
            if t in family_of and t in soft:
                rank_weight, evidence_weight, _word = soft[t]
                original = self._term(family_of[t])
                at = slice(start, start + size)
                for weights, column, share in ((w, _T_W, rank_weight), (we, _T_WE, evidence_weight)):
                    held = np.zeros(slots)
                    held[original[_T_DOCS]] = original[column]
                    # share x (what is left) = max(0, share x this form - the original's own weight)
                    weights[at] = np.maximum(0.0, weights[at] - held[doc_ids[at]] / share)
            start += size
        return w, we

    def _bonus_floor(self) -> float:
        """The least `priority`/MOC bonus of any note: a note with evidence drops to zero or below only
        when it is negative. Cached until the next change."""
        if self._floor is None:
            bonus = self._bonus_view
            self._floor = float(bonus.min()) if bonus.size else 0.0
        return self._floor

    def _reasons(self, matched: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None, top: list[int]) -> dict[int, list[str]]:
        """The phrase reasons of the returned notes, from the phrase scores already computed, in a
        stable order: alias, title/slug, sample question, labels."""
        out: dict[int, list[str]] = {}
        if matched is None or not top:
            return out
        touched, _owner, full, points = matched
        best: dict[tuple[int, int], tuple[float, int]] = {}
        parts: dict[int, list[list[str]]] = {}
        # Phrases are numbered note after note, and `touched` is sorted: a note's entries are one run.
        at = np.asarray(top)
        bounds = touched.searchsorted(np.concatenate((self._ph_beg.a[at], self._ph_end.a[at])), side="left").tolist()
        kinds = self._ph_kind.a
        texts = self._ph_text
        t_of, full_of, points_of, kind_of = touched.item, full.item, points.item, kinds.item
        for i, lo, hi in zip(top, bounds, bounds[len(top) :]):
            if lo < hi:
                slot = parts[i] = [[], [], [], []]  # `top` holds a note once
            for j in range(lo, hi):
                t = t_of(j)
                kind = kind_of(t)
                if kind == _K_TITLE:
                    slot[1].append("title" if full_of(j) else "title-partial")
                elif kind == _K_ANSWER:
                    value = points_of(j)
                    if value > 0:
                        key = (i, kind)
                        if key not in best or value > best[key][0]:
                            best[key] = (value, t)
                elif not full_of(j):
                    continue
                elif kind == _K_SLUG:
                    slot[1].append("slug")
                elif kind == _K_ALIAS:
                    value = points_of(j)
                    key = (i, kind)
                    if key not in best or value > best[key][0]:
                        best[key] = (value, t)
                else:
                    slot[3].append(f"{'domain' if kind == _K_DOMAIN else 'tag'}:{texts[t]}")
        for (i, kind), (value, t) in best.items():
            slot = parts.setdefault(i, [[], [], [], []])
            if kind == _K_ALIAS:
                slot[0].append(f"alias:{texts[t]}")
            else:
                sim = value / ANSWERS_POINTS
                slot[2].append("answers-full" if sim >= ANSWERS_FULL else f"answers-partial:{sim:.2f}")
        for i, slot in parts.items():
            out[i] = slot[0] + slot[1] + slot[2] + slot[3]
        return out


class _Frequencies(Mapping[str, int]):
    """The index's vocabulary as {term: number of notes holding it}, without copying it (spelling)."""

    __slots__ = ("_vocab", "_df")

    def __init__(self, vocab: dict[str, int], df: np.ndarray) -> None:
        self._vocab = vocab
        self._df = df

    def __getitem__(self, term: str) -> int:
        return int(self._df[self._vocab[term]])

    def __contains__(self, term: object) -> bool:
        return term in self._vocab

    def __iter__(self) -> Iterator[str]:
        return iter(self._vocab)

    def __len__(self) -> int:
        return len(self._vocab)


def _typed_words(query: str) -> dict[str, str]:
    """Token -> the folded word the visitor typed for it (the first one), for the spelling corrector."""
    out: dict[str, str] = {}
    for word in words(query):
        token = stem(word)
        if token and token not in out:
            out[token] = word
    return out


_CAPITALISED_WORD = re.compile(r"(?<![.!?:]\s)(?<!^)\b[A-ZÀ-Ý][^\W_]*")


def _capitalised_words(query: str) -> frozenset[str]:
    """The folded words `query` writes with a capital, but for its first word (names, not typos)."""
    text = query.strip()
    return frozenset(word for m in _CAPITALISED_WORD.findall(text) for word in words(m))


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000.0, 3)


_DENSE_PHRASES = 20_000
#: The fields of a `SearchIndex._term` record.
_T_DOCS, _T_W, _T_PASSING, _T_ANY_PASSING, _T_IDF, _T_DF, _T_PHRASES, _T_WE = range(8)


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
