"""What every benchmark suite shares: timing a workload in a fresh interpreter, medians and spreads,
ratios, and printing tables (rich when it is there, plain text otherwise).

A suite is a script `benchmarks/bench_<area>.py` with `main(argv: list[str] | None = None) -> int`. It
parses its arguments with `suite_parser()` (so `--quick`, `--runs` and `--json` mean the same everywhere),
measures, prints its tables with `print_table()` and returns 0 (or `SKIPPED` when it could not run at all,
after printing why). Every table printed is also recorded in `TABLES`, which `run.py` collects into one
Markdown summary for benchmarks/README.md.

Why a fresh process per measurement: the targets are about what a user waits for and what a process
holds (interpreter start, imports, reading the vault), and a warm interpreter hides both. The machine is
shared and noisy, so each figure is the median of several runs and the spread (min-max) is shown too,
and the CPU time (user + system) of each process is kept beside its wall time: when other jobs compete for
the cores, wall time grows but CPU time stays close to what a quiet machine would show.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
RESULTS_DIR = BENCH_DIR / "_results"
#: The interpreter that runs workloads: the project's virtualenv when present, else this one.
PYTHON = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv" / "bin" / "python").exists() else sys.executable

#: Returned by a suite's main() when it could not measure anything (it printed why).
SKIPPED = 3
#: Marker of the line a workload prints to hand its own metrics back (see `report()` below).
METRICS_MARK = "__BENCH_METRICS__ "
MIB = 1024 * 1024


class BenchmarkError(RuntimeError):
    """A workload failed: its exit status and the end of its stderr are in the message."""


# --------------------------------------------------------------------------------------------------
# Measuring a workload in a fresh process
# --------------------------------------------------------------------------------------------------

#: Prepended to every workload: `report(**metrics)` lets the workload hand back in-process figures
#: (for example the time of one phase, or a count to check the work was done).
_PRELUDE = f"""
import json as _bench_json, sys as _bench_sys
def report(**metrics):
    _bench_sys.stdout.write({METRICS_MARK!r} + _bench_json.dumps(metrics) + "\\n")
    _bench_sys.stdout.flush()
