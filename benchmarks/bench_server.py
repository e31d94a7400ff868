"""server — what the API itself costs per question, without the LLM, and its throughput.

The real `grasbot serve` runs in its own process against the fake Ollama of the tests (its own process too,
answering at once). From a client on loopback, in the same run:

- **overhead per /ask excluding the LLM** = client latency − the LLM call's time as the server reports it
  (`Server-Timing: llm`): HTTP, validation, retrieval, prompt building, JSON, the round trip. Target ≤ 5 ms
  median. The server-side part alone (`total − llm`) and its retrieval share are shown too.
- the **plain baseline**: a bare FastAPI app on the same uvicorn that sends a fixed prompt to the same fake
  model with the same `ollama` client and returns its text (no retrieval, no prompt, no memory, no
  validation): the floor of any design that calls Ollama from FastAPI, as the original GrasBot did.
- **throughput**: /ask per second from C concurrent keep-alive connections, same for the baseline.

Each figure is the median over `--runs` fresh server processes (each run: the median of its requests),
with the spread of the runs.

    .venv/bin/python benchmarks/bench_server.py [--quick] [--runs N] [--vault DIR] [--workers N]
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(REPO))

import _util  # noqa: E402

QUESTIONS = [
    "Que sait-il faire en Rust ?",
    "Parle-moi de l'optimiseur de tournées",
    "Quel est son parcours ?",
    "Comment est organisé le vault ?",
    "Quel temps fait-il demain ?",
    "Quels projets en Python ?",
    "A-t-il travaillé avec Kubernetes ?",
    "Qui est-il ?",
]
TARGET_MS = 5.0


# -- helper processes -------------------------------------------------------------------------------
def _serve_fake() -> int:
    from tests.fake_ollama import FakeOllama

    with FakeOllama() as fake:
        fake.script(reply="Réponse immédiate du modèle factice [rust].")
        print(fake.url, flush=True)
        sys.stdin.read()  # until the parent closes our stdin
    return 0


def baseline_app() -> Any:
    """The plain baseline: FastAPI -> ollama client -> JSON, nothing else."""
    import ollama
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse

    app = FastAPI()
    client = ollama.AsyncClient(host=os.environ["OLLAMA_URL"], trust_env=False)
    messages = [{"role": "system", "content": "Réponds en français."}, {"role": "user", "content": "Bonjour ?"}]

    @app.get("/ask")
    async def ask(q: str = "") -> JSONResponse:
        started = time.perf_counter()
        reply = await client.chat(model="qwen3:8b", messages=messages, stream=False, think=False)
        llm = (time.perf_counter() - started) * 1000
        return JSONResponse({"response": reply.message.content}, headers={"Server-Timing": f"llm;dur={llm:.3f}, total;dur={llm:.3f}"})

    return app


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(cmd: list[str], env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(cmd, env=env, cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return proc
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise _util.BenchmarkError(f"server did not start: {' '.join(cmd)}") from None
            time.sleep(0.1)


@contextlib.contextmanager
def fake_ollama(env: dict[str, str] | None = None) -> Iterator[str]:
    """The fake Ollama (`--serve-fake`) in its own process, for as long as the block runs: yields its URL."""
    fake = subprocess.Popen([sys.executable, __file__, "--serve-fake"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env=env)  # fmt: skip
    try:
        url = fake.stdout.readline().strip() if fake.stdout else ""
        if not url:
            raise _util.BenchmarkError("the fake Ollama did not start")
        yield url
    finally:
        if fake.stdin:
            fake.stdin.close()  # (the fake stops when its stdin closes)
        try:
            fake.wait(timeout=10)
        except subprocess.TimeoutExpired:
            fake.kill()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


# -- measurements -----------------------------------------------------------------------------------
def _timings(header: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in header.split(","):
        name, _, dur = part.strip().partition(";dur=")
        if dur:
            out[name] = float(dur)
    return out


def _sequential(port: int, requests: int) -> dict[str, float]:
    latency, overhead, server_side, retrieval = [], [], [], []
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30, trust_env=False) as client:
        for i in range(30):  # warm-up
            client.get("/ask", params={"q": QUESTIONS[i % len(QUESTIONS)]})
        for i in range(requests):
            started = time.perf_counter()
            r = client.get("/ask", params={"q": QUESTIONS[i % len(QUESTIONS)]})
            elapsed = (time.perf_counter() - started) * 1000
            if r.status_code != 200:
                raise _util.BenchmarkError(f"/ask answered {r.status_code}: {r.text[:200]}")
            t = _timings(r.headers["server-timing"])
            latency.append(elapsed)
            overhead.append(elapsed - t["llm"])
            server_side.append(t["total"] - t["llm"])
            retrieval.append(t.get("retrieval", 0.0))
    return {
        "latency_ms": statistics.median(latency),
        "overhead_ms": statistics.median(overhead),
        "overhead_p95_ms": sorted(overhead)[int(0.95 * len(overhead))],
        "server_side_ms": statistics.median(server_side),
        "retrieval_ms": statistics.median(retrieval),
    }


def throughput(ports: list[int], concurrency: int, duration: float) -> tuple[float, int]:
    """Requests per second over `concurrency` keep-alive connections, spread round-robin over `ports` (one
    server, or several replicas: bench_replicas.py), and the number of non-200 answers. A minimal client:
    httpx's own cost would dominate on a small machine."""

    async def run() -> tuple[float, int]:
        done = failed = 0
        stop = time.perf_counter() + duration

        async def connection(k: int) -> None:
            nonlocal done, failed
            reader, writer = await asyncio.open_connection("127.0.0.1", ports[k % len(ports)])
            i = k
            try:
                while time.perf_counter() < stop:
                    q = httpx.QueryParams({"q": QUESTIONS[i % len(QUESTIONS)]})
                    writer.write(f"GET /ask?{q} HTTP/1.1\r\nHost: bench\r\n\r\n".encode())
                    await writer.drain()
                    head = await reader.readuntil(b"\r\n\r\n")
                    status = int(head.split(b" ", 2)[1])
                    length = next(int(h.split(b":", 1)[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:"))
                    await reader.readexactly(length)
                    done += 1
                    failed += status != 200
                    i += 1
            finally:
                writer.close()

        started = time.perf_counter()
        await asyncio.gather(*(connection(k) for k in range(concurrency)))
        return done / (time.perf_counter() - started), failed

    return asyncio.run(run())


def _one_run(cmd: list[str], env: dict[str, str], port: int, args: Any) -> dict[str, float]:
    proc = _start(cmd, env, port)
    try:
        figures = _sequential(port, args.requests)
        rps, failed = throughput([port], args.concurrency, args.duration)
        figures.update(rps=rps, failed=failed)
        return figures
    finally:
        _stop(proc)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--serve-fake"]:
        return _serve_fake()
    parser = _util.suite_parser("The API's overhead per /ask excluding the LLM, and its throughput.")
    parser.add_argument("--vault", type=Path, default=REPO / "vault", help="the vault served (default: the bundled one)")
    parser.add_argument("--requests", type=int, default=None, help="sequential /ask per run (default 500, 150 with --quick)")
    parser.add_argument("--concurrency", type=int, default=32, help="connections of the throughput run (default 32)")
    parser.add_argument("--duration", type=float, default=None, help="seconds of each throughput run (default 5, 2 with --quick)")
    parser.add_argument("--workers", type=int, default=1, help="grasbot serve --workers (default 1)")
    args = parser.parse_args(argv)
    args.requests = args.requests or (150 if args.quick else 500)
    args.duration = args.duration or (2.0 if args.quick else 5.0)
    runs = _util.runs_for(args)

    with fake_ollama() as fake_url:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGFUSE_", "GRASBOT_"))}
        # The load comes from one address and exceeds any visitor's rate on purpose: the limits measured
        # here are the server's own costs, not the admission control (GRASBOT_RATE_LIMIT, _MAX_GENERATIONS).
        env.update(OLLAMA_URL=fake_url, VAULT_DIR=str(args.vault), PYTHONPATH=str(BENCH_DIR),
                   GRASBOT_RATE_LIMIT="0", GRASBOT_MAX_GENERATIONS="0")  # fmt: skip
        results: dict[str, list[dict[str, float]]] = {"grasbot": [], "baseline": []}
        for run in range(runs):
            port = _free_port()
            grasbot = [sys.executable, "-m", "grasbot.service.cli", "serve", "--port", str(port), "--log-level", "warning", "--workers", str(args.workers)]
            results["grasbot"].append(_one_run(grasbot, env, port, args))
            port = _free_port()
            baseline = [sys.executable, "-m", "uvicorn", "--factory", "bench_server:baseline_app", "--port", str(port), "--log-level", "warning", "--workers", str(args.workers)]
            results["baseline"].append(_one_run(baseline, env, port, args))
            print(f"run {run + 1}/{runs}: grasbot overhead {results['grasbot'][-1]['overhead_ms']:.2f} ms, "
                  f"{results['grasbot'][-1]['rps']:.0f}/s; baseline {results['baseline'][-1]['overhead_ms']:.2f} ms, "
                  f"{results['baseline'][-1]['rps']:.0f}/s", flush=True)  # fmt: skip

    def med(side: str, key: str) -> float:
        return statistics.median(r[key] for r in results[side])

    def spread(side: str, key: str, fmt: Callable[[float], str]) -> str:
        values = [r[key] for r in results[side]]
        return f"{fmt(min(values))} – {fmt(max(values))}"

    def times(a: float, b: float) -> str:
        r = _util.ratio(a, b)
        return f"{r:.2f}×" if r == r and r < 1 else _util.fmt_ratio(r)

    def ms(v: float) -> str:
        return f"{v:.2f} ms"

    def rps(v: float) -> str:
        return f"{v:.0f}/s"

    from grasbot.vault import Vault

    notes = sum(1 for n in Vault.load(args.vault).notes.values() if not n.is_private)
    rows = [
        ["overhead per /ask excluding the LLM (median)", ms(med("grasbot", "overhead_ms")), spread("grasbot", "overhead_ms", ms),
         ms(med("baseline", "overhead_ms")), times(med("grasbot", "overhead_ms"), med("baseline", "overhead_ms")),
         _util.verdict(med("grasbot", "overhead_ms"), TARGET_MS)],
        ["overhead excluding the LLM, p95", ms(med("grasbot", "overhead_p95_ms")), spread("grasbot", "overhead_p95_ms", ms),
         ms(med("baseline", "overhead_p95_ms")), "", ""],
        ["  of which server side (total − llm)", ms(med("grasbot", "server_side_ms")), spread("grasbot", "server_side_ms", ms), "-", "", ""],
        ["  of which retrieval", ms(med("grasbot", "retrieval_ms")), spread("grasbot", "retrieval_ms", ms), "-", "", ""],
        ["client latency, fake LLM included", ms(med("grasbot", "latency_ms")), spread("grasbot", "latency_ms", ms),
         ms(med("baseline", "latency_ms")), "", ""],
        [f"throughput, {args.concurrency} connections", rps(med("grasbot", "rps")), spread("grasbot", "rps", rps),
         rps(med("baseline", "rps")), times(med("baseline", "rps"), med("grasbot", "rps")), ""],
    ]  # fmt: skip
    failed = sum(int(r["failed"]) for side in results.values() for r in side)
    _util.print_table(
        f"server: /ask on {args.vault.name}/ ({notes} public notes), {args.workers} worker(s), fake LLM answering at once",
        ["measure", "grasbot", "spread over runs", "plain baseline", "grasbot ÷ baseline", f"≤ {TARGET_MS:.0f} ms"],
        rows,
        notes=[
            f"median of {runs} fresh-process runs; each run: {args.requests} sequential /ask, then {args.duration:.0f} s of throughput",
            "plain baseline: bare FastAPI calling the same fake model with the same ollama client (no retrieval, no prompt)",
            f"non-200 answers during the throughput runs: {failed}",
        ],
    )
    _util.write_json(args.json, "server", {"args": {k: str(v) for k, v in vars(args).items()}, "runs": results})
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
