"""Run the benchmark suites: every `benchmarks/bench_*.py`, or the ones named.

    python benchmarks/run.py                 # every suite, full sizes (what `make bench` runs)
    python benchmarks/run.py --quick         # small sizes, few runs: a smoke test
    python benchmarks/run.py load retrieval  # only these suites (bench_load.py, bench_retrieval.py)
    python benchmarks/run.py --markdown benchmarks/_results/latest.md   # tables as Markdown, for the README
    python benchmarks/run.py --wait-quiet 900 load   # first wait (up to 15 min) for a quiet machine

Arguments after `--` go to every suite (for example `-- --runs 7`). A suite that fails does not stop the
others; the exit status is 1 when any suite failed, 0 otherwise (a skipped suite is not a failure).
"""

from __future__ import annotations

import argparse
import importlib.util
import shlex
import sys
import time
import traceback
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))  # suites import `_util` and `synth` as top-level modules

import _util  # noqa: E402


def discover() -> dict[str, Path]:
    """Suite name (`load` for bench_load.py) -> file, sorted by name."""
    return {p.stem.removeprefix("bench_"): p for p in sorted(BENCH_DIR.glob("bench_*.py"))}


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    given = list(argv)
    passthrough: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, passthrough = argv[:cut], argv[cut + 1 :]
    parser = argparse.ArgumentParser(description="Run the benchmark suites.")
    parser.add_argument("suites", nargs="*", help="suite names (load, retrieval, ...); default: all")
    parser.add_argument("--quick", action="store_true", help="small sizes and few runs")
    parser.add_argument("--list", action="store_true", help="list the suites and exit")
    parser.add_argument("--markdown", type=Path, help="write every table as Markdown to this file")
    parser.add_argument("--wait-quiet", type=float, default=0, metavar="SECONDS",
                        help="before each suite, wait up to SECONDS for the 1-minute load average to drop "
                        "under --max-load (the machine is shared)")
    parser.add_argument("--max-load", type=float, default=1.0, help="load average for --wait-quiet (default 1.0)")
    args = parser.parse_args(argv)

    suites = discover()
    if args.list:
        for name, path in suites.items():
            print(f"{name:12} {path.relative_to(BENCH_DIR.parent)}")
        return 0
    unknown = [s for s in args.suites if s.removeprefix("bench_") not in suites]
    if unknown:
        print(f"run.py: unknown suite(s) {', '.join(unknown)}; known: {', '.join(suites)}", file=sys.stderr)
        return 2
    chosen = [s.removeprefix("bench_") for s in args.suites] or list(suites)
    suite_argv = (["--quick"] if args.quick else []) + passthrough

    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"benchmarks: {', '.join(chosen)}  ({started}; {_util.machine()})", flush=True)
    status: dict[str, str] = {}
    for name in chosen:
        print(f"\n=== {name} ===", flush=True)
        if args.wait_quiet:
            load = _util.wait_for_quiet(args.max_load, args.wait_quiet)
            print(f"load average at start: {load:.1f}", flush=True)
        begin = time.perf_counter()
        try:
            code = _load(name, suites[name]).main(list(suite_argv))
        except SystemExit as exc:  # argparse errors inside a suite
            code = exc.code if isinstance(exc.code, int) else 2
        except Exception:  # one broken suite must not hide the others' figures
            traceback.print_exc()
            code = 1
        took = time.perf_counter() - begin
        status[name] = "skipped" if code == _util.SKIPPED else "ok" if code == 0 else f"FAILED ({code})"
        print(f"--- {name}: {status[name]} in {took:.0f} s", flush=True)

    print("\nsummary: " + ", ".join(f"{n} {s}" for n, s in status.items()))
    if args.markdown:
        command = "python benchmarks/run.py " + shlex.join(given)
        parts = [f"Date: {started}. Machine: {_util.machine()}.", f"Command: `{command.strip()}`", ""]
        parts += [t.markdown() for t in _util.TABLES]
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        args.markdown.write_text("\n".join(parts), encoding="utf-8")
        print(f"tables written to {args.markdown}")
    return 1 if any(s.startswith("FAILED") for s in status.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