"""


@dataclass(slots=True)
class Run:
    wall: float  # seconds, whole process: spawn, interpreter start, imports, work, exit
    max_rss: int  # bytes, peak resident set of the process
    cpu: float  # seconds of CPU (user + system) the process used: less skewed than `wall` on a busy machine
    metrics: dict[str, Any]  # what the workload passed to report()


@dataclass(slots=True)
class Measurement:
    """Several runs of one workload, each in its own process."""

    label: str
    runs: list[Run] = field(default_factory=list)

    def _values(self, key: str) -> list[float]:
        if key == "wall":
            return [r.wall for r in self.runs]
        if key == "max_rss":
            return [float(r.max_rss) for r in self.runs]
        if key == "cpu":
            return [r.cpu for r in self.runs]
        return [float(r.metrics[key]) for r in self.runs if key in r.metrics]

    def median(self, key: str = "wall") -> float:
        values = self._values(key)
        return statistics.median(values) if values else float("nan")

    def spread(self, key: str = "wall") -> tuple[float, float]:
        values = self._values(key)
        return (min(values), max(values)) if values else (float("nan"), float("nan"))

    def metric(self, key: str) -> Any:
        """A metric reported by the last run (counts and other figures that do not vary)."""
        return self.runs[-1].metrics.get(key) if self.runs else None

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "runs": [{"wall": r.wall, "cpu": r.cpu, "max_rss": r.max_rss, **r.metrics} for r in self.runs]}


def run_once(code: str, *, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float | None = None) -> Run:
    """Run `code` with `python -c` in a fresh process; return its wall time and peak RSS.

    The peak RSS comes from `os.wait4` on that very child (not RUSAGE_CHILDREN, which keeps the maximum
    over every child ever reaped). Raises BenchmarkError when the workload exits non-zero."""
    full_env = dict(os.environ)
    full_env.setdefault("PYTHONHASHSEED", "0")
    if env:
        full_env.update(env)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen([PYTHON, "-c", _PRELUDE + code], cwd=cwd, env=full_env, stdout=out, stderr=err)
        timer = threading.Timer(timeout, proc.kill) if timeout else None
        if timer:
            timer.start()
        try:
            _pid, status, usage = os.wait4(proc.pid, 0)  # blocking: no polling delay in the wall time
        finally:
            if timer:
                timer.cancel()
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    if timeout and wall >= timeout and proc.returncode < 0:
        raise BenchmarkError(f"workload killed after the {timeout:.0f} s timeout")
    if proc.returncode != 0:
        tail = "\n".join(stderr.strip().splitlines()[-15:])
        raise BenchmarkError(f"workload exited with status {proc.returncode}:\n{tail}")
    metrics: dict[str, Any] = {}
    for line in stdout.splitlines():
        if line.startswith(METRICS_MARK):
            metrics.update(json.loads(line[len(METRICS_MARK):]))
    # ru_maxrss is in KiB on Linux, bytes on macOS.
    rss = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    return Run(wall=wall, max_rss=rss, cpu=usage.ru_utime + usage.ru_stime, metrics=metrics)


def measure(label: str, code: str, runs: int = 5, *, warmup: int = 1, verbose: bool = True, **kwargs: Any) -> Measurement:
    """`runs` fresh-process runs of `code` (after `warmup` unrecorded ones that warm the OS file cache)."""
    for _ in range(warmup):
        run_once(code, **kwargs)
    m = Measurement(label)
    for i in range(runs):
        m.runs.append(run_once(code, **kwargs))
        if verbose:
            r = m.runs[-1]
            print(f"  {label}: run {i + 1}/{runs} {r.wall:.3f} s wall, {r.cpu:.3f} s CPU", file=sys.stderr, flush=True)
    return m


def time_calls(fn: Any, repeat: int = 5, number: int = 1) -> list[float]:
    """In-process timings of `fn()` (seconds per call), for micro-benchmarks inside a workload."""
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        out.append((time.perf_counter() - start) / number)
    return out


# --------------------------------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------------------------------


def fmt_seconds(value: float) -> str:
    if value != value:  # NaN
        return "-"
    if value < 1e-3:
        return f"{value * 1e6:.0f} µs"
    if value < 1:
        return f"{value * 1e3:.1f} ms"
    return f"{value:.2f} s"


def fmt_mib(value: float) -> str:
    return "-" if value != value else f"{value / MIB:.0f} MiB"


def fmt_spread(m: Measurement, key: str = "wall", fmt: Any = fmt_seconds) -> str:
    low, high = m.spread(key)
    return f"{fmt(low)} – {fmt(high)}"


def ratio(slow: float, fast: float) -> float:
    """How many times faster `fast` is than `slow` (NaN when either is missing or zero)."""
    if not fast or fast != fast or slow != slow:
        return float("nan")
    return slow / fast


def fmt_ratio(value: float) -> str:
    if value != value:
        return "-"
    return f"{value:.0f}×" if value >= 10 else f"{value:.1f}×"


def verdict(value: float, target: float) -> str:
    """'ok' or 'MISS' for a figure that must stay at or under `target`."""
    if value != value:
        return "-"
    return "ok" if value <= target else "MISS"


@dataclass(slots=True)
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        lines = [f"**{self.title}**", "", "| " + " | ".join(self.columns) + " |", "|" + "---|" * len(self.columns)]
        lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in self.rows]
        lines += [""] + [f"- {n}" for n in self.notes] if self.notes else []
        return "\n".join(lines) + "\n"


#: Every table printed in this process, in order (run.py turns them into the README summary).
TABLES: list[Table] = []


def print_table(title: str, columns: Sequence[str], rows: Iterable[Sequence[Any]], notes: Sequence[str] = ()) -> Table:
    """Print a table (rich when available and stdout is a terminal, aligned plain text otherwise)."""
    notes = list(notes)
    try:  # how busy the (shared) machine was: figures taken at a load of 3 on 2 cores are not comparable
        one, five, _ = os.getloadavg()
        notes.append(f"system load average when printed: {one:.1f} (1 min), {five:.1f} (5 min), {os.cpu_count()} cores")
    except OSError:
        pass
    table = Table(title, list(columns), [[str(c) for c in row] for row in rows], notes)
    TABLES.append(table)
    try:
        if not sys.stdout.isatty():
            raise ImportError
        from rich.console import Console
        from rich.table import Table as RichTable

        rt = RichTable(title=title, title_justify="left")
        for i, col in enumerate(table.columns):
            rt.add_column(col, justify="left" if i == 0 else "right")
        for row in table.rows:
            rt.add_row(*row)
        console = Console()
        console.print(rt)
        for n in table.notes:
            console.print(f"  [dim]{n}[/dim]")
        return table
    except ImportError:
        pass
    widths = [max(len(col), *(len(row[i]) for row in table.rows)) if table.rows else len(col) for i, col in enumerate(table.columns)]
    print(f"\n{title}")
    print("  ".join(col.ljust(w) if i == 0 else col.rjust(w) for i, (col, w) in enumerate(zip(table.columns, widths))))
    print("  ".join("-" * w for w in widths))
    for row in table.rows:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))))
    for n in table.notes:
        print(f"  {n}")
    sys.stdout.flush()
    return table


def wait_for_quiet(max_load: float = 1.0, timeout: float = 600.0) -> float:
    """Wait until the 1-minute load average is at most `max_load` (other people's test runs on a shared
    machine skew every figure), at most `timeout` seconds; return the load average when done."""
    deadline = time.monotonic() + timeout
    try:
        load = os.getloadavg()[0]
    except OSError:
        return float("nan")
    if load > max_load:
        print(f"waiting for the machine to go quiet (load {load:.1f} > {max_load}) ...", file=sys.stderr, flush=True)
    while load > max_load and time.monotonic() < deadline:
        time.sleep(5)
        load = os.getloadavg()[0]
    return load


def note(text: str) -> None:
    """A line of commentary between tables (skips, caveats)."""
    print(f"note: {text}", flush=True)


# --------------------------------------------------------------------------------------------------
# Suites
# --------------------------------------------------------------------------------------------------


def suite_parser(description: str) -> argparse.ArgumentParser:
    """The argument parser every suite starts from, so the common flags mean the same everywhere."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="small sizes and few runs (a smoke test, minutes at most)")
    parser.add_argument("--runs", type=int, default=None, help="fresh-process runs per figure (default 5, 3 with --quick)")
    parser.add_argument("--json", type=Path, default=None, help="also write the raw measurements to this JSON file")
    return parser


def runs_for(args: argparse.Namespace) -> int:
    return args.runs if args.runs else (3 if args.quick else 5)


def machine() -> str:
    """One line describing where the figures were taken."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()} {platform.release()}"


def write_json(path: Path | None, suite: str, payload: dict[str, Any]) -> None:
    """Raw figures for later comparison: to `path` when given, and always to benchmarks/_results/."""
    data = {"suite": suite, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(), **payload}
    RESULTS_DIR.mkdir(exist_ok=True)
    targets = [RESULTS_DIR / f"{suite}-latest.json"] + ([path] if path else [])
    for target in targets:
        target.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
