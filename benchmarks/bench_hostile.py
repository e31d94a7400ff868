"""Hostile notes: what one crafted file costs a vault load (issue 14 of the red team's report).

Each case is a vault of two notes (a plain one and the hostile one) loaded with `Vault.load` in a fresh
process; the figures are the load's wall time and the peak of Python allocations during it (tracemalloc),
beside the same for a vault whose second note is empty. Targets (docs/service.md, "What private means"):

- a YAML alias bomb (`a0: &a0 [lol ×9]`, `a1: &a1 [*a0 ×9]`, … 8 and 9 levels, a few hundred bytes) loads in
  < 50 ms and < 50 MB more than an empty note (before the fix: 5.7 s and 1.1 GB for 8 levels, > 120 s and
  19 GB for 9);
- one 3.8 MB line of links loads in < 1 s (before: 30 s), and 2 M links finish (before: not in 180 s).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _util  # noqa: E402

ALIAS_TARGET_S = 0.050
ALIAS_TARGET_MIB = 50.0
LINKS_TARGET_S = 1.0


def alias_bomb(levels: int) -> str:
    lines = ["a0: &a0 [" + ", ".join(["lol"] * 9) + "]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "---\n" + "\n".join(lines) + "\n---\nbody\n"


def links_line(size: int, unit: str) -> str:
    return "---\ntitle: links\n---\n" + unit * (size // len(unit)) + "\n"


CASES: dict[str, object] = {
    "empty note (baseline)": lambda: "",
    "alias bomb, 8 levels": lambda: alias_bomb(8),
    "alias bomb, 9 levels": lambda: alias_bomb(9),
    "3.8 MB line of [[wikilinks]]": lambda: links_line(3_800_000, "[[Note a]] "),
    "3.8 MB line of [markdown](links.md)": lambda: links_line(3_800_000, "[a](Note%20a.md) "),
    "2 M links on one line": lambda: links_line(10_000_000, "[[x]]"),
}

# Timed without tracemalloc (which slows every allocation several times over), then loaded again under it
# for the peak of Python allocations.
WORKLOAD = """
import time, tracemalloc
from grasbot.vault import Vault
start = time.perf_counter()
vault = Vault.load({root!r})
elapsed = time.perf_counter() - start
del vault
tracemalloc.start()
vault = Vault.load({root!r})
_current, peak = tracemalloc.get_traced_memory()
tracemalloc.stop()
note = vault.notes["hostile.md"]
report(load_s=elapsed, peak_bytes=peak, problems=sorted({{p.code for p in note.problems}}))
"""


def main(argv: list[str] | None = None) -> int:
    parser = _util.suite_parser("Hostile notes: alias bombs and lines of links, load time and memory")
    args = parser.parse_args(argv)
    runs = _util.runs_for(args)
    rows = []
    results = {}
    base: tuple[float, float] | None = None
    with tempfile.TemporaryDirectory() as tmp:
        for label, make in CASES.items():
            if args.quick and label.startswith("2 M"):
                continue
            root = Path(tmp) / str(len(results))
            root.mkdir()
            (root / "Note a.md").write_text("---\ntitle: a\n---\nhello\n", encoding="utf-8")
            (root / "hostile.md").write_text(make(), encoding="utf-8")  # type: ignore[operator]
            m = _util.measure(label, WORKLOAD.format(root=str(root)), runs=runs, warmup=0, timeout=600)
            load_s, peak = m.median("load_s"), m.median("peak_bytes") / _util.MIB
            if base is None:
                base = (load_s, peak)
            extra_s, extra_mib = load_s - base[0], peak - base[1]
            target = ""
            if "alias" in label:
                target = _util.verdict(extra_s, ALIAS_TARGET_S) + " / " + _util.verdict(extra_mib, ALIAS_TARGET_MIB)
            elif "3.8 MB" in label:
                target = _util.verdict(load_s, LINKS_TARGET_S)
            rows.append([label, _util.fmt_seconds(load_s), f"{peak:.2f} MiB", f"{extra_s * 1000:+.1f} ms",
                         f"{extra_mib:+.2f} MiB", ", ".join(m.metric("problems") or []) or "—", target])
            results[label] = m.as_dict()
    _util.print_table(
        "Vault.load of a vault holding one hostile note",
        ["case", "load", "peak allocated", "vs empty: time", "vs empty: memory", "problems", "target"],
        rows,
        ["targets: alias bomb < 50 ms and < 50 MiB more than an empty note; 3.8 MB line of links < 1 s"],
    )
    _util.write_json(args.json, "hostile", {"results": results})
    return 0


if __name__ == "__main__":
    sys.exit(main())
