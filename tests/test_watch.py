"""`vaulttools watch` with real file-system events on a copy of the sample vault and a real HTTP server
standing in for the GrasBot API (`FakeApi`, from test_reload_client).

Most tests run the command in a thread (`watch.run(args, stop, stream)` with `--format json`, so events
can be read back exactly); one runs the real console script in a subprocess, in text mode, and stops it
with SIGINT as a person would with Ctrl-C. Every wait polls with a deadline.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.test_reload_client import FakeApi
from vaulttools.cli import build_parser
from vaulttools.commands import watch
from vaulttools.watcher import Debouncer, WatchBatch, is_ignored

REPO = Path(__file__).resolve().parents[1]
UNKNOWN = "zzz-domaine-inconnu"


class Sink:
    """A text stream that collects the JSON events `vaulttools watch --format json` writes."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._buffer = ""
        self.events: list[dict] = []

    def write(self, text: str) -> int:
        with self._cond:
            self._buffer += text
            *lines, self._buffer = self._buffer.split("\n")
            self.events += [json.loads(line) for line in lines if line.strip()]
            self._cond.notify_all()
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def of(self, kind: str) -> list[dict]:
        with self._cond:
            return [e for e in self.events if e["event"] == kind]

    def wait(self, predicate: Callable[[], object], timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate():
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(min(left, 0.05))
            return True

    def quiet_for(self, seconds: float) -> bool:
        """True when no event at all arrives for `seconds`."""
        count = len(self.events)
        return not self.wait(lambda: len(self.events) > count, seconds)


@contextmanager
def watching(vault: Path, *options: str) -> Iterator[Sink]:
    args = build_parser().parse_args(["watch", str(vault), "--format", "json", *options])
    stop = threading.Event()
    sink = Sink()
    outcome: dict[str, object] = {}

    def target() -> None:
        try:
            outcome["rc"] = watch.run(args, stop, sink)
        except BaseException as exc:  # surfaced by the assertion below
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    assert sink.wait(lambda: sink.of("start") or outcome, 60), "watch did not start"
    assert not outcome, outcome
    try:
        yield sink
    finally:
        stop.set()
        thread.join(15)
        assert outcome.get("rc") == 0, outcome
        assert sink.of("stop"), "no summary at the end"


def set_domains(text: str, values: list[str]) -> str:
    pattern = re.compile(r"^domains:[^\n]*\n(?:[ \t]+-[^\n]*\n)*", re.M)
    assert pattern.search(text)
    return pattern.sub(lambda _: f"domains: [{', '.join(values)}]\n", text, count=1)


def clean_note(vault: Path, start: dict) -> str:
    """A note with a flow `domains:` list and no current diagnostic."""
    flagged = {d["path"] for d in start["diagnostics"]}
    for file in sorted(vault.rglob("*.md")):
        rel = file.relative_to(vault).as_posix()
        text = file.read_text(encoding="utf-8")
        if rel not in flagged and re.search(r"^domains: \[", text, re.M) and "visibility: private" not in text:
            return rel
    pytest.skip("no clean note in the sample vault")


def rules(diags: list[dict]) -> list[tuple[str, str]]:
    return [(d["path"], d["rule"]) for d in diags]


@pytest.fixture
def api() -> Iterator[FakeApi]:
    fake = FakeApi().up()
    yield fake
    fake.down()


# -- the debouncer alone --------------------------------------------------------------------------------


def test_debouncer_coalesces_a_burst_and_holds_files_being_written() -> None:
    batches: list[WatchBatch] = []
    debouncer = Debouncer(batches.append, quiet=0.05, max_hold=0.5)
    debouncer.start()
    try:
        for i in range(200):
            debouncer.touch(f"n{i}.md")
        assert debouncer.wait_idle(5)
        assert len(batches) == 1 and len(batches[0].paths) == 200 and batches[0].events == 200
        debouncer.touch("slow.md", writing=True)  # modified, not closed yet
        time.sleep(0.2)
        assert len(batches) == 1  # held past the quiet window
        debouncer.touch("slow.md", writing=False)  # closed: delivered after the quiet window
        assert debouncer.wait_idle(5)
        assert [b.paths for b in batches[1:]] == [("slow.md",)]
    finally:
        debouncer.stop()


def test_ignored_paths() -> None:
    for path in (".obsidian/workspace.json", ".trash/old.md", "notes/.note.md.swp", "a/note.md~", "note.md.tmp",
                 "4913", "a/.#note.md", "a/#note.md#", "x.md.crswap", ".git/index", "a/b.md___jb_tmp___"):  # fmt: skip
        assert is_ignored(path), path
    for path in ("note.md", "10-Projets/cub3d.md", "images/schema.png", "Dossier avec espaces/Note é.md"):
        assert not is_ignored(path), path


# -- the command with real events -----------------------------------------------------------------------


def test_unknown_domain_reported_then_fixed_with_one_reload_each(sample_vault_copy: Path, api: FakeApi) -> None:
    vault = sample_vault_copy
    with watching(vault, "--api", api.url) as sink:
        start = sink.of("start")[0]
        assert start["notes"] > 10 and start["api"] == api.url
        path = clean_note(vault, start)
        file = vault / path
        original = file.read_text(encoding="utf-8")
        first_domain = re.search(r"^domains: \[([^,\]]+)", original, re.M).group(1)
        file.write_text(original.replace(f"domains: [{first_domain}", f"domains: [{UNKNOWN}", 1), encoding="utf-8")
        assert sink.wait(lambda: sink.of("change") and sink.of("reload"))
        change = sink.of("change")[0]
        assert change["changed"] == [path] and rules(change["new"]) == [(path, "unknown-domain")]
        assert UNKNOWN in change["new"][0]["message"] and change["fixed"] == []
        assert sink.of("reload")[0]["status"] == "ok"

        file.write_text(original, encoding="utf-8")
        assert sink.wait(lambda: len(sink.of("change")) == 2 and len(sink.of("reload")) == 2)
        fixed = sink.of("change")[1]
        assert rules(fixed["fixed"]) == [(path, "unknown-domain")] and fixed["new"] == []
        assert sink.quiet_for(0.4)
    assert len(api.calls) == 2
    stop = sink.of("stop")[0]
    assert stop["session"] == {"new": 1, "fixed": 1} and stop["reloads"] == {"sent": 2, "ok": 2, "failed": 0}


def test_deleted_note_breaks_links_and_recreating_repairs(sample_vault_copy: Path) -> None:
    vault = sample_vault_copy
    target = vault / "20-Competences" / "python.md"
    if not target.exists():
        pytest.skip("sample vault without 20-Competences/python.md")
    with watching(vault, "--no-reload") as sink:
        saved = target.read_bytes()
        target.unlink()
        assert sink.wait(lambda: sink.of("change"))
        change = sink.of("change")[0]
        assert change["removed"] == ["20-Competences/python.md"]
        broken = {d["path"] for d in change["new"] if d["rule"] == "broken-link"}
        assert broken and broken == set(change["relinked"])
        assert all("python" in d["message"] for d in change["new"] if d["rule"] == "broken-link")

        target.write_bytes(saved)
        assert sink.wait(lambda: len(sink.of("change")) == 2)
        again = sink.of("change")[1]
        assert again["added"] == ["20-Competences/python.md"]
        assert {d["path"] for d in again["fixed"] if d["rule"] == "broken-link"} == broken
    assert not sink.of("reload")  # --no-reload


def test_a_thousand_file_burst_is_one_check_and_one_reload(sample_vault_copy: Path, api: FakeApi) -> None:
    vault = sample_vault_copy
    # The writer here is this test's own loop: on a loaded CI machine it can stall longer than the default
    # 120 ms quiet window, which a real `git checkout` does not. A wider window keeps the test about bursts.
    with watching(vault, "--api", api.url, "--quiet-ms", "500") as sink:
        folder = vault / "Import"
        folder.mkdir()
        for i in range(1000):
            (folder / f"note-{i:04d}.md").write_text(f"---\ntitle: Note {i}\n---\nVoir [[python]].\n", encoding="utf-8")
        assert sink.wait(lambda: sink.of("reload"), 30)
        assert sink.quiet_for(0.6)
        changes = sink.of("change")
        assert len(changes) == 1
        assert len(changes[0]["added"]) == 1000
        assert sorted(changes[0]["added"]) == [f"Import/note-{i:04d}.md" for i in range(1000)]
    assert len(api.calls) == 1
    assert sink.of("stop")[0]["notes"] == sink.of("start")[0]["notes"] + 1000


def test_api_down_said_once_then_pushed_when_back(sample_vault_copy: Path) -> None:
    vault = sample_vault_copy
    api = FakeApi()  # not listening yet: connection refused
    try:
        with watching(vault, "--api", api.url) as sink:
            path = clean_note(vault, sink.of("start")[0])
            file = vault / path
            original = file.read_text(encoding="utf-8")
            file.write_text(original + "\nUne ligne de plus.\n", encoding="utf-8")
            assert sink.wait(lambda: sink.of("reload"))
            down = sink.of("reload")[0]
            assert down["status"] == "down" and down["kind"] == "unreachable" and down["retry_in"] > 0
            file.write_text(original, encoding="utf-8")  # a second burst while the API is down
            assert sink.wait(lambda: len(sink.of("change")) == 2)
            assert sink.quiet_for(0.6)  # retries go on without a word
            api.up()
            assert sink.wait(lambda: len(sink.of("reload")) == 2, 10)
            back = sink.of("reload")[1]
            assert back["status"] == "recovered" and back["ok"] and back["result"]["status"] == "reloaded"
            assert sink.quiet_for(0.3)
        assert [r["status"] for r in sink.of("reload")] == ["down", "recovered"]
        assert len(api.calls) == 1  # both bursts pushed in one request, once the API was back
    finally:
        api.down()


def test_a_new_kind_of_failure_is_said_while_retrying(sample_vault_copy: Path) -> None:
    """Down (retried quietly), then the API comes back but refuses the token: that is said, once."""
    vault = sample_vault_copy
    api = FakeApi(token="right")  # not listening yet: connection refused
    try:
        with watching(vault, "--api", api.url, "--token", "wrong") as sink:
            path = clean_note(vault, sink.of("start")[0])
            file = vault / path
            file.write_text(file.read_text(encoding="utf-8") + "\nUne ligne de plus.\n", encoding="utf-8")
            assert sink.wait(lambda: sink.of("reload"))
            assert sink.of("reload")[0]["kind"] == "unreachable" and sink.of("reload")[0]["retry_in"] > 0
            api.up()  # the background retry now reaches it, and gets a 401
            assert sink.wait(lambda: len(sink.of("reload")) == 2, 15)
            refused = sink.of("reload")[1]
            assert refused["status"] == "down" and refused["http_status"] == 401 and refused["retry_in"] is None
            assert refused["summary"] == "reload failed: HTTP 401: missing or wrong bearer token (unauthorized)"
            assert sink.quiet_for(0.5)  # a 401 is not retried by itself
        assert [(r["kind"], r["http_status"]) for r in sink.of("reload")] == [("unreachable", None), ("api-error", 401)]
    finally:
        api.down()


def test_atomic_saves_are_one_modification(sample_vault_copy: Path, api: FakeApi) -> None:
    vault = sample_vault_copy
    with watching(vault, "--api", api.url) as sink:
        path = clean_note(vault, sink.of("start")[0])
        file = vault / path
        text = file.read_text(encoding="utf-8")
        # VS Code / JetBrains style: write a temporary file beside the note, rename it over the note
        tmp = file.with_name(file.name + ".tmp")
        tmp.write_text(text + "\nAjout 1.\n", encoding="utf-8")
        os.replace(tmp, file)
        assert sink.wait(lambda: sink.of("reload"))
        change = sink.of("change")[0]
        assert change["changed"] == [path]
        assert change["added"] == change["removed"] == change["moved"] == []

        # vim style: probe file 4913, rename the note to a backup, write a new file, delete the backup
        probe = file.parent / "4913"
        probe.write_text("")
        probe.unlink()
        backup = file.with_name(file.name + "~")
        os.rename(file, backup)
        file.write_text(text + "\nAjout 2.\n", encoding="utf-8")
        backup.unlink()
        assert sink.wait(lambda: len(sink.of("reload")) == 2)
        change = sink.of("change")[1]
        assert change["changed"] == [path] and change["added"] == change["removed"] == []
        assert sink.quiet_for(0.4)
    assert len(api.calls) == 2 and len(sink.of("change")) == 2


def test_obsidian_workspace_churn_is_silent(sample_vault_copy: Path, api: FakeApi) -> None:
    vault = sample_vault_copy
    (vault / ".obsidian").mkdir(exist_ok=True)
    with watching(vault, "--api", api.url) as sink:
        workspace = vault / ".obsidian" / "workspace.json"
        for i in range(30):
            workspace.write_text(json.dumps({"active": i}), encoding="utf-8")
            (vault / ".trash").mkdir(exist_ok=True)
            (vault / ".trash" / f"old-{i}.md").write_text("---\n")
            time.sleep(0.01)
        assert sink.quiet_for(0.8)
        assert not sink.of("change") and not api.calls
        # still alive: a real edit is seen, alone
        path = clean_note(vault, sink.of("start")[0])
        with open(vault / path, "a", encoding="utf-8") as fh:
            fh.write("\nEncore.\n")
        assert sink.wait(lambda: sink.of("reload"))
        assert [c["changed"] for c in sink.of("change")] == [[path]]
    assert len(api.calls) == 1


def test_partially_written_note_is_not_reported_broken(sample_vault_copy: Path) -> None:
    vault = sample_vault_copy
    with watching(vault, "--no-reload") as sink:
        path = "10-Projets/nouvelle-note.md"
        with open(vault / path, "w", encoding="utf-8") as fh:
            fh.write("---\ntitle: Nouvelle note\ndomains: [backend,")
            fh.flush()
            os.fsync(fh.fileno())
            time.sleep(0.6)  # much longer than the quiet window, the file still open
            fh.write(" data]\n---\nCorps de la note.\n")
        assert sink.wait(lambda: sink.of("change"))
        assert sink.quiet_for(0.4)
        changes = sink.of("change")
        assert len(changes) == 1 and changes[0]["added"] == [path]
        assert "frontmatter-invalid" not in {d["rule"] for d in changes[0]["new"]}


def test_folder_move_is_seen_note_by_note(sample_vault_copy: Path) -> None:
    vault = sample_vault_copy
    folder = vault / "50-Technique"
    if not folder.is_dir():
        pytest.skip("sample vault without 50-Technique/")
    inside = sorted(p.relative_to(vault).as_posix() for p in folder.rglob("*.md"))
    with watching(vault, "--no-reload") as sink:
        folder.rename(vault / "60-Archive")
        assert sink.wait(lambda: sink.of("change"))
        assert sink.quiet_for(0.4)
        change = sink.of("change")[0]
        assert sorted(old for old, _ in change["moved"]) == inside
        assert sorted(new for _, new in change["moved"]) == sorted(p.replace("50-Technique/", "60-Archive/") for p in inside)
        assert len(sink.of("change")) == 1


def test_real_command_in_a_subprocess(sample_vault_copy: Path, api: FakeApi) -> None:
    vault = sample_vault_copy
    exe = Path(sys.executable).with_name("vaulttools")
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "vaulttools.cli"]
    proc = subprocess.Popen(
        [*command, "watch", str(vault), "--api", api.url],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True)
    reader.start()

    def read_until(pattern: str, timeout: float = 30.0) -> list[str]:
        seen, deadline = [], time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = lines.get(timeout=0.1)
            except queue.Empty:
                continue
            seen.append(line)
            if re.search(pattern, line):
                return seen
        raise AssertionError(f"no line matching {pattern!r}; got {seen}")

    try:
        read_until(r"watching .* notes")
        path = "20-Competences/python.md"
        file = vault / path
        if not file.exists():
            pytest.skip("sample vault without 20-Competences/python.md")
        original = file.read_text(encoding="utf-8")
        file.write_text(set_domains(original, [UNKNOWN]), encoding="utf-8")
        out = read_until(r"reload ok")
        new = [line for line in out if " new " in line]
        assert len(new) == 1
        assert re.match(rf"\d\d:\d\d:\d\d new +{re.escape(path)}:\d+:\d+: error unknown-domain .*{UNKNOWN}", new[0])
        file.write_text(original, encoding="utf-8")
        out = read_until(r"reload ok")
        assert [line for line in out if " fixed " in line]
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=15)
        err = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(5)
    tail = []
    while not lines.empty():
        tail.append(lines.get())
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert any("stopped after" in line and "2 changes checked" in line and "reloads: 2 ok;" in line for line in tail)
    assert len(api.calls) == 2


