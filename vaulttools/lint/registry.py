"""Every lint rule's metadata: its stable name, default severity, what it checks, why, an example and its fix.

This table is the single source for the SARIF rule descriptors, `docs/rules.md` (see `render_rules_markdown`)
and `--select`/`--ignore` validation. The checks themselves live in `vaulttools.lint.rules.<family>`.
"""

from __future__ import annotations

from dataclasses import dataclass

from vaulttools.lint.diagnostics import Severity

__all__ = ["ENGINE_VERSION", "Rule", "RULES", "RULE_NAMES", "get_rule", "render_rules_markdown"]

ERROR, WARNING = Severity.ERROR, Severity.WARNING

#: Bump when a rule's findings change for the same input: cached results of older versions are dropped.
#: (Here, with the rule table, so that the cache can read it without importing the rules; `engine` re-exports it.)
ENGINE_VERSION = "6"  # 3: comments hold no links, duplicate keys, Visibility, YAML 1.2 separators; 4: math blocks;
# 5: alias bombs, CR-only files, too many links, misspelt visibility keys, publish/private/nested visibility,
# privacy folders and tags, html/obsidian-URI/reference links; 6: the book rules (PDF import), inline
# `%% vaulttools-ignore %%` suppression and unused-suppression


@dataclass(frozen=True, slots=True)
class Rule:
    name: str  # stable kebab-case id
    family: str  # frontmatter | vocabulary | slugs | links | retrieval | profile | books
    severity: Severity  # default; closed/open vocabularies and the configuration may change it
    summary: str  # one line: what is wrong
    why: str  # why it matters for GrasBot / Obsidian
    example: str  # a frontmatter or body snippet that triggers it
    fix: str | None  # what `--fix` does, or None when the fix needs a human
    fixed: str | None = None  # the example after `--fix`
    needs_taxonomy: bool = False  # only active when the vault has a TAXONOMIE.md


