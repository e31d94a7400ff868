"""The one retrieval pipeline: a question (and the conversation so far) -> what GrasBot would serve.

Every part that asks "what would the bot retrieve?" calls this and nothing else: the API
(`grasbot.service.service.Service.answer`), the TUI's preview, `vaulttools ask` and `vaulttools eval`. So the
preview is the bot's real retrieval by construction (docs/architecture.md, "The way of a question").

The steps, in order:

1. search the index for the question with the limits' `top_k`;
2. follow-up: when that is not grounded and the conversation has a previous question, search again with the
   previous question before this one ("et en quel langage ?" names nothing), and keep that result when it
   is grounded;
3. the stages, in order (`Stage`: a query filter narrows the hits, for instance);
4. keep the servable hits only (`grasbot.answer.prompt.is_servable`: public and readable);
5. plan the context: which hits go into the prompt whole or cut (`grasbot.answer.context.plan_context`),
   on their text as the prompt quotes it (links to hidden notes removed first).

`Retrieval` holds every step's outcome. It is frozen: a later step (answer verification, for one) adds
what it finds with `Retrieval.with_extra`, and readers of a retrieval ignore extras they do not know.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

from grasbot.answer.context import SECONDARY_KEEP_RATIO, SECONDARY_MAX_CHARS, ContextNote, plan_context
from grasbot.answer.conversation import Turn
from grasbot.answer.prompt import hidden_links, redact_hidden_links, servable_hits
from grasbot.search.index import Hit, SearchIndex, SearchResult
from grasbot.vault import Vault

__all__ = ["Retrieval", "RetrievalLimits", "RetrievalPipeline", "Stage"]


@dataclass(frozen=True, slots=True)
class RetrievalLimits:
    """How much is retrieved and how much of it goes into the prompt (the service's settings
    `SEARCH_TOP_K`, `SEARCH_SECONDARY_KEEP_RATIO`, `SEARCH_SECONDARY_MAX_CHARS`; docs/service.md)."""

    top_k: int = 5
    #: a note ranked 2nd or lower scoring under this share of the first one's score is cut ...
    keep_ratio: float = SECONDARY_KEEP_RATIO
    #: ... to this many characters, at a paragraph boundary
    max_chars: int = SECONDARY_MAX_CHARS

    def __post_init__(self) -> None:
        if self.top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {self.top_k}")
        if not 0.0 <= self.keep_ratio <= 1.0:
            raise ValueError(f"keep_ratio must be between 0 and 1, got {self.keep_ratio}")
        if self.max_chars < 1:
            raise ValueError(f"max_chars must be at least 1, got {self.max_chars}")


_NO_EXTRAS: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Retrieval:
    """What the pipeline found for one question."""

    #: the question as asked
    question: str
    #: what the index was asked: the question, or the previous question and this one for a follow-up
    query: str
    #: the engine's result for `query`, as the index returned it (its hits before the servable filter)
    result: SearchResult
    #: the hits that may be served, ranked: what the sources, the prompt and every preview show
    hits: tuple[Hit, ...]
    #: True when `query` is a follow-up search (see the module docstring)
    followup: bool
    #: the prompt's notes, one per hit, in rank order, each whole or cut
    context: tuple[ContextNote, ...]
    limits: RetrievalLimits
    #: time spent in the pipeline, search included
    elapsed_ms: float = 0.0
    #: what later steps added, by step name (read-only; see `with_extra`)
    extras: Mapping[str, Any] = field(default_factory=lambda: _NO_EXTRAS)
    #: the conversation's earlier questions, oldest first (a stage may read them: the filters keep the
    #: class of « § 13 de la classe 10 » for « et le § 14 ? », grasbot/answer/filtering.py)
    previous: tuple[str, ...] = ()

    @property
    def grounded(self) -> bool:
        """True when the engine found credible sources and at least one of them may be served: the
        model then answers from `context`; otherwise it is told it has no source."""
        return bool(self.result.grounded and self.hits)

    @property
    def ids(self) -> list[str]:
        """The ranked ids of `hits` (note slugs, else file names)."""
        return [hit.id for hit in self.hits]

    def with_extra(self, name: str, value: Any) -> Retrieval:
        """A copy with `extras[name] = value` (a step that comes later records its outcome here)."""
        return dataclasses.replace(self, extras=MappingProxyType({**self.extras, name: value}))


class Stage(Protocol):
    """A step between the search and the servable filter, for features that narrow or re-rank what the
    engine found (a query filter such as "only the books"). It returns the retrieval to go on with,
    usually `dataclasses.replace(retrieval, result=...)` or `retrieval.with_extra(...)`; the servable filter
    and the context plan are applied after every stage, to what the stages left."""

    name: str

    def __call__(self, retrieval: Retrieval) -> Retrieval: ...


class RetrievalPipeline:
    """The retrieval of one index, with its limits, the names of the hidden notes and the stages.

    ``RetrievalPipeline(index).retrieve("C'est quoi push_swap ?").ids`` -> ``["push-swap", ...]``

    `hidden`: the notes a visitor must not see (`grasbot.answer.prompt.hidden_links` of the vault: links
    cut by where they resolve; or their names, `hidden_names`: links cut by name); links to them are
    removed from the text the context is planned on, as the prompt quotes it. Safe to share between threads as long as the index is not updated meanwhile.
    """

    def __init__(
        self,
        index: SearchIndex,
        limits: RetrievalLimits | None = None,
        *,
        hidden: Collection[str] = frozenset(),
        stages: Sequence[Stage] = (),
    ) -> None:
        self.index = index
        self.limits = limits if limits is not None else RetrievalLimits()
        self.hidden = hidden
        self.stages = tuple(stages)

    @classmethod
    def of_vault(
        cls, vault: Vault, index: SearchIndex | None = None, limits: RetrievalLimits | None = None
    ) -> RetrievalPipeline:
        """The pipeline over `vault`: its index (built when not given) and the names of its hidden notes."""
        if index is None:
            index = SearchIndex.build(vault)
        return cls(index, limits, hidden=hidden_links(vault))  # (links cut by where they resolve)

    def retrieve(
        self, question: str, history: Sequence[Turn] = (), *, limits: RetrievalLimits | None = None
    ) -> Retrieval:
        """The retrieval for `question`, given the conversation's remembered turns (oldest first)."""
        started = time.perf_counter()
        limits = limits if limits is not None else self.limits
        query = question
        result = self.index.search(query, limits.top_k)
        followup = False
        if not result.grounded and history:
            again = f"{history[-1].question} {question}"
            retried = self.index.search(again, limits.top_k)
            if retried.grounded:
                query, result, followup = again, retried, True
        retrieval = Retrieval(question, query, result, (), followup, (), limits, previous=tuple(t.question for t in history))
        for stage in self.stages:
            retrieval = stage(retrieval)
        hits = tuple(servable_hits(retrieval.result.hits))
        hidden = self.hidden
        context = plan_context(
            hits,
            keep_ratio=limits.keep_ratio,
            max_chars=limits.max_chars,
            text_of=(lambda note: redact_hidden_links(note.reader_body, hidden, note.path)) if hidden else None,
        )
        elapsed = (time.perf_counter() - started) * 1000.0
        return dataclasses.replace(retrieval, hits=hits, context=tuple(context), elapsed_ms=elapsed)

    def search(self, question: str, top_k: int) -> Retrieval:
        """`retrieve` with another `top_k`, in the shape of `SearchIndex.search` (for `vaulttools eval`,
        which measures the retrieval on question sets)."""
        return self.retrieve(question, limits=dataclasses.replace(self.limits, top_k=top_k))
