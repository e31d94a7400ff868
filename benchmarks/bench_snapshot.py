"""snapshot — fast starts from the persistent vault + index snapshot (grasbot/snapshot.py), whole process.

    python benchmarks/bench_snapshot.py            # 10k synthetic vault, 5 fresh processes per figure
    python benchmarks/bench_snapshot.py --quick    # 1k vault, 3 processes

Every figure is the median of fresh processes, all in the same run, on the same vault:

- `vaulttools ask` **without the snapshot** (`--no-cache`: the code path before snapshots), **cold** (an empty
  cache folder: a full load, then the snapshot written by a forked child after the answer) and **warm** (the
  snapshot read, no file changed). Targets: warm ≤ 0.15 × cold and < 0.6 s; cold ≤ 1.05 × without.
- **TUI fully checked**: the TUI's backend phases in one process (`Backend.load`, `build_index`,
  `start_live`: every note linted, the badges), the same three ways. Target warm ≤ 1.5 s.
- **`grasbot serve` ready**: from the spawn until `GET /health` answers, the same three ways (no snapshot: a
  cache folder the service cannot write). Target warm ≤ 1 s.
- **memory**: peak RSS of a process that loads the vault + index, fresh vs from the snapshot (≤ 150 MiB).

Each run gets its own `VAULTTOOLS_CACHE_DIR`; a warm run's folder is filled once beforehand.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _util  # noqa: E402
import synth  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
QUESTION = "parle-moi du projet firmware recherche"

ASK = """
import sys
from vaulttools.cli import main
sys.argv = ["vaulttools", "ask", "--json", "--vault", {vault!r}, {question!r}] + {extra!r}
code = main()
sys.exit(code)
"""

TUI = """
import time
t0 = time.perf_counter()
from vaulttools.tui.backend import Backend
b = Backend({vault!r}, use_cache={use_cache!r})
b.load(); b.build_index(); b.start_live()
report(checked=time.perf_counter() - t0, notes=len(b.vault.notes), source=b._loaded.source)
b.stop()
"""

SERVE = """
import os, pathlib, subprocess, sys, time, socket, httpx
with socket.socket() as s:
    s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]
