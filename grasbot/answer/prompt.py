"""The prompt sent to the model (docs/architecture.md, "The way of a question"): system rules, the retrieved notes, the short history, the question.

Two modes. Grounded: the notes planned by `grasbot.answer.context.plan_context` go in (the first whole, weaker
secondary ones cut at a paragraph boundary) and the cut ones are named so the model can say an answer may be
incomplete. Ungrounded: no note is a credible source, the model is told so and must not invent facts.

Privacy is enforced here a second time, whatever the retrieval engine returned: a private note never enters
a prompt, nor does a note whose frontmatter could not be parsed when its raw text names a non-public
`visibility` (the engine's fail-closed rule, repeated), and links to such notes are removed from the public
bodies that do enter.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from grasbot.answer.context import (
    SECONDARY_KEEP_RATIO,
    SECONDARY_MAX_CHARS,
    ContextNote,
    passage_label,
    plain_page_markers,
    plan_context,
)
from grasbot.answer.conversation import Turn
from grasbot.answer.profile import Profile, shipped
from grasbot.answer.verify_sentences import ABSTENTION
from grasbot.markdown.frontmatter import LineIndex
from grasbot.links import parse_body
from grasbot.model import LinkKind, Note, visible_to_visitors
from grasbot.search.index import Hit, SearchResult
from grasbot.text import loose_name_key

#: Problems after which nothing of the file can be served.
_NEVER_SERVED = frozenset({"binary", "unreadable"})

#: The shipped `site` profile's prompts, rendered (grasbot/answer/profiles/site.*.md: the one source of the
#: text). The service builds prompts from the active profile; these are the defaults of `build_prompt`.
SYSTEM_PROMPT = shipped("site").system_prompt

GROUNDED_INTRO = "Notes du vault retenues pour cette question, de la plus pertinente à la moins pertinente :"

#: Added for a question in the middle band of the evidence (`grasbot.answer.verify_policy`): the notes may
#: not hold the answer, and the model must say so in the one fixed sentence the verifier detects.
TENTATIVE_INSTRUCTIONS = f"""Ces notes ne contiennent peut-être pas la réponse à la question. Réponds uniquement \
à partir de ce qu'elles disent. Si elles ne contiennent pas la réponse, écris exactement « {ABSTENTION} » \
puis oriente le visiteur vers /portfolio, /competences ou /contact, sans rien ajouter d'autre."""

UNGROUNDED_INSTRUCTIONS = shipped("site").ungrounded_prompt


def is_servable(note: Note) -> bool:
    """True when the note may reach a visitor: public by the one privacy rule
    (`grasbot.model.visible_to_visitors`) and readable at all."""
    return visible_to_visitors(note) and not any(p.code in _NEVER_SERVED for p in note.problems)


@dataclass(frozen=True, slots=True)
class TruncatedNote:
    slug: str
    score: float
    original_chars: int
    kept_chars: int

    def as_dict(self) -> dict[str, Any]:
        return {"slug": self.slug, "score": round(self.score, 2), "original_chars": self.original_chars, "kept_chars": self.kept_chars}


@dataclass(frozen=True, slots=True)
class Prompt:
    """A built prompt and what went into it (for the trace and the sources)."""

    system: str
    user: str
    history: tuple[Turn, ...]
    grounded: bool
    notes: tuple[ContextNote, ...] = ()
    truncated: tuple[TruncatedNote, ...] = field(default_factory=tuple)

    def messages(self) -> list[dict[str, str]]:
        """Chat messages for Ollama: system, the remembered turns, then this question with its notes."""
        out = [{"role": "system", "content": self.system}]
        for turn in self.history:
            out.append({"role": "user", "content": turn.question})
            out.append({"role": "assistant", "content": turn.answer})
        out.append({"role": "user", "content": self.user})
        return out

    @property
    def size(self) -> dict[str, int]:
        return {
            "system_chars": len(self.system),
            "user_chars": len(self.user),
            "history_chars": sum(t.size for t in self.history),
        }


_WIKILINK = re.compile(r"!?\[\[([^\[\]]*?)\]\]")
_MDLINK = re.compile(r"!?\[([^\[\]]*)\]\(<?([^()<>]*)>?\)")


def _link_name(target: str) -> str:  # (for redaction by name)
    """The comparable name of a link target: no anchor, no folder, no `.md`, case-folded."""
    target = unquote(target.split("#", 1)[0].strip())
    target = target.rsplit("/", 1)[-1]
    if target.lower().endswith(".md"):
        target = target[:-3]
    return loose_name_key(target)


def hidden_names(notes: Iterable[Note]) -> frozenset[str]:
    """Folded names (file stem, slug, id) under which a hidden note could be linked."""
    names: set[str] = set()
    for note in notes:
        if is_servable(note):
            continue
        for name in (note.stem, note.slug, note.id):
            if name:
                names.add(loose_name_key(name))
    return frozenset(names)


def unservable_notes(vault: Any) -> list[Note]:
    """The notes of `vault` that `is_servable` refuses, in path order, without reading every note's fields:
    the private ones from the vault's `hidden_paths()` (computed once per state of the vault, and kept in
    the persistent snapshot), the unreadable ones from their problems. The same notes as
    `[n for n in vault.notes.values() if not is_servable(n)]` (tests/test_snapshot.py compares them), but a
    vault started from the snapshot does not decode the fields of 10k notes to find them."""
    hidden = vault.hidden_paths()
    return [
        note for path, note in vault.notes.items()
        if path in hidden or (note.problems and any(p.code in _NEVER_SERVED for p in note.problems))
    ]  # fmt: skip


class HiddenLinks(frozenset):  # type: ignore[type-arg]
    """`hidden_names` of a vault's notes, with the vault: links are then redacted by where they *resolve*
    (`Vault.visitor_text`), not by name, when the note they are written in is known. A private note named
    like a public one then no longer cuts the links to the public one. Still a set of folded names for the
    callers that test a bare name (an id, a slug) against the hidden ones."""

    vault: Any

    def __new__(cls, vault: Any) -> HiddenLinks:
        self = super().__new__(cls, hidden_names(unservable_notes(vault)))
        self.vault = vault
        return self

    def __reduce__(self) -> Any:  # (a frozenset subclass with an attribute: copy and pickle it whole)
        return (HiddenLinks, (self.vault,))


def hidden_links(vault: Any) -> HiddenLinks:
    """What `build_prompt(hidden=...)` and `redact_hidden_links` need to redact by resolution in `vault`."""
    return HiddenLinks(vault)


def redact_hidden_links(text: str, hidden: Collection[str], source: str | None = None) -> str:
    """`text` with every link to a hidden note removed (link text included).

    With `hidden` from `hidden_links(vault)` and the `source` note the text is written in, by resolution
    (`grasbot.vault.Vault.visitor_text`, the same function the search index reads bodies through). Else by
    name, in two passes: the vault's own link parser (`grasbot.links.parse_body`), which knows every form
    the resolver follows (a title after the target, `<...>` with parentheses, brackets in the text, HTML
    anchors, reference definitions, `obsidian://open` URIs); then a plain pattern, which also takes the
    `[[name]]` written as text inside code."""
    if isinstance(hidden, HiddenLinks) and source is not None and source in hidden.vault.notes:
        return hidden.vault.visitor_text(text, source)
    if not hidden or ("[" not in text and "<" not in text):  # (every link form opens with `[` or `<a`)
        return text
    links = parse_body(text, 1)[0]
    cut = [link.span for link in links if link.kind is not LinkKind.FRONTMATTER and _link_name(link.target) in hidden]
    if cut:
        starts = LineIndex(text).starts  # (spans are lines and columns: back to offsets)
        pieces: list[str] = []
        last = 0
        for span in cut:
            start = starts[span.line - 1] + span.column - 1
            end = starts[span.end_line - 1] + span.end_column - 1
            pieces.append(text[last:start])
            last = end
        pieces.append(text[last:])
        text = "".join(pieces)

    def wiki(match: re.Match[str]) -> str:
        inner = match.group(1).replace("\\|", "|")
        target = inner.split("|", 1)[0]
        return "" if target and _link_name(target) in hidden else match.group(0)

    def markdown(match: re.Match[str]) -> str:
        return "" if _link_name(match.group(2)) in hidden else match.group(0)

    return _MDLINK.sub(markdown, _WIKILINK.sub(wiki, text))


def servable_hits(hits: Sequence[Hit]) -> list[Hit]:
    return [h for h in hits if is_servable(h.note)]


def profile_prompts(profile: Profile | None, system: str | None = None, ungrounded: str | None = None) -> tuple[str, str]:
    """(system prompt, ungrounded instructions): `profile`'s (the shipped `site` one when None), each
    replaced by `system` / `ungrounded` when given."""
    if profile is None:
        base_system, base_ungrounded = SYSTEM_PROMPT, UNGROUNDED_INSTRUCTIONS
    else:
        base_system, base_ungrounded = profile.system_prompt, profile.ungrounded_prompt
    return (system if system is not None else base_system, ungrounded if ungrounded is not None else base_ungrounded)


def _note_header(rank: int, item: ContextNote, hidden: Collection[str], label_fields: Sequence[str] = ()) -> str:
    note = item.hit.note
    parts = [f"type : {note.type or 'non précisé'}"]
    if note.updated:
        parts.append(f"mis à jour : {note.updated.isoformat()}")
    # a passage of a book says where it is: [Classe 10 | § 13 | p. 27–28] (docs/pdf-import.md)
    label = passage_label(note, label_fields)
    title = redact_hidden_links(note.title, hidden, note.path) + (f" {label}" if label else "")
    header = f"### {rank}. [{item.hit.id}] {title} ({', '.join(parts)})"
    if item.truncated:
        header += f"\n(note tronquée : seuls les {len(item.text)} premiers caractères sur {item.full_length} sont fournis)"
    return header


def build_prompt(
    question: str,
    result: SearchResult,
    history: Sequence[Turn] = (),
    *,
    keep_ratio: float = SECONDARY_KEEP_RATIO,
    max_chars: int = SECONDARY_MAX_CHARS,
    hidden: Collection[str] = frozenset(),
    system: str | None = None,
    ungrounded: str | None = None,
    profile: Profile | None = None,
    context: Sequence[ContextNote] | None = None,
    label_fields: Sequence[str] = (),
    tentative: bool = False,
) -> Prompt:
    """The prompt for `question` given the retrieval `result` and the session's remembered turns.

    `hidden` are the notes that must not be mentioned: `hidden_links(vault)` (links cut by resolution), or
    their names (`hidden_names`: links cut by name). `context`: the notes as the retrieval pipeline planned
    them (`grasbot.answer.pipeline.Retrieval.context`, planned with the same limits and `hidden`); planned
    here when not given. `label_fields`: the fields shown in each passage's label beside its section and
    pages (the filterable ones, `classe`). `tentative`: the retrieval did not ground the question but its evidence is
    above the floor (the middle band of `grasbot.answer.verify_policy`): the notes go in, with
    `TENTATIVE_INSTRUCTIONS`.

    The system prompt and the ungrounded instructions are `profile`'s (grasbot/answer/profile.py; default
    the shipped `site` one); `system` and `ungrounded`, when given, replace them (the service passes the
    system prompt it fetched from Langfuse Prompts, grasbot/service/prompts.py).
    """
    system, ungrounded = profile_prompts(profile, system, ungrounded)
    hits = servable_hits(result.hits)
    grounded = bool((result.grounded or tentative) and hits)
    if not grounded:
        user = f"{ungrounded}\n\nQuestion du visiteur : {question}"
        return Prompt(system, user, tuple(history), False)

    # links to hidden notes go before the cut: a cut inside one would leave half of it, unrecognisable
    planned = list(context) if context is not None else plan_context(
        hits, keep_ratio=keep_ratio, max_chars=max_chars,
        text_of=lambda note: redact_hidden_links(note.reader_body, hidden, note.path),
    )
    blocks = [GROUNDED_INTRO, ""]
    for rank, item in enumerate(planned, start=1):
        blocks.append(_note_header(rank, item, hidden, label_fields))
        blocks.append(plain_page_markers(item.text) if item.text else "(note sans contenu)")
        blocks.append("")
    truncated = tuple(
        TruncatedNote(c.hit.id, c.hit.score, c.full_length, len(c.text)) for c in planned if c.truncated
    )
    if truncated:
        names = ", ".join(f"[{t.slug}]" for t in truncated)
        blocks.append(f"Notes tronquées (extraits seulement) : {names}.")
        blocks.append("")
    if tentative and not result.grounded:
        blocks.append(TENTATIVE_INSTRUCTIONS)
        blocks.append("")
    blocks.append(f"Question du visiteur : {question}")
    return Prompt(system, "\n".join(blocks), tuple(history), True, tuple(planned), truncated)
