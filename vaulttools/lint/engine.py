"""Running the rules: a whole vault (`lint_vault`, for CI) or a few notes of a loaded vault (`lint_notes`, for the
watcher and the TUI), and applying their fixes (`apply_fixes`).

Typical use::

    from grasbot import Vault
    from vaulttools.taxonomy import find_taxonomy, load_taxonomy
    from vaulttools.lint import lint_vault, load_config

    vault = Vault.load(root)
    found = find_taxonomy(root)
    result = lint_vault(vault, load_taxonomy(found) if found else None, load_config(root))
    for d in result.diagnostics:
        print(d.path, d.line, d.rule, d.message)

Results are sorted (path, line, column, rule) and depend only on the files, the taxonomy, the configuration
and today's date.
"""

from __future__ import annotations

import datetime as _dt
import gc
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grasbot import Note
from vaulttools.lint import positions
from vaulttools.lint.config import LintConfig
from vaulttools.lint.diagnostics import SORT_KEY, Diagnostic, Severity
from vaulttools.lint.fixes import FileFix, fix_bytes, write_fixed
from vaulttools.lint.registry import ENGINE_VERSION, RULE_NAMES, suppressed_rules
from vaulttools.lint.rule import Rule
from vaulttools.lint.rules import LintContext, quick
from vaulttools.lint.rules.families import note_rules, vault_passes
from vaulttools.lint.rules.profile import PROFILE_INVALID
from vaulttools.lint.suppression import apply_inline

if TYPE_CHECKING:
    from grasbot import SearchIndex
    from grasbot import Vault
    from vaulttools.lint.cache import LintCache

__all__ = ["ENGINE_VERSION", "LintResult", "lint_vault", "lint_notes", "apply_fixes", "new_context", "check_one_note"]

Progress = Callable[[int, int], None]


@dataclass(slots=True)
class LintResult:
    """The findings of one run over a vault."""

    root: Path
    notes: int  # notes linted
    diagnostics: list[Diagnostic]
    taxonomy: Path | None = None  # the TAXONOMIE.md used, or None (structural rules only)
    notices: list[str] = field(default_factory=list)  # things the user should know (a rule that could not run)
    fixes: list[FileFix] = field(default_factory=list)  # filled by `apply_fixes`
    answers_checked: bool = False  # whether answer-not-retrieved ran (its findings depend on every note)

    @property
    def summary(self) -> dict[str, int]:
        errors = sum(1 for diag in self.diagnostics if diag.severity == Severity.ERROR)
        return {"error": errors, "warning": len(self.diagnostics) - errors}

    @property
    def has_errors(self) -> bool:
        return any(d.severity is Severity.ERROR for d in self.diagnostics)


def new_context(vault: Any, taxonomy: Any, config: LintConfig, index: SearchIndex | None = None,
                today: _dt.date | None = None) -> LintContext:
    """The context of one run: what every rule may read (the registry's rule names included)."""
    return LintContext(vault=vault, taxonomy=taxonomy, config=config, today=today or _dt.date.today(), index=index,
                       rule_names=RULE_NAMES)


def is_kept(diag: Diagnostic, config: LintConfig, suppressed: frozenset[str]) -> bool:
    return config.enabled(diag.rule) and diag.rule not in suppressed


def check_one_note(note: Note, ctx: LintContext, rules: Sequence[Rule] | None = None) -> list[Diagnostic]:
    """The note-local findings of one note (no cross-note rule), before select/ignore/suppression; with
    `rules`, of those note rules only (the others do not run)."""
    if rules is None:
        rules = note_rules()
    found = ctx.quick
    if found is None or found[0] is not rules:
        found = ctx.quick = (rules, quick.build(rules, ctx))
    is_clean = found[1]
    if is_clean is not None and is_clean(note):
        return []  # the usual clean note, known clean without running a dozen checks
    out: list[Diagnostic] = []
    for rule in rules:
        out.extend(rule.run(note, ctx))  # type: ignore[misc]
    return out


def _run(
    vault: Vault,
    taxonomy: Any,
    config: LintConfig,
    paths: Sequence[str],
    index: SearchIndex | None,
    today: _dt.date | None,
    cache: LintCache | None,
    progress: Progress | None,
    notices: list[str],
    flags: dict[str, bool] | None = None,
    build_index: bool = True,
) -> list[Diagnostic]:
    positions.reset()  # notes may have been replaced since the last run
    # A run allocates a few hundred thousand tuples and lists (findings, spans, alias groups: 35k findings on
    # the 10k benchmark vault) and frees almost none before it ends: the cyclic GC would rescan them again and
    # again for nothing (a tenth of the run (benchmarks/README.md, "Figures behind the code")). It is off for
    # the run, as for `Vault.load`; reference counting still frees everything the run drops, and nothing here
    # makes reference cycles.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _run_checks(vault, taxonomy, config, paths, index, today, cache, progress, notices, flags, build_index)
    finally:
        if gc_was_enabled:
            gc.enable()
        positions.reset()  # do not keep every note with a finding alive after the run


