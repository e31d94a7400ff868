"""TUI benchmark: time to the first screen and time of one question-preview update, on the 10k vault.

    python benchmarks/bench_tui.py            # 10k synthetic vault, 5 fresh processes
    python benchmarks/bench_tui.py --quick    # 1k vault, 3 processes

What is timed, each figure the median of fresh processes (the app runs headless with Textual's
`run_test`, the same code as in a terminal, without the terminal's own drawing time):

- **first screen**: from the first line of the process (before any import) until the tree showing every
  note of the vault has been drawn (`MainScreen.first_screen_at`); the whole-process wall time and CPU
  time of a process that exits right then (interpreter start included). Target ≤ 2 s. The tree comes
  from a walk of the folders; the notes are read right after it is drawn. The first lint and the search index are
  still running in the background at that point: the badges and the preview fill in when they end.
- **preview update**: once the search index is ready, 20 questions are set in the question box one after
  the other; each figure is from the moment the debounced preview starts (ranking on a worker thread)
  until the ranked notes are on screen (`MainScreen.last_preview_ms`). Target ≤ 50 ms each (median and
  max reported). Measured while the first lint still runs in the background (the worst case a user meets)
  unless `--after-lint`.

Baselines in the same run: `Vault.load` alone (the engine's floor for the first screen) and
`SearchIndex.search` + `plan_context` alone (the floor for a preview update).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _util  # noqa: E402
import synth  # noqa: E402

TARGET_FIRST_SCREEN = 2.0  # seconds
TARGET_PREVIEW = 0.050  # seconds

QUESTIONS = [
    "parle-moi du projet firmware recherche",
    "quelles sont ses compétences en sécurité ?",
    "a-t-il travaillé sur un moteur de recherche ?",
    "comment fonctionne le pipeline de compression",
    "quel temps fait-il demain ?",
    "projet noyau moniteur",
    "expérience en conteneurs et déploiement",
    "interpréteur chaîne export",
    "qu'est-ce que le cluster thread ?",
    "driver interface service avancé",
    "formation et parcours",
    "optimisation du cache réseau",
    "bibliothèque graphique en C",
    "transaction client structure",
    "capteur binaire principal",
    "tunnel sécurisé chiffrement",
    "automate composant",
    "algorithme de tri rapide",
    "migration environnement",
    "lexique utilisateur modulaire",
]

APP_CODE = """
import time
T0 = time.perf_counter()
import asyncio, os, statistics
from vaulttools.tui.app import VaultApp

VAULT = {vault!r}
QUESTIONS = {questions!r}
EXIT_AT_FIRST_SCREEN = {exit_first!r}
AFTER_LINT = {after_lint!r}

async def main():
    app = VaultApp(VAULT, watch=False, check_api=False)
    async with app.run_test(size=(120, 40)) as pilot:
        while app.main_screen is None or app.main_screen.first_screen_at is None:
            await asyncio.sleep(0.005)
        screen = app.main_screen
        first = screen.first_screen_at - T0
        notes = len(screen.query_one("#tree").rows)
        if EXIT_AT_FIRST_SCREEN:
            report(first_screen=first, notes=notes)
            os._exit(0)
        while not screen.index_ready:
            await asyncio.sleep(0.01)
        if AFTER_LINT:
            while not screen.linted:
                await asyncio.sleep(0.05)
        question = screen.query_one("#question")
        linted_before = screen.linted
        times = []
        for q in QUESTIONS:
            screen.last_preview_ms = None
            question.value = q
            while screen.last_preview_ms is None:
                await asyncio.sleep(0.002)
            times.append(screen.last_preview_ms / 1000.0)
        report(first_screen=first, notes=notes, preview_median=statistics.median(times),
               preview_max=max(times), linted=linted_before)
        os._exit(0)

asyncio.run(main())
"""

LOAD_CODE = """
import time
t = time.perf_counter()
from grasbot.vault import Vault
v = Vault.load({vault!r})
report(load=time.perf_counter() - t, notes=len(v.notes))
"""

SEARCH_CODE = """
import time, statistics
from grasbot.vault import Vault
from grasbot.search.index import SearchIndex
from grasbot.answer.context import plan_context
index = SearchIndex.build(Vault.load({vault!r}))
times = []
for q in {questions!r}:
    t = time.perf_counter()
    plan_context(index.search(q, 5).hits)
    times.append(time.perf_counter() - t)