def test_watch_live_is_the_reusable_wiring(sample_vault_copy: Path) -> None:
    """What the TUI uses: a LiveVault kept current by a watcher, deltas delivered on the worker thread."""
    from vaulttools.live import LiveVault
    from vaulttools.watcher import watch_live

    live = LiveVault.load(sample_vault_copy)
    deltas: list = []
    got = threading.Event()

    def on_delta(delta, batch) -> None:
        deltas.append((delta, batch, threading.current_thread().name))
        got.set()

    watcher = watch_live(live, on_delta, quiet=0.05)
    watcher.start()
    try:
        path = next(p for p, n in live.vault.notes.items() if n.domains and not live.diagnostics(p))
        file = live.root / path
        file.write_text(set_domains(file.read_text(encoding="utf-8"), [UNKNOWN]), encoding="utf-8")
        assert got.wait(10)
        delta, batch, thread = deltas[0]
        assert batch.paths == (path,) and thread == "vault-debouncer"
        assert [d.rule for d in delta.new] == ["unknown-domain"]
        assert [d.rule for d in live.diagnostics(path)] == ["unknown-domain"]  # readers see the new state
    finally:
        watcher.stop()


def test_watching_ends_when_the_vault_folder_is_deleted(tmp_path: Path) -> None:
    """The system stops watching a deleted folder, and one made again under its name is a new folder:
    `watching` says so, for the TUI to start a new watcher when the vault is back."""
    import shutil

    from vaulttools.watcher import VaultWatcher

    vault = tmp_path / "vault"
    (vault / "sub").mkdir(parents=True)
    (vault / "sub" / "a.md").write_text("# A\n", encoding="utf-8")
    batches: list[WatchBatch] = []
    watcher = VaultWatcher(vault, batches.append, quiet=0.05)
    watcher.start()
    try:
        assert watcher.watching
        shutil.rmtree(vault)
        deadline = time.monotonic() + 10
        while watcher.watching and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not watcher.watching
        # the notes' deletions are reported too; they may reach the debouncer after the folder's own event
        # (watchdog hands events over from another thread), so wait for them rather than for idleness only
        while not any("sub/a.md" in b.paths for b in batches) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert watcher.wait_idle(5) and any("sub/a.md" in b.paths for b in batches)
    finally:
        watcher.stop()
    assert not watcher.watching


