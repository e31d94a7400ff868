"""Answering profiles: who the bot is for a given vault (docs/service.md, "Answering profiles").

A profile holds the system prompt and its ungrounded variant, the generation options, the citation style, the
site's pointers and the answer language. Two ship with GrasBot, in `grasbot/answer/profiles/`:

- `site` (the default): GrasBot on a personal site, answering visitors about its author, citing `[slug]`,
  pointing to /portfolio, /competences, /contact;
- `textbook`: a school's bot answering pupils strictly from a book, citing `[slug, p. 28]`, temperature 0.1.

A vault may hold its own in `.grasbot/profile.toml` (a hidden folder: Obsidian and the loader skip it), which
starts from a shipped profile (`extends`, default `site`) and overrides what it names; prompts live in files
beside it. `GRASBOT_PROFILE=NAME` picks the vault's profile (by its `name`) or a shipped one.

Prompts are text with `{placeholders}`: `{citation}` (how to cite, from the citation style) and `{pointers}`
(the site's pointers, as a sentence) — `{{` and `}}` for literal braces. Each prompt must hold the placeholders it
needs (the system prompt `{citation}`, the ungrounded one `{pointers}` when the profile has pointers) and no
other: `load_profile` raises `ProfileError` naming the file, the line and the key otherwise, and `vaulttools lint`
reports the same.
"""

from __future__ import annotations

import difflib
import hashlib
import string
import tomllib
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["PROFILE_FILE", "Pointer", "Profile", "ProfileError", "SHIPPED", "load_profile", "profile_problems", "shipped"]

#: Where a vault keeps its profile, relative to the vault folder.
PROFILE_FILE = Path(".grasbot") / "profile.toml"
SHIPPED = ("site", "textbook")
CITATION_STYLES = ("slug", "page")
_PLACEHOLDERS = frozenset({"citation", "pointers"})
_KEYS = {
    "name": str,
    "extends": str,
    "description": str,
    "language": str,
    "citation": str,
    "temperature": (int, float),
    "max_tokens": int,
    "system_prompt_file": str,
    "ungrounded_prompt_file": str,
    "system_prompt": str,
    "ungrounded_prompt": str,
    "pointers": list,
}
#: Bounds on what a profile file may hold (it is read at every start and reload).
_MAX_FILE_BYTES = 256 * 1024


class ProfileError(ValueError):
    """A profile that cannot be used. `path`, `line` and `column` say where (line 0: the whole file)."""

    def __init__(self, path: str, message: str, line: int = 0, column: int = 0) -> None:
        self.path, self.line, self.column, self.message = path, line, column, message
        where = f"{path}:{line}:{column}" if line else path
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True, slots=True)
class Pointer:
    path: str  # e.g. /portfolio
    label: str  # e.g. "les projets"


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    description: str
    language: str
    citation: str  # "slug" or "page"
    temperature: float | None  # None: the service's setting
    max_tokens: int | None
    system_template: str
    ungrounded_template: str
    pointers: tuple[Pointer, ...] = ()
    #: where it came from: "shipped:<name>" or the profile file's path
    origin: str = ""
    #: files it was read from (the service reloads the profile when one changes)
    files: tuple[str, ...] = field(default_factory=tuple)

    @property
    def citation_instruction(self) -> str:
        if self.citation == "page":
            return (
                "Cite tes sources entre crochets avec le slug de la note et la page imprimée du passage, "
                "par exemple [chapitre-2-section-3, p. 28]. Ne cite que des notes qui te sont fournies."
            )
        return "Cite tes sources entre crochets avec le slug de la note, par exemple [push-swap] ou [ia]. Ne cite que des notes qui te sont fournies."

    @property
    def pointers_sentence(self) -> str:
        return ", ".join(f"{p.path} pour {p.label}" for p in self.pointers)

    def _render(self, template: str) -> str:
        return template.format(citation=self.citation_instruction, pointers=self.pointers_sentence)

    @property
    def system_prompt(self) -> str:
        return self._render(self.system_template)

    @property
    def ungrounded_prompt(self) -> str:
        return self._render(self.ungrounded_template)

    @property
    def version(self) -> str:
        """A short digest of everything the model is given from this profile (for traces and /health)."""
        h = hashlib.blake2b(digest_size=6)
        for part in (self.system_prompt, self.ungrounded_prompt, repr((self.temperature, self.max_tokens, self.citation))):
            h.update(part.encode() + b"\0")
        return h.hexdigest()

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "origin": self.origin if self.origin.startswith("shipped:") else "vault",
            "version": self.version,
            "citation": self.citation,
            "language": self.language,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }


