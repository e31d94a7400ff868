"""lint: `vaulttools lint` on the synthetic vault, whole process, against markdownlint-cli2 on the same files.

Figures (each the median of fresh processes, with the spread):

- full lint of the 10k synthetic vault, no cache (`vaulttools lint VAULT --no-cache --format json`), whole
  process, and its split (imports / Vault.load / rules / report, and apart, SearchIndex.build, which the
  default run at 10k does not need) measured inside one process, in wall and CPU time (the machine is
  shared: CPU time is the steadier figure);
- a second run with the cache, nothing changed; and a second run after editing one note's body (the usual
  edit), each run editing it again first;
- `answer-not-retrieved` alone, selected explicitly (one search per question on one shared index), so its
  share of the cost is visible (by default it is skipped above `answer-check-limit` questions);
- markdownlint-cli2 (`npx`-style, installed once with npm into benchmarks/_data/) on the same `.md` files, in
  the same run, and the ratio. `--obsidiantools` adds obsidiantools' `Vault(...).connect().gather()` (slow).

Targets (issue 5): full lint of 10k ≤ 2 s whole process; second run after editing one note ≤ 0.3 s.

Workloads inherit the environment: with PYTHONDONTWRITEBYTECODE=1 every run compiles every module from source
(~0.1 s more per process); run with it unset, as an installed tool runs, for the figures users see.

    .venv/bin/python benchmarks/bench_lint.py [--quick] [--runs N] [--size N] [--no-markdownlint] [--obsidiantools]
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _util  # noqa: E402
import synth  # noqa: E402

TARGET_FULL = 2.0
TARGET_EDIT = 0.3
NPM_DIR = synth.DATA_DIR / "npm-markdownlint"
MARKDOWNLINT_VERSION = "0.24.1"

FULL = """
from vaulttools.cli import main
code = main(["lint", {vault!r}, "--no-cache", "--format", "json", "--output", "/dev/null"])
assert code in (0, 1), code
"""

SPLIT = """
import time
clock = lambda: (time.perf_counter(), time.process_time())
t0 = clock()
from grasbot.vault import Vault
from vaulttools.lint import LintConfig, lint_vault
from vaulttools.lint.formats import render_bytes  # what `--format json` writes
from vaulttools.taxonomy import load_taxonomy
t1 = clock()
vault = Vault.load({vault!r})
t2 = clock()
tax = load_taxonomy({vault!r} + "/TAXONOMIE.md")
result = lint_vault(vault, tax, LintConfig())
t3 = clock()
text = render_bytes(result, "json")
t4 = clock()
from grasbot.search.index import SearchIndex  # not part of the default run at 10k (see below): timed apart
SearchIndex.build(vault)
t5 = clock()
wall = lambda a, b: b[0] - a[0]
cpu = lambda a, b: b[1] - a[1]
report(imports=wall(t0, t1), load=wall(t1, t2), rules=wall(t2, t3), report=wall(t3, t4), index=wall(t4, t5),
       imports_cpu=cpu(t0, t1), load_cpu=cpu(t1, t2), rules_cpu=cpu(t2, t3), report_cpu=cpu(t3, t4),
       index_cpu=cpu(t4, t5), answers_checked=result.answers_checked, notes=result.notes,
       findings=len(result.diagnostics), summary=result.summary, notices=result.notices)
"""

CACHED = """
import os, pathlib
note = pathlib.Path({vault!r}) / {note!r}
if {edit!r}:
    with open(note, "a", encoding="utf-8") as handle:
        handle.write("Une phrase de plus pour le benchmark.\\n")
    st = note.stat()
    os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
from vaulttools.cli import main
code = main(["lint", {vault!r}, "--format", "json", "--output", "/dev/null"])
assert code in (0, 1), code
"""

# How the cached run was answered (checked once, in-process, beside the timings).
CACHE_MODE = """
import os, pathlib
from vaulttools.lint import LintConfig, load_config
from vaulttools.lint.cache import LintCache
from vaulttools.taxonomy import load_taxonomy
note = pathlib.Path({vault!r}) / {note!r}
with open(note, "a", encoding="utf-8") as handle:
    handle.write("Encore une phrase.\\n")
