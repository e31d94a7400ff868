"""Counts in words: ``count(1, "note")`` is "1 note", ``count(3, "note")`` is "3 notes"."""

from __future__ import annotations


def count(n: int, singular: str, plural: str | None = None) -> str:
    """`n` and the noun, singular for 1 (and -1), plural otherwise (``singular + "s"`` unless given)."""
    return f"{n} {singular if abs(n) == 1 else (plural or singular + 's')}"
