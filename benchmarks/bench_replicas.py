"""replicas — `/ask` throughput of one and of two `grasbot serve` replicas sharing a real redis-server.

    python benchmarks/bench_replicas.py            # 5 runs of 5 s per setup
    python benchmarks/bench_replicas.py --quick    # 3 runs of 2 s

Both setups in the same run, on the bundled vault, with the fake Ollama of the tests (its own process,
answering at once: what is measured is GrasBot, not a model) and GRASBOT_REDIS_URL set in both (memory,
reload versions and limits through Redis, limits off so that one client address is not refused). The client
spreads C keep-alive connections over the replicas (bench_server.py's minimal HTTP client) and counts
answers per second and non-200 answers; the figure is the median of the runs, and the ratio two / one is
taken from those medians. Each replica is one process: on a machine with N cores, up to N replicas add
throughput, as more machines would behind nginx (docs/deploy.md).
"""

from __future__ import annotations

import os
import secrets
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(REPO))

import _util  # noqa: E402
import bench_server  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = _util.suite_parser("/ask throughput of one and two replicas sharing Redis, fake LLM.")
    parser.add_argument("--vault", type=Path, default=REPO / "vault", help="the vault served (default: the bundled one)")
    parser.add_argument("--concurrency", type=int, default=32, help="client connections (default 32)")
    parser.add_argument("--duration", type=float, default=None, help="seconds per run (default 5, 2 with --quick)")
    args = parser.parse_args(argv)
    duration = args.duration or (2.0 if args.quick else 5.0)
    runs = _util.runs_for(args)
    from tests.redis_server import redis_binary

    if redis_binary() is None:
        print("skipped: no redis-server or valkey-server binary (apt-get install redis-server)")
        return _util.SKIPPED
    from tests.redis_server import RedisServer

    work = Path(tempfile.mkdtemp(prefix="bench-replicas-"))
    redis = RedisServer(work / "redis").start()
    results: dict[int, list[float]] = {1: [], 2: []}
    failures = 0
    try:
        with bench_server.fake_ollama({**os.environ, "PYTHONPATH": str(REPO)}) as fake_url:
            env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGFUSE_", "GRASBOT_", "VAULTTOOLS_"))}
            env.update(OLLAMA_URL=fake_url, VAULT_DIR=str(args.vault), GRASBOT_REDIS_URL=redis.url,
                       GRASBOT_SESSION_KEY=secrets.token_hex(32), GRASBOT_RATE_LIMIT="0", GRASBOT_MAX_GENERATIONS="0",
                       VAULTTOOLS_CACHE_DIR=str(work / "cache"))  # fmt: skip
            for run in range(runs):
                for count in (1, 2):
                    procs, ports = [], []
                    try:
                        for k in range(count):
                            port = bench_server._free_port()
                            cmd = [sys.executable, "-m", "grasbot.service.cli", "serve", "--port", str(port), "--log-level", "warning"]
                            procs.append(bench_server._start(cmd, {**env, "GRASBOT_STATE_DIR": str(work / f"state-{k}")}, port))
                            ports.append(port)
                        bench_server.throughput(ports, args.concurrency, min(1.0, duration))  # warm-up: connections, caches
                        rps, failed = bench_server.throughput(ports, args.concurrency, duration)
                    finally:
                        for proc in procs:
                            bench_server._stop(proc)
                    results[count].append(rps)
                    failures += failed
                    print(f"run {run + 1}/{runs}: {count} replica(s) {rps:.0f}/s, {failed} non-200", file=sys.stderr, flush=True)
    finally:
        redis.stop()
        shutil.rmtree(work, ignore_errors=True)
    one, two = statistics.median(results[1]), statistics.median(results[2])
    _util.print_table(
        f"replicas: /ask throughput, fake LLM, Redis shared (median of {runs} runs of {duration:.0f} s, {args.concurrency} connections)",
        ["setup", "answers / s", "runs"],
        [["1 replica", f"{one:.0f}", ", ".join(f"{v:.0f}" for v in results[1])],
         ["2 replicas", f"{two:.0f}", ", ".join(f"{v:.0f}" for v in results[2])],
         ["ratio 2 / 1", f"{two / one:.2f}×", ""]],
        notes=[f"non-200 answers over every run: {failures}", _util.machine()],
    )  # fmt: skip
    _util.write_json(args.json, "replicas", {"one": results[1], "two": results[2], "failures": failures})
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
