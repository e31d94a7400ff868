"""The persistent vault + index snapshot (grasbot/snapshot.py): reused when nothing changed, refreshed file by
file when something did, ignored when damaged, foreign or from another engine; never a different answer
from a fresh load."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grasbot import snapshot
from grasbot.search.index import SearchIndex
from grasbot.vault import Vault
from tests.conftest import SAMPLE_VAULT

QUESTIONS = [
    "Quelles sont ses compétences en Rust ?",
    "Parle-moi du projet de télémétrie solaire",
    "Quel est son parcours ?",
    "Il connaît Docker ?",
    "Quel temps fait-il demain ?",
]


def ranking(index: SearchIndex) -> list[list[tuple[str, float, tuple[str, ...]]]]:
    out = []
    for q in QUESTIONS:
        result = index.search(q)
        out.append([(h.note.path, round(h.score, 6), tuple(h.reasons)) for h in result.hits])
    return out


@pytest.fixture
def vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("VAULTTOOLS_CACHE_DIR", raising=False)
    dest = tmp_path / "vault"
    # (without the caches a command run on the bundled vault left there: this copy has its own)
    shutil.copytree(SAMPLE_VAULT, dest, ignore=shutil.ignore_patterns(".vaulttools_cache"))
    # A file changed within `_RACY_NS` of its stat is compared by digest at the next start (see
    # test_a_file_changed_in_the_same_clock_tick_as_its_stat_is_compared_by_digest): a vault copied a moment
    # ago would be all "racy". Here the window is that of a fine-grained clock, and the copy older than it.
    monkeypatch.setattr(snapshot, "_RACY_NS", 20_000_000)
    time.sleep(0.03)
    return dest


def fresh(root: Path) -> list:
    return ranking(SearchIndex.build(Vault.load(root)))


def test_second_load_comes_from_the_snapshot_and_ranks_the_same(vault: Path) -> None:
    first = snapshot.load(vault)
    assert first.source == "load"
    snapshot.save(first)
    files = sorted(p.name for p in (vault / ".vaulttools_cache").iterdir())
    assert any(name.startswith("snapshot-") for name in files) and "snapshot.key" in files
    second = snapshot.load(vault)
    assert second.source == "snapshot" and second.reread == 0
    assert ranking(second.index) == ranking(first.index) == fresh(vault)
    assert sorted(second.vault.notes) == sorted(first.vault.notes)


def test_changed_new_and_deleted_files_are_reread_and_match_a_fresh_load(vault: Path) -> None:
    snapshot.save(snapshot.load(vault))
    rust = next(vault.rglob("rust*.md"))
    rust.write_text(rust.read_text(encoding="utf-8") + "\nIl a aussi écrit un ordonnanceur temps réel pour drones.\n", encoding="utf-8")
    victim = sorted(p for p in vault.rglob("*.md") if p != rust and "MOC" not in p.name)[3]
    victim.unlink()
    (vault / "20-Competences" / "zig.md").write_text(
        "---\ntitle: Zig\nslug: zig\ntype: competence\nvisibility: public\naliases: [zig]\n---\nIl apprend Zig pour l'embarqué.\n",
        encoding="utf-8",
    )
    snap = snapshot.load(vault)
    assert snap.source == "snapshot" and snap.reread == 3
    assert ranking(snap.index) == fresh(vault)
    assert snap.index.search("ordonnanceur temps réel drones").hits[0].note.path == rust.relative_to(vault).as_posix()
    assert snap.index.search("Il connaît Zig ?").hits[0].note.path == "20-Competences/zig.md"
    assert victim.relative_to(vault).as_posix() not in snap.vault.notes
    # the refreshed snapshot is written back, and then reused as it is
    snapshot.save(snap)
    again = snapshot.load(vault)
    assert again.source == "snapshot" and again.reread == 0 and ranking(again.index) == fresh(vault)


def test_a_note_made_private_is_hidden_after_a_refresh(vault: Path) -> None:
    snapshot.save(snapshot.load(vault))
    rust = next(vault.rglob("rust*.md"))
    rust_rel = rust.relative_to(vault).as_posix()
    assert any(h.note.path == rust_rel for h in snapshot.load(vault).index.search("Rust").hits)
    rust.write_text(rust.read_text(encoding="utf-8").replace("visibility: public", "visibility: private"), encoding="utf-8")
    snap = snapshot.load(vault)
    assert snap.reread == 1
    assert all(h.note.path != rust_rel for h in snap.index.search("Rust").hits)


def test_touched_but_unchanged_files_are_not_reread(vault: Path) -> None:
    snapshot.save(snapshot.load(vault))
    later = time.time() + 5
    for note in list(vault.rglob("*.md"))[:5]:
        os.utime(note, (later, later))
    snap = snapshot.load(vault)
    assert snap.source == "snapshot" and snap.reread == 0
    assert ranking(snap.index) == fresh(vault)


def test_a_file_changed_in_the_same_clock_tick_as_its_stat_is_compared_by_digest(
    vault: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a file system with a coarse clock (1-2 s: FAT, some network mounts), a note saved just after the
    snapshot's stat, in the same tick and with the same size, keeps the stat signature recorded (mtime,
    ctime, size and inode all equal). Such a "racy" signature is recorded as never matching, so the next
    start compares the digest and sees the note made private. The coarse clock is simulated: every stat
    of the note returns the times of its first stat."""
    monkeypatch.setattr(snapshot, "_RACY_NS", 2_000_000_000)
    rust = next(vault.rglob("rust*.md"))
    rel = rust.relative_to(vault).as_posix()
    real_stat = os.stat
    frozen: dict[str, os.stat_result] = {}

    def coarse_stat(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        st = real_stat(path, *args, **kwargs)
        if str(path) != str(rust):
            return st
        first = frozen.setdefault("st", st)
        fields = list(st)
        fields[8], fields[9] = first[8], first[9]  # the integer mtime and ctime fields
        return os.stat_result(fields, {"st_mtime_ns": first.st_mtime_ns, "st_ctime_ns": first.st_ctime_ns})

    rust.write_text(rust.read_text(encoding="utf-8"), encoding="utf-8")  # saved just now
    monkeypatch.setattr(os, "stat", coarse_stat)
    snapshot.save(snapshot.load(vault))
    text = rust.read_text(encoding="utf-8")
    edited = text.replace("visibility: public", "visibility: private", 1).replace("\n\n", "\n", 1)
    assert len(edited.encode()) == len(text.encode()) and edited != text
    rust.write_text(edited, encoding="utf-8")
    assert snapshot._signature(str(rust), time.time_ns())[:2] == (frozen["st"].st_size, frozen["st"].st_mtime_ns)
    snap = snapshot.load(vault)
    assert snap.reread == 1 and rel in snap.vault.hidden_paths()
    assert all(h.note.path != rel for h in snap.index.search("Rust").hits)


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[: len(b) // 2],  # truncated
        lambda b: b[:-10] + b"0123456789",  # last bytes changed: the MAC no longer matches
        lambda b: b"not a snapshot at all",  # another program's file
        lambda b: b"",  # empty
    ],
    ids=["truncated", "tampered", "foreign", "empty"],
)
def test_a_damaged_or_foreign_file_is_ignored(vault: Path, damage) -> None:
    snapshot.save(snapshot.load(vault))
    file = next((vault / ".vaulttools_cache").glob("snapshot-*.bin"))
    file.write_bytes(damage(file.read_bytes()))
    snap = snapshot.load(vault)
    assert snap.source == "load" and ranking(snap.index) == fresh(vault)