def _run_checks(
    vault: Vault,
    taxonomy: Any,
    config: LintConfig,
    paths: Sequence[str],
    index: SearchIndex | None,
    today: _dt.date | None,
    cache: LintCache | None,
    progress: Progress | None,
    notices: list[str],
    flags: dict[str, bool] | None,
    build_index: bool,
) -> list[Diagnostic]:
    ctx = new_context(vault, taxonomy, config, index, today)
    ctx.build_index = build_index
    rules = note_rules(config.enabled)  # a rule that is off never runs
    found: list[Diagnostic] = []
    total = len(paths)
    for done, path in enumerate(paths, 1):
        note = vault.notes.get(path)
        if note is None:
            continue
        cached = cache.get(note) if cache is not None else None
        if cached is None:
            cached = check_one_note(note, ctx, rules) if rules else []
            if cache is not None:
                cache.put(note, cached)
        found.extend(cached)
        if progress is not None and (done % 200 == 0 or done == total):
            progress(done, total)
    path_list = list(paths)
    for vault_pass, on in vault_passes(config.enabled):  # e.g. retrieval off: the index is never built
        found.extend(vault_pass(ctx, path_list, on))
    notices.extend(ctx.notices)
    if flags is not None:
        flags["answers_checked"] = ctx.answers_checked
    if ctx.index_error and config.enabled("answer-not-retrieved"):
        notices.append(f"answer-not-retrieved did not run: the retrieval engine failed ({ctx.index_error})")
    # select/ignore and per-note suppression: rule by rule, and note by note only for the notes that
    # suppress something (35k findings on the 10k benchmark vault, a handful of notes with `vaulttools-ignore`)
    enabled = {rule: config.enabled(rule) for rule in set(map(_RULE, found))}
    suppressing: dict[str, frozenset[str]] = {}
    for path in set(map(_PATH, found)):
        note = vault.notes.get(path)
        rules = suppressed_rules(note) if note is not None else frozenset()
        if rules:
            suppressing[path] = rules
    if all(enabled.values()) and not suppressing:
        out = found
    else:
        out = [d for d in found if enabled[d.rule] and d.rule not in suppressing.get(d.path, ())]
    # `%% vaulttools-ignore: rule %%` comments, line by line, and those that silence nothing
    not_run = () if ctx.answers_checked else ("answer-not-retrieved",)
    out = apply_inline(out, vault.notes.get, paths, config.enabled, suppressed_rules, RULE_NAMES, ctx.severity, not_run)
    out.sort(key=_SORT_KEY)
    return out


#: `Diagnostic.sort_key` without a Python-level call per finding; a finding's path and rule, likewise.
_SORT_KEY = SORT_KEY
_PATH = itemgetter(0)
_RULE = itemgetter(5)


def lint_vault(
    vault: Vault,
    taxonomy: Any = None,
    config: LintConfig | None = None,
    index: SearchIndex | None = None,
    *,
    today: _dt.date | None = None,
    cache: LintCache | None = None,
    progress: Progress | None = None,
) -> LintResult:
    """Lint every note of a loaded vault.

    `taxonomy` is a `vaulttools.taxonomy.Taxonomy` or None (structural rules only). `index` is a
    `grasbot.search.index.SearchIndex` already built on this vault, if the caller has one (else one is built when
    `answer-not-retrieved` runs). `cache` (see `vaulttools.lint.cache`) skips the note-local checks of notes
    whose content did not change. `progress(done, total)` is called as notes are checked.
    """
    config = config or LintConfig()
    paths = [p for p in vault.notes if not config.excluded(p)]
    notices: list[str] = []
    flags: dict[str, bool] = {}
    diagnostics = _run(vault, taxonomy, config, paths, index, today, cache, progress, notices, flags)
    diagnostics = with_profile_findings(diagnostics, Path(vault.root), config)
    notices += [f"{p.path}:{p.line}:{p.column}: {p.message}" for p in vault.problems]
    if taxonomy is not None and not (taxonomy.vocabularies or taxonomy.counts or taxonomy.ranges or taxonomy.required):
        # (a file of prose, or sections under other titles: silence would read as "all values allowed")
        notices.append(f"{taxonomy.path}: no list, count or range section found: only the structural rules ran")
    return LintResult(
        root=Path(vault.root),
        notes=len(paths),
        diagnostics=diagnostics,
        taxonomy=getattr(taxonomy, "path", None),
        notices=notices,
        answers_checked=flags.get("answers_checked", False),
    )