report(search_median=statistics.median(times), search_max=max(times))
"""


def main(argv: list[str] | None = None) -> int:
    parser = _util.suite_parser("TUI: time to the first screen and per preview update on the synthetic vault")
    parser.add_argument("--size", type=int, default=None, help="notes in the synthetic vault (default 10000)")
    parser.add_argument("--after-lint", action="store_true", help="time the previews after the first lint")
    args = parser.parse_args(argv)
    size = args.size or (1000 if args.quick else 10000)
    runs = _util.runs_for(args)
    vault = str(synth.ensure_vault(size))

    first = _util.measure(
        f"first screen ({size} notes)",
        APP_CODE.format(vault=vault, questions=QUESTIONS, exit_first=True, after_lint=False),
        runs,
    )
    previews = _util.measure(
        f"preview updates ({size} notes)",
        APP_CODE.format(vault=vault, questions=QUESTIONS, exit_first=False, after_lint=args.after_lint),
        max(1, min(runs, 3)),
        warmup=0,
        timeout=1800,
    )
    load = _util.measure(f"Vault.load ({size} notes)", LOAD_CODE.format(vault=vault), runs)
    search = _util.measure(
        f"search + plan_context ({size} notes)",
        SEARCH_CODE.format(vault=vault, questions=QUESTIONS),
        max(1, min(runs, 3)),
    )

    fs = first.median("first_screen")
    fs_wall = first.median()
    pm = previews.median("preview_median")
    px = previews.median("preview_max")
    rows = [
        ["first screen, in-process", _util.fmt_seconds(fs), _util.fmt_spread(first, "first_screen"),
         _util.fmt_seconds(load.median("load")), _util.fmt_ratio(_util.ratio(fs, load.median("load"))),
         _util.verdict(fs, TARGET_FIRST_SCREEN)],
        ["first screen, whole process", _util.fmt_seconds(fs_wall), _util.fmt_spread(first),
         _util.fmt_seconds(load.median()), _util.fmt_ratio(_util.ratio(fs_wall, load.median())),
         _util.verdict(fs_wall, TARGET_FIRST_SCREEN)],
        ["first screen, CPU time of that process", _util.fmt_seconds(first.median("cpu")),
         _util.fmt_spread(first, "cpu"), _util.fmt_seconds(load.median("cpu")),
         _util.fmt_ratio(_util.ratio(first.median("cpu"), load.median("cpu"))),
         _util.verdict(first.median("cpu"), TARGET_FIRST_SCREEN)],
        ["preview update, median of 20", _util.fmt_seconds(pm), _util.fmt_spread(previews, "preview_median"),
         _util.fmt_seconds(search.median("search_median")),
         _util.fmt_ratio(_util.ratio(pm, search.median("search_median"))), _util.verdict(pm, TARGET_PREVIEW)],
        ["preview update, slowest of 20", _util.fmt_seconds(px), _util.fmt_spread(previews, "preview_max"),
         _util.fmt_seconds(search.median("search_max")),
         _util.fmt_ratio(_util.ratio(px, search.median("search_max"))), _util.verdict(px, TARGET_PREVIEW)],
    ]
    linted = all(r.metrics.get("linted") for r in previews.runs)
    _util.print_table(
        f"TUI on the {size}-note synthetic vault",
        ["workload", "median", "min – max", "engine alone", "ratio", "target"],
        rows,
        notes=[
            "engine alone: Vault.load for the first screen; SearchIndex.search + plan_context for a preview.",
            "previews timed " + ("after the first lint" if linted else "while the first lint ran in the background (in some runs at least)"),
            f"peak RSS of the app process: {_util.fmt_mib(previews.median('max_rss'))}",
            "CPU time is what the wall time would be on an idle machine (the suite runs one process at a time).",
        ],
    )
    _util.write_json(
        args.json,
        "tui",
        {
            "size": size,
            "first_screen": [r.metrics for r in first.runs],
            "first_screen_wall": [r.wall for r in first.runs],
            "previews": [r.metrics for r in previews.runs],
            "load": [r.metrics for r in load.runs],
            "search": [r.metrics for r in search.runs],
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
