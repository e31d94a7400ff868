"""The answer verifier's speed: milliseconds per sentence on a 5-note context (target ≤ 2 ms).

    .venv/bin/python benchmarks/bench_verify.py            # the dev set's answers, 5 notes each
    .venv/bin/python benchmarks/run.py verify              # through the common runner
    .venv/bin/python benchmarks/bench_verify.py --notes    # also: note sentences read as abstentions

Every answer of the labelled dev set (benchmarks/verify-dev.yaml) is checked against a context of five
notes of the bundled vault: its own context notes, completed to five with other public notes in a fixed
order (so every answer has as much text to search as a real prompt). Two figures: **cold**, the passages
read for every answer (the passage cache emptied first: a first question), and **warm**, the passages
already read (the cache of `grasbot.answer.verify`: a service answering about the same notes again).
The cost per sentence is the answer's time over its sentences; the table gives its median and 95th
percentile over the answers, and the reading of five notes alone.

With `--notes`, the precision of the abstention reader beyond the labelled sets: every sentence of every
note (its body, cut by the verifier's own splitter) of the bundled vault and of the real vaults of
../shared/corpora (or $GRASBOT_CORPORA: grasbot-vault, obsidian-help-en, obsidian-help-fr) read by
`is_abstention`. Notes state facts and never abstain, so each one taken for an abstention is a false
positive (many are the help vaults' own "notes", a thing of the world there); `--notes-list` prints them.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

import _util  # noqa: E402

CONTEXT = 5
CORPORA = Path(os.environ.get("GRASBOT_CORPORA") or REPO.parent / "shared" / "corpora")
NOTE_VAULTS = ("grasbot-vault", "obsidian-help-en", "obsidian-help-fr")


def note_abstentions(show: bool) -> None:
    """Count the note sentences `is_abstention` takes for abstentions, per vault (see the docstring)."""
    from grasbot.answer.verify import is_abstention
    from grasbot.answer.verify_sentences import split_sentences
    from grasbot.vault import Vault

    rows, found = [], []
    for name, folder in [("vault (bundled)", REPO / "vault"), *((n, CORPORA / n) for n in NOTE_VAULTS)]:
        if not folder.is_dir():
            _util.note(f"{folder} not found: not counted")
            continue
        vault = Vault.load(folder)
        sentences = [(n.id, s.text) for n in sorted(vault.notes.values(), key=lambda n: n.id) for s in split_sentences(n.body)]
        hits = [(i, t) for i, t in sentences if is_abstention(t)]
        found += [(name, i, t) for i, t in hits]
        rows.append([name, f"{len(sentences):,}", str(len(hits))])
    rows.append(["all", f"{sum(int(r[1].replace(',', '')) for r in rows):,}", str(len(found))])
    _util.print_table("note sentences read as abstentions (each a false positive)", ["vault", "sentences", "abstentions"], rows)
    if show:
        for name, note_id, text in found:
            print(f"  {name} / {note_id}: {' '.join(text.split())}")


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    parser = _util.suite_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--notes", action="store_true", help="also count the note sentences read as abstentions (precision beyond the sets)")
    parser.add_argument("--notes-list", action="store_true", help="with --notes, print each of them")
    args = parser.parse_args(argv)
    runs = _util.runs_for(args)
    from grasbot.answer import verify as verify_module
    from grasbot.answer.prompt import hidden_names, is_servable
    from grasbot.answer.verify import note_passage, subject_names, verify
    from grasbot.vault import Vault
    from vaulttools.evaluation import load_answer_items

    vault_dir = REPO / "vault"
    if not vault_dir.is_dir():
        print("the bundled vault/ is missing: nothing to measure")
        return _util.SKIPPED
    vault = Vault.load(vault_dir)
    public = {n.id: n for n in sorted(vault.notes.values(), key=lambda n: n.id) if is_servable(n)}
    hidden = hidden_names(vault.notes.values())
    passages = {i: note_passage(n, hidden) for i, n in public.items()}
    subjects = subject_names(public.values())
    items = load_answer_items(HERE / "verify-dev.yaml")
    if args.quick:
        items = items[:15]
    fill = sorted(public)
    contexts = []
    for item in items:
        ids = list(item.context) + [i for i in fill if i not in item.context][: max(0, CONTEXT - len(item.context))]
        contexts.append([passages[i] for i in ids[:CONTEXT]])
    chars = statistics.median(sum(len(p.text) for p in c) for c in contexts)
    for item, context in zip(items, contexts):  # warm the tokenizer's caches: the engine is loaded in a service
        verify(item.answer, context, subjects)

    # wall time, and the CPU time of this process (the machine is shared: when other jobs compete for the
    # cores, wall time grows, CPU time stays close to what a quiet machine shows)
    figures: dict[str, list[float]] = {
        name: [] for name in ("cold", "cold_cpu", "warm", "warm_cpu", "reading", "reading_cpu", "abstention", "abstention_cpu")
    }
    read_abstention = verify_module.is_abstention.__wrapped__

    def timed(name: str, fn, per: int = 1) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        figures[name].append((time.perf_counter() - wall) * 1000 / per)
        figures[name + "_cpu"].append((time.process_time() - cpu) * 1000 / per)

    sentences = 0
    for _ in range(runs):
        for item, context in zip(items, contexts):
            n = max(len(verify(item.answer, context, subjects).sentences), 1)
            verify_module._read_passage.cache_clear()
            timed("reading", lambda: verify_module._read_context(context, subjects))
            verify_module._read_passage.cache_clear()
            timed("cold", lambda: verify(item.answer, context, subjects), n)
            timed("warm", lambda: verify(item.answer, context, subjects), n)
            # the abstention reader alone, without its cache (the runs above hit it after the first)
            texts = [s.text for s in verify(item.answer, context, subjects).sentences]
            timed("abstention", lambda: [read_abstention(t) for t in texts], n)
            sentences += n
    _util.print_table(
        f"verifier, {len(items)} answers of the dev set, {CONTEXT}-note context (median {chars:,.0f} characters)",
        ["case", "median ms / sentence", "p95", "median CPU ms", "p95 CPU"],
        [
            [label, f"{statistics.median(figures[k]):.3f}", f"{_p95(figures[k]):.3f}",
             f"{statistics.median(figures[k + '_cpu']):.3f}", f"{_p95(figures[k + '_cpu']):.3f}"]
            for label, k in (
                ("cold (passages read for each answer)", "cold"),
                ("warm (passages cached)", "warm"),
                ("reading the 5 notes alone (ms per answer)", "reading"),
                ("abstention reader alone, uncached (ms / sentence)", "abstention"),
            )
        ],
        notes=[f"{sentences // runs} sentences per run, {runs} runs; target ≤ 2 ms per sentence"],
    )
    if args.notes or args.notes_list:
        note_abstentions(args.notes_list)
    if args.json:
        import json

        args.json.write_text(json.dumps(figures), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