RULES: tuple[Rule, ...] = (
    Rule(
        "frontmatter-invalid", "frontmatter", ERROR,
        "The file cannot be read as a note: YAML error, no closing `---`, not a mapping, a key written twice, "
        "YAML aliases that expand to more than 10,000 values (an alias bomb), lines ending in a lone CR, not "
        "UTF-8, UTF-16, binary; or it holds more than 20,000 links.",
        "A note whose frontmatter does not parse loses every signal (aliases, answers, domains): retrieval "
        "skips or degrades it. A key written twice keeps only its last value (Obsidian refuses such properties); "
        "a `visibility` written twice or in a frontmatter that does not parse (a CR-only file included) hides the "
        "note unless every `visibility` line says `public`. A binary or unreadable file, and a note with more "
        "links than are read, are never shown to visitors.",
        "---\ntitle: Push swap\naliases: [push swap\n---", None,
    ),
    Rule(
        "field-missing", "frontmatter", ERROR,
        "A field the taxonomy requires is absent.",
        "Retrieval scores notes on their frontmatter; a note without its `slug` or `domains` is hard to find.",
        "---\ntitle: Push swap\ntype: projet\n---   # in push-swap.md, no slug",
        "Only a missing `slug`: insert `slug: <file name>` after `title`.",
        "---\ntitle: Push swap\nslug: push-swap\ntype: projet\n---", needs_taxonomy=True,
    ),
    Rule(
        "field-type", "frontmatter", ERROR,
        "A known field has the wrong type: a string where a list is expected, text where a number is expected, "
        "a list where a string is expected.",
        "The engine reads a wrong-typed field as empty: `aliases: push swap` is one alias at best, and "
        "`priority: high` gives no boost.",
        "aliases: push swap\npriority: \"5\"",
        "Wrap a lone scalar in a list (keeping its quotes); turn a quoted whole number into a number.",
        "aliases: [push swap]\npriority: 5",
    ),
    Rule(
        "type-value", "vocabulary", WARNING,
        "`type` is not one of the note types (projet, competence, parcours, moc, technique, plus those the "
        "taxonomy adds).",
        "Answers prefer `type: parcours` notes for biography and the API builds source URLs from the type.",
        "type: Projet", "When the value differs from a known type only by case or accents: write the known type.",
        "type: projet", needs_taxonomy=True,
    ),
    Rule(
        "visibility-value", "frontmatter", ERROR,
        "`visibility` is neither `public` nor `private` (or the values the taxonomy lists), has no value, is "
        "written `Visibility` or misspelt (`visibilty`, two edits at most), or sits inside another field; or "
        "the note says it is not public another way: `publish` other than `true` (`publish: false` beside "
        "`visibility: public` included), `private: true`.",
        "An unknown or empty value is treated as private (fail closed): the note silently disappears from the "
        "bot; `Public` or ` public ` is served (case and blanks are ignored), and the finding says so. A "
        "`Visibility:` or `visibilty:` key, a nested `visibility`, `publish: false` and `private: true` hide the "
        "note all the same, so that a private note never leaks (docs/service.md, \"What private means\").",
        "visibility: Public", "When the value differs from a known one only by case or spaces: write it.",
        "visibility: public",
    ),
    Rule(
        "unknown-domain", "vocabulary", ERROR,
        "A `domains` value is not in the taxonomy's list (error when the list is closed, warning otherwise).",
        "Domains are matched against the visitor's question; an unlisted domain never matches and splits the "
        "vocabulary.",
        "domains: [IA, devop]",
        "When the value equals a listed one after folding case, accents, `#` and spaces: write the listed one. "
        "Otherwise the message suggests the closest listed value.",
        "domains: [ia, devop]   # devop: did you mean devops?", needs_taxonomy=True,
    ),
    Rule(
        "unknown-tag", "vocabulary", WARNING,
        "A `tags` value is not in the taxonomy's list (error when the list is closed, warning otherwise).",
        "Tags are scoring signals; a tag only one note uses adds noise. Add it to TAXONOMIE.md first, or use a "
        "listed one.",
        "tags: [tris]", None, "tags: [tri]   # by hand, as suggested", needs_taxonomy=True,
    ),
    Rule(
        "tag-format", "vocabulary", WARNING,
        "A tag starts with `#`, contains spaces, or has capitals.",
        "Obsidian reads frontmatter tags without `#` and without spaces, case-insensitively; the taxonomy's tags "
        "are lower-case kebab-case. Variants split one tag in several.",
        "tags: [\"#Docker\", Machine Learning]",
        "Lower-case, drop the `#`, spaces and underscores become `-`.",
        "tags: [\"docker\", machine-learning]",
    ),
    Rule(
        "duplicate-item", "frontmatter", WARNING,
        "The same value appears twice in a list field.",
        "Duplicates count twice in scoring signals and inflate the count rules.",
        "aliases:\n  - push swap\n  - push swap", "Remove the later copies.", "aliases:\n  - push swap",
    ),
    Rule(
        "domains-count", "vocabulary", ERROR,
        "The number of `domains` is outside the taxonomy's bounds (\"entre 1 et 4 domaines\").",
        "Too many domains make a note match everything; none makes it match nothing.",
        "domains: [algorithmique, c, cpp, systeme, reseau]", None, needs_taxonomy=True,
    ),
    Rule(
        "aliases-count", "vocabulary", WARNING,
        "The number of `aliases` is outside the taxonomy's bounds (\"Entre 3 et 12 aliases\").",
        "Too few aliases miss visitors' wordings; too many add noise to scoring.",
        "aliases: [push swap]", None, needs_taxonomy=True,
    ),
    Rule(
        "answers-count", "vocabulary", WARNING,
        "The number of `answers` is outside the taxonomy's bounds (\"2 à 6 answers\").",
        "Answers are the strongest retrieval signal; one is too little, a dozen dilutes the note's focus.",
        "answers:\n  - Parle-moi de push_swap", None, needs_taxonomy=True,
    ),
    Rule(
        "priority-range", "vocabulary", ERROR,
        "`priority` is outside the taxonomy's range (\"Entier de 1 à 10\").",
        "Priority is a light scoring boost, (p − 5) × 0.3: out-of-range values distort rankings.",
        "priority: 15", None, needs_taxonomy=True,
    ),
    Rule(
        "updated-date", "frontmatter", WARNING,
        "`updated` is not a date (YYYY-MM-DD) or lies in the future.",
        "Readers and tools sort by it; a wrong date hides what changed recently.",
        "updated: 22/04/2026", None,
    ),
    Rule(
        "slug-mismatch", "slugs", ERROR,
        "`slug` differs from the file name without `.md`.",
        "Links are written `[[slug]]` but resolve by file name: a slug that differs breaks them, and the "
        "note's id and URL disagree.",
        "slug: pushswap   # in push-swap.md", None,
    ),
    Rule(
        "slug-duplicate", "slugs", ERROR,
        "Several notes have the same `slug`.",
        "The slug is the note's id in sources and URLs: two notes with one id cannot both be cited.",
        "slug: libft   # in 10-Projets/libft.md and in 50-Technique/libft.md", None,
    ),
    Rule(
        "alias-duplicate", "slugs", WARNING,
        "The same alias (case- and accent-folded) appears on several notes.",
        "An alias is a +10 signal: shared, it makes retrieval ambiguous between those notes.",
        "aliases: [algo]   # in push-swap.md and in impression-3d.md", None,
    ),
    Rule(
        "broken-link", "links", ERROR,
        "A wikilink or markdown link points to no file of the vault.",
        "The bot cannot follow it (graph expansion) and neither can a reader. The message names the likely "
        "target: the note that has this text as an alias, or the closest note name.",
        "[[MOC-3d]]", None, "[[MOC-3d]]   # did you mean [[MOC-Competences]]? (by hand)",
    ),
    Rule(
        "broken-anchor", "links", WARNING,
        "The link's note exists but the `#Heading` or `#^block-id` is not in it.",
        "The link opens the note at the top instead of the section meant.",
        "[[push-swap#Algorithme]]   # push-swap.md has no such heading", None,
    ),
    Rule(
        "ambiguous-link", "links", WARNING,
        "Several files share the link's name; the one at the vault root, else the nearest, is used.",
        "Moving a note can silently change where the link goes. Write the path: `[[folder/Name]]`.",
        "[[index]]   # a/index.md and b/index.md", None,
    ),
    Rule(
        "private-link", "links", ERROR,
        "A public note links to a private one.",
        "The link shows the private note's name in public text and points the bot at a note it must never use.",
        "[[journal-perso]]   # journal-perso.md has visibility: private", None,
    ),
    Rule(
        "answer-not-retrieved", "retrieval", WARNING,
        "A question in the note's own `answers` does not bring the note into the top 3 of the real retrieval "
        "engine.",
        "The author learns the vault will not answer that question from this note: strengthen aliases, title "
        "or body, or move the question to the note that does come first.",
        "answers:\n  - Quel est son parcours ?   # bio-fernand.md comes first, this note 5th", None,
    ),
    Rule(
        "profile-invalid", "profile", ERROR,
        "The vault's answering profile, `.grasbot/profile.toml` (or a prompt file it names), cannot be used: "
        "not valid TOML, an unknown key, a wrong type or value, an `extends` that names no shipped profile, a "
        "prompt file that is missing or outside `.grasbot/`, a prompt without the placeholders it needs "
        "(`{citation}` in the system prompt, `{pointers}` in the ungrounded one when the profile has pointers) "
        "or with an unknown one.",
        "GrasBot refuses to start with a profile it cannot use, and a reload keeps the previous one: the "
        "author learns it here, with the file and the line, before the server does (docs/service.md, "
        "\"Answering profiles\").",
        "# .grasbot/profile.toml\nextends = \"textbook\"\ntemprature = 0.1   # did you mean `temperature`?", None,
    ),
    Rule(
        "section-pages", "books", ERROR,
        "A note imported from a PDF has `pages` and `pdf_pages` that disagree: not both lists, not as many "
        "printed labels as PDF pages, labels not strings, PDF pages not increasing whole numbers from 1.",
        "Answers cite the printed page and open the PDF at `pdf_pages`: the two must name the same pages.",
        "pages: [\"27\", \"28\"]\npdf_pages: [45]", None,
    ),
    Rule(
        "section-page-link", "books", ERROR,
        "A page link in an imported section opens another PDF than its `source`, or a PDF page outside its "
        "`pdf_pages`.",
        "A reader who follows the page marker must land on the passage it marks.",
        "[[manuel.pdf#page=99|p. 81]]   # in a section with pdf_pages: [45, 46]", None,
    ),
    Rule(
        "section-empty", "books", WARNING,
        "An imported `type: section` note has no text besides its heading and page markers.",
        "An empty section is a heading the import took for a section, or a page without a text layer: it can "
        "be retrieved and cited with nothing to say.",
        "# 3.3 Table des matières\n\n[p. 37]", None,
    ),
    Rule(
        "section-duplicate", "books", WARNING,
        "Two notes of one `book` have the same `section` number.",
        "A question that names « § 13 » of that book gets both: one of them is not the section it names "
        "(an example or a licence clause numbered like a section).",
        "section: \"6\"   # in two notes with book: fbook", None,
    ),
    Rule(
        "unknown-rule", "frontmatter", WARNING,
        "`vaulttools-ignore` names a rule that does not exist.",
        "A misspelt suppression suppresses nothing.",
        "vaulttools-ignore: [answers-cont]", None,
    ),
    Rule(
        "unused-suppression", "suppression", WARNING,
        "A `%% vaulttools-ignore: rule %%` comment silences no finding on its line.",
        "The finding it was written for is fixed, or moved to another line: a stale suppression would hide the "
        "next real problem there (as ruff's RUF100).",
        "See [[rust]] for more. %% vaulttools-ignore: broken-link %%   # rust.md exists: nothing to silence", None,
    ),
)

