"""Watch mode: from a file's save to its diagnostics printed and `POST /reload-vault` received.

For each vault (the bundled sample vault, and the 10k synthetic vault), on a temporary copy:

1. the real command runs in its own process, `vaulttools watch COPY --api URL --format json`, against a
   tiny HTTP server in this process that stands in for the GrasBot API and stamps each request on arrival;
2. a note is saved N times (a plain rewrite: open, write, close), alternately adding and removing an
   unknown domain, so every save prints one `change` event (one new or one fixed problem) and sends one
   reload. Latency = from just before the save to the later of (the `change` line read from the watcher's
   stdout, the reload request received), so it includes the quiet window (120 ms by default), the
   file-system event delivery, the re-check, the printing and the push. Median, p90 and max of N saves;
   the watcher's own breakdown (`latency_ms` from the first file-system event, `elapsed_ms` of the
   re-check) is shown beside it;
3. memory: a second watcher (`--quiet-ms 20`, so a thousand edits take a minute, not ten) gets E edits,
   each waited for; its RSS (from /proc) after a warm-up of 50 edits and after all E shows whether it grows.

    .venv/bin/python benchmarks/bench_watch.py                 # sample + 10k, 25 saves, 1000 edits
    .venv/bin/python benchmarks/bench_watch.py --quick         # sample + 1k, 20 saves, 200 edits
    .venv/bin/python benchmarks/bench_watch.py --sizes 0 --saves 40   # the sample vault only

Target: ≤ 300 ms save-to-printed-and-pushed, quiet window included; RSS flat over 1,000 edits.
"""

from __future__ import annotations

import json
import queue
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _util  # noqa: E402
import synth  # noqa: E402

REPO = _util.REPO
UNKNOWN = "zzz-domaine-inconnu"
TARGET_MS = 300.0