st = note.stat()
os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
root = pathlib.Path({vault!r})
tax = load_taxonomy(root / "TAXONOMIE.md")
config = load_config(root)
cache = LintCache.open(root, tax, config)
result = cache.fast_result(tax, config)
cache.save()
report(mode=cache.mode if result is not None else "full")
"""

ANSWERS = """
import time
from grasbot.vault import Vault
from vaulttools.lint import LintConfig, lint_vault
from vaulttools.taxonomy import load_taxonomy
vault = Vault.load({vault!r})
t0 = time.perf_counter()
result = lint_vault(vault, load_taxonomy({vault!r} + "/TAXONOMIE.md"), LintConfig(select=frozenset({{"answer-not-retrieved"}})))
t1 = time.perf_counter()
questions = sum(len(n.answers) for n in vault.notes.values() if not n.is_private)
report(seconds=t1 - t0, questions=questions, findings=len(result.diagnostics))
"""

MARKDOWNLINT = """
import subprocess
subprocess.run([{binary!r}, "**/*.md"], cwd={vault!r}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
"""

OBSIDIANTOOLS = """
from pathlib import Path
from obsidiantools.api import Vault
Vault(Path({vault!r})).connect().gather()
"""


def _markdownlint() -> str | None:
    """The markdownlint-cli2 binary, installed once with npm into benchmarks/_data/ (None when impossible)."""
    binary = NPM_DIR / "node_modules" / ".bin" / "markdownlint-cli2"
    if binary.exists():
        return str(binary)
    if shutil.which("npm") is None:
        _util.note("npm not found: markdownlint-cli2 comparison skipped")
        return None
    NPM_DIR.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(NPM_DIR), f"markdownlint-cli2@{MARKDOWNLINT_VERSION}"],
        capture_output=True, text=True, timeout=600,
    )
    if proc.returncode != 0 or not binary.exists():
        _util.note(f"npm install markdownlint-cli2 failed: {proc.stderr.strip()[-500:]}")
        return None
    return str(binary)


def _row(label: str, m: _util.Measurement, target: float | None = None) -> list[str]:
    return [label, _util.fmt_seconds(m.median()), _util.fmt_spread(m), _util.fmt_seconds(m.median("cpu")),
            _util.fmt_mib(m.median("max_rss")), f"≤ {target:g} s" if target else "",
            _util.verdict(m.median(), target) if target else ""]


def main(argv: list[str] | None = None) -> int:
    parser = _util.suite_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=None, help="synthetic vault size (default 10000; 1000 with --quick)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--no-markdownlint", action="store_true", help="skip the markdownlint-cli2 comparison")
    parser.add_argument("--obsidiantools", action="store_true", help="also time obsidiantools (minutes at 10k)")
    parser.add_argument("--answers-size", type=int, default=1000,
                        help="vault size for the answer-not-retrieved figure (default 1000)")
    args = parser.parse_args(argv)
    runs = _util.runs_for(args)
    size = args.size or (1000 if args.quick else 10_000)
    source = synth.ensure_vault(size, args.seed)

    with tempfile.TemporaryDirectory(prefix="bench-lint-") as tmp:
        vault = str(Path(tmp) / "vault")
        shutil.copytree(source, vault)  # the cache and the edits must not touch the shared generated vault
        note = sorted(p.relative_to(vault).as_posix() for p in Path(vault).rglob("*.md")
                      if p.name not in ("README.md", "TAXONOMIE.md") and ".obsidian" not in p.parts)[size // 2]

        full = _util.measure(f"lint {size}, no cache", FULL.format(vault=vault), runs, timeout=900)
        split = _util.run_once(SPLIT.format(vault=vault), timeout=900).metrics
        # first cached run fills the cache (not recorded), then: unchanged, then edit-one-note
        _util.run_once(CACHED.format(vault=vault, note=note, edit=False), timeout=900)
        unchanged = _util.measure(f"lint {size}, cache, unchanged", CACHED.format(vault=vault, note=note, edit=False),
                                  runs, timeout=900)
        edited = _util.measure(f"lint {size}, cache, one note edited", CACHED.format(vault=vault, note=note, edit=True),
                               runs, timeout=900)
        mode = _util.run_once(CACHE_MODE.format(vault=vault, note=note), timeout=900).metrics.get("mode")

        answers_vault = synth.ensure_vault(args.answers_size, args.seed)
        answers = _util.run_once(ANSWERS.format(vault=str(answers_vault)), timeout=1800).metrics
        answers_full = _util.measure(f"lint {args.answers_size}, no cache", FULL.format(vault=str(answers_vault)),
                                     max(1, min(runs, 3)), timeout=900)

        rows = [
            _row(f"vaulttools lint, {size} notes, no cache", full, TARGET_FULL if size == 10_000 else None),
            _row(f"vaulttools lint, {size} notes, cache, nothing changed", unchanged),
            _row(f"vaulttools lint, {size} notes, cache, one note edited", edited,
                 TARGET_EDIT if size == 10_000 else None),
        ]
        notes = [
            f"in one process (no cache), wall: imports {split['imports']:.2f} s, Vault.load {split['load']:.2f} s, "
            f"rules {split['rules']:.2f} s, JSON report {split['report']:.2f} s; {split['notes']} notes, "
            f"{split['findings']} findings {split['summary']}",
            f"the same, CPU: imports {split['imports_cpu']:.2f} s, Vault.load {split['load_cpu']:.2f} s, "
            f"rules {split['rules_cpu']:.2f} s (positions of the findings included), JSON report "
            f"{split['report_cpu']:.2f} s: lint's own part {split['rules_cpu'] + split['report_cpu']:.2f} s",
            f"SearchIndex.build on the same vault (answer-not-retrieved's index; "
            f"{'built by this run' if split['answers_checked'] else 'not built by the default run: the rule is over answer-check-limit'}): "
            f"{split['index']:.2f} s wall, {split['index_cpu']:.2f} s CPU",
            f"the edited run was answered as: {mode} (only the edited note re-read and re-checked)",
        ]
        if split.get("notices"):
            notes.append("notice: " + "; ".join(split["notices"]))

        others = []
        if not args.no_markdownlint:
            binary = _markdownlint()
            if binary:
                mdl = _util.measure(f"markdownlint-cli2 {size}", MARKDOWNLINT.format(binary=binary, vault=vault),
                                    max(1, min(runs, 3)), timeout=900)
                rows.append(_row(f"markdownlint-cli2 {MARKDOWNLINT_VERSION}, same files", mdl))
                others.append(("markdownlint-cli2", mdl))
        if args.obsidiantools:
            ot = _util.measure(f"obsidiantools {size}", OBSIDIANTOOLS.format(vault=vault), 1, warmup=0, timeout=1800)
            rows.append(_row("obsidiantools connect().gather(), same vault", ot))
            others.append(("obsidiantools", ot))
        for name, m in others:
            notes.append(f"{name} / vaulttools lint (no cache): {_util.fmt_ratio(_util.ratio(m.median(), full.median()))} "
                         f"wall, {_util.fmt_ratio(_util.ratio(m.median('cpu'), full.median('cpu')))} CPU")

        _util.print_table(f"lint — {size}-note synthetic vault, whole process",
                          ["workload", "median", "min – max", "CPU", "peak RSS", "target", ""], rows, notes)

        q = answers["questions"]
        share = answers["seconds"] / max(answers_full.median(), 1e-9)
        _util.print_table(
            f"answer-not-retrieved — {args.answers_size}-note synthetic vault",
            ["workload", "value"],
            [["questions checked (one search each, one shared index)", str(q)],
             ["rule alone, in process", _util.fmt_seconds(answers["seconds"])],
             ["per question", f"{answers['seconds'] / max(q, 1) * 1000:.2f} ms"],
             ["full lint of that vault, whole process (rule skipped: over answer-check-limit)",
              _util.fmt_seconds(answers_full.median())],
             ["findings", str(answers["findings"])]],
            [f"the rule alone costs {share:.1f}× a full lint of the same vault: it runs by default only up to "
             f"2000 questions (answer-check-limit), or when selected"],
        )
        _util.write_json(args.json, "lint", {
            "size": size, "runs": runs, "full": full.as_dict(), "unchanged": unchanged.as_dict(),
            "edited": edited.as_dict(), "split": split, "cache_mode": mode, "answers": answers,
            "others": {name: m.as_dict() for name, m in others},
        })
    return 0


if __name__ == "__main__":
    sys.exit(main())