RULE_NAMES: tuple[str, ...] = tuple(rule.name for rule in RULES)
_BY_NAME = {rule.name: rule for rule in RULES}


def get_rule(name: str) -> Rule:
    return _BY_NAME[name]


GUIDE = """

## Running it

```sh
vaulttools lint [PATH ...] [--vault VAULT] [--taxonomy FILE] [--format text|json|github|sarif]
                [--select R,..] [--ignore R,..] [--fix | --diff] [--baseline FILE | --write-baseline FILE]
                [--statistics] [-q] [--exit-zero] [--no-cache] [--output FILE]
```

`PATH`s are notes or folders: only their findings are reported, but links, duplicates and retrieval are
checked against the whole vault. The vault is `--vault`; else the nearest folder at or above the first
`PATH` that holds `.obsidian/` or `vaulttools.toml`, else the nearest that holds `TAXONOMIE.md` and is
`PATH` itself or holds the current folder, else the first `PATH` itself (a note's folder); without `PATH`,
`$VAULT_DIR`, then `./vault`, then the vault the current folder is in (found the same way). A vault whose
`TAXONOMIE.md` sits beside it, as in this repository, holds `.obsidian/` or `vaulttools.toml` (or is
named with `--vault`).

Exit status: **0** no error-level finding, **1** errors found (or, with `--diff`, something to fix),
**2** usage or internal error. `--exit-zero` always exits 0 after a report.

## Suppressing a finding

**On one line**, with an Obsidian comment (`%% … %%`, hidden when Obsidian renders or publishes the note).
At the end of a line it silences the named rules on that line; alone on its line it silences the next line;
without rule names (`%% vaulttools-ignore %%`) it silences every rule there:

```markdown
Voir [[ancienne-note]] pour l'historique. %% vaulttools-ignore: broken-link %%

%% vaulttools-ignore: broken-link, broken-anchor %%
La ligne suivante : [[projet#Section disparue]] et [[brouillon]].
```

A comment that silences nothing (the finding was fixed, or moved to another line) is reported by
`unused-suppression`, so suppressions do not outlive their reason; a misspelt rule name by `unknown-rule`.
A comment inside code is text, not a suppression. Findings on frontmatter lines are silenced note-wide
(below) or with a baseline.

**In a whole note**, with the frontmatter key `vaulttools-ignore` (a list of rule names, or `all`); a
misspelt name is reported by `unknown-rule`:

```yaml
vaulttools-ignore: [answers-count, alias-duplicate]
```

**On a whole vault that already has findings**, with a baseline (as detekt, phpstan or SwiftLint):
`vaulttools lint --write-baseline lint-baseline.json` records today's findings, then
`vaulttools lint --baseline lint-baseline.json` (or `baseline = "lint-baseline.json"` in the configuration)
reports only the findings that are not in it, and says how many were baselined and how many of its entries
are gone (fixed: write the baseline again to drop them). A finding is matched by its rule, note and message,
not its line, so edits elsewhere in the note do not make it new.

## Configuration

`[tool.vaulttools.lint]` in the nearest `pyproject.toml` at or above the vault, or `[lint]` in
`VAULT/vaulttools.toml` (which wins); nothing is merged between the two:

```toml
[tool.vaulttools.lint]
select = ["broken-link", "unknown-domain"]   # only these rules (default: all)
ignore = ["alias-duplicate"]                 # never these; --ignore adds, --select replaces
exclude = ["archive/**", "drafts"]           # notes not linted (still link targets)
answer-top-k = 3                             # rank a note must reach for its own answers
answer-check-limit = 2000                    # above this many questions, answer-not-retrieved runs
                                             # only when selected explicitly
[tool.vaulttools.lint.severity]
alias-duplicate = "error"                    # "error", "warning" or "off"
```

## Private folders and tags

`[privacy]` in `VAULT/vaulttools.toml` (only there: it is the vault's own, and every tool that reads the vault,
the bot included, reads it) makes whole folders or tags private, beside each note's `visibility`; none by
default:

```toml
[privacy]
private-folders = ["journal", "perso/famille"]   # every note under these folders (case ignored)
private-tags = ["private"]                       # every note tagged so (`tags` or `#private` in the body)
```

A note made private this way counts as private for every rule (`private-link` says why). A `[privacy]`
table that cannot be read (invalid TOML, a value that is not a list of names, an unknown key) hides every
note until it is fixed, and is reported. The bot's settings may add folders and tags (docs/service.md).

## What `--fix` guarantees

A fix edits only the characters of the values it names (`"#Docker"` becomes `"docker"` inside the same
quotes, `tags: foo` becomes `tags: [foo]`, a repeated item's own line is removed, `slug: x` is inserted on a
new line). YAML comments, key order, quoting style, indentation, line endings (LF or CRLF), a byte-order mark
and the body are kept byte for byte; the edited frontmatter is parsed back and must hold exactly the
intended data, or the file is left alone. Files are written atomically (temporary file in the same folder,
then rename, file mode kept), never when they changed on disk since they were read, and a second `--fix`
changes nothing. What cannot be fixed safely (a repeated item sharing its line with a comment, a block
scalar where a list is expected) is reported with the reason. `--diff` shows the same changes as a unified
diff and writes nothing.

## The rules
"""


