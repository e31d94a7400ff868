"""Text cleaning: accents recomposed, ligatures and typographic quotes undone, for text and for matching.

Some PDF producers (TeX with its old OT1 fonts) draw an accent as a separate glyph before its letter, and
text extraction gives ``caract`eres``, ``pr´eparer``, ``mˆeme``, ``connaˆıtre``: the spacing accent is put
back on the letter that follows (NFC). A backtick is an accent only in a book that has the other separate
accents too (a LaTeX manual writes real backticks in its code). Ligature glyphs (``ﬁ``) become letters, the
typographic apostrophe an ASCII one, non-breaking spaces plain spaces.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["clean_text", "fold_for_match", "uses_spacing_accents"]

#: Spacing accents (as extracted) -> the combining mark they stand for.
_SPACING = {
    "\u00b4": "\u0301",  # ´ acute
    "\u02c6": "\u0302",  # ˆ circumflex
    "\u00a8": "\u0308",  # ¨ diaeresis
    "\u02dc": "\u0303",  # ˜ tilde
    "\u00b8": "\u0327",  # ¸ cedilla (drawn after the letter in OT1, handled below)
    "\u02c7": "\u030c",  # ˇ caron
    "`": "\u0300",  # grave: only in books that use separate accents
}
_LIGATURES = {"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st"}
_CHARS = str.maketrans(
    {
        **_LIGATURES,
        "\u2019": "'",
        "\u2018": "'",
        "\u02bc": "'",
        "\u00a0": " ",
        "\u202f": " ",
        "\u2009": " ",
        "\u200b": "",
        "\ufeff": "",
    }
)
_ACCENT_BEFORE = re.compile(r"([\u00b4\u02c6\u00a8\u02dc\u02c7`])\s?([A-Za-z\u0131])")
_ACCENT_BEFORE_NO_GRAVE = re.compile(r"([\u00b4\u02c6\u00a8\u02dc\u02c7])\s?([A-Za-z\u0131])")
_CEDILLA_AFTER = re.compile(r"([cC])\u00b8")
_SPACING_PROBE = re.compile(r"[\u00b4\u02c6][aeiouAEIOU\u0131]")


def uses_spacing_accents(sample: str) -> bool:
    """Whether a book's text shows the separate-accent pattern (``´e``, ``ˆı``) often enough to trust it."""
    return len(_SPACING_PROBE.findall(sample)) >= 5


def _compose(match: re.Match[str]) -> str:
    accent, letter = match.group(1), match.group(2)
    base = "i" if letter == "\u0131" else letter
    composed = unicodedata.normalize("NFC", base + _SPACING[accent])
    return composed if len(composed) == 1 else match.group(0)


def clean_text(text: str, spacing_accents: bool = False) -> str:
    """One line of extracted text, cleaned (see the module doc). Soft-hyphen marks are left to the caller,
    which joins lines."""
    text = text.translate(_CHARS)
    if spacing_accents:
        text = _ACCENT_BEFORE.sub(_compose, text)
        text = _CEDILLA_AFTER.sub(lambda m: "ç" if m.group(1) == "c" else "Ç", text)
    elif any(ch in text for ch in "\u00b4\u02c6\u00a8\u02dc\u02c7"):
        text = _ACCENT_BEFORE_NO_GRAVE.sub(_compose, text)
    text = unicodedata.normalize("NFC", text)
    return re.sub(r"[ \t]{2,}", " ", text)


def fold_for_match(text: str) -> str:
    """Lower-case, no accents, letters and digits only, single spaces: how outline titles meet page lines."""
    text = clean_text(text, spacing_accents=True).replace("\ufffe", "").replace("\u00ad", "")
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
    return " ".join(re.sub(r"[^\w]+", " ", stripped).split())
