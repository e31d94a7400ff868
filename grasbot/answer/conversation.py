"""A conversation turn: what the answer pipeline reads of the past (the service's memory stores them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Turn:
    question: str
    answer: str
    at: float  # clock() when remembered

    @property
    def size(self) -> int:
        return len(self.question) + len(self.answer)