def test_stop_summary_names_the_last_failure_in_words() -> None:
    import io

    out = io.StringIO()
    reporter = watch.Reporter(out, "text")
    stats = watch.Stats(batches=1, reloads_sent=3, reloads_ok=0, reloads_failed=3,
                        last_failure="HTTP 401: missing or wrong bearer token (unauthorized)")
    reporter.stop("interrupt", stats, None)
    line = out.getvalue()
    assert "1 change checked, reloads: 0 ok, 3 failed attempts (the last: HTTP 401: missing or wrong bearer token" in line
    assert "now 0 notes, 0 errors, 0 warnings" in line


def test_a_deleted_vault_folder_ends_the_watch_with_a_message(tmp_path: Path) -> None:
    import shutil

    vault = tmp_path / "v"
    vault.mkdir()
    (vault / "a.md").write_text("---\ntitle: A\n---\nUne note.\n", encoding="utf-8")
    args = build_parser().parse_args(["watch", str(vault), "--format", "json", "--no-reload"])
    sink = Sink()
    outcome: dict[str, object] = {}
    thread = threading.Thread(target=lambda: outcome.setdefault("rc", watch.run(args, threading.Event(), sink)), daemon=True)
    thread.start()
    assert sink.wait(lambda: sink.of("start"), 60)
    shutil.rmtree(vault)
    thread.join(15)
    assert outcome.get("rc") == 1
    assert any("the vault folder is gone" in e["message"] for e in sink.of("error"))
    assert sink.of("stop")[0]["reason"] == "vault folder gone"


