"""An answer without Markdown marks, for clients that show plain text (`GET /ask?...&format=text`).

The model writes Markdown (the default output stays so); a plain-text client would show `**`, `#`, backticks
and link syntax as is — the textbook seed's "raw Markdown in answers". This keeps the words and the sources
in brackets (``[push-swap]``, ``[slug, p. 27]``) and drops the marks.
"""

from __future__ import annotations

import re

__all__ = ["markdown_to_text"]

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL), r"\1"),  # fences: their content
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),  # images: their text
    (re.compile(r"\[([^\]]+)\]\((?:[^()]|\([^)]*\))*\)"), r"\1"),  # [text](url)
    (re.compile(r"!?\[\[([^\]|]+)\|([^\]]+)\]\]"), r"\2"),  # [[target|shown]]
    (re.compile(r"!?\[\[([^\]]+)\]\]"), r"\1"),  # [[target]]
    (re.compile(r"(?m)^[ \t]{0,3}#{1,6}[ \t]+(.*?)[ \t#]*$"), r"\1"),  # headings
    (re.compile(r"(?m)^[ \t]{0,3}>[ \t]?"), ""),  # quotes
    (re.compile(r"(?m)^[ \t]*(?:[-*_][ \t]*){3,}$"), ""),  # rules
    (re.compile(r"(?m)^([ \t]*)[-*+][ \t]+"), r"\1- "),  # bullets stay readable dashes
    (re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1", re.DOTALL), r"\2"),  # bold
    (re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])"), r"\1"),  # *italic*
    (re.compile(r"(?<![\w_])_(?=\S)([^_\n]+?)(?<=\S)_(?![\w_])"), r"\1"),  # _italic_
    (re.compile(r"~~(.+?)~~"), r"\1"),
    (re.compile(r"`([^`\n]+)`"), r"\1"),  # inline code
)


def markdown_to_text(text: str) -> str:
    """`text` with its Markdown marks removed (words, numbers and bracketed sources kept)."""
    for pattern, repl in _RULES:
        text = pattern.sub(repl, text)
    text = text.replace("**", "")
    return re.sub(r"\n{3,}", "\n\n", text).strip()
