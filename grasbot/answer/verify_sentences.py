"""Sentences and citations of an answer, for the verifier (`grasbot.answer.verify`).

An answer is cut into sentences with their `start`/`end` offsets in the answer, so a client can highlight
one. A sentence ends at `.`, `!`, `?` or `…` followed by a blank and then a capital, a digit or an opening
quote, at a line break, or at the end of the text. What must not end a sentence:

- an abbreviation (`M.`, `cf.`, `p.`, `env.`, `ex.`, `etc.` before a lowercase word), an initial (`A. Quintard`);
- a decimal or a version (`1,2 Go`, `3.11`, `v1.2.3`): no blank follows their dot;
- anything inside brackets, parentheses or quotes: a citation `[slug, p. 28]`, « une phrase citée. »;
- a citation written after the full stop (`... en Rust. [rust]`): it belongs to the sentence before it.

Citations are `[id]`, `[id, p. 28]`, `[id1, id2]` and `[[id]]`; a markdown link `[text](url)` is not one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from grasbot.search.tokenize import fold

__all__ = ["ABSTENTION", "Sentence", "citations", "split_sentences", "strip_citations"]

#: The sentence the prompt asks the model to write when the notes do not hold the answer (the verifier
#: recognises it whatever the model adds around it). Here, beside the splitter, so that the prompt
#: (`grasbot.answer.prompt`) and the verifier share it without importing each other.
ABSTENTION = "Je ne trouve pas cette information dans les notes."

#: Words that end with a dot without ending the sentence (folded, without the dot).
_ABBREVIATIONS = frozenset(
    """
    m mm mme mmes mlle mlles dr pr me st ste cf ex env p pp vol chap fig art al ed eds n no nos num tel
    av apr j.-c c.-a-d i.e e.g vs approx min max resp sq sqq cie ets etc inc ltd co jr sr mr mrs ms
    janv fevr avr juil sept oct nov dec lun mar mer jeu ven sam dim
    """.split()
)

_DETERMINERS = frozenset({"le", "la", "du", "de", "en", "au", "un", "et", "ou", "the", "in"})
# A page reference inside a citation: `p. 28`, `pp. 3-4`, `page 28`, `§ 2`.
_PAGE = re.compile(r"^(?:p{1,2}\.?|pages?|§|ch\.?|chap\.?)\s*\d[\d\s\-–]*$", re.IGNORECASE)
# `[[id]]`, `[[id|text]]`, `[id]`, `[id, p. 28]`; not `[text](url)` (a link) nor `[ ]` (a task box).
_CITATION = re.compile(r"\[\[([^\[\]|#]+)(?:[#|][^\[\]]*)?\]\]|\[([^\[\]\n]{1,200})\](?!\()")
_ID_CHARS = re.compile(r"^[\w][\w.:/@-]*$")
_OPENERS = {"(": ")", "[": "]", "«": "»", "“": "”"}
_CLOSERS = {v: k for k, v in _OPENERS.items()}
_ENDS = ".!?…:"  # a colon ends a sentence only before a capital (see `_is_boundary`)
_TRAILING = "»”\"')]*_"  # what may follow an end mark and still belong to the sentence
_LIST_MARKER = re.compile(r"[ \t]*(?:[-*+•]|\d{1,3}[.)])[ \t]+|[ \t]*#{1,6}[ \t]+|[ \t]*>[ \t]*")


@dataclass(frozen=True, slots=True)
class Sentence:
    """One sentence: `text` is `answer[start:end]`; `cited` the ids of its citations, in order."""

    text: str
    start: int
    end: int
    cited: tuple[str, ...]


def _citation_ids(inner: str) -> list[str]:
    out = []
    for part in re.split(r"[,;]", inner):
        part = part.strip().strip("`*_ ")
        if not part or _PAGE.match(part):
            continue
        if not _ID_CHARS.match(part) or len(part) > 120:
            return []  # prose in brackets ("[sic]" still passes: a missing id is judged later)
        if part.lower().endswith(".md"):
            part = part[:-3]  # `[rust.md]`: the note's file name
        out.append(part)
    return out


def citations(text: str) -> list[tuple[str, int, int]]:
    """(id, start, end) of every cited id in `text`, in order; a bracket of several ids gives several."""
    found: list[tuple[str, int, int]] = []
    for match in _CITATION.finditer(text):
        inner = match.group(1) if match.group(1) is not None else match.group(2)
        for cid in _citation_ids(inner):
            found.append((cid, match.start(), match.end()))
    return found


def strip_citations(text: str) -> str:
    """`text` with its citations replaced by blanks (offsets kept): what the sentence itself says."""

    def blank(match: re.Match[str]) -> str:
        inner = match.group(1) if match.group(1) is not None else match.group(2)
        return " " * len(match.group(0)) if _citation_ids(inner) else match.group(0)

    return _CITATION.sub(blank, text)


def _word_before(text: str, dot: int) -> str:
    start = dot
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in ".-'’"):
        start -= 1
    return text[start:dot]


def _is_boundary(text: str, mark_at: int, nxt: int) -> bool:
    """Whether the end mark at `mark_at` ends a sentence, the next visible character being at `nxt`
    (len(text) at the end of the text)."""
    if nxt >= len(text) or text[nxt] == "\n":
        return True
    follower = text[nxt]
    if follower.islower():
        return False  # "etc. et", "env. 9 millions" (digits are not lower), "... puis"
    mark = text[mark_at]
    if mark in "!?…":
        return True
    if mark == ":":
        # "En résumé : Il a..." ends a lead-in; "Il résume : « ... »" and "Rust : tokio" do not
        return follower.isupper() and mark_at > 0 and text[mark_at - 1] in " \u00a0\u202f"
    word = _word_before(text, mark_at)
    bare = fold(word.strip(".-'’"))
    if bare in _ABBREVIATIONS or "." in word.strip("."):
        return False  # "M. Quintard", "cf. Le", "c.-à-d. Le", "J.-C. Puis"
    if len(bare) == 1 and word[:1].isupper() and fold(_word_before(text, len(text[: mark_at - len(word)].rstrip()))) not in _DETERMINERS:
        return False  # an initial: "A. Quintard" (but "le C. Puis": the C language)
    return follower.isupper() or follower.isdigit() or follower in "«“\"'[(*_`/"


_BLOCK_START = re.compile(r"[ \t]*(?:$|[-*+•][ \t]|\d{1,3}[.)][ \t]|#{1,6}[ \t]|>|\||```)", re.MULTILINE)
_HEADING = re.compile(r"[ \t]*(?:#{1,6}[ \t]|\||```)")


def _line_break_ends(text: str, at: int) -> bool:
    """Whether the line break at `at` ends a sentence: before a blank line, a list item, a heading, a
    quote or a table row, or after a heading. Otherwise it is a line wrapped inside a paragraph (notes
    are often hard-wrapped) and reads as a blank."""
    if _BLOCK_START.match(text, at + 1) is not None:
        return True
    line_start = text.rfind("\n", 0, at) + 1
    return _HEADING.match(text, line_start) is not None


def _line_end(text: str, at: int) -> int:
    end = text.find("\n", at)
    return len(text) if end < 0 else end


def _skip_blanks(text: str, k: int) -> int:
    while k < len(text) and text[k] in " \t\u00a0\u202f":
        k += 1
    return k


def _spans(text: str) -> list[tuple[int, int]]:
    """Raw (start, end) pieces of `text`, cut at sentence ends and line breaks, outside brackets/quotes."""
    pieces: list[tuple[int, int]] = []
    depth: list[str] = []
    start = 0
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "\n":
            if _line_break_ends(text, i):
                pieces.append((start, i))
                depth.clear()  # a bracket never spans paragraphs: do not let one swallow the rest
                start = i + 1
            i += 1
            continue
        if depth and ch == depth[-1]:
            depth.pop()
        elif ch in _OPENERS and len(depth) < 20:
            depth.append(_OPENERS[ch])
        elif ch == '"' and text.find('"', i + 1, _line_end(text, i)) >= 0:
            depth.append('"')  # an opening straight quote, closed later on the line (popped above)
        if ch not in _ENDS or depth:
            i += 1
            continue
        j = i
        while j < n and text[j] in _ENDS:
            j += 1
        while j < n and text[j] in _TRAILING and text[j] not in "[(":
            j += 1
        k = _skip_blanks(text, j)
        if j < n and k == j and text[j] != "\n":
            i = j  # "3.11", "quintard.dev", "v1.2": no blank after the dot
            continue
        # a citation after the full stop belongs to this sentence: "... en Rust. [rust] Il ..."
        while k < n and text[k] == "[":
            match = _CITATION.match(text, k)
            if match is None or not _citation_ids(match.group(1) or match.group(2)):
                break
            j = match.end()
            if j < n and text[j] in _ENDS:
                j += 1
            k = _skip_blanks(text, j)
        if _is_boundary(text, i, k):
            pieces.append((start, j))
            start = j
        i = j
    pieces.append((start, n))
    return pieces


def split_sentences(answer: str) -> list[Sentence]:
    """The sentences of `answer`, in order, without list markers, heading marks or blanks around them."""
    out: list[Sentence] = []
    for start, end in _spans(answer):
        marker = _LIST_MARKER.match(answer, start, end)
        if marker is not None and marker.end() <= end:
            start = marker.end()
        while start < end and answer[start].isspace():
            start += 1
        while end > start and answer[end - 1].isspace():
            end -= 1
        if start >= end:
            continue
        text = answer[start:end]
        if not any(ch.isalnum() for ch in text):
            continue  # a rule, a lone bullet, "**"
        cited = tuple(dict.fromkeys(cid for cid, _, _ in citations(text)))
        if out and not strip_citations(text).strip(" .;,:*_") and cited:
            # a line holding only citations ("[rust] [python]") cites the sentence before it
            prev = out[-1]
            merged = answer[prev.start:end]
            out[-1] = Sentence(merged, prev.start, end, tuple(dict.fromkeys(prev.cited + cited)))
            continue
        out.append(Sentence(text, start, end, cited))
    return out