def test_a_planted_pickle_signed_with_another_key_is_never_unpickled(vault: Path, tmp_path: Path) -> None:
    """Pickle runs code: a file not signed with this cache's own key must not be decoded at all."""
    snapshot.save(snapshot.load(vault))
    file = next((vault / ".vaulttools_cache").glob("snapshot-*.bin"))
    marker = tmp_path / "pwned"
    import hashlib
    import hmac
    import pickle

    class Evil:
        def __reduce__(self):
            return (Path.touch, (marker,))

    payload = pickle.dumps(Evil())
    mac = hmac.new(os.urandom(32), payload, hashlib.sha256).digest()
    file.write_bytes(snapshot._MAGIC + mac + payload)
    snap = snapshot.load(vault)
    assert not marker.exists() and snap.source == "load"


def test_another_engine_version_is_a_miss(vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot.save(snapshot.load(vault))
    monkeypatch.setattr(snapshot, "_engine_digest", lambda: "another engine")
    assert snapshot.load(vault).source == "load"


def test_files_are_private_to_the_user_and_ignored_by_git(vault: Path) -> None:
    snapshot.save(snapshot.load(vault))
    folder = vault / ".vaulttools_cache"
    for name in ("snapshot.key", next(folder.glob("snapshot-*.bin")).name):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600
    assert (folder / ".gitignore").read_text(encoding="utf-8").strip().endswith("*")


def test_cache_dir_from_the_environment(vault: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "cache"
    monkeypatch.setenv("VAULTTOOLS_CACHE_DIR", str(elsewhere))
    snapshot.save(snapshot.load(vault))
    assert not (vault / ".vaulttools_cache").exists()
    assert list(elsewhere.glob("*/snapshot-*.bin"))
    assert snapshot.load(vault).source == "snapshot"


def test_background_save_from_a_one_shot_process(vault: Path, tmp_path: Path) -> None:
    """The forked writer leaves a complete snapshot behind; the next process uses it."""
    code = (
        "import sys; from grasbot import snapshot; s = snapshot.load(sys.argv[1]); "
        "pid = snapshot.save(s, background=True); print(s.source, flush=True)"
    )
    env = {k: v for k, v in os.environ.items() if k != "VAULTTOOLS_CACHE_DIR"}
    first = subprocess.run([sys.executable, "-c", code, str(vault)], capture_output=True, text=True, env=env, timeout=60)
    assert first.returncode == 0 and first.stdout.split() == ["load"], first.stderr
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not list((vault / ".vaulttools_cache").glob("snapshot-*.bin")):
        time.sleep(0.05)
    second = ""
    while time.monotonic() < deadline:
        second = subprocess.run([sys.executable, "-c", code, str(vault)], capture_output=True, text=True, env=env, timeout=60).stdout
        if second.split() == ["snapshot"]:
            break
        time.sleep(0.1)  # the child may still be renaming its file into place
    assert second.split() == ["snapshot"]


def test_a_missing_vault_raises_the_loaders_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="vault folder not found"):
        snapshot.load(tmp_path / "absent")


def _wait_for_snapshot(vault: Path) -> Path:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = list((vault / ".vaulttools_cache").glob("snapshot-*.bin"))
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError("the service wrote no snapshot")


def test_the_service_starts_from_the_snapshot_and_sees_a_note_made_private_on_reload(vault: Path) -> None:
    """Through a real server: its start writes the snapshot, a second server starts from it, and a note made
    private is never served after the reload, even when the edit kept the file's size and mtime (the stat
    signature holds the ctime, which no tool sets back)."""
    from tests.fake_ollama import FakeOllama
    from tests.service_fixtures import run_server, service_settings

    rust = next(vault.rglob("rust*.md"))
    question = "Que sait-il faire en Rust ?"
    with FakeOllama() as fake:
        with run_server(service_settings(fake), vault):
            file = _wait_for_snapshot(vault)
        written = file.stat().st_mtime_ns
        with run_server(service_settings(fake), vault) as server:
            client = server.client()
            assert "rust" in [s["slug"] for s in client.get("/ask", params={"q": question}).json()["sources"]]
            assert file.stat().st_mtime_ns == written  # nothing changed: started from the file, not rewritten
            # Made private with the same number of bytes and the old mtime: no stat signature tells.
            before = rust.stat()
            text = rust.read_text(encoding="utf-8")
            edited = text.replace("visibility: public", "visibility: private", 1).replace("\n\n", "\n", 1)
            assert len(edited.encode()) == before.st_size and edited != text
            rust.write_text(edited, encoding="utf-8")
            os.utime(rust, ns=(before.st_atime_ns, before.st_mtime_ns))
            reloaded = client.post("/reload-vault").json()
            assert "rust" in reloaded["removed"]
            fake.reset()
            body = client.get("/ask", params={"q": question}).json()
            assert "rust" not in [s["slug"] for s in body["sources"]]
            assert all("[rust]" not in p and "20-Competences/rust" not in p for p in fake.chat_prompts())


def test_watch_and_the_tui_start_from_the_snapshot_and_a_change_seen_live_is_reread(vault: Path) -> None:
    """`vaulttools watch` (LiveVault) and the TUI (Backend) load through the snapshot and write it back when
    they stop; a note changed while they ran (applied live) is re-read at the next start, never served from
    the snapshot as it was."""
    from vaulttools.live import LiveVault
    from vaulttools.tui.backend import Backend

    first = LiveVault.load(vault, use_snapshot=True)
    assert first._snapshot.source == "load"
    first.save_snapshot()
    live = LiveVault.load(vault, use_snapshot=True)
    assert live._snapshot.source == "snapshot" and ranking(live.index) == fresh(vault)
    rust = next(vault.rglob("rust*.md"))
    rel = rust.relative_to(vault).as_posix()
    rust.write_text(rust.read_text(encoding="utf-8").replace("visibility: public", "visibility: private"), encoding="utf-8")
    live.apply([rel])
    assert all(h.note.path != rel for h in live.index.search("Rust").hits)
    live.save_snapshot()

    backend = Backend(vault)
    backend.load()
    assert backend._loaded.source == "snapshot" and backend._loaded.reread == 1  # the note changed since the load
    backend.build_index()
    backend.start_live()
    assert all(h.note.path != rel for h in backend._index.search("Rust").hits)
    assert ranking(backend._index) == fresh(vault)
    backend.stop()
    again = Backend(vault)
    again.load()
    assert again._loaded.source == "snapshot" and again._loaded.reread == 0
    again.build_index()
    assert ranking(again._index) == fresh(vault)
    uncached = Backend(vault, use_cache=False)  # --no-cache
    uncached.load()
    assert uncached._loaded.source == "load" and uncached._loaded._file is None  # read whole, nothing to write


def test_vaulttools_ask_writes_the_snapshot_after_its_answer_and_answers_as_without_it(vault: Path, tmp_path: Path) -> None:
    """Whole processes: the first `vaulttools ask` leaves a snapshot (written by a forked child once the
    answer is out), the next ones read it and answer exactly as `--no-cache` does, a note changed since
    included; `--no-cache` writes nothing."""
    cache = tmp_path / "cache"
    env = {**os.environ, "VAULTTOOLS_CACHE_DIR": str(cache)}

    def ask(*extra: str) -> str:
        run = subprocess.run([sys.executable, "-m", "vaulttools.cli", "ask", "--json", "--vault", str(vault), *extra,
                              "Que sait-il faire en Rust ?"], capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
        assert run.returncode == 0, run.stderr
        return run.stdout

    uncached = ask("--no-cache")
    assert not cache.exists()
    assert ask() == uncached
    deadline = time.monotonic() + 30
    while not list(cache.glob("*/snapshot-*.bin")) and time.monotonic() < deadline:
        time.sleep(0.05)
    file = next(cache.glob("*/snapshot-*.bin"))
    assert ask() == uncached
    rust = next(vault.rglob("rust*.md"))
    rust.write_text(rust.read_text(encoding="utf-8").replace("visibility: public", "visibility: private"), encoding="utf-8")
    written = file.stat().st_mtime_ns
    changed = ask()
    assert changed == ask("--no-cache") and '"slug": "rust"' not in changed and '"slug": "rust"' in uncached
    deadline = time.monotonic() + 30
    while file.stat().st_mtime_ns == written and time.monotonic() < deadline:  # refreshed, then written back
        time.sleep(0.05)
    assert file.stat().st_mtime_ns != written


def _synthetic(tmp_path: Path) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    try:
        import synth
    finally:
        sys.path.pop(0)
    return synth.generate(tmp_path / "synth", 300, seed=11)


@pytest.mark.parametrize("which", ["bundled", "synthetic"])
def test_notes_from_the_snapshot_are_the_fresh_loads_notes(vault: Path, tmp_path: Path, which: str) -> None:
    """The snapshot is a second representation of a loaded vault (note shells whose fields are decoded on
    first read, `Note.__getattr__`): differential test against a fresh load of the same folder. Same notes
    field by field, same privacy decisions (found without decoding any note), same resolutions, links and
    redacted texts, same ranked ids and scores."""
    from grasbot.answer.prompt import hidden_links, hidden_names, is_servable, unservable_notes

    root = vault if which == "bundled" else _synthetic(tmp_path)
    time.sleep(0.03)  # (older than the fixture's racy window)
    fresh_vault = Vault.load(root)
    fresh_index = SearchIndex.build(fresh_vault)
    snapshot.save(snapshot.load(root))
    snap = snapshot.load(root)
    assert snap.source == "snapshot" and snap.reread == 0
    notes = snap.vault.notes
    assert list(notes) == list(fresh_vault.notes)
    # privacy first, before anything reads a note's fields: decided from what the shells hold
    assert all(getattr(n, "_pending", None) is not None for n in notes.values())  # shells, nothing decoded
    unservable = [n.path for n in unservable_notes(snap.vault)]
    assert unservable == [p for p, n in fresh_vault.notes.items() if not is_servable(n)] and unservable
    assert snap.vault.hidden_paths() == fresh_vault.hidden_paths()
    assert set(hidden_links(snap.vault)) == set(hidden_names(fresh_vault.notes.values()))
    decoded = {p for p, n in notes.items() if getattr(n, "_pending", None) is None}
    assert decoded <= set(unservable)  # only the hidden notes' names (slugs) were read
    assert [(n.withheld, n.id) for n in notes.values()] == [(n.withheld, n.id) for n in fresh_vault.notes.values()]
    # the ranking, which decodes only the hits
    assert ranking(snap.index) == ranking(fresh_index)
    assert any(getattr(n, "_pending", None) is not None for n in notes.values())
    # then every note, field by field, and everything the vault derives from them
    for path, note in fresh_vault.notes.items():
        got = notes[path]
        assert got == note, path
        assert got.links == note.links and got.key_positions == note.key_positions
        assert got.withheld == note.withheld and is_servable(got) == is_servable(note)
        assert snap.vault.resolutions(path) == fresh_vault.resolutions(path)
        assert snap.vault.outgoing(path) == fresh_vault.outgoing(path)
        assert snap.vault.visitor_text(got.body, path) == fresh_vault.visitor_text(note.body, path)
    assert all(getattr(n, "_pending", None) is None for n in notes.values())
    assert snap.vault.files == fresh_vault.files
    assert [snap.vault.incoming(p) for p in notes] == [fresh_vault.incoming(p) for p in notes]


def test_a_snapshot_changed_in_place_after_it_was_opened_is_refused_not_decoded(vault: Path) -> None:
    """A shell's fields are checked against their keyed digest before they are decoded: bytes changed in the
    file after it was opened (no writer of ours does that: they replace it whole) raise a clear error
    naming the file, never a decoded planted pickle."""
    snapshot.save(snapshot.load(vault))
    snap = snapshot.load(vault)
    file = next((vault / ".vaulttools_cache").glob("snapshot-*.bin"))
    data = bytearray(file.read_bytes())
    data[-5] ^= 0xFF  # inside the last note's fields
    with open(file, "r+b") as fh:  # in place: the open snapshot reads the same inode
        fh.write(data)
    last = list(snap.vault.notes.values())
    with pytest.raises(snapshot.SnapshotDamaged, match="snapshot-"):
        for note in last:
            note.meta