def test_an_alias_dropped_elsewhere_clears_its_spelling_variant_as_a_fresh_lint_does(tmp_path: Path) -> None:
    """Note A's alias `Push  Swap` (two spaces) is note B's `push swap` once folded: both are flagged. When B
    drops it, the watcher must report A's `alias-duplicate` fixed, which a fresh lint no longer reports
    (the live vault once folded without collapsing blanks and kept the stale warning: issue 15)."""
    from grasbot import Vault
    from vaulttools.lint import lint_vault

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "a.md").write_text('---\ntitle: A\naliases: ["Push  Swap"]\n---\nA.\n', encoding="utf-8")
    b = vault / "b.md"
    b.write_text("---\ntitle: B\naliases: [push swap, autre nom]\n---\nB.\n", encoding="utf-8")
    with watching(vault, "--no-reload") as sink:
        flagged = set(rules(sink.of("start")[0]["diagnostics"]))
        assert {("a.md", "alias-duplicate"), ("b.md", "alias-duplicate")} <= flagged
        b.write_text("---\ntitle: B\naliases: [autre nom]\n---\nB.\n", encoding="utf-8")
        assert sink.wait(lambda: sink.of("change"), 15), "the save was not seen"
        change = sink.of("change")[0]
        assert {("a.md", "alias-duplicate"), ("b.md", "alias-duplicate")} <= set(rules(change["fixed"]))
        assert not [d for d in change["new"] if d["rule"] == "alias-duplicate"]
    fresh = lint_vault(Vault.load(vault))
    assert not [d for d in fresh.diagnostics if d.rule == "alias-duplicate"]
