"""Retrieval speed, side by side: the original scoring, plain rank-bm25, and grasbot's SearchIndex.

    .venv/bin/python benchmarks/bench_retrieval.py                # grasbot-vault, 10k and 50k synthetic
    .venv/bin/python benchmarks/bench_retrieval.py --sizes 10000  # a quicker run
    .venv/bin/python benchmarks/run.py retrieval                  # through the common runner

For each vault: load it once (grasbot.vault.Vault), build the three engines (timed), then time each
question through each engine and print the median per query and the ratios to this engine. The
questions are the benchmark's question set for the real vault, and for a synthetic vault a fixed,
seeded sample of its notes' titles, sample questions and aliases (plus a few off-topic questions), so
that every engine answers the same questions. Peak memory of "10k notes loaded and indexed" is measured
in a fresh subprocess (ru_maxrss), so the other engines do not count in it.

Quality on the question sets is measured by `vaulttools eval`, not here.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

CORPORA = Path(os.environ.get("GRASBOT_CORPORA") or REPO.parent / "shared" / "corpora")
OFF_TOPIC = (
    "Quel temps fait-il demain ?",
    "Quelle est la capitale de l'Australie ?",
    "Donne-moi une recette de tarte aux pommes",
)


def _median_ms(fn, queries: list[str], repeat: int = 1) -> float:
    times = []
    for _ in range(repeat):
        for q in queries:
            started = time.perf_counter()
            fn(q)
            times.append((time.perf_counter() - started) * 1000.0)
    return statistics.median(times)


def _synthetic_queries(vault, count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    notes = [vault.notes[p] for p in sorted(vault.notes) if not vault.notes[p].is_private]
    queries = []
    for note in rng.sample(notes, min(count, len(notes))):
        choices = [note.title] + note.answers + [f"Parle-moi de {a}" for a in note.aliases[:2]]
        queries.append(rng.choice(choices))
    return queries + list(OFF_TOPIC)


def _plain_bm25(vault):
    from rank_bm25 import BM25Okapi

    from grasbot.search.tokenize import tokenize

    notes = [vault.notes[p] for p in sorted(vault.notes) if not vault.notes[p].is_private]
    corpus = [tokenize(" ".join([n.title, *n.aliases, n.body])) or ["_"] for n in notes]
    bm25 = BM25Okapi(corpus)
    return lambda q: bm25.get_scores(tokenize(q))


_MEMORY_PROBE = """
import resource, sys
def hwm():
    # VmHWM is this process's own peak (ru_maxrss can carry the parent's peak across fork+exec).
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
from grasbot.vault import Vault
from grasbot.search.index import SearchIndex
import numpy, Stemmer
base = hwm()
index = SearchIndex.build(Vault.load(sys.argv[1]))
index.search("projet python")
print(base, hwm())
"""


def _peak_memory_mib(path: Path) -> dict[str, float]:
    """Peak RSS of a fresh interpreter that loads and indexes `path` (and of one that only imports)."""
    out = subprocess.run([sys.executable, "-c", _MEMORY_PROBE, str(path)], capture_output=True, text=True, check=True)
    base, peak = (int(x) / 1024.0 for x in out.stdout.split())
    return {"interpreter_mib": round(base, 1), "peak_mib": round(peak, 1)}


def bench_vault(name: str, path: Path, queries_file: Path | None, synth_queries: int, slow_cap: int) -> dict:
    from grasbot.search.index import SearchIndex
    from grasbot.vault import Vault
    from original_scoring import OriginalScoring

    started = time.perf_counter()
    vault = Vault.load(path)
    load_s = time.perf_counter() - started
    if queries_file is not None:
        from vaulttools.evaluation import load_questions

        queries = [q.q for q in load_questions(queries_file)]
    else:
        queries = _synthetic_queries(vault, synth_queries)

    row: dict = {"vault": name, "notes": len(vault.notes), "queries": len(queries), "load_s": round(load_s, 3)}
    started = time.perf_counter()
    cpu = time.process_time()
    index = SearchIndex.build(vault)
    row["build_s"] = {"engine": round(time.perf_counter() - started, 3)}
    row["build_cpu_s"] = round(time.process_time() - cpu, 3)
    started = time.perf_counter()
    original = OriginalScoring(vault)
    row["build_s"]["original"] = round(time.perf_counter() - started, 3)
    started = time.perf_counter()
    plain = _plain_bm25(vault)
    row["build_s"]["rank_bm25"] = round(time.perf_counter() - started, 3)

    from grasbot.vault import LinkChange

    # One note changed, as the watcher and the TUI report it: `update`, then the next question (which
    # recomputes the vault-wide statistics the update left stale). Median over several notes.
    paths = sorted(vault.notes)
    updates, cpu_updates = [], []
    for some in paths[:: max(1, len(paths) // 7)][:7]:
        started = time.perf_counter()
        cpu = time.process_time()
        index.update(vault, LinkChange(changed={some}))
        index.search(queries[0])
        updates.append(time.perf_counter() - started)
        cpu_updates.append(time.process_time() - cpu)
    row["update_one_note_s"] = round(statistics.median(updates), 4)
    row["update_one_note_cpu_s"] = round(statistics.median(cpu_updates), 4)

    _median_ms(index.search, queries[:5])  # warm the stem cache
    slow = queries[:slow_cap]  # the baselines scan every note: fewer questions keep the run short
    row["median_ms"] = {
        "engine": round(_median_ms(index.search, queries, repeat=3), 4),
        "original": round(_median_ms(original.search, slow), 4),
        "rank_bm25": round(_median_ms(plain, slow), 4),
    }
    m = row["median_ms"]
    row["speedup"] = {
        "vs_original": round(m["original"] / m["engine"], 1),
        "vs_rank_bm25": round(m["rank_bm25"] / m["engine"], 1),
    }
    return row


def main(argv: list[str] | None = None) -> int:
    import _util

    parser = _util.suite_parser("Retrieval speed: the original scoring, rank-bm25 and SearchIndex, side by side")
    parser.add_argument("--sizes", default=None, help="synthetic vault sizes, comma-separated (default 10000,50000; 1000 with --quick; 0: none, the real vault only)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--queries", type=int, default=None, help="questions sampled from a synthetic vault (default 200)")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory subprocess")
    args = parser.parse_args(argv)
    sizes_arg = args.sizes if args.sizes is not None else ("1000" if args.quick else "10000,50000")
    queries = args.queries or (50 if args.quick else 200)

    rows = []
    real = CORPORA / "grasbot-vault"
    if real.is_dir():
        rows.append(bench_vault("grasbot-vault", real, HERE / "questions-grasbot-vault.yaml", 0, 10_000))
    else:
        _util.note(f"skipping grasbot-vault: {real} not found")
    from synth import ensure_vault

    sizes = [int(x) for x in sizes_arg.split(",") if x.strip() and int(x) > 0]
    memory = None
    for size in sizes:
        path = ensure_vault(size, args.seed)
        cap = 60 if size <= 10_000 else 20
        rows.append(bench_vault(f"synth-{size}", path, None, queries, cap))
        if size == 10_000 and not args.no_memory:
            memory = _peak_memory_mib(path)

    targets = {"grasbot-vault": 0.1, "synth-10000": 2.0, "synth-50000": 10.0}
    table_rows = []
    for r in rows:
        m = r["median_ms"]
        target = targets.get(r["vault"])
        table_rows.append(
            [
                r["vault"],
                r["notes"],
                f"{r['build_s']['engine']:.2f} s (cpu {r['build_cpu_s']:.2f})",
                f"{r['update_one_note_s'] * 1000:.1f} ms (cpu {r['update_one_note_cpu_s'] * 1000:.1f})",
                f"{m['engine']:.3f} ms" + (f" (target ≤ {target:g})" if target else ""),
                f"{m['original']:.3f} ms",
                f"{m['rank_bm25']:.3f} ms",
                f"×{r['speedup']['vs_original']:.1f}",
                f"×{r['speedup']['vs_rank_bm25']:.1f}",
            ]
        )
    notes = [
        "median time per question, vault already loaded; build = SearchIndex.build alone (Vault.load excluded)",
        "update 1 note = SearchIndex.update after one note changed + the next question, median over 7 notes",
    ]
    if memory:
        notes.append(
            f"peak RSS, 10k notes loaded + indexed (fresh process): {memory['peak_mib']} MiB "
            f"(interpreter + imports {memory['interpreter_mib']} MiB)"
        )
    _util.print_table(
        "retrieval: median per question",
        ["vault", "notes", "build", "update 1 note", "engine", "original", "rank-bm25", "vs original", "vs rank-bm25"],
        table_rows,
        notes,
    )
    _util.write_json(args.json, "retrieval", {"rows": rows, "memory_10k": memory})
    return 0


if __name__ == "__main__":
    sys.exit(main())