def _shipped_text(name: str) -> str:
    return resources.files("grasbot.answer").joinpath("profiles", name).read_text(encoding="utf-8")


def shipped(name: str) -> Profile:
    """A profile that ships with GrasBot."""
    if name not in SHIPPED:
        raise ProfileError(f"profile {name!r}", f"no shipped profile of that name{_did_you_mean(name, SHIPPED)}; shipped: {', '.join(SHIPPED)}")
    where = f"grasbot/answer/profiles/{name}.toml"
    data = _parse(_shipped_text(f"{name}.toml"), where)
    base = Profile(name, "", "fr", "slug", None, None, "", "", origin=f"shipped:{name}")
    return _apply(base, data, where, lambda rel: (_shipped_text(rel), f"grasbot/answer/profiles/{rel}"))


def load_profile(vault_dir: str | Path, name: str | None = None) -> Profile:
    """The profile for `vault_dir`: `name` (GRASBOT_PROFILE) when given, the vault's own, else `site`."""
    file = Path(vault_dir) / PROFILE_FILE
    vault_profile = _from_file(file) if file.is_file() else None
    if name is None or not name.strip():
        return vault_profile or shipped("site")
    name = name.strip()
    if vault_profile is not None and vault_profile.name == name:
        return vault_profile
    if name in SHIPPED:
        return shipped(name)
    known = [*SHIPPED, *([vault_profile.name] if vault_profile else [])]
    raise ProfileError(f"GRASBOT_PROFILE={name}", f"no profile of that name{_did_you_mean(name, known)}; known: {', '.join(known)}")


def profile_problems(vault_dir: str | Path) -> list[ProfileError]:
    """What is wrong with the vault's profile file (empty when it has none or it is right): for lint."""
    file = Path(vault_dir) / PROFILE_FILE
    if not file.is_file():
        return []
    try:
        _from_file(file)
    except ProfileError as exc:
        return [exc]
    return []


def _from_file(file: Path) -> Profile:
    where = file.as_posix()
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise ProfileError(where, f"cannot be read: {exc.strerror or exc}") from None
    if len(raw) > _MAX_FILE_BYTES:
        raise ProfileError(where, f"too large ({len(raw)} bytes; at most {_MAX_FILE_BYTES})")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProfileError(where, f"not UTF-8 (byte {exc.start})") from None
    data = _parse(text, where)
    extends = data.get("extends", "site")
    if not isinstance(extends, str) or extends not in SHIPPED:
        raise ProfileError(where, f"`extends` must name a shipped profile ({', '.join(SHIPPED)}){_did_you_mean(str(extends), SHIPPED)}", *_line_of(text, "extends"))
    base = replace(shipped(extends), origin=where, files=(where,))
    if "name" not in data:
        base = replace(base, name="vault")

    def read(rel: str) -> tuple[str, str]:
        path = (file.parent / rel).resolve()
        if file.parent.resolve() not in path.parents:
            raise ProfileError(where, f"prompt file {rel!r} is outside {file.parent.as_posix()}", *_line_of(text, rel))
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ProfileError(where, f"prompt file {rel!r} cannot be read: {exc.strerror or exc}", *_line_of(text, rel)) from None
        if len(data) > _MAX_FILE_BYTES:
            raise ProfileError(path.as_posix(), f"too large ({len(data)} bytes; at most {_MAX_FILE_BYTES})")
        try:
            return data.decode("utf-8"), path.as_posix()
        except UnicodeDecodeError as exc:
            raise ProfileError(path.as_posix(), f"not UTF-8 (byte {exc.start})") from None

    return _apply(base, data, where, read, text)


