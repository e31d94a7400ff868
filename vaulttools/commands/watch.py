"""`vaulttools watch`: re-check notes the moment they are saved, and push `POST /reload-vault` after each burst.

At start: one full check and a summary. Then, after every burst of changes (a save, a rename, a
`git checkout`), only what changed is printed: problems that appeared (``new``), problems now gone
(``fixed``), notes created, deleted or moved, each line with a timestamp; then one push to the API and its
result in one line. Ctrl-C (or SIGTERM, SIGHUP) stops cleanly with a summary.

Text lines look like lint's, with the time and what happened in front::

    14:02:15 new    10-Projets/cub3d.md:5:5: error unknown-domain unknown domain `graphisme` ...
    14:02:21 fixed  10-Projets/cub3d.md:5:5: error unknown-domain unknown domain `graphisme` ...
    14:02:21 reload ok: version 4, 49 notes (0 added, 1 changed, 0 removed) (18 ms)

`--format json` prints one JSON object per line, one per event (`time` is ISO 8601 with the offset):

- ``{"event": "start", "time", "vault", "notes", "taxonomy", "taxonomy_error", "api", "notices", "summary":
  {"error", "warning"}, "diagnostics": [diagnostic...], "elapsed_ms"}``: the full check (every current
  diagnostic, in lint's JSON shape);
- ``{"event": "change", "time", "changed", "added", "removed", "moved": [[old, new]...], "relinked",
  "files_added", "files_removed", "taxonomy_reloaded", "taxonomy_error", "new": [diagnostic...],
  "fixed": [diagnostic...], "updated": [{"old": diagnostic, "new": diagnostic}...], "summary":
  {"error", "warning"}, "elapsed_ms", "latency_ms"}``: one burst (paths are vault-relative; `fixed` also
  holds the problems of notes deleted in the burst, listed in `removed`; `updated` is one problem, same
  note, rule and place, whose message changed; `latency_ms` counts from the burst's first file-system
  event);
- ``{"event": "reload", "time", "status": "ok"|"recovered"|"down", "ok", "kind", "http_status",
  "result", "error", "retry_in", "elapsed_ms", "summary"}``: the push after a burst (`down` once per
  outage, then silence until `recovered`);
- ``{"event": "error", "time", "message"}``: something went wrong and watching goes on;
- ``{"event": "stop", "time", "reason", "uptime_s", "batches", "reloads": {"sent", "ok", "failed"},
  "session": {"new", "fixed"}, "notes", "summary": {"error", "warning"}}``.

A diagnostic is ``{"path", "line", "column", "end_line", "end_column", "rule", "severity", "message",
"fix"}`` as in `vaulttools lint --format json`.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from vaulttools.commands._common import CliError, add_cache_argument, add_vault_arguments, vault_path
from vaulttools.commands.reload import add_api_arguments, api_token, api_url
from vaulttools.words import count

if TYPE_CHECKING:
    from vaulttools.lint.diagnostics import Diagnostic
    from vaulttools.live import LiveDelta, LiveVault
    from vaulttools.reload_client import PushEvent
    from vaulttools.watcher import WatchBatch

NAME = "watch"
#: The install extra this command needs (vaulttools.extras).
EXTRA = "watch"
HELP = "re-check notes as they are saved and push POST /reload-vault to the GrasBot API after each change"

#: Per burst and per kind of line, how many lines are printed before "... and N more" (a `git checkout`
#: of a thousand notes must not scroll the terminal for a minute).
MAX_LINES = 40


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = (
        "After a full check, prints only what changes: new problems, fixed problems, notes created, deleted "
        "or moved, and one line per reload pushed. --format json prints one object per line with an "
        "\"event\" of start, change, reload, error or stop (shapes: `python -m pydoc "
        "vaulttools.commands.watch`). Ctrl-C stops with a summary."
    )
    add_vault_arguments(parser)
    add_api_arguments(parser)
    parser.add_argument("--no-reload", action="store_true", help="do not push /reload-vault")
    parser.add_argument(
        "--format", choices=("text", "json"), default="text", help="text (default) or one JSON object per event"
    )
    parser.add_argument("--taxonomy", metavar="F", help="the TAXONOMIE.md to check against")
    parser.add_argument(
        "--quiet-ms",
        type=int,
        default=120,
        metavar="MS",
        help="a burst ends after this many milliseconds without file changes (default: 120)",
    )
    parser.add_argument(
        "--poll", action="store_true", help="poll the folder instead of using OS events (network drives, WSL)"
    )
    add_cache_argument(parser)


# -- output --------------------------------------------------------------------------------------------


def _now_iso() -> str:
    return _dt.datetime.now().astimezone().isoformat(timespec="milliseconds")


def _clock() -> str:
    return _dt.datetime.now().strftime("%H:%M:%S")


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _split_move(old: str, new: str) -> tuple[str, str] | None:
    """("a/b", "a/c") for a note moved from a/b/x.md to a/c/x.md (same path below the folder), else None."""
    old_parts, new_parts = old.split("/"), new.split("/")
    common = 0
    while common < min(len(old_parts), len(new_parts)) and old_parts[-1 - common] == new_parts[-1 - common]:
        common += 1
    if common == 0 or common >= len(old_parts) or common >= len(new_parts):
        return None
    return "/".join(old_parts[:-common]), "/".join(new_parts[:-common])


def _folder_moves(moved: Sequence[tuple[str, str]]) -> list[tuple[str, str, int]]:
    """Folders renamed or moved as a whole: (old folder, new folder, notes), for two notes or more."""
    groups = Counter(pair for pair in (_split_move(o, n) for o, n in moved) if pair is not None)
    return sorted((old, new, n) for (old, new), n in groups.items() if n >= 2)


def _deleted_notes(delta: LiveDelta) -> set[str]:
    """Notes deleted (not moved): their problems leave with them, they were not fixed."""
    return set(delta.removed) - {old for old, _ in delta.moved}


def _really_fixed(delta: LiveDelta) -> list[Diagnostic]:
    gone = _deleted_notes(delta)
    return [d for d in delta.fixed if d.path not in gone]


@dataclass(slots=True)
class Stats:
    started: float = field(default_factory=time.monotonic)
    batches: int = 0
    new: int = 0
    fixed: int = 0
    reloads_sent: int = 0
    reloads_ok: int = 0
    reloads_failed: int = 0
    last_failure: str | None = None  # the last failed reload, in a few words (None once one succeeded)


class Reporter:
    """Writes events as text (rich colours on a terminal) or JSON lines; safe to call from any thread.
    When the output goes away (a closed pipe), it sets `broken` and the watch stops."""

    def __init__(self, stream: IO[str], fmt: str) -> None:
        self.fmt = fmt
        self.stream = stream
        self.broken = threading.Event()
        self._lock = threading.Lock()
        self.console: Any = None
        if fmt == "text":
            from rich.console import Console

            self.console = Console(file=stream, highlight=False, soft_wrap=True, emoji=False)

    # -- low level -------------------------------------------------------------------------------------
    def _json(self, payload: dict[str, Any]) -> None:
        self._write(json.dumps(payload, ensure_ascii=False) + "\n")

    def _write(self, text: str) -> None:
        if self.broken.is_set():
            return
        with self._lock:
            try:
                self.stream.write(text)
                self.stream.flush()
            except (OSError, ValueError):  # broken pipe, closed terminal
                self.broken.set()

    def _lines(self, parts: list[list[tuple[str, str]]]) -> None:
        """Print lines made of (text, rich style) pieces, in one write so threads do not interleave."""
        if self.broken.is_set() or not parts:
            return
        from rich.text import Text

        with self._lock:
            try:
                for pieces in parts:
                    line = Text()
                    for text, style in pieces:
                        line.append(text, style=style or None)
                    self.console.print(line)
                self.stream.flush()
            except (OSError, ValueError):
                self.broken.set()

    # -- events ----------------------------------------------------------------------------------------
    def start(self, live: LiveVault, api: str | None, elapsed_ms: float) -> None:
        counts = live.counts()
        tax = live.taxonomy_path
        tax_error = live.taxonomy_error
        if self.fmt == "json":
            self._json({
                "event": "start", "time": _now_iso(), "vault": str(live.root), "notes": live.note_count(),
                "taxonomy": str(tax) if tax else None, "taxonomy_error": tax_error, "api": api,
                "notices": list(live.notices),
                "summary": counts, "diagnostics": [d.to_dict() for d in live.diagnostics()],
                "elapsed_ms": round(elapsed_ms, 1),
            })  # fmt: skip
            return
        t = _clock()
        pad = " " * (len(t) + 1)
        by_rule = Counter(d.rule for d in live.diagnostics())
        status = [(count(counts["error"], "error"), "bold red" if counts["error"] else "green"),
                  (", ", ""), (count(counts["warning"], "warning"), "yellow" if counts["warning"] else "green")]  # fmt: skip
        taxonomy = f"against {tax.name}" if tax else "without a taxonomy (structural rules only)"
        lines = [[(t + " ", "dim"), ("watching ", ""), (str(live.root), "bold"),
                  (f" ({count(live.note_count(), 'note')}, {taxonomy}, checked in {elapsed_ms:.0f} ms): ", ""), *status]]  # fmt: skip
        if tax_error:
            lines.append([(pad, ""), (f"taxonomy not usable: {tax_error}", "red")])
        for notice in live.notices:
            lines.append([(pad, ""), (notice, "yellow")])
        if by_rule:
            top = ", ".join(f"{rule} {n}" for rule, n in sorted(by_rule.items(), key=lambda kv: (-kv[1], kv[0])))
            lines.append([(pad, ""), ("by rule: " + top, "dim")])
        where = f"pushing POST /reload-vault to {api} after each change" if api else "not pushing reloads"
        lines.append([(pad, ""), (f"{where} · Ctrl-C to stop", "dim")])
        self._lines(lines)

    def change(self, delta: LiveDelta, batch: WatchBatch, live: LiveVault) -> None:
        counts = live.counts()
        if self.fmt == "json":
            self._json({
                "event": "change", "time": _now_iso(),
                "changed": list(delta.changed), "added": list(delta.added), "removed": list(delta.removed),
                "moved": [list(pair) for pair in delta.moved], "relinked": list(delta.relinked),
                "files_added": list(delta.files_added), "files_removed": list(delta.files_removed),
                "taxonomy_reloaded": delta.taxonomy_reloaded, "taxonomy_error": live.taxonomy_error,
                "new": [d.to_dict() for d in delta.new], "fixed": [d.to_dict() for d in delta.fixed],
                "updated": [{"old": old.to_dict(), "new": new.to_dict()} for old, new in delta.updated],
                "summary": counts, "elapsed_ms": round(delta.elapsed_ms, 1),
                "latency_ms": round((time.monotonic() - batch.first_event) * 1000, 1),
            })  # fmt: skip
            return
        t = _clock() + " "
        lines: list[list[tuple[str, str]]] = []
        moved_from = {old for old, _ in delta.moved}
        moved_to = {new for _, new in delta.moved}

        def capped(items: Sequence[Any], render: Any, what: str) -> None:
            for item in items[:MAX_LINES]:
                lines.append(render(item))
            if len(items) > MAX_LINES:
                lines.append([(t, "dim"), (f"... and {len(items) - MAX_LINES} more {what}", "dim")])

        if delta.taxonomy_reloaded:
            tax = live.taxonomy_path.name if live.taxonomy_path else "taxonomy"
            if live.taxonomy_error:
                lines.append([(t, "dim"), (f"{tax} not usable: {live.taxonomy_error}", "red")])
            else:
                lines.append([(t, "dim"), (f"{tax} reloaded: every note re-checked", "cyan")])
        folder_moves = _folder_moves(delta.moved)
        for old_dir, new_dir, moved in folder_moves:
            lines.append([(t, "dim"), ("moved  ", "cyan"), (f"{old_dir}/ → {new_dir}/", ""), (f" ({count(moved, 'note')})", "dim")])
        grouped = {(old, new) for old, new, _ in folder_moves}
        singles = [m for m in delta.moved if _split_move(*m) not in grouped]
        capped(singles, lambda m: [(t, "dim"), ("moved  ", "cyan"), (f"{m[0]} → {m[1]}", "")], "moves")
        capped([p for p in delta.added if p not in moved_to],
               lambda p: [(t, "dim"), ("created ", "cyan"), (p, "")], "notes created")  # fmt: skip
        left_with = Counter(d.path for d in delta.fixed)

        def deleted_line(p: str) -> list[tuple[str, str]]:
            n = left_with.get(p, 0)
            gone = f" (its {n} problem{'s' if n > 1 else ''} went with it)" if n else ""
            return [(t, "dim"), ("deleted ", "cyan"), (p, ""), (gone, "dim")]

        capped([p for p in delta.removed if p not in moved_from], deleted_line, "notes deleted")
        files = [("created ", p) for p in delta.files_added] + [("deleted ", p) for p in delta.files_removed]
        capped(files, lambda f: [(t, "dim"), (f[0], "cyan"), (f[1], "dim")], "attachments")

        def new_line(d: Diagnostic) -> list[tuple[str, str]]:
            style = "bold red" if str(d.severity) == "error" else "yellow"
            return [(t, "dim"), ("new    ", style), (f"{d.path}:{d.line}:{d.column}: ", "bold"),
                    (str(d.severity), style), (f" {d.rule} ", "magenta"), (d.message, "")]  # fmt: skip

        def fixed_line(d: Diagnostic) -> list[tuple[str, str]]:
            return [(t, "dim"), ("fixed  ", "green"), (f"{d.path}:{d.line}:{d.column}: ", "bold"),
                    (str(d.severity), "green"), (f" {d.rule} ", "magenta"), (d.message, "dim")]  # fmt: skip

        capped(_really_fixed(delta), fixed_line, "problems fixed")
        capped(list(delta.new), new_line, "new problems (run `vaulttools lint` for all)")
        self._lines(lines)

    def push(self, event: PushEvent) -> None:
        if not event.should_print:
            return
        result = event.result
        if self.fmt == "json":
            self._json({
                "event": "reload", "time": _now_iso(), "status": event.kind, "ok": result.ok,
                "kind": result.kind, "http_status": result.status, "result": result.data if result.ok else None,
                "error": result.error, "retry_in": event.retry_in, "elapsed_ms": round(result.elapsed_ms, 1),
                "summary": result.summary(),
            })  # fmt: skip
            return
        t = _clock() + " "
        if event.kind == "ok":
            self._lines([[(t, "dim"), (result.summary(), "dim green")]])
        elif event.kind == "recovered":
            self._lines([[(t, "dim"), ("API is back: ", "bold green"), (result.summary(), "green")]])
        else:
            then = (
                "; retrying in the background, watching goes on"
                if event.retry_in is not None
                else "; will try again after the next change"
            )
            self._lines([[(t, "dim"), (result.summary(), "bold red"), (then, "red")]])

    def error(self, message: str) -> None:
        if self.fmt == "json":
            self._json({"event": "error", "time": _now_iso(), "message": message})
        else:
            self._lines([[(_clock() + " ", "dim"), (message, "red")]])

    def stop(self, reason: str, stats: Stats, live: LiveVault | None) -> None:
        counts = live.counts() if live is not None else {"error": 0, "warning": 0}
        uptime = time.monotonic() - stats.started
        if self.fmt == "json":
            self._json({
                "event": "stop", "time": _now_iso(), "reason": reason, "uptime_s": round(uptime, 1),
                "batches": stats.batches,
                "reloads": {"sent": stats.reloads_sent, "ok": stats.reloads_ok, "failed": stats.reloads_failed},
                "session": {"new": stats.new, "fixed": stats.fixed},
                "notes": live.note_count() if live is not None else 0, "summary": counts,
            })  # fmt: skip
            return
        reloads = ""
        if stats.reloads_sent:
            failed = f", {count(stats.reloads_failed, 'failed attempt')}" if stats.reloads_failed else ""
            last = f" (the last: {stats.last_failure})" if stats.last_failure else ""
            reloads = f", reloads: {stats.reloads_ok} ok{failed}{last}"
        notes = live.note_count() if live is not None else 0
        if reason == "interrupt" and self.console.is_terminal:
            self._write("\n")  # the terminal echoed ^C: start the summary on a line of its own
        self._lines([[
            (_clock() + " ", "dim"), ("stopped", "bold"),
            (f" after {_duration(uptime)}: {count(stats.batches, 'change')} checked{reloads}; "
             f"{stats.new} new and {stats.fixed} fixed {'problem' if stats.new + stats.fixed == 1 else 'problems'} "
             f"this session; now {count(notes, 'note')}, {count(counts['error'], 'error')}, "
             f"{count(counts['warning'], 'warning')}", ""),
        ]])  # fmt: skip


# -- the command ---------------------------------------------------------------------------------------


def run(args: argparse.Namespace, stop: threading.Event | None = None, stream: IO[str] | None = None) -> int:
    """Watch until Ctrl-C/SIGTERM/SIGHUP, or until `stop` is set (tests and embedders run this in a thread
    and set it). Returns 0 after a clean stop."""
    from vaulttools.lint import ConfigError
    from vaulttools.live import LiveVault
    from vaulttools.reload_client import Pusher
    from vaulttools.taxonomy import TaxonomyError
    from vaulttools.watcher import VaultWatcher, WatchError

    root = vault_path(args)
    api = None if args.no_reload else api_url(args)
    token = api_token(args) if api else None  # a bad --token-file is said now, before the first check
    if args.quiet_ms < 10 or args.quiet_ms > 10_000:
        raise CliError("--quiet-ms must be between 10 and 10000")
    reporter = Reporter(stream or sys.stdout, args.format)
    stop = stop or threading.Event()
    reason = ["interrupt"]
    stats = Stats()
    ready = threading.Event()
    state: dict[str, Any] = {"live": None}

    def on_push(event: PushEvent) -> None:
        if event.result.ok:
            stats.reloads_ok += 1
            stats.last_failure = None
        else:
            stats.reloads_failed += 1
            stats.last_failure = event.result.summary().removeprefix("reload failed: ")
        stats.reloads_sent += 1
        reporter.push(event)

    pusher = Pusher(api, token, on_event=on_push) if api else None

    def handle(batch: WatchBatch) -> None:
        ready.wait()
        live = state["live"]
        if live is None or stop.is_set():
            return
        delta = live.apply(batch.paths)
        if delta.unsettled:
            watcher.requeue(delta.unsettled)
        if delta.is_empty:
            return
        stats.batches += 1
        stats.new += len(delta.new)
        stats.fixed += len(_really_fixed(delta))
        reporter.change(delta, batch, live)
        if pusher is not None and delta.vault_changed:
            pusher.request()
        if reporter.broken.is_set():
            reason[0] = "output closed"
            stop.set()

    def on_error(exc: BaseException) -> None:
        reporter.error(f"error while checking changes (watching goes on): {type(exc).__name__}: {exc}")

    from vaulttools.taxonomy import find_taxonomy

    taxonomy_file = find_taxonomy(root, args.taxonomy and Path(args.taxonomy))  # beside the vault: watch it too
    watcher = VaultWatcher(
        root, handle, quiet=args.quiet_ms / 1000.0, on_error=on_error, poll=args.poll,
        extra_files=[taxonomy_file] if taxonomy_file is not None and taxonomy_file.is_file() else [],
    )  # fmt: skip
    restore = _install_signal_handlers(stop, reason, ready)
    try:
        # Watch first, then read: a save that lands while the vault is being read is applied afterwards
        # instead of being lost.
        try:
            watcher.start()
        except WatchError as exc:
            raise CliError(str(exc)) from None
        started = time.perf_counter()
        try:
            live = LiveVault.load(root, taxonomy=args.taxonomy, with_index=None, use_snapshot=not getattr(args, "no_cache", False))
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise CliError(str(exc)) from None
        except TaxonomyError as exc:
            raise CliError(f"--taxonomy: {exc}") from None
        except ConfigError as exc:
            raise CliError(str(exc)) from None
        state["live"] = live
        reporter.start(live, api, (time.perf_counter() - started) * 1000)
        ready.set()
        while not stop.wait(0.25):
            if reporter.broken.is_set():
                reason[0] = "output closed"
                break
            if not watcher.watching or not root.is_dir():  # deleted, or moved away: nothing left to watch
                reporter.error(f"the vault folder is gone: {root}; nothing left to watch")
                reason[0] = "vault folder gone"
                break
    finally:
        ready.set()  # a batch waiting for the first check must not hang the shutdown
        restore()
        watcher.stop(timeout=2.0)
        if pusher is not None:
            pusher.close(timeout=1.0)
        if state["live"] is not None:
            state["live"].save_snapshot()  # (the watcher has stopped: nothing changes the vault any more)
    reporter.stop(reason[0], stats, state["live"])
    return 1 if reason[0] == "vault folder gone" else 0


def _install_signal_handlers(stop: threading.Event, reason: list[str], started: threading.Event) -> Any:
    """Ctrl-C, SIGTERM and SIGHUP (terminal closed) stop cleanly with a summary once watching has
    `started`; before that (the first full check of a big vault) they interrupt at once, and so does a
    second Ctrl-C while stopping. Only possible on the main thread: elsewhere the caller stops us through
    `stop`."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    names = {signal.SIGINT: "interrupt", signal.SIGTERM: "terminate"}
    if hasattr(signal, "SIGHUP"):
        names[signal.SIGHUP] = "hangup"
    previous = {}

    def handler(signum: int, frame: object) -> None:
        if not started.is_set() or (stop.is_set() and signum == signal.SIGINT):
            raise KeyboardInterrupt
        reason[0] = names.get(signum, "signal")
        stop.set()

    for signum in names:
        try:
            previous[signum] = signal.signal(signum, handler)
        except (ValueError, OSError):
            pass

    def restore() -> None:
        for signum, old in previous.items():
            try:
                signal.signal(signum, old)
            except (ValueError, OSError):
                pass

    return restore
