"""Fresh load (no snapshot) of this tree against another, in alternating pairs: peak RSS and CPU time.

    .venv/bin/python benchmarks/bench_fresh.py --against /tmp/main-tree        # a `git archive` of main
    .venv/bin/python benchmarks/bench_fresh.py --against /tmp/main-tree --runs 7 --notes 10000

Three workloads on the synthetic vault (`synth.py`, seed 42), each a fresh process: `snapshot.load(...,
use_snapshot=False)` (the vault + index a command holds after a fresh load: the memory row of
bench_snapshot.py), `Vault.load` + `resolutions()` of every note (bench_load.py's figure) and `vaulttools
ask --no-cache` (the whole cold command, its LLM unreachable as in bench_snapshot.py). The two trees run one after the other, the order swapped at each pair, so that a machine
whose speed drifts (other jobs on its two cores) weighs on both alike; the ratio of each pair is taken, then
the median. Each process imports the tree given by PYTHONPATH (checked), with its bytecode cached (one
unrecorded warm-up run per tree), PYTHONHASHSEED=0. Before them, one process per tree hashes what must not
change (`RESULTS`), and the table says whether the digests are equal. Without `--against`, the suite is
skipped.

To make the other tree: `git archive main | tar -x -C /tmp/main-tree`.
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _util  # noqa: E402
import synth  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
QUESTION = "parle-moi du projet firmware recherche"

_CHECK = """
import grasbot, vaulttools
assert grasbot.__file__.startswith({tree!r}) and vaulttools.__file__.startswith({tree!r}), grasbot.__file__
"""

WORKLOADS = {
    "vault + index, fresh (snapshot.load without snapshot)": """
from grasbot import snapshot
s = snapshot.load({vault!r}, use_snapshot=False)
assert s.source == "load", s.source
report(notes=len(s.vault.notes))
""",
    "Vault.load + resolutions() of every note (bench_load.py's workload)": """
from grasbot.vault import Vault
vault = Vault.load({vault!r})
report(links=sum(len(vault.resolutions(p)) for p in vault.notes))
""",
    "vaulttools ask --no-cache": """
import sys
from vaulttools.cli import main
sys.argv = ["vaulttools", "ask", "--json", "--no-cache", "--vault", {vault!r}, {question!r}]
code = main()
sys.exit(code)
""",
}


#: What must not change between the trees, as one digest per tree: the ranked ids, scores, reasons and
#: coverage of 300 questions (bench_retrieval.py's sample), every note's fields, the hidden notes, what
#: visitors read of every body, every resolution, and the JSON `vaulttools lint --no-cache` prints.
RESULTS = """
import hashlib, io, contextlib, sys
sys.path.insert(0, {bench!r})
import bench_retrieval
from grasbot.vault import Vault
from grasbot.search.index import SearchIndex
from vaulttools.cli import main
h = hashlib.blake2b()
def put(x): h.update(repr(x).encode())
v = Vault.load({vault!r})
ix = SearchIndex.build(v)
for q in bench_retrieval._synthetic_queries(v, 300):
    put([(x.id, x.score, x.reasons, x.direct, x.coverage) for x in ix.search(q, top_k=10).hits])
put(sorted(v.hidden_paths()))
for n in v.notes.values():
    put((n.path, n.id, n.title, n.meta, n.headings, sorted(n.block_ids), n.links, n.problems, n.frontmatter_span,
         n.body_line, n.withheld, v.visitor_text(n.reader_body, n.path), v.visitor_text(n.title, n.path)))
put(list(v.all_resolutions()))
out = io.StringIO()
with contextlib.redirect_stdout(out):
    main(["lint", "--vault", {vault!r}, "--format", "json", "--no-cache", "--exit-zero"])
