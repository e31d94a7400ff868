"""Creating a note from its type's template: slug, placeholders, starter aliases and answers, a safe write.

The templates are plain Obsidian templates (core Templates plugin: ``{{title}}``, ``{{date}}``, ``{{time}}``,
``{{date:FORMAT}}``, ``{{time:FORMAT}}`` with Moment-style tokens), so the same files work inside Obsidian.
Their frontmatter quotes every placeholder so it stays valid YAML whatever Obsidian fills in. `create_note`
goes further than Obsidian can: it reads the frontmatter as YAML, fills the placeholders inside each value
(so a title with quotes or colons cannot break the YAML), then sets what a template cannot compute:

- ``slug``: the title in kebab-case, accents folded, ``c++`` -> ``cpp``, unique in the vault (``-2``, ``-3`` ...);
  a ``moc`` slug starts with ``moc-``; the file is ``<type folder>/<slug>.md``;
- ``aliases``: starter forms (lowercase title, without accents, slug with spaces, a type phrase) before the
  template's own, duplicates removed;
- ``answers``: the template's questions with the title filled in, French elision applied
  ("Parle-moi d'Inception"); `DEFAULT_ANSWERS` when the template has none;
- ``domains``/``tags``: the template's, the ``--domain``/``--tag`` given, and a domain whose slug is a word of
  the title; only values TAXONOMIE.md allows are kept;
- ``linked``: the type's MOC (`TYPE_HUBS`) when that note exists in the vault;
- ``updated``: today; ``visibility``: always ``private``, until the author has read the note and publishes it.

Templates are looked up per type, first hit wins: the folder set in ``VAULT/.obsidian/templates.json``,
``VAULT/templates``, ``VAULT/../templates`` (a repository's own, beside the vault), then the copy shipped inside this package
(``vaulttools/templates``). The write is atomic and exclusive: a temporary file in the target folder, then a
hard link to the final name (which fails if the name exists), so nothing is ever overwritten, even in a race.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError as RuamelError
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from grasbot.text import fold, fold_each, loose_name_key
from vaulttools.taxonomy import Taxonomy

__all__ = [
    "DEFAULT_ANSWERS",
    "NOTE_TYPES",
    "TYPE_HUBS",
    "AuthoringError",
    "NewNote",
    "NoteExistsError",
    "create_note",
    "existing_slugs",
    "fill_placeholders",
    "find_template",
    "format_moment",
    "normalize_type",
    "render_note",
    "slugify",
    "starter_aliases",
    "unique_slug",
    "write_new_file",
]

#: Note types `vaulttools new` knows, with the vault folder each goes to (GrasBot's layout).
NOTE_TYPES: dict[str, str] = {
    "projet": "10-Projets",
    "competence": "20-Competences",
    "parcours": "30-Parcours",
    "moc": "00-MOC",
    "technique": "50-Technique",
}

#: The MOC a new note of each type links to in `linked`, when the vault has it.
TYPE_HUBS: dict[str, str] = {
    "projet": "MOC-Projets",
    "competence": "MOC-Competences",
    "parcours": "MOC-Parcours",
    "technique": "MOC-Technique",
}

#: Questions used when a template has no `answers`; ``{title}`` is the note's title.
DEFAULT_ANSWERS: dict[str, tuple[str, ...]] = {
    "projet": ("Parle-moi de {title}", "Comment fonctionne {title} ?", "Qu'est-ce que {title} ?"),
    "competence": (
        "Quelles sont ses compétences en {title} ?",
        "A-t-il de l'expérience en {title} ?",
        "Parle-moi de son expérience en {title}",
    ),
    "parcours": ("Parle-moi de {title}", "Que peux-tu me dire sur {title} ?"),
    "moc": ("Que fait-il en {title} ?", "Quels sont ses projets en {title} ?"),
    "technique": ("Comment fonctionne {title} ?", "Explique-moi {title}"),
}

#: A short phrase a visitor may put before the subject, per type (an extra starter alias).
_TYPE_PHRASES: dict[str, str] = {"projet": "projet", "competence": "compétences", "moc": "moc"}

#: Folders never searched for existing slugs (not notes).
_SKIP_FOLDERS = frozenset({".obsidian", ".trash", "templates"})

_MAX_SLUG = 80


class AuthoringError(Exception):
    """A problem the author can fix (unknown type, bad title, broken template): one clear line."""


class NoteExistsError(AuthoringError):
    """The note's file already exists; nothing was written."""