t0 = time.perf_counter()
proc = subprocess.Popen([sys.executable, "-m", "grasbot.service.cli", "serve", "--vault", {vault!r}, "--port", str(port),
                         "--log-level", "warning"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
# One client for every poll: `httpx.get` makes a client per call, which loads the CA bundle each time (the
# poller then took 0.4 of a core from the server it times, and polled every ~80 ms instead of ~20).
client = httpx.Client(timeout=5, trust_env=False)
try:
    while True:
        try:
            if client.get(f"http://127.0.0.1:{{port}}/health").status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.02)
        assert proc.poll() is None, "grasbot serve exited"
    ready = time.perf_counter() - t0
    # (before stopping it: the service writes its snapshot from a thread after the start, which a SIGTERM
    # right away would cut short; the next warm run needs the file. Not part of the figure.)
    cache = pathlib.Path(os.environ["VAULTTOOLS_CACHE_DIR"])
    deadline = time.monotonic() + 300
    while {wait!r} and time.monotonic() < deadline and (
            not list(cache.rglob("snapshot-*.bin")) or list(cache.rglob(".snapshot-*.tmp"))):
        time.sleep(0.05)
finally:
    client.close(); proc.terminate(); proc.wait(timeout=60)
report(ready=ready)
"""

MEMORY = """
from grasbot import snapshot
s = snapshot.load({vault!r}, use_snapshot={use_cache!r})
assert s.source == {source!r}, s.source
report(notes=len(s.vault.notes))
"""


def _env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRASBOT_", "LANGFUSE_", "VAULTTOOLS_"))}
    env.update(VAULTTOOLS_CACHE_DIR=str(cache), OLLAMA_URL="http://127.0.0.1:9", GRASBOT_STATE_DIR=str(cache / "state"),
               PYTHONPATH=str(REPO))  # fmt: skip
    return env


def _three_ways(label: str, make: Any, runs: int, work: Path, key: str) -> dict[str, Any]:
    """(without snapshot, cold, warm) measurements of the workload `make(use_cache)` returns."""
    out: dict[str, Any] = {}
    for way in ("without", "cold", "warm"):
        m = _util.Measurement(f"{label} {way}")
        for i in range(runs + 1):  # the first run warms the OS file cache, unrecorded
            cache = Path(tempfile.mkdtemp(prefix=f"snap-{way}-", dir=work))
            if way == "warm":
                _util.run_once(make(True), env=_env(cache), timeout=600)
                _wait_written(cache)
            if way == "without":
                cache_env = _env(cache)
                if "serve" in label:  # the service has no --no-cache: a cache folder that cannot exist
                    cache_env["VAULTTOOLS_CACHE_DIR"] = "/dev/null/no-cache"
                run = _util.run_once(make(False), env=cache_env, timeout=600)
            else:
                run = _util.run_once(make(True), env=_env(cache), timeout=600)
            if i:
                m.runs.append(run)
                print(f"  {m.label}: run {i}/{runs} {run.wall:.2f} s wall, {key}={run.metrics.get(key, run.wall):.2f}", file=sys.stderr, flush=True)
            _wait_written(cache, expect=way != "without")
            shutil.rmtree(cache, ignore_errors=True)
        out[way] = m
    return out


def _wait_written(cache: Path, expect: bool = True, timeout: float = 300.0) -> None:
    """Until the snapshot writer (a forked child, a thread of a stopped server) is done: the file is there
    (`expect`) and no temporary file is left. The next run must neither miss the file nor share the CPU."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (not expect or list(cache.rglob("snapshot-*.bin"))) and not list(cache.rglob(".snapshot-*.tmp")):
            return
        time.sleep(0.05)
    raise _util.BenchmarkError(f"no snapshot was written in {cache}")


def main(argv: list[str] | None = None) -> int:
    parser = _util.suite_parser(__doc__.split("\n")[0])
    parser.add_argument("--notes", type=int, default=None, help="vault size (default 10000, 1000 with --quick)")
    parser.add_argument("--only", default="ask,tui,serve", help="comma-separated parts to measure (default ask,tui,serve)")
    args = parser.parse_args(argv)
    # Timed as an installed package runs: with its bytecode cached (pip compiles it; an editable install
    # writes it on first import). Under PYTHONDONTWRITEBYTECODE every process would compile the modules
    # changed since the last cached run again, ~0.1-0.2 s of each figure that no user pays.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    load_before = os.getloadavg()
    runs = _util.runs_for(args)
    notes = args.notes or (1000 if args.quick else 10000)
    vault = str(synth.ensure_vault(notes))
    work = Path(tempfile.mkdtemp(prefix="bench-snapshot-"))
    try:
        only = set(args.only.split(","))
        ask = tui = serve = None
        if "ask" in only:
            ask = _three_ways("ask", lambda use: ASK.format(vault=vault, question=QUESTION, extra=[] if use else ["--no-cache"]),
                              runs, work, "wall")  # fmt: skip
        if "tui" in only:
            tui = _three_ways("tui", lambda use: TUI.format(vault=vault, use_cache=use), runs, work, "checked")
        if "serve" in only:
            serve = _three_ways("serve", lambda use: SERVE.format(vault=vault, wait=use), runs, work, "ready")
        mem: dict[str, _util.Measurement] = {}
        for way, use, source in (("fresh", False, "load"), ("snapshot", True, "snapshot")):
            cache = Path(tempfile.mkdtemp(prefix="snap-mem-", dir=work))
            if use:
                _util.run_once(ASK.format(vault=vault, question=QUESTION, extra=[]), env=_env(cache), timeout=600)
                _wait_written(cache)
            mem[way] = _util.measure(f"memory {way}", MEMORY.format(vault=vault, use_cache=use, source=source), runs,
                                     warmup=0, env=_env(cache), timeout=600)  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)

    def med(m: dict[str, Any], way: str, key: str) -> float:
        return m[way].median(key)

    rows = []
    for name, m, key, target in (("vaulttools ask, whole process", ask, "wall", 0.6),
                                 ("TUI fully checked (load, index, lint)", tui, "checked", 1.5),
                                 ("grasbot serve ready (/health answers)", serve, "ready", 1.0)):  # fmt: skip
        if m is None:
            continue
        without, cold, warm = med(m, "without", key), med(m, "cold", key), med(m, "warm", key)
        rows.append([name, _util.fmt_seconds(without), _util.fmt_seconds(cold), _util.fmt_seconds(warm),
                     f"{warm / cold:.2f}×", f"{cold / without:.2f}×",
                     f"{_util.verdict(warm, target)} (≤ {target} s)"])  # fmt: skip
    _util.print_table(
        f"snapshot: fast starts on synth-{notes} (median of {runs} fresh processes each)",
        ["what", "no snapshot", "cold", "warm", "warm / cold", "cold / no snapshot", "warm target"],
        rows,
        notes=[
            f"memory, peak RSS of a process holding the vault + index: fresh load {_util.fmt_mib(mem['fresh'].median('max_rss'))}, "
            f"from the snapshot {_util.fmt_mib(mem['snapshot'].median('max_rss'))} (target ≤ 150 MiB)",
            *([f"vaulttools ask, CPU time of the process (less skewed by a busy machine): no snapshot "
               f"{_util.fmt_seconds(ask['without'].median('cpu'))}, cold {_util.fmt_seconds(ask['cold'].median('cpu'))}, "
               f"warm {_util.fmt_seconds(ask['warm'].median('cpu'))}"] if ask else []),
            "targets: ask warm ≤ 0.15 × cold and < 0.6 s; cold ≤ 1.05 × no snapshot",
            f"load average (1, 5, 15 min) at the start {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
            f"at the end {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}",
            _util.machine(),
        ],
    )
    _util.write_json(args.json, "snapshot", {
        "notes": notes,
        **{f"{n}_{w}": m[w].as_dict() for n, m in (("ask", ask), ("tui", tui), ("serve", serve)) if m for w in m},
        **{f"memory_{w}": m.as_dict() for w, m in mem.items()},
    })  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
