"""The registry: every lint rule unit, collected from where it is declared, in documentation order.

A rule is one unit (`vaulttools.lint.rule.Rule`: name, severity, docs, check, quick predicate, fix), declared
in its family's module of `vaulttools/lint/rules/` (the suppression rule in `vaulttools/lint/suppression.py`).
This table is the single source for the SARIF rule descriptors, `docs/rules.md` (see `render_rules_markdown`),
`--select`/`--ignore` validation and the engine's runs (`vaulttools.lint.rules.families`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vaulttools.lint import suppression
from vaulttools.lint.rule import ENGINE_VERSION, Rule
from vaulttools.lint.rules import books, frontmatter, links, profile, retrieval, slugs, vocabulary

if TYPE_CHECKING:
    from grasbot import Note

__all__ = ["ENGINE_VERSION", "Rule", "RULES", "RULE_NAMES", "get_rule", "render_rules_markdown", "suppressed_rules"]

#: Every rule, in the order of docs/rules.md and of the SARIF rule descriptors (new rules go at their family's
#: end or at the end; `tests/test_lint_units.py` fails on a unit declared in a family module and missing here).
RULES: tuple[Rule, ...] = (
    frontmatter.FRONTMATTER_INVALID,
    frontmatter.FIELD_MISSING,
    frontmatter.FIELD_TYPE,
    vocabulary.TYPE_VALUE,
    frontmatter.VISIBILITY_VALUE,
    vocabulary.UNKNOWN_DOMAIN,
    vocabulary.UNKNOWN_TAG,
    vocabulary.TAG_FORMAT,
    frontmatter.DUPLICATE_ITEM,
    vocabulary.DOMAINS_COUNT,
    vocabulary.ALIASES_COUNT,
    vocabulary.ANSWERS_COUNT,
    vocabulary.PRIORITY_RANGE,
    frontmatter.UPDATED_DATE,
    slugs.SLUG_MISMATCH,
    slugs.SLUG_DUPLICATE,
    slugs.ALIAS_DUPLICATE,
    links.BROKEN_LINK,
    links.BROKEN_ANCHOR,
    links.AMBIGUOUS_LINK,
    links.PRIVATE_LINK,
    retrieval.ANSWER_NOT_RETRIEVED,
    profile.PROFILE_INVALID,
    books.SECTION_PAGES,
    books.SECTION_PAGE_LINK,
    books.SECTION_EMPTY,
    books.SECTION_DUPLICATE,
    frontmatter.UNKNOWN_RULE,
    suppression.UNUSED_SUPPRESSION,
)

RULE_NAMES: tuple[str, ...] = tuple(rule.name for rule in RULES)
_BY_NAME = {rule.name: rule for rule in RULES}
#: What a note's `vaulttools-ignore: all` turns off: every rule but those about the file and the key itself.
_ALL_SUPPRESSIBLE = frozenset(RULE_NAMES) - {frontmatter.FRONTMATTER_INVALID.name, frontmatter.UNKNOWN_RULE.name}


def get_rule(name: str) -> Rule:
    return _BY_NAME[name]


def suppressed_rules(note: Note) -> frozenset[str]:
    """The rules a note turns off for itself with `vaulttools-ignore: [rule, ...]` (`all` for every rule)."""
    names = frontmatter.suppressed_names(note)
    return _ALL_SUPPRESSIBLE if names is None else names


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