def with_profile_findings(diagnostics: list[Diagnostic], root: Path, config: LintConfig) -> list[Diagnostic]:
    """`diagnostics` and the findings on the vault's answering profile (rule `profile-invalid`), in report order."""
    if not config.enabled(PROFILE_INVALID.name):
        return diagnostics
    found = [d for d in PROFILE_INVALID.run(root) if not config.excluded(d.path)]  # type: ignore[misc]
    return sorted([*diagnostics, *found], key=_SORT_KEY) if found else diagnostics


def lint_notes(
    vault: Vault,
    taxonomy: Any,
    paths: Iterable[str],
    config: LintConfig | None = None,
    index: SearchIndex | None = None,
    *,
    today: _dt.date | None = None,
) -> list[Diagnostic]:
    """Lint only the notes at `paths` (vault-relative) of an up-to-date vault, for the watcher and the TUI.

    Cross-note rules still see the whole vault (a duplicate slug elsewhere is reported on these notes), but
    findings are only reported on `paths`. After `vault.update_file(p)` returns a `LinkChange`, lint
    ``change.changed | change.relinked`` to refresh every finding that may have moved.

    `answer-not-retrieved` runs only when `index` is given (a `SearchIndex` kept up to date by the caller,
    as the TUI does): building one per call would cost seconds on a large vault.
    """
    config = config or LintConfig()
    wanted = sorted({p for p in paths if p in vault.notes and not config.excluded(p)})
    return _run(vault, taxonomy, config, wanted, index, today, None, None, [], build_index=False)


def apply_fixes(
    vault: Vault,
    diagnostics: Iterable[Diagnostic],
    taxonomy: Any = None,
    config: LintConfig | None = None,
    *,
    write: bool = True,
    today: _dt.date | None = None,
    max_passes: int = 5,
) -> list[FileFix]:
    """Apply the safe fixes of `diagnostics` to their files; returns one `FileFix` per file with fixes.

    Each file is re-read from disk, fixed in memory (then re-checked and re-fixed until nothing fixable is
    left, at most `max_passes` times, so that a second run changes nothing), and, when `write` is true,
    replaced atomically unless it changed on disk meanwhile (`FileFix.error` says so). With `write=False`
    nothing is written: use `FileFix.diff()` to show what would change.
    """
    from grasbot import read_note

    config = config or LintConfig()
    ctx = new_context(vault, taxonomy, config, None, today)
    by_path: dict[str, list[Diagnostic]] = {}
    for diag in diagnostics:
        if diag.fix is not None and config.enabled(diag.rule):
            by_path.setdefault(diag.path, []).append(diag)
    root = Path(vault.root)
    results: list[FileFix] = []
    for path in sorted(by_path):
        try:
            raw = (root / path).read_bytes()
        except OSError as exc:
            fix = FileFix(path=path, original=b"", fixed=b"")
            fix.error = f"{path}: cannot read: {exc.strerror or exc}"
            results.append(fix)
            continue
        result = fix_bytes(path, raw, by_path[path])
        current = result.fixed
        for _ in range(max_passes - 1):
            if current == raw and result.applied == []:
                break
            note = read_note(path, current)
            suppressed = suppressed_rules(note)
            again = [d for d in check_one_note(note, ctx) if d.fix is not None and is_kept(d, config, suppressed)]
            if not again:
                break
            step = fix_bytes(path, current, again)
            if step.fixed == current:
                break
            result.applied += step.applied
            result.skipped += step.skipped
            current = step.fixed
        result.fixed = current
        if result.skipped and current != raw:
            # A later pass may have fixed what an earlier one left (adjacent duplicates go one at a time):
            # report as skipped only what the final text still has, once, where it now is.
            note = read_note(path, current)
            suppressed = suppressed_rules(note)
            left = {(d.rule, d.message): d for d in check_one_note(note, ctx) if d.fix is not None and is_kept(d, config, suppressed)}
            still: dict[tuple[str, str], tuple[Diagnostic, str]] = {}
            for diag, reason in result.skipped:
                now = left.get((diag.rule, diag.message))
                if now is not None:
                    still.setdefault((diag.rule, diag.message), (now, reason))
            result.skipped = list(still.values())
        if write and result.changed:
            try:
                write_fixed(root, result)
            except Exception as exc:  # FileChangedError or an OS error: reported, never half-written
                result.error = str(exc)
        results.append(result)
    return results