@dataclass
class NewNote:
    """A note rendered from a template (and, after `create_note`, written)."""

    path: Path  # where it goes (or went)
    slug: str
    note_type: str
    text: str
    meta: dict[str, Any]  # the frontmatter as the engine (grasbot.read_note) reads it back
    template: str  # where the template came from, for the user
    notes: list[str] = field(default_factory=list)  # what the author still has to do / what was adjusted


# ---------------------------------------------------------------------------------------------------------
# Types, slugs and the vault's existing names


def normalize_type(name: str) -> str:
    """The known type `name` means (case and accents ignored: ``Compétence`` -> ``competence``)."""
    key = fold(name)
    if key not in NOTE_TYPES:
        raise AuthoringError(f"unknown note type {name!r}; known types: {', '.join(NOTE_TYPES)}")
    return key


_LIGATURES = {"œ": "oe", "Œ": "oe", "æ": "ae", "Æ": "ae", "ß": "ss", "ø": "o", "Ø": "o", "ł": "l", "Ł": "l", "đ": "d"}


def slugify(title: str) -> str:
    """Kebab-case: accents folded, ``c++`` -> ``cpp``, ``c#`` -> ``csharp``, ``&`` -> ``et``, other
    punctuation a hyphen; letters of non-Latin scripts are kept. Empty when nothing usable is left."""
    text = "".join(_LIGATURES.get(c, c) for c in title)
    text = fold_each(text)
    # Same mapping as the engine's tokenizer, so `c++` in a title and in a question meet.
    text = re.sub(r"(?<![\w+#])c\+\+(?![\w+])", " cpp ", text)
    text = re.sub(r"(?<![\w+#])c#(?!\w)", " csharp ", text)
    text = text.replace("&", " et ")
    text = re.sub(r"['’]", "-", text)
    slug = "".join(c if c.isalnum() else "-" for c in text)
    slug = re.sub(r"-{2,}", "-", slug).strip("-")
    if len(slug) > _MAX_SLUG:
        cut = slug[:_MAX_SLUG]
        slug = cut.rsplit("-", 1)[0] if "-" in cut else cut
    return slug


def _frontmatter_slug(path: Path) -> str | None:
    """The `slug:` of a note, read from its frontmatter lines without a YAML parser (fast, never raises)."""
    try:
        with path.open("r", encoding="utf-8", errors="replace") as handle:
            first = handle.readline()
            if first.strip().lstrip("\ufeff") != "---":
                return None
            for _ in range(500):
                line = handle.readline()
                if not line or line.strip() in ("---", "..."):
                    return None
                match = re.match(r"slug:\s*(.*?)\s*(?:#.*)?$", line.rstrip("\r\n"))
                if match:
                    value = match.group(1).strip().strip("\"'").strip()
                    return value or None
    except OSError:
        return None
    return None


def existing_slugs(vault: Path) -> dict[str, str]:
    """Every name a new note could collide with: file stems and frontmatter slugs of the vault's ``.md``
    files, casefolded (Obsidian matches names case-insensitively), mapped to the vault-relative path."""
    taken: dict[str, str] = {}
    for folder, dirs, files in os.walk(vault):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d.lower() not in _SKIP_FOLDERS)
        for name in sorted(files):
            if not name.lower().endswith(".md"):
                continue
            path = Path(folder, name)
            rel = path.relative_to(vault).as_posix()
            taken.setdefault(loose_name_key(name[:-3]), rel)
            slug = _frontmatter_slug(path)
            if slug:
                taken.setdefault(loose_name_key(slug), rel)
    return taken