class RecordingApi:
    """`POST /reload-vault` on 127.0.0.1: answers at once and records when each request arrived."""

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self.cond = threading.Condition()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                now = time.monotonic()
                body = b'{"status": "reloaded", "notes": 0}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                with api.cond:
                    api.arrivals.append(now)
                    api.cond.notify_all()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def wait_count(self, n: int, timeout: float) -> float | None:
        """The arrival time of request number `n` (1-based), waiting for it at most `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while len(self.arrivals) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.cond.wait(left)
            return self.arrivals[n - 1]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Watcher:
    """`vaulttools watch --format json` in a subprocess; every stdout line is stamped on arrival."""

    def __init__(self, vault: Path, api: str, *extra: str) -> None:
        exe = Path(_util.PYTHON).with_name("vaulttools")
        self.proc = subprocess.Popen(
            [str(exe), "watch", str(vault), "--api", api, "--format", "json", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        )  # fmt: skip
        self.events: queue.Queue[tuple[float, dict]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            stamp = time.monotonic()
            try:
                self.events.put((stamp, json.loads(line)))
            except ValueError:
                pass

    def next(self, kind: str, timeout: float) -> tuple[float, dict]:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no `{kind}` event within {timeout:.0f} s")
            try:
                stamp, event = self.events.get(timeout=min(left, 0.5))
            except queue.Empty:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"watch exited ({self.proc.returncode}): {self.proc.stderr.read()[-2000:]}")
                continue
            if event.get("event") == kind:
                return stamp, event

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> dict | None:
        self.proc.send_signal(2)  # SIGINT, as Ctrl-C
        try:
            _, event = self.next("stop", 30)
        except (TimeoutError, RuntimeError):
            event = None
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        return event


def copy_vault(source: Path, dest: Path, taxonomy_beside: Path | None) -> Path:
    target = dest / "vault"
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(".obsidian"))
    if taxonomy_beside is not None and taxonomy_beside.exists():
        shutil.copy2(taxonomy_beside, dest / "TAXONOMIE.md")
    return target


def pick_note(vault: Path, diagnostics: list[dict]) -> tuple[Path, str, str]:
    """A note with a flow `domains: [a, ...]` list: (file, text as is, text with an unknown first domain)."""
    flagged = {d["path"] for d in diagnostics}
    for file in sorted(vault.rglob("*.md")):
        rel = file.relative_to(vault).as_posix()
        if rel in flagged or rel.lower() in ("readme.md", "taxonomie.md"):
            continue
        text = file.read_text(encoding="utf-8")
        match = re.search(r"^domains: \[([^,\]]+)", text, re.M)
        if match and "visibility: private" not in text:
            broken = text[: match.start(1)] + UNKNOWN + text[match.end(1):]
            return file, text, broken
    raise RuntimeError(f"no clean note with a flow `domains:` list in {vault}")


def save(file: Path, text: str) -> float:
    """Rewrite the file as an editor does in place; the time just before the save starts."""
    started = time.monotonic()
    with open(file, "w", encoding="utf-8") as fh:
        fh.write(text)
    return started


def measure_latency(vault: Path, saves: int) -> dict:
    api = RecordingApi()
    watcher = Watcher(vault, api.url)
    try:
        started = time.monotonic()
        _, start = watcher.next("start", 900)
        startup = time.monotonic() - started
        file, original, broken = pick_note(vault, start["diagnostics"])
        total, printed, pushed, inside, check = [], [], [], [], []
        for i in range(saves):
            t0 = save(file, broken if i % 2 == 0 else original)
            t_print, change = watcher.next("change", 60)
            t_push = api.wait_count(i + 1, 60)
            if t_push is None:
                raise RuntimeError("the reload was not received")
            if len(change["new"]) + len(change["fixed"]) != 1:
                raise RuntimeError(f"expected one new or fixed problem, got {change}")
            total.append((max(t_print, t_push) - t0) * 1000)
            printed.append((t_print - t0) * 1000)
            pushed.append((t_push - t0) * 1000)
            inside.append(change["latency_ms"])
            check.append(change["elapsed_ms"])
            time.sleep(0.25)  # separate bursts
        summary = watcher.stop()
    finally:
        if watcher.proc.poll() is None:
            watcher.proc.kill()
        api.close()
    return {"startup_s": startup, "notes": start["notes"], "total_ms": total, "printed_ms": printed,
            "pushed_ms": pushed, "watcher_latency_ms": inside, "recheck_ms": check,
            "reloads": len(api.arrivals), "stop": summary}  # fmt: skip


def measure_memory(vault: Path, edits: int, warmup: int = 50) -> dict:
    api = RecordingApi()
    watcher = Watcher(vault, api.url, "--quiet-ms", "20")
    try:
        _, start = watcher.next("start", 900)
        file, original, broken = pick_note(vault, start["diagnostics"])
        samples = []
        before = float("nan")
        started = time.monotonic()
        for i in range(warmup + edits):
            if i == warmup:
                before = watcher.rss_mib()
                started = time.monotonic()
            save(file, broken if i % 2 == 0 else original)
            watcher.next("change", 60)
            if i >= warmup and (i - warmup) % max(1, edits // 10) == 0:
                samples.append(round(watcher.rss_mib(), 1))
        after = watcher.rss_mib()
        elapsed = time.monotonic() - started
        watcher.stop()
    finally:
        if watcher.proc.poll() is None:
            watcher.proc.kill()
        api.close()
    return {"edits": edits, "rss_before_mib": before, "rss_after_mib": after, "samples_mib": samples,
            "seconds": elapsed, "reloads": len(api.arrivals)}  # fmt: skip


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> int:
    parser = _util.suite_parser("Watch mode: save-to-printed-and-pushed latency and memory over many edits")
    parser.add_argument("--sizes", default=None, help="synthetic vault sizes, comma-separated; 0 = the sample vault only "
                        "(default: 10000; 1000 with --quick)")  # fmt: skip
    parser.add_argument("--saves", type=int, default=None, help="saves timed per vault (default 25; 20 with --quick)")
    parser.add_argument("--edits", type=int, default=None, help="edits for the memory check (default 1000; 200 with --quick)")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory check")
    args = parser.parse_args(argv)
    saves = max(20, args.saves or 25) if not args.quick else max(20, args.saves or 20)
    edits = args.edits or (200 if args.quick else 1000)
    sizes = [int(s) for s in (args.sizes or ("1000" if args.quick else "10000")).split(",") if s.strip()]

    vaults: list[tuple[str, Path, Path | None]] = [("sample vault/", REPO / "vault", REPO / "TAXONOMIE.md")]
    for size in sizes:
        if size > 0:
            vaults.append((f"synthetic {size // 1000}k", synth.ensure_vault(size), None))

    results: dict[str, dict] = {}
    latency_rows, memory_rows = [], []
    for label, source, taxonomy in vaults:
        with tempfile.TemporaryDirectory(prefix="bench-watch-") as tmp:
            vault = copy_vault(source, Path(tmp), taxonomy)
            lat = measure_latency(vault, saves)
            mem = measure_memory(vault, edits) if not args.no_memory else None
        results[label] = {"latency": lat, "memory": mem}
        med = statistics.median(lat["total_ms"])
        latency_rows.append([
            f"{label} ({lat['notes']} notes)", f"{med:.0f} ms", f"{pct(lat['total_ms'], 0.9):.0f} ms",
            f"{max(lat['total_ms']):.0f} ms", f"{statistics.median(lat['printed_ms']):.0f} ms",
            f"{statistics.median(lat['pushed_ms']):.0f} ms", f"{statistics.median(lat['recheck_ms']):.0f} ms",
            f"{lat['startup_s']:.1f} s", _util.verdict(med, TARGET_MS),
        ])  # fmt: skip
        if mem is not None:
            growth = mem["rss_after_mib"] - mem["rss_before_mib"]
            memory_rows.append([
                f"{label}", str(mem["edits"]), f"{mem['rss_before_mib']:.1f} MiB", f"{mem['rss_after_mib']:.1f} MiB",
                f"{growth:+.1f} MiB", f"{mem['seconds']:.0f} s", str(mem["reloads"]),
            ])  # fmt: skip
    _util.print_table(
        f"watch: save → diagnostics printed and reload received ({saves} saves each, quiet window 120 ms)",
        ["vault", "median", "p90", "max", "printed (median)", "pushed (median)", "re-check (median)", "startup", "≤ 300 ms"],
        latency_rows,
        notes=["one save = one rewrite of a note adding or removing an unknown domain; each printed one problem "
               "new or fixed and sent one POST /reload-vault to a local stub API",
               "re-check = the watcher's own time in LiveVault.apply (read, relink, re-lint the note)"],
    )  # fmt: skip
    if memory_rows:
        _util.print_table(
            "watch: memory over many edits (RSS of the watch process, after a 50-edit warm-up and at the end)",
            ["vault", "edits", "RSS before", "RSS after", "growth", "time", "reloads"],
            memory_rows,
        )
    _util.write_json(args.json, "watch", {"saves": saves, "edits": edits, "results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
