"""What of a Markdown body is text: code, comments and math located, masked or removed.

The link scanner (`grasbot.links`) runs its patterns on the body with code, comments and math masked (same
length, line breaks kept, so offsets stay exact); `Note.reader_body` is the body without its comments, what
a reader of the rendered note sees (docs/links.md, "What is a link"). Imports nothing else of the
project: the data model uses it.
"""

from __future__ import annotations

import re

__all__ = ["code_masked", "comment_spans", "has_comment", "mask_code", "without_comments"]

# (written "```*" and not "`{3,}": only a plain literal prefix gets the fast scan)
_BACKTICK_FENCE_RE = re.compile(r"(````*)([^\n]*)")
_TILDE_FENCE_RE = re.compile(r"(~~~~*)([^\n]*)")


def _blank_keep_lines(chunk: str) -> str:
    if "\n" not in chunk:
        return " " * len(chunk)
    return "\n".join(" " * len(part) for part in chunk.split("\n"))


def _fence_spans(body: str) -> list[tuple[int, int]]:
    """(start, end) of every fenced code block, fences included; an unclosed fence runs to the end."""
    spans: list[tuple[int, int]] = []
    open_char = ""
    open_len = 0
    open_at = 0
    matches: list[re.Match[str]] = []
    if "```" in body:
        matches.extend(_BACKTICK_FENCE_RE.finditer(body))
    if "~~~" in body:
        matches.extend(_TILDE_FENCE_RE.finditer(body))
        matches.sort(key=lambda m: m.start())
    for m in matches:
        start = m.start()
        line_start = body.rfind("\n", 0, start) + 1
        if start > line_start and body[line_start:start].strip(" \t>"):
            continue  # not at the start of a line (block quote markers and indentation allowed)
        fence, info = m.group(1), m.group(2)
        if not open_char:
            if fence[0] == "`" and "`" in info:
                continue  # ```foo` is inline code, not a fence
            open_char, open_len, open_at = fence[0], len(fence), line_start
        elif fence[0] == open_char and len(fence) >= open_len and not info.strip():
            spans.append((open_at, m.end()))
            open_char = ""
    if open_char:
        spans.append((open_at, len(body)))
    return spans


# Obsidian comments: `%% … %%` (Obsidian's own) and `<!-- … -->` (HTML), inline or over several lines; an
# unclosed one runs to the end of the note. Obsidian shows neither when it renders or publishes the note,
# and its parser takes no link, heading or block id from inside one. Found in the text with its code
# masked, so that `%%` or `<!--` inside code is text.
_COMMENT_RE = re.compile(r"%%.*?(?:%%|\Z)|<!--.*?(?:-->|\Z)", re.DOTALL)


# A MathJax block `$$ … $$` (closed; inline or over several lines): Obsidian renders it as math, so a
# `[[x]]` inside is LaTeX text, not a link. (Its text stays in what retrieval and the prompt read.)
_MATH_RE = re.compile(r"\$\$.+?\$\$", re.DOTALL)


def has_comment(body: str) -> bool:
    return "%%" in body or "<!--" in body


def code_masked(body: str) -> str:
    """`body` with fenced code blocks and inline code replaced by spaces (same length, line breaks kept)."""
    if "```" in body or "~~~" in body:
        spans = _fence_spans(body)
        if spans:
            pieces: list[str] = []
            last = 0
            for start, end in spans:
                pieces.append(body[last:start])
                pieces.append(_blank_keep_lines(body[start:end]))
                last = end
            pieces.append(body[last:])
            body = "".join(pieces)
    if "`" in body:
        body = _INLINE_CODE_RE.sub(_blank_match, body)
    return body


def mask_code(body: str) -> str:
    """`body` with fenced code blocks, inline code, comments and math blocks replaced by spaces (same
    length, line breaks kept), so that regexes run on the result find nothing inside them and keep exact
    offsets."""
    masked = code_masked(body)
    if has_comment(masked):
        masked = _COMMENT_RE.sub(_blank_match, masked)
    if "$$" in masked:
        masked = _MATH_RE.sub(_blank_match, masked)
    return masked


def without_comments(body: str) -> str:
    """`body` without its comments (code kept as it is): what a reader of the rendered or published note
    sees, so what retrieval indexes and the prompt quotes. Comments hold the author's notes to self."""
    if not has_comment(body):
        return body
    masked = code_masked(body)
    if not has_comment(masked):
        return body  # `%%` or `<!--` inside code only
    pieces: list[str] = []
    last = 0
    for m in _COMMENT_RE.finditer(masked):
        pieces.append(body[last : m.start()])
        last = m.end()
    pieces.append(body[last:])
    return "".join(pieces)


# Inline code (CommonMark, within one paragraph), in one pass of `re`: a maximal run of N backticks, then
# anything but a blank line (a line break followed by another), up to the next maximal run of exactly N.
# Runs of another length are content; when a blank line comes first, the run is literal text and the
# search goes on from the next run. (tests/test_links.py checks it against the run-by-run loop it replaces.)
# (the first backtick comes first, its look-behind after it, so that `re` can scan for it quickly)
_INLINE_CODE_RE = re.compile(r"(`(?<!``)`*+)(?:[^`\n]++|\n(?!\n)|(?!\1(?!`))`++)*?(?<!`)\1(?!`)")


def comment_spans(body: str) -> list[tuple[int, int]]:
    """(start, end) offsets in `body` of every comment (`%% … %%` or `<!-- … -->`, delimiters included) that
    is not inside code: what Obsidian hides. Lint reads its `%% vaulttools-ignore %%` directives from them."""
    if not has_comment(body):
        return []
    masked = code_masked(body)
    return [m.span() for m in _COMMENT_RE.finditer(masked)] if has_comment(masked) else []


def _blank_match(m: re.Match[str]) -> str:
    return _blank_keep_lines(m[0])