def render_rules_markdown() -> str:
    """The rule reference (`docs/rules.md`), generated from this table so it never drifts."""
    out = [
        "# Lint rules",
        "",
        "<!-- Generated from vaulttools/lint/registry.py by `python -c \"from vaulttools.lint.registry import "
        "render_rules_markdown as r; print(r(), end='')\" > docs/rules.md`; do not edit by hand "
        "(tests/test_lint_docs.py checks it). -->",
        "",
        "`vaulttools lint` checks every note of the vault. Each rule has a stable name (use it with `--select`, "
        "`--ignore`, the configuration and `vaulttools-ignore`), a default severity, and, when it is safe, an "
        "automatic fix applied by `--fix` (preview with `--diff`). Rules marked *taxonomy* run only when the vault "
        "has a `TAXONOMIE.md`; severities of `unknown-domain`, `unknown-tag` and `type-value` follow the list: "
        "**error** for a closed list (\"Liste fermée\"), **warning** for an open one.",
        "",
        "| rule | severity | fix | taxonomy | what |",
        "|---|---|---|---|---|",
    ]
    for rule in RULES:
        summary = rule.summary.replace("|", "\\|")
        out.append(
            f"| [`{rule.name}`](#{rule.name}) | {rule.severity.value} | {'yes' if rule.fix else '—'} | "
            f"{'yes' if rule.needs_taxonomy else '—'} | {summary} |"
        )
    out += GUIDE.strip("\n").split("\n")
    for rule in RULES:
        out += ["", f"## {rule.name}", "", f"*{rule.family}, {rule.severity.value} by default"
                + (", needs a taxonomy" if rule.needs_taxonomy else "") + ".*", "",
                f"**What.** {rule.summary}", "", f"**Why.** {rule.why}", "", "**Example.**", "", "```",
                rule.example, "```", ""]
        if rule.fix:
            out += [f"**Fix (`--fix`).** {rule.fix}", ""]
        else:
            out += ["**Fix.** By hand: the message says what to change.", ""]
        if rule.fixed:
            out += ["```", rule.fixed, "```", ""]
    text = "\n".join(out)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text.rstrip("\n") + "\n"


if __name__ == "__main__":  # pragma: no cover
    import sys

    sys.stdout.write(render_rules_markdown())
