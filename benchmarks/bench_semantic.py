"""What `GRASBOT_SEMANTIC=e5` costs a search (grasbot/search/semantic.py), against the lexical engine alone.

    .venv/bin/python benchmarks/bench_semantic.py              # obsidian-help-fr, its tuned question sets
    .venv/bin/python benchmarks/bench_semantic.py --runs 3
    .venv/bin/python benchmarks/run.py semantic                # through the common runner

Over the French help vault (../shared/corpora/obsidian-help-fr, or $GRASBOT_CORPORA) and the questions of
its tuned sets (benchmarks/questions-{,heldout-,dev2-,test-}obsidian-help-fr.yaml), one process, top 5:

- **engine**: `SearchIndex.search` with re-ranking off (the median of `--runs` passes' medians, default 5);
- **cold**: a new ranker with no cache: every candidate not seen yet is embedded during its question (what
  the first questions after a start with an empty `GRASBOT_SEMANTIC_CACHE` pay); one pass, and the time per
  embedded passage;
- **from disk**: a new ranker over the folder the cold pass filled (a restart, another replica);
- **warm**: the same ranker again, every note's vector in memory (a question's vector is computed for
  each search, never kept); medians of `--runs` passes;
- the resident memory the model adds (VmRSS before and after it is loaded).

The quality side of the trade is in compare_quality.py (`--semantic`), and both are in benchmarks/README.md.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

import _util  # noqa: E402

CORPORA = Path(os.environ.get("GRASBOT_CORPORA") or REPO.parent / "shared" / "corpora")
SETS = ("questions-obsidian-help-fr.yaml", "questions-heldout-obsidian-help-fr.yaml", "questions-dev2-obsidian-help-fr.yaml", "questions-test-obsidian-help-fr.yaml")


def _rss() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _pass(index, questions: list[str]) -> list[float]:
    out = []
    for q in questions:
        start = time.perf_counter()
        index.search(q, 5)
        out.append(time.perf_counter() - start)
    return out


def _p95(values: list[float]) -> float:
    return sorted(values)[max(0, round(0.95 * len(values)) - 1)]


def main(argv: list[str] | None = None) -> int:
    args = _util.suite_parser(__doc__.splitlines()[0]).parse_args(argv)
    runs = _util.runs_for(args)
    vault_dir = CORPORA / "obsidian-help-fr"
    if not vault_dir.is_dir():
        _util.note(f"{vault_dir} not found: nothing measured")
        return 0
    from grasbot.search import semantic
    from grasbot.search.e5 import E5Embedder
    from grasbot.search.index import SearchIndex
    from grasbot.vault import Vault
    from vaulttools.evaluation import load_questions

    index = SearchIndex.build(Vault.load(vault_dir))
    questions = [q.q for name in SETS for q in load_questions(HERE / name)]

    with semantic.use(None):
        _pass(index, questions)  # warm the engine's own caches
        engine = [statistics.median(_pass(index, questions)) for _ in range(runs)]

    before = _rss()
    model = E5Embedder()
    model.embed_queries(["bonjour"])
    model_rss = _rss() - before

    class Counting:
        name = model.name
        dim = model.dim
        passages = 0

        def embed_queries(self, texts):
            return model.embed_queries(texts)

        def embed_passages(self, texts):
            Counting.passages += len(texts)
            return model.embed_passages(texts)

    with tempfile.TemporaryDirectory() as folder:
        cold_ranker = semantic.SemanticRanker(Counting(), Path(folder))
        with semantic.use(cold_ranker):
            start = time.perf_counter()
            cold = _pass(index, questions)
            cold_total = time.perf_counter() - start
        embedded = Counting.passages
        with semantic.use(semantic.SemanticRanker(Counting(), Path(folder))):
            disk = _pass(index, questions)
        with semantic.use(cold_ranker):
            warm = [statistics.median(_pass(index, questions)) for _ in range(runs)]
    engine_ms = statistics.median(engine)
    warm_ms = statistics.median(warm)
    rows = [
        ["engine alone", _util.fmt_seconds(engine_ms), "-", "1.00×"],
        ["re-ranked, warm (the notes' vectors in memory)", _util.fmt_seconds(warm_ms), "-", f"{warm_ms / engine_ms:.2f}×"],
        ["re-ranked, from disk (a restart)", _util.fmt_seconds(statistics.median(disk)), _util.fmt_seconds(_p95(disk)), f"{statistics.median(disk) / engine_ms:.2f}×"],
        ["re-ranked, cold (empty cache)", _util.fmt_seconds(statistics.median(cold)), _util.fmt_seconds(_p95(cold)), f"{statistics.median(cold) / engine_ms:.2f}×"],
    ]
    _util.print_table(
        f"search time per question, obsidian-help-fr ({len(questions)} questions, top 5)",
        ["", "median", "p95", "vs engine"],
        rows,
    )
    print(f"cold pass: {embedded} passages embedded in {cold_total:.1f} s ({1000 * cold_total / max(embedded, 1):.0f} ms a passage, searches included)")
    print(f"model resident memory: {model_rss / 2**20:.0f} MiB")
    _util.write_json(args.json, "semantic", {
        "questions": len(questions), "engine_s": engine_ms, "warm_s": warm_ms, "disk_s": statistics.median(disk),
        "cold_s": statistics.median(cold), "cold_p95_s": _p95(cold), "embedded": embedded, "cold_total_s": cold_total,
        "model_rss": model_rss,
    })
    return 0


if __name__ == "__main__":
    sys.exit(main())
