"""The link rules, on the vault engine's own resolutions (a broken link here is exactly one the bot cannot
follow): broken-link, broken-anchor, ambiguous-link, private-link. One pass (`vault_pass`) goes over the links
that may have a finding and hands each to the rules that are on; each rule decides and reports.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator

from grasbot import LinkStatus, Note, Resolution, privacy_reason
from grasbot import fold
from vaulttools.lint.diagnostics import Diagnostic
from vaulttools.lint.rule import ERROR, WARNING, Rule
from vaulttools.lint.rules import LintContext, make
from vaulttools.lint.view import IdentityRowsView, LintVault

BROKEN_LINK = Rule(
    "broken-link", "links", ERROR,
    "A wikilink or markdown link points to no file of the vault.",
    "The bot cannot follow it (graph expansion) and neither can a reader. The message names the likely "
    "target: the note that has this text as an alias, or the closest note name.",
    "[[MOC-3d]]", None, "[[MOC-3d]]   # did you mean [[MOC-Competences]]? (by hand)", scope="vault",
)
BROKEN_ANCHOR = Rule(
    "broken-anchor", "links", WARNING,
    "The link's note exists but the `#Heading` or `#^block-id` is not in it.",
    "The link opens the note at the top instead of the section meant.",
    "[[push-swap#Algorithme]]   # push-swap.md has no such heading", None, scope="vault",
)
AMBIGUOUS_LINK = Rule(
    "ambiguous-link", "links", WARNING,
    "Several files share the link's name; the one at the vault root, else the nearest, is used.",
    "Moving a note can silently change where the link goes. Write the path: `[[folder/Name]]`.",
    "[[index]]   # a/index.md and b/index.md", None, scope="vault",
)
PRIVATE_LINK = Rule(
    "private-link", "links", ERROR,
    "A public note links to a private one.",
    "The link shows the private note's name in public text and points the bot at a note it must never use.",
    "[[journal-perso]]   # journal-perso.md has visibility: private", None, scope="vault",
)


def _shown(res: Resolution) -> str:
    return res.link.raw.replace("\n", " ")


def _link_form(target_path: str, anchor: str | None, display: str | None) -> str:
    stem = target_path.rsplit("/", 1)[-1]
    stem = stem[:-3] if stem.lower().endswith(".md") else stem
    where = f"{stem}#{anchor}" if anchor else stem
    return f"[[{where}|{display}]]" if display else f"[[{where}]]"


def _closest_note(ctx: LintContext, target: str) -> str | None:
    names = ctx.note_names()
    key = fold(target.rsplit("/", 1)[-1].removesuffix(".md"))
    if not key:
        return None
    best = ctx.suggester("note-names", lambda: names, strictness=4).suggest(key)
    return names[best] if best else None


def _closest_file(ctx: LintContext, target: str) -> str | None:
    name = target.rsplit("/", 1)[-1]
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    if not ext:
        return None
    same_kind = {f.rsplit("/", 1)[-1]: f for f in sorted(ctx.vault.files) if f.lower().endswith("." + ext)}
    guess = ctx.suggester(f"files.{ext}", lambda: same_kind, strictness=4).suggest(name)
    return same_kind.get(guess) if guess else None


@BROKEN_LINK.check
def _broken(ctx: LintContext, note: Note, res: Resolution, source_public: bool) -> Diagnostic | None:
    if res.status is not LinkStatus.BROKEN:
        return None
    link = res.link
    target = link.target
    if res.alias_of:
        hint = (f"`{target}` is an alias of {res.alias_of}, and links do not follow aliases: write "
                f"{_link_form(res.alias_of, link.anchor, link.display or target)}")
    else:
        is_note = "." not in target.rsplit("/", 1)[-1] or target.lower().endswith(".md")
        guess = _closest_note(ctx, target) if is_note else _closest_file(ctx, target)
        if guess:
            hint = f"did you mean {guess}? Fix the target, or create the note"
        else:
            hint = "fix the target, or create the note" if is_note else "fix the path or add the file"
    return make(ctx, note, link.span, BROKEN_LINK, f"{_shown(res)}: no file named `{target}` in the vault; {hint}")


@BROKEN_ANCHOR.check
def _broken_anchor(ctx: LintContext, note: Note, res: Resolution, source_public: bool) -> Diagnostic | None:
    if res.status is not LinkStatus.BROKEN_ANCHOR:
        return None
    link = res.link
    anchor = link.anchor or ""
    target = ctx.vault.notes.get(res.target_path or "") if res.target_path else None
    target_name = res.target_path or link.target or note.path
    if target is None and not link.target:
        target = note
    # one Suggester per target note and kind, reused by every broken anchor into it (difflib's set-up per
    # call, for each of the 355 broken anchors of the 10k benchmark vault, was a tenth of a second in all)
    memo = f"anchors:{target.path}" if target is not None else ""
    if anchor.startswith("^"):
        ids = sorted(target.block_ids) if target is not None else []
        guess = ctx.suggester(memo + "#^", lambda: ids).suggest(anchor[1:]) if ids else None
        hint = f"did you mean `^{guess}`?" if guess else "add the block id `^" + anchor[1:] + "` to the paragraph meant"
        return make(ctx, note, link.span, BROKEN_ANCHOR,
                    f"{_shown(res)}: {target_name} has no block `{anchor}`; {hint}")
    headings = [h.text for h in target.headings] if target is not None else []
    last = anchor.split("#")[-1]
    guess = ctx.suggester(memo + "#", lambda: headings).suggest(last) if headings else None
    hint = f"did you mean `#{guess}`?" if guess else "link to an existing heading or remove the `#...` part"
    return make(ctx, note, link.span, BROKEN_ANCHOR,
                f"{_shown(res)}: {target_name} has no heading `{anchor}`; {hint}")


def _private_paths(vault: LintVault) -> set[str]:
    if isinstance(vault, IdentityRowsView):  # a cached vault knows visibility without building notes
        return {row[0] for row in vault.identity_rows() if row[-1]}
    hidden_paths = getattr(vault, "hidden_paths", None)  # (a Vault: once per state of the vault)
    if hidden_paths is not None:
        return set(hidden_paths())
    return {path for path, note in vault.notes.items() if note.is_private}


def _to_check(vault: LintVault, path: str, public: bool, private: set[str]) -> list[Resolution]:
    """The resolutions of the note's links that may have a finding: every link that is not plain OK (broken,
    broken anchor, ambiguous) and, from a public note, every link into a private one. The usual note has
    only plain OK links, none into a private note: `Vault.link_problems` then builds no Resolution at all
    (110k links on the 10k benchmark vault, for ~2k findings)."""
    return vault.link_problems(path, private) if public else vault.link_problems(path)


@AMBIGUOUS_LINK.check
def _ambiguous(ctx: LintContext, note: Note, res: Resolution, source_public: bool) -> Diagnostic | None:
    if res.status is not LinkStatus.AMBIGUOUS:
        return None
    others = [c for c in res.candidates if c != res.target_path]
    # (a bare name finds the file at the vault root first, wherever it is written: docs/links.md)
    path = note.path
    why = "the file at the vault root" if "/" in path and "/" not in (res.target_path or "/") else "the nearest"
    return make(ctx, note, res.link.span, AMBIGUOUS_LINK,
                f"{_shown(res)}: {len(res.candidates)} files have this name ({', '.join(res.candidates)}); "
                f"{res.target_path} is used as {why}: write the path, e.g. "
                f"[[{(res.target_path or '').removesuffix('.md')}]]"
                + (f" (or [[{others[0].removesuffix('.md')}]])" if others else ""))


@PRIVATE_LINK.check
def _private(ctx: LintContext, note: Note, res: Resolution, source_public: bool) -> Diagnostic | None:
    if res.status is not LinkStatus.OK and res.status is not LinkStatus.AMBIGUOUS:
        return None
    target = ctx.vault.notes.get(res.target_path or "")
    if not source_public or target is None or not target.is_private or target.path == note.path:
        return None
    reason = privacy_reason(target)
    why = f" ({reason})" if reason else ""
    return make(ctx, note, res.link.span, PRIVATE_LINK,
                f"{_shown(res)}: this public note links to {target.path}, which is private{why}: the "
                f"link shows its name to visitors; remove the link or make one of the notes match")


#: The order in which a link's findings are reported (ambiguous before private, as a link can have both).
_ORDER = (AMBIGUOUS_LINK, PRIVATE_LINK, BROKEN_LINK, BROKEN_ANCHOR)


def vault_pass(ctx: LintContext, paths: list[str], rules: Collection[Rule]) -> Iterator[Diagnostic]:
    """The links of the notes at `paths` that may have a finding, each handed to the rules that are on."""
    vault = ctx.vault
    notes = vault.notes
    ok = LinkStatus.OK
    checks = [rule.run for rule in _ORDER if rule in rules]
    # (links into private notes matter to private-link only: without it, the plain OK ones are not even built)
    private = _private_paths(vault) if PRIVATE_LINK in rules else set()
    for path in paths:
        note = notes.get(path)
        if note is None:
            continue
        source_public = not note.is_private
        for res in _to_check(vault, path, source_public, private):
            if res.status is ok and (not source_public or res.target_path not in private):
                continue  # the common case, kept cheap
            for check in checks:
                found = check(ctx, note, res, source_public)  # type: ignore[misc]
                if found is not None:
                    yield found