h.update(out.getvalue().encode())
report(digest=h.hexdigest())
"""


def _env(tree: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRASBOT_", "LANGFUSE_", "VAULTTOOLS_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # (bytecode cached, as an installed package runs)
    env.update(PYTHONPATH=str(tree), VAULTTOOLS_CACHE_DIR=str(cache), OLLAMA_URL="http://127.0.0.1:9",
               GRASBOT_STATE_DIR=str(cache / "state"), PYTHONHASHSEED="0")  # fmt: skip
    return env


def main(argv: list[str] | None = None) -> int:
    parser = _util.suite_parser(__doc__.split("\n")[0])
    parser.add_argument("--against", type=Path, default=None, help="the other tree (a checkout or `git archive` of main)")
    parser.add_argument("--notes", type=int, default=None, help="vault size (default 10000, 1000 with --quick)")
    args = parser.parse_args(argv)
    if args.against is None:
        _util.note("bench_fresh: no --against tree given, skipped")
        return _util.SKIPPED
    other = args.against.resolve()
    if not (other / "grasbot").is_dir():
        raise SystemExit(f"--against {other}: no grasbot/ package there")
    runs = _util.runs_for(args)
    notes = args.notes or (1000 if args.quick else 10000)
    vault = str(synth.ensure_vault(notes))
    trees = {"against": other, "this": REPO}
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="bench-fresh-"))
    results: dict[str, dict[str, list[_util.Run]]] = {}
    digests: dict[str, str] = {}
    try:
        for name, tree in trees.items():
            cache = Path(tempfile.mkdtemp(dir=work))
            code = _CHECK.format(tree=str(tree)) + RESULTS.format(vault=vault, bench=str(Path(__file__).resolve().parent))
            digests[name] = _util.run_once(code, cwd=work, env=_env(tree, cache), timeout=900).metrics["digest"]
        for label, template in WORKLOADS.items():
            code = {name: _CHECK.format(tree=str(tree)) + template.format(vault=vault, question=QUESTION) for name, tree in trees.items()}
            got: dict[str, list[_util.Run]] = {"against": [], "this": []}
            for i in range(runs + 1):
                order = ("against", "this") if i % 2 else ("this", "against")
                for name in order:
                    cache = Path(tempfile.mkdtemp(dir=work))
                    run = _util.run_once(code[name], cwd=work, env=_env(trees[name], cache), timeout=600)
                    shutil.rmtree(cache, ignore_errors=True)
                    if i:  # (the first pair compiles each tree's bytecode: unrecorded)
                        got[name].append(run)
                        print(f"  {label} [{name}] run {i}/{runs}: {run.cpu:.2f} s CPU, {run.max_rss / _util.MIB:.1f} MiB", file=sys.stderr, flush=True)
            results[label] = got
    finally:
        shutil.rmtree(work, ignore_errors=True)

    rows = []
    for label, got in results.items():
        a, b = got["against"], got["this"]
        rss_ratio = statistics.median(y.max_rss / x.max_rss for x, y in zip(a, b))
        cpu_ratio = statistics.median(y.cpu / x.cpu for x, y in zip(a, b))
        med = statistics.median
        rows.append([label,
                     f"{_util.fmt_mib(med(r.max_rss for r in a))} / {_util.fmt_mib(med(r.max_rss for r in b))}",
                     f"{rss_ratio:.2f}×",
                     f"{_util.fmt_seconds(med(r.cpu for r in a))} / {_util.fmt_seconds(med(r.cpu for r in b))}",
                     f"{cpu_ratio:.2f}×",
                     f"{_util.fmt_seconds(med(r.wall for r in a))} / {_util.fmt_seconds(med(r.wall for r in b))}"])  # fmt: skip
    load_after = os.getloadavg()
    _util.print_table(
        f"fresh load, synth-{notes}: {other} against this tree ({REPO}), {runs} alternating pairs",
        ["workload", "peak RSS: against / this", "this / against (pairs' median)", "CPU: against / this",
         "this / against (pairs' median)", "wall: against / this"],
        rows,
        notes=[
            "results (ranked ids and scores of 300 questions, notes' fields, privacy, visitor texts, resolutions, "
            f"lint's JSON): {'identical' if digests['this'] == digests['against'] else 'DIFFERENT'} "
            f"(digest {digests['this'][:16]} / {digests['against'][:16]})",
            "targets (issue 19): vault + index ≤ 150 MiB; CPU time ≤ 1.05 × the other tree's",
            f"load average (1, 5, 15 min) at the start {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
            f"at the end {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}",
            _util.machine(),
        ],
    )
    payload: dict[str, Any] = {
        "against": str(other), "notes": notes, "digests": digests,
        "results": {label: {name: [{"wall": r.wall, "cpu": r.cpu, "max_rss": r.max_rss} for r in runs_] for name, runs_ in got.items()}
                    for label, got in results.items()},
    }  # fmt: skip
    _util.write_json(args.json, "fresh", payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