def _parse(text: str, where: str) -> dict[str, Any]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib says "... (at line 3, column 7)": keep its words, put the place where tools expect it
        message = str(exc)
        line = column = 0
        if "(at line " in message:
            head, _, tail = message.rpartition(" (at line ")
            try:
                line_s, _, col_s = tail.rstrip(")").partition(", column ")
                line, column, message = int(line_s), int(col_s), head
            except ValueError:
                pass
        raise ProfileError(where, f"not valid TOML: {message}", line, column) from None
    for key, value in data.items():
        if key not in _KEYS:
            raise ProfileError(where, f"unknown key `{key}`{_did_you_mean(key, _KEYS)}", *_line_of(text, key))
        expected = _KEYS[key]
        if not isinstance(value, expected) or isinstance(value, bool):
            kind = expected.__name__ if isinstance(expected, type) else "number"
            raise ProfileError(where, f"`{key}` must be a {kind}", *_line_of(text, key))
    return data


def _apply(base: Profile, data: dict[str, Any], where: str, read: Any, text: str = "") -> Profile:
    changes: dict[str, Any] = {}
    files = list(base.files)
    for key in ("name", "description", "language"):
        if key in data:
            changes[key] = data[key].strip()
    if "citation" in data:
        if data["citation"] not in CITATION_STYLES:
            raise ProfileError(where, f"`citation` must be one of {', '.join(CITATION_STYLES)}", *_line_of(text, "citation"))
        changes["citation"] = data["citation"]
    if "temperature" in data:
        t = float(data["temperature"])
        if not 0.0 <= t <= 2.0:
            raise ProfileError(where, "`temperature` must be between 0 and 2", *_line_of(text, "temperature"))
        changes["temperature"] = t
    if "max_tokens" in data:
        if not 1 <= data["max_tokens"] <= 32768:
            raise ProfileError(where, "`max_tokens` must be between 1 and 32768", *_line_of(text, "max_tokens"))
        changes["max_tokens"] = data["max_tokens"]
    if "pointers" in data:
        pointers = []
        for item in data["pointers"]:
            if not isinstance(item, dict) or set(item) != {"path", "label"} or not all(isinstance(v, str) for v in item.values()):
                raise ProfileError(where, "each of `pointers` is a table with a `path` and a `label` (strings)", *_line_of(text, "pointers"))
            pointers.append(Pointer(item["path"].strip(), item["label"].strip()))
        changes["pointers"] = tuple(pointers)
    for kind in ("system", "ungrounded"):
        inline, file_key = f"{kind}_prompt", f"{kind}_prompt_file"
        if inline in data and file_key in data:
            raise ProfileError(where, f"give `{inline}` or `{file_key}`, not both", *_line_of(text, file_key))
        if inline in data:
            changes[f"{kind}_template"] = data[inline]
        elif file_key in data:
            body, origin = read(data[file_key])
            changes[f"{kind}_template"] = body.strip("\n")
            files.append(origin)
    profile = replace(base, files=tuple(files), **changes)
    _check_placeholders(profile.system_template, where, "system prompt", required={"citation"}, text=text)
    _check_placeholders(
        profile.ungrounded_template, where, "ungrounded prompt", required={"pointers"} if profile.pointers else set(), text=text
    )
    return profile


def _check_placeholders(template: str, where: str, what: str, required: set[str], text: str) -> None:
    found: set[str] = set()
    try:
        for _, name, spec, conversion in string.Formatter().parse(template):
            if name is None:
                continue
            if name not in _PLACEHOLDERS or spec or conversion:
                raise ProfileError(
                    where, f"the {what} uses an unknown placeholder {{{name}}}{_did_you_mean(name, _PLACEHOLDERS)} (known: {{citation}}, {{pointers}}; write {{{{ }}}} for a literal brace)"
                )
            found.add(name)
    except ValueError as exc:  # a lone brace
        raise ProfileError(where, f"the {what} has a stray brace ({exc}); write {{{{ or }}}} for a literal one") from None
    missing = required - found
    if missing:
        names = ", ".join(f"{{{m}}}" for m in sorted(missing))
        raise ProfileError(where, f"the {what} needs the placeholder {names}")


def _line_of(text: str, needle: str) -> tuple[int, int]:
    for number, line in enumerate(text.splitlines(), start=1):
        at = line.find(needle)
        if at >= 0 and not line.lstrip().startswith("#"):
            return number, at + 1
    return 0, 0


def _did_you_mean(word: str, known: Any) -> str:
    close = difflib.get_close_matches(word, list(known), n=1)
    return f" (did you mean `{close[0]}`?)" if close else ""
