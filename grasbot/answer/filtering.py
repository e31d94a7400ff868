"""The question's filters as a stage of the retrieval pipeline (grasbot/answer/pipeline.py).

« § 13 de la classe 10 » retrieves among the notes of § 13 of class 10 (grasbot/search/filters.py says how
filters are read, matched and relaxed); « et le § 14 ? » after it keeps class 10, from the conversation's
earlier questions. The stage replaces the engine's result with the filtered one and records what the
filters did under `extras["filters"]` (`FilteredResult.as_dict()`: asked, applied, relaxed, inherited,
reasons), which `vaulttools ask --json`, the TUI preview and the API show. A question with no filter
goes through unchanged.
"""

from __future__ import annotations

import dataclasses

from grasbot.answer.pipeline import Retrieval
from grasbot.search.filters import FilterConfig, search_with_filters
from grasbot.search.index import SearchIndex

__all__ = ["FilterStage", "filters_of"]


class FilterStage:
    name = "filters"

    def __init__(self, index: SearchIndex, config: FilterConfig | None = None) -> None:
        self.index = index
        self.config = config or FilterConfig()

    def __call__(self, retrieval: Retrieval) -> Retrieval:
        found = search_with_filters(
            self.index, retrieval.question, retrieval.limits.top_k, self.config, retrieval.previous
        )
        if found is None:
            return retrieval
        changed = dataclasses.replace(retrieval, query=found.result.query, result=found.result, followup=False)
        return changed.with_extra(self.name, found.as_dict())


def filters_of(retrieval: Retrieval) -> dict:
    """What the filters of a retrieval did (`{}` when the question stated none)."""
    value = retrieval.extras.get(FilterStage.name)
    return dict(value) if isinstance(value, dict) else {}