def unique_slug(slug: str, taken: Iterable[str]) -> str:
    """`slug`, or `slug-2`, `slug-3` ... : the first one not in `taken` (compared casefolded)."""
    used = {t.casefold() for t in taken}
    if slug.casefold() not in used:
        return slug
    n = 2
    while f"{slug}-{n}".casefold() in used:
        n += 1
    return f"{slug}-{n}"


# ---------------------------------------------------------------------------------------------------------
# Templates and placeholders


def _obsidian_template_folder(vault: Path) -> Path | None:
    """The folder the core Templates plugin is set to use (``.obsidian/templates.json``), if any."""
    try:
        data = json.loads((vault / ".obsidian" / "templates.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    folder = data.get("folder") if isinstance(data, dict) else None
    if isinstance(folder, str) and folder.strip():
        return vault / folder.strip().strip("/")
    return None


def find_template(note_type: str, vault: Path) -> tuple[str, str]:
    """The template of `note_type`: ``(where it came from, its text)``. See the module docstring for the order."""
    name = f"{normalize_type(note_type)}.md"
    folders = [_obsidian_template_folder(vault), vault / "templates", vault.resolve().parent / "templates"]
    for folder in folders:
        if folder is None:
            continue
        candidate = folder / name
        if candidate.is_file():
            return str(candidate), _read_template(candidate)
    shipped = resources.files("vaulttools").joinpath("templates", name)
    try:
        return f"vaulttools/templates/{name} (built in)", shipped.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:  # pragma: no cover - a broken installation
        raise AuthoringError(f"no template for {note_type!r}: the built-in copy is missing ({exc})") from None


def _read_template(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise AuthoringError(f"{path}: cannot read the template: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise AuthoringError(f"{path}: the template is not valid UTF-8") from None


_MOMENT_TOKEN = re.compile(r"\[([^\]]*)\]|YYYY|YY|MM|M|DD|D|HH|H|hh|h|mm|m|ss|s|A|a")


def format_moment(fmt: str, when: _dt.datetime) -> str:
    """Format `when` with Moment.js tokens (the ones Obsidian users write): YYYY YY MM M DD D HH H hh h
    mm m ss s A a, and ``[literal]`` text. Other characters are copied as they are."""

    def token(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            return match.group(1)
        hour12 = when.hour % 12 or 12
        return {
            "YYYY": f"{when.year:04d}", "YY": f"{when.year % 100:02d}", "MM": f"{when.month:02d}",
            "M": str(when.month), "DD": f"{when.day:02d}", "D": str(when.day), "HH": f"{when.hour:02d}",
            "H": str(when.hour), "hh": f"{hour12:02d}", "h": str(hour12), "mm": f"{when.minute:02d}",
            "m": str(when.minute), "ss": f"{when.second:02d}", "s": str(when.second),
            "A": "AM" if when.hour < 12 else "PM", "a": "am" if when.hour < 12 else "pm",
        }[match.group(0)]  # fmt: skip

    return _MOMENT_TOKEN.sub(token, fmt)


_PLACEHOLDER = re.compile(r"\{\{\s*(title|date|time)\s*(?::\s*([^}]*?)\s*)?\}\}", re.IGNORECASE)
_ELIDED = re.compile(r"\b([Dd]e|[Qq]ue|[Jj]usque) $")
_VOWEL_START = re.compile(r"^[aeiouyàâäéèêëîïôöùûüœæAEIOUYÀÂÄÉÈÊËÎÏÔÖÙÛÜŒÆ]")


def fill_placeholders(text: str, title: str, now: _dt.datetime) -> str:
    """Replace Obsidian's placeholders: ``{{title}}``, ``{{date}}`` (YYYY-MM-DD), ``{{time}}`` (HH:mm),
    ``{{date:FORMAT}}``, ``{{time:FORMAT}}``. "de"/"que" before a title that starts with a vowel elide
    ("Parle-moi d'Inception"). Unknown placeholders are left as they are."""
    out: list[str] = []
    last = 0
    for match in _PLACEHOLDER.finditer(text):
        before = text[last : match.start()]
        name, fmt = match.group(1).lower(), match.group(2)
        if name == "title":
            value = title
            elided = _ELIDED.search(before)
            if elided and _VOWEL_START.match(title):
                before = before[: elided.start()] + elided.group(1)[:-1] + "'"  # de -> d', Que -> Qu'
        elif name == "date":
            value = format_moment(fmt or "YYYY-MM-DD", now)
        else:
            value = format_moment(fmt or "HH:mm", now)
        out.append(before)
        out.append(value)
        last = match.end()
    out.append(text[last:])
    return "".join(out)


def _split_frontmatter(text: str, where: str) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        raise AuthoringError(f"{where}: the template has no frontmatter (it must start with a `---` line)")
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            return "".join(lines[1:i]), "".join(lines[i + 1 :])
    raise AuthoringError(f"{where}: the template's frontmatter is not closed by a `---` line")


# Obsidian users often write `updated: {{date}}` unquoted: valid once Obsidian fills it, not before.
_BARE_PLACEHOLDER = re.compile(r"^(\s*(?:-\s+|[\w-]+:\s+))(\{\{[^{}\n]+\}\})\s*$", re.MULTILINE)


def _yaml() -> YAML:
    parser = YAML(typ="rt")
    parser.preserve_quotes = True
    parser.width = 4096  # never fold a long answer over two lines
    parser.indent(mapping=2, sequence=4, offset=2)
    return parser


def _fill_values(node: Any, title: str, now: _dt.datetime) -> Any:
    """Fill placeholders inside every string of the YAML tree, keeping each string's quoting style."""
    if isinstance(node, dict):
        for key in list(node):
            node[key] = _fill_values(node[key], title, now)
        return node
    if isinstance(node, list):
        for i, item in enumerate(node):
            node[i] = _fill_values(item, title, now)
        return node
    if isinstance(node, str):
        filled = fill_placeholders(node, title, now)
        if filled == node:
            return node
        return type(node)(filled) if type(node) is not str else DoubleQuotedScalarString(filled)
    return node


# ---------------------------------------------------------------------------------------------------------
# Building the note


def starter_aliases(title: str, slug: str, note_type: str) -> list[str]:
    """Short lowercase forms of the subject: the title, the title without accents, the slug with spaces,
    the slug, and a type phrase ("projet x", "compétences x", "moc x"). Unique, in that order."""
    lower = " ".join(title.lower().split())
    base_slug = slug[4:] if note_type == "moc" and slug.startswith("moc-") else slug
    candidates = [lower, fold(lower), base_slug.replace("-", " "), base_slug]
    phrase = _TYPE_PHRASES.get(note_type)
    if phrase and not fold(lower).startswith(fold(phrase)):
        candidates.append(f"{phrase} {lower}")
    return _unique(c for c in candidates if c.strip())


def _unique(items: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        key = " ".join(item.casefold().split())
        if key and key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _as_list(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value if v is not None and str(v).strip()]
    if isinstance(value, str) and value.strip():
        return [value]
    return []


def _vocabulary_filter(
    taxonomy: Taxonomy | None, key: str, values: list[str], explicit: Sequence[str], notes: list[str]
) -> list[str]:
    """Keep the values TAXONOMIE.md allows; an explicit value of a closed list that it does not allow is an error.

    An explicit value is first written as lint would have it: the listed value it equals up to case,
    accents, `#` and blanks (`--domain Énergie` is `energie`), and a tag as `tag-format` writes one
    (`--tag "#Rust"` is `rust`), so that a new note does not start with a finding its command could avoid."""
    from vaulttools.lint.rules import did_you_mean
    from vaulttools.lint.rules.vocabulary import normal_tag, vocab_key

    vocabulary = taxonomy.vocabulary(key) if taxonomy else None
    listed = {} if vocabulary is None else {vocab_key(v): v for v in vocabulary.values}
    explicit_set = set(explicit)
    written: list[str] = []
    for value in values:
        if value in explicit_set:
            value = listed.get(vocab_key(value)) or (normal_tag(value) if key == "tags" else value.strip())
        written.append(value)
    explicit = [listed.get(vocab_key(v)) or (normal_tag(v) if key == "tags" else v.strip()) for v in explicit]
    if vocabulary is None:
        return _unique(written)
    kept: list[str] = []
    for value in _unique(written):
        if vocabulary.allows(value):
            kept.append(value)
        elif value in explicit and vocabulary.closed:
            guess = did_you_mean(value, vocabulary.values)
            hint = f"did you mean {guess!r}? " if guess else ""
            raise AuthoringError(
                f"{key} {value!r} is not in {taxonomy.path} (closed list); {hint}allowed: {', '.join(vocabulary.values)}"
            )
        elif value in explicit:
            kept.append(value)
            notes.append(f"{key}: {value!r} is not listed in {taxonomy.path}; add it there (lint will warn)")
        else:
            notes.append(f"{key}: dropped the template's {value!r}, which {taxonomy.path} does not list")
    return kept


def render_note(
    note_type: str,
    title: str,
    vault: str | Path,
    *,
    now: _dt.datetime | None = None,
    taxonomy: Taxonomy | None = None,
    slug: str | None = None,
    domains: Sequence[str] = (),
    tags: Sequence[str] = (),
) -> NewNote:
    """Build the note (nothing is written). `slug` forces the slug (it must be free in the vault)."""
    vault = Path(vault)
    note_type = normalize_type(note_type)
    if "\n" in title or "\r" in title:
        raise AuthoringError("the title must be a single line")
    title = " ".join(title.split())
    if not title:
        raise AuthoringError("the title is empty")
    now = now or _dt.datetime.now()
    notes: list[str] = []

    taken = existing_slugs(vault)
    final_slug = _choose_slug(vault, note_type, title, slug, taken, notes)
    path = vault / _type_folder(vault, note_type) / f"{final_slug}.md"
    where, template = find_template(note_type, vault)
    meta, body, parser = _template_meta(template, where, title, now)

    meta["title"] = DoubleQuotedScalarString(title)
    meta["slug"] = DoubleQuotedScalarString(final_slug)
    meta["type"] = note_type
    if "source" not in meta:
        meta["source"] = "manual"

    # Domains: the template's, the ones asked for, else a domain whose slug is a word of the title.
    wanted_domains = [*_as_list(meta.get("domains")), *domains]
    vocabulary = taxonomy.vocabulary("domains") if taxonomy else None
    if not domains and vocabulary is not None:
        words = set(final_slug.split("-"))
        guessed = [d for d in vocabulary.values if d in words and d not in wanted_domains]
        if guessed:
            notes.append(f"domains: guessed {', '.join(guessed)} from the title; check them")
        wanted_domains += guessed
    meta["domains"] = _seq(_vocabulary_filter(taxonomy, "domains", wanted_domains, domains, notes))
    meta["tags"] = _seq(_vocabulary_filter(taxonomy, "tags", [*_as_list(meta.get("tags")), *tags], tags, notes))

    # Starters come from the slug the title gives, not from a `-2` made to keep it unique.
    alias_slug = slugify(title) or final_slug
    if note_type == "moc" and not alias_slug.startswith("moc-"):
        alias_slug = f"moc-{alias_slug}"
    aliases = [*starter_aliases(title, alias_slug, note_type), *_as_list(meta.get("aliases"))]
    meta["aliases"] = _seq(_unique(aliases), quoted=True)
    answers = _as_list(meta.get("answers")) or [
        fill_placeholders(a.replace("{title}", "{{title}}"), title, now) for a in DEFAULT_ANSWERS[note_type]
    ]
    meta["answers"] = _seq(_unique(answers), quoted=True)

    priority = meta.get("priority")
    bounds = taxonomy.ranges.get("priority") if taxonomy else None
    if isinstance(priority, int) and not isinstance(priority, bool) and bounds and not bounds.allows(priority):
        clamped = priority
        if bounds.min is not None:
            clamped = max(clamped, bounds.min)
        if bounds.max is not None:
            clamped = min(clamped, bounds.max)
        notes.append(f"priority: the template's {priority} is outside {bounds.describe()}; set to {clamped}")
        meta["priority"] = clamped

    linked = _as_list(meta.get("linked"))
    hub = TYPE_HUBS.get(note_type)
    if hub and hub.casefold() in taken:  # only a hub that exists: a broken link would be a lint error
        linked.append(f"[[{Path(taken[hub.casefold()]).stem}]]")
    meta["linked"] = _seq(_unique(linked), quoted=True)
    meta["related"] = _seq(_unique(_as_list(meta.get("related"))), quoted=True)
    meta["updated"] = now.date()
    meta["visibility"] = "private"  # always: the author publishes a note once it has been read

    buffer = io.StringIO()
    parser.dump(meta, buffer)
    text = f"---\n{buffer.getvalue()}---\n{fill_placeholders(body, title, now)}"
    if not text.endswith("\n"):
        text += "\n"
    parsed = _check_parses(text, path.relative_to(vault).as_posix(), where)
    notes.extend(_what_to_fill(parsed, taxonomy))
    return NewNote(path=path, slug=final_slug, note_type=note_type, text=text, meta=parsed, template=where, notes=notes)


def _choose_slug(
    vault: Path, note_type: str, title: str, slug: str | None, taken: dict[str, str], notes: list[str]
) -> str:
    """The given slug if it is kebab-case and free, else the title's, made unique."""
    if slug is not None:
        wanted = slug.strip()
        if slugify(wanted) != wanted:
            raise AuthoringError(f"--slug {slug!r} is not kebab-case; try {slugify(wanted)!r}")
        used_by = taken.get(wanted.casefold())
        if used_by is not None:
            if used_by.casefold() == f"{_type_folder(vault, note_type)}/{wanted}.md".casefold():
                raise NoteExistsError(f"{vault / used_by} already exists; not overwriting it (choose another --slug)")
            raise NoteExistsError(f"slug {wanted!r} is already used by {used_by}; nothing written")
        return wanted
    base = slugify(title)
    if not base:
        raise AuthoringError(f"cannot make a slug from the title {title!r}; pass one with --slug")
    if note_type == "moc" and not base.startswith("moc-") and base != "moc":
        base = f"moc-{base}"
    final = unique_slug(base, taken)
    if final != base:
        notes.append(f"slug {base!r} is already used by {taken[base.casefold()]}; this note is {final!r}")
    return final


def _template_meta(template: str, where: str, title: str, now: _dt.datetime) -> tuple[CommentedMap, str, YAML]:
    """The template's frontmatter as an editable YAML tree (comments kept, placeholders filled), its body,
    and the YAML instance to write it back with."""
    head, body = _split_frontmatter(template, where)
    head = _BARE_PLACEHOLDER.sub(lambda m: f'{m.group(1)}"{m.group(2)}"', head)
    parser = _yaml()
    try:
        meta = parser.load(head) if head.strip() else CommentedMap()
    except RuamelError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 2}" if mark is not None else ""
        raise AuthoringError(
            f"{where}:{line}: the template's frontmatter is not valid YAML; quote the placeholders, "
            'e.g. updated: "{{date:YYYY-MM-DD}}"'
        ) from None
    if not isinstance(meta, CommentedMap):
        raise AuthoringError(f"{where}: the template's frontmatter is not a mapping of fields")
    _fill_values(meta, title, now)
    return meta, body, parser


def _seq(items: Sequence[str], quoted: bool = False) -> CommentedSeq:
    """A YAML list: `[]` when empty, else one item a line. Items are double-quoted when asked, and always
    when a YAML 1.1 reader would not read them back as the same string (`no`, `2024`, `null`, `a: b`)."""
    seq = CommentedSeq(DoubleQuotedScalarString(i) if quoted or not _reads_back(i) else i for i in items)
    if not items:
        seq.fa.set_flow_style()
    return seq


def _reads_back(item: str) -> bool:
    try:
        return yaml.safe_load(f"- {item}") == [item]
    except yaml.YAMLError:
        return False


def _type_folder(vault: Path, note_type: str) -> str:
    """The type's folder as the vault spells it (``10-projets`` counts), else the standard name."""
    wanted = NOTE_TYPES[note_type]
    try:
        for entry in sorted(vault.iterdir()):
            if entry.is_dir() and entry.name.casefold() == wanted.casefold():
                return entry.name
    except OSError:
        pass
    return wanted


def _check_parses(text: str, rel: str, where: str) -> dict[str, Any]:
    """The note must load without a problem in the engine, and its frontmatter read back as the same
    mapping with PyYAML (YAML 1.1, as most other tools read it: `no` or `2024-01-01` must stay strings)."""
    try:
        from grasbot import read_note
    except ImportError:  # pragma: no cover - an engine without the single-file reader
        read_note = None
    head = text.split("\n---\n", 1)[0][4:]
    try:
        meta = yaml.safe_load(head)
    except yaml.YAMLError as exc:  # pragma: no cover - would be a bug in the rendering above
        raise AuthoringError(f"{where}: the rendered frontmatter does not parse: {exc}") from None
    if not isinstance(meta, dict):  # pragma: no cover
        raise AuthoringError(f"{where}: the rendered frontmatter is not a mapping")
    if read_note is not None:
        note = read_note(rel, text.encode("utf-8"))
        if note.problems:
            problem = note.problems[0]
            raise AuthoringError(f"{where}: the new note would not load: line {problem.line}: {problem.message}")
        return dict(note.meta)
    return meta


def _what_to_fill(meta: dict[str, Any], taxonomy: Taxonomy | None) -> list[str]:
    """What the author still has to do before the note passes lint and can be published."""
    todo: list[str] = []
    if taxonomy is None:
        return ["no TAXONOMIE.md found: domains and tags are not checked"]
    for key, bounds in sorted(taxonomy.counts.items()):
        count = len(_as_list(meta.get(key)))
        if not bounds.allows(count):
            line = f"{key}: {count} now, {taxonomy.path.name} asks {bounds.describe()}"
            vocabulary = taxonomy.vocabulary(key)
            if vocabulary is not None and bounds.min is not None and count < bounds.min:
                line += f"; choose from: {', '.join(vocabulary.values)}"
            todo.append(line)
    for key in taxonomy.required:
        if meta.get(key) in (None, "", []):
            todo.append(f"{key}: required by {taxonomy.path.name}")
    return todo


# ---------------------------------------------------------------------------------------------------------
# Writing


def write_new_file(path: Path, text: str) -> None:
    """Write `text` to `path` atomically, never replacing an existing file (NoteExistsError if it exists).

    The content goes to a temporary file in the same folder first; linking it to the final name is atomic
    and fails if the name exists, so readers never see half a note and a concurrent writer cannot be
    overwritten. Where hard links are not supported, the name is reserved with O_CREAT|O_EXCL and the
    temporary file renamed over that empty reservation.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        raise NoteExistsError(f"{path} already exists; not overwriting it")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise NoteExistsError(f"{path} already exists; not overwriting it") from None
        except OSError:
            try:
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            except FileExistsError:
                raise NoteExistsError(f"{path} already exists; not overwriting it") from None
            os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def create_note(
    note_type: str,
    title: str,
    vault: str | Path,
    *,
    now: _dt.datetime | None = None,
    taxonomy: Taxonomy | None = None,
    slug: str | None = None,
    domains: Sequence[str] = (),
    tags: Sequence[str] = (),
) -> NewNote:
    """Render the note (see `render_note`) and write it; NoteExistsError if its file exists."""
    vault = Path(vault)
    if not vault.is_dir():
        raise AuthoringError(f"vault not found: {vault}")
    note = render_note(note_type, title, vault, now=now, taxonomy=taxonomy, slug=slug, domains=domains, tags=tags)
    write_new_file(note.path, note.text)
    return note
