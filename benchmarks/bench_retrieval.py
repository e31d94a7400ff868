"""Retrieval speed, side by side: the original scoring, plain rank-bm25, and grasbot's SearchIndex.

    .venv/bin/python benchmarks/bench_retrieval.py                # grasbot-vault, 10k and 50k synthetic
    .venv/bin/python benchmarks/bench_retrieval.py --sizes 10000  # a quicker run

For each vault: load it once (grasbot.vault.Vault), build the three engines (timed), then time each
question through each engine and print the median per query and the ratios to this engine. The
questions are the benchmark's question set for the real vault, and for a synthetic vault a fixed,
seeded sample of its notes' titles, sample questions and aliases (plus a few off-topic questions), so
that every engine answers the same questions. Peak memory of "10k notes loaded and indexed" is measured
in a fresh subprocess (ru_maxrss), so the other engines do not count in it.

Quality on the question sets is measured by `vaulttools eval`, not here.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
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

    from grasbot.tokenize import tokenize

    notes = [vault.notes[p] for p in sorted(vault.notes) if not vault.notes[p].is_private]
    corpus = [tokenize(" ".join([n.title, *n.aliases, n.body])) or ["_"] for n in notes]
    bm25 = BM25Okapi(corpus)
    return lambda q: bm25.get_scores(tokenize(q))


def _peak_memory_mib(path: Path) -> dict[str, float]:
    """Peak RSS of a fresh interpreter that loads and indexes `path` (and of one that only imports)."""
    code = (
        "import resource,sys;from grasbot.vault import Vault;from grasbot.search import SearchIndex;"
        "import numpy, Stemmer;base=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss;"
        "v=Vault.load(sys.argv[1]);i=SearchIndex.build(v);i.search('projet python');"
        "print(base, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    base, peak = (int(x) / 1024.0 for x in out.stdout.split())
    return {"interpreter_mib": round(base, 1), "peak_mib": round(peak, 1)}


def bench_vault(name: str, path: Path, queries_file: Path | None, synth_queries: int, slow_cap: int) -> dict:
    from grasbot.search import SearchIndex
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
    index = SearchIndex.build(vault)
    row["build_s"] = {"engine": round(time.perf_counter() - started, 3)}
    started = time.perf_counter()
    original = OriginalScoring(vault)
    row["build_s"]["original"] = round(time.perf_counter() - started, 3)
    started = time.perf_counter()
    plain = _plain_bm25(vault)
    row["build_s"]["rank_bm25"] = round(time.perf_counter() - started, 3)

    some = next(iter(sorted(vault.notes)))
    from grasbot.vault import LinkChange

    started = time.perf_counter()
    index.update(vault, LinkChange(changed={some}))
    row["update_one_note_s"] = round(time.perf_counter() - started, 3)

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
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,50000", help="synthetic vault sizes (comma-separated, '' for none)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--queries", type=int, default=200, help="questions sampled from a synthetic vault")
    parser.add_argument("--json", metavar="FILE", help="also write the figures to FILE")
    parser.add_argument("--no-memory", action="store_true", help="skip the peak-memory subprocess")
    args = parser.parse_args(argv)

    rows = []
    real = CORPORA / "grasbot-vault"
    if real.is_dir():
        rows.append(bench_vault("grasbot-vault", real, HERE / "questions-grasbot-vault.yaml", 0, 10_000))
    else:
        print(f"(skipping grasbot-vault: {real} not found)", file=sys.stderr)
    from synth import ensure_vault

    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    memory = None
    for size in sizes:
        path = ensure_vault(size, args.seed)
        cap = 60 if size <= 10_000 else 20
        rows.append(bench_vault(f"synth-{size}", path, None, args.queries, cap))
        if size == 10_000 and not args.no_memory:
            memory = _peak_memory_mib(path)

    header = f"{'vault':<15}{'notes':>7}{'build s':>9}{'update s':>9}{'engine ms':>11}{'original ms':>13}{'rank-bm25 ms':>14}{'x orig':>8}{'x bm25':>8}"
    print(header)
    for r in rows:
        m = r["median_ms"]
        print(
            f"{r['vault']:<15}{r['notes']:>7}{r['build_s']['engine']:>9.3f}{r['update_one_note_s']:>9.3f}"
            f"{m['engine']:>11.4f}{m['original']:>13.3f}{m['rank_bm25']:>14.3f}"
            f"{r['speedup']['vs_original']:>8.1f}{r['speedup']['vs_rank_bm25']:>8.1f}"
        )
    if memory:
        print(f"peak RSS, 10k notes loaded + indexed: {memory['peak_mib']} MiB (interpreter + imports: {memory['interpreter_mib']} MiB)")
    print(f"(python {sys.version.split()[0]}, {os.cpu_count()} CPUs; medians per question; build excludes Vault.load)")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "memory_10k": memory}, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
