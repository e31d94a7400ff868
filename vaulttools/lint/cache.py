"""The lint cache: a second run re-reads only what changed.

What it holds (one file, ``VAULT/.vaulttools_cache/lint.bin``, or under ``$VAULTTOOLS_CACHE_DIR``; the
hidden folder is read neither by Obsidian nor by the vault loader, and holds a ``.gitignore`` so it is never
committed):

- *per note*: its content digest, its findings after the whole run (the note-local ones, from the frontmatter
  and vocabulary rules, are reused by a full run for every note whose digest is unchanged), how many are
  errors, warnings and fixable, and its *exports*: what other notes' findings depend on (headings, block
  ids, slug, aliases, visibility);
- *per file* of the vault folder: modification time, change time and size (checked before any content is read
  or hashed; when they differ the content digest decides). The change time is there because the other two can
  be put back: a same-size edit followed by `touch -d`, `cp -p`, `rsync -t` or a tar extraction restores the
  old modification time, but every write sets the change time to now, and no tool can set it back;
- *the last report*, one UTF-8 string per note with findings, in the format and from the folder it was printed in:
  a second run prints it again without rebuilding 35k findings (`LintCache.report`).

Layout: a magic line, then one `marshal` dump. Findings and exports are nested marshal blobs, decoded only for
the notes that need them, so loading the cache of a 10k-note vault builds a few tens of thousands of objects,
not half a million. A cache file without the magic line, of another layout (`CACHE_FORMAT`), that does not
decode or whose entries do not have the expected shape is ignored and rewritten by a full run.

It is valid only for the same cache layout, engine version, Python version, taxonomy (file digest), configuration and day
(`updated-date` compares with today); otherwise it starts empty.

How a run uses it (`LintCache.answer`, or `fast_result` for the findings themselves):

1. nothing changed (every file has the same time and size, or the same digest): the stored findings are the
   answer; the vault is not even loaded;
2. some notes changed but their exports did not (the usual edit: body text, a tag, an answer): those notes
   alone are read and checked; their links are resolved by the engine's own `grasbot.links.Resolver`, built
   from the stored names, aliases and anchors, and every other note's findings stand, because nothing they
   depend on moved;
3. anything else (a note added, removed or renamed, a heading or alias or visibility changed, an attachment
   changed, `answer-not-retrieved` active, which depends on the whole index): a full run, which refreshes
   the cache. Note-local findings of unchanged notes still come from the cache then.

The file is written atomically (temporary file + rename) and only when something in it changed.

A cache that cannot be read or written is ignored: a read-only vault lints fine, just without it. A vault
folder without its write permission bit gets no cache folder, even when the linter runs as root (set
``VAULTTOOLS_CACHE_DIR`` to cache such a vault elsewhere).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import marshal
import mmap
import os
import sys
from pathlib import Path
from collections.abc import Collection, Mapping
from typing import Any

from grasbot import Heading, Note, Resolution
from vaulttools.lint.config import LintConfig
from vaulttools.lint.diagnostics import Diagnostic, Edit, Fix, Severity

__all__ = ["LintCache", "cache_dir", "lint_through_cache", "profile_has_findings"]

_FILE = "lint.bin"
#: Beside it: what incremental runs changed since it was written (see `LintCache.save`).
_DELTA_FILE = "lint.delta"
#: Past this many changed entries the whole cache is written again (the delta is re-read on every run).
DELTA_MAX = 500
#: First bytes of the cache file; a file without them (damaged, another program's) is ignored and rewritten.
_MAGIC = b"vaulttools-lint-cache\n"
#: Bump when the stored layout changes (part of the key: an older cache is ignored, then rewritten).
CACHE_FORMAT = "2"


def cache_dir(root: Path) -> Path:
    env = os.environ.get("VAULTTOOLS_CACHE_DIR")
    if env:
        key = hashlib.blake2b(str(Path(root).resolve()).encode(), digest_size=8).hexdigest()
        return Path(env) / key
    return Path(root) / ".vaulttools_cache"


def _encode(diag: Diagnostic) -> tuple:
    fix = None
    if diag.fix is not None:
        fix = (diag.fix.message, tuple((e.kind, e.field, e.index, e.old, e.new, e.after) for e in diag.fix.edits))
    return (diag.line, diag.column, diag.end_line, diag.end_column, diag.rule, diag.severity.value, diag.message, fix)


_SEVERITY = {s.value: s for s in Severity}

#: Rules whose findings depend on other notes (the rest depend on the note, the taxonomy and the day only).
CROSS_NOTE_RULES = frozenset({"slug-duplicate", "alias-duplicate", "broken-link", "broken-anchor", "ambiguous-link",
                              "private-link", "answer-not-retrieved", "section-duplicate"})


def _decode(path: str, row: tuple) -> Diagnostic:
    line, column, end_line, end_column, rule, severity, message, fix = row
    decoded_fix = Fix(fix[0], tuple(Edit(*edit) for edit in fix[1])) if fix is not None else None
    return Diagnostic(path, line, column, end_line, end_column, rule, _SEVERITY[severity], message, decoded_fix)


def exports(note: Note) -> tuple:
    """What other notes' findings depend on: if this is unchanged, their findings are too.

    (headings, block ids, slug, aliases as the engine reads them, their folded forms, raw visibility,
    is_private, and for a note imported from a PDF its (book, section, type), which `section-duplicate`
    compares across notes)."""
    from vaulttools.lint.rules.slugs import alias_strings, alias_keys

    meta = note.meta if isinstance(note.meta, dict) else {}
    slug = meta.get("slug")
    aliases = alias_strings(meta.get("aliases"))
    visibility = meta.get("visibility")
    return (
        tuple((h.text, h.level) for h in note.headings),
        tuple(sorted(note.block_ids)),
        slug if isinstance(slug, str) else None,
        aliases,
        alias_keys(aliases),
        visibility if isinstance(visibility, str) else (None if visibility is None else repr(visibility)),
        note.is_private,
        _book_key(meta),
    )


def _book_key(meta: dict) -> tuple | None:
    book = meta.get("book")
    if not isinstance(book, str) or not book.strip():
        return None
    return (book, repr(meta.get("section")), repr(meta.get("type")))


def _walk(root: Path) -> dict[str, tuple[int, int, int]]:
    """`_stat_sig` of every file under `root` whose path has no hidden part: a superset of the notes and
    attachments the vault loader reads, so any change it could see changes this."""
    out: dict[str, tuple[int, int, int]] = {}
    real_root = os.path.realpath(root)
    inside = real_root.rstrip(os.sep) + os.sep
    try:
        st = os.stat(root)
        seen = {(st.st_dev, st.st_ino)}
    except OSError:
        seen = set()
    stack = [("", str(root))]
    while stack:
        rel_dir, abs_dir = stack.pop()
        try:
            with os.scandir(abs_dir) as it:
                entries = list(it)
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            rel = f"{rel_dir}/{name}" if rel_dir else name
            try:
                if entry.is_symlink():
                    # as the vault's walk: a link out of the vault is never followed (its own stat is kept,
                    # so that a link changed or removed still changes the result), a folder seen once
                    real = os.path.realpath(entry.path)
                    if real != real_root and not real.startswith(inside):
                        lst = entry.stat(follow_symlinks=False)
                        out[rel] = (lst.st_mtime_ns, lst.st_size, lst.st_ctime_ns)
                        continue
                if entry.is_dir():
                    st = entry.stat()
                    if (st.st_dev, st.st_ino) in seen:
                        continue
                    seen.add((st.st_dev, st.st_ino))
                    stack.append((rel, entry.path))
                else:
                    st = entry.stat()
                    out[rel] = (st.st_mtime_ns, st.st_size, st.st_ctime_ns)
            except OSError:
                continue
    return out


class _StandIns(Mapping):
    """Path -> note: the changed notes as read, every other one built from its stored exports on first use."""

    def __init__(self, stored: dict[str, tuple], changed: dict[str, Note]) -> None:
        self.stored = stored
        self.changed = changed
        self.built: dict[str, Note] = {}

    def __getitem__(self, path: str) -> Note:
        note = self.changed.get(path) or self.built.get(path)
        if note is None:
            note = self.built[path] = _stand_in(path, marshal.loads(self.stored[path][1]))
        return note

    def __iter__(self):
        return iter(self.stored)

    def __len__(self) -> int:
        return len(self.stored)

    def __contains__(self, path: object) -> bool:
        return path in self.stored


class _CachedVault:
    """Just enough of `grasbot.vault.Vault` for the link and slug rules to check a few changed notes against
    the stored state of all the others (the engine's own resolver and anchor tables). The changed notes have
    the same exports as before (else the run is a full one), so the stored identity rows hold for them too."""

    def __init__(self, root: Path, snapshot: dict[str, Any], changed: dict[str, Note]) -> None:
        self.root = root
        self.notes = _StandIns(snapshot["notes"], changed)
        self.files = set(snapshot["files"])
        self.problems: list = []
        self._stored = snapshot["notes"]
        self._identity_blob = snapshot["identity"]
        self._names_blob = snapshot["names"]
        self._names: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None
        self._anchors: dict[str, Any] = {}
        self._rows: list[tuple] | None = None

    def identity_rows(self) -> list[tuple]:
        """(path, slug, aliases, folded aliases, is_private) of every note, as `slugs.identity_rows` gives them."""
        if self._rows is None:
            self._rows = marshal.loads(self._identity_blob)  # a list of tuples, as stored
        return self._rows

    def name_index(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """(note name -> note paths, file name -> file paths), as stored by `record` (see `_name_index`)."""
        if self._names is None:
            self._names = marshal.loads(self._names_blob)
        return self._names

    def _resolver_for(self, names: set[str], alias_keys: set[str]):
        """The engine's resolver, indexed only with the files whose name is one of `names` (a link can only
        resolve to a file of its own name, so the result is the same as with the whole index) and the
        aliases in `alias_keys` (consulted only to name the likely target of a broken link)."""
        from grasbot.links import Resolver
        from grasbot import name_key

        resolver = Resolver()
        note_names, file_names = self.name_index()
        for name in sorted(names):  # the resolver keeps its lists sorted: the order of `add` does not matter
            for path in note_names.get(name, ()):
                resolver.add(path, True)
        for name in sorted(names):  # notes first: a path already added as a note stays one
            for path in file_names.get(name, ()):
                resolver.add(path, False)
        if alias_keys:
            for path, _slug, aliases, _keys, _private in self.identity_rows():
                found = [a for a in aliases if a is not None and name_key(a.strip()) in alias_keys]
                if found:
                    resolver.add_aliases(path, found)
        return resolver

    def _anchor_table(self, path: str):
        from grasbot.links import AnchorTable

        table = self._anchors.get(path)
        if table is None:
            if path not in self.notes:
                return None
            note = self.notes[path]
            table = self._anchors[path] = AnchorTable(note.headings, note.block_ids)
        return table

    def link_problems(self, path: str, into: Collection[str] = ()) -> list[Resolution]:
        """As `grasbot.vault.Vault.link_problems`: the links that are not plain OK, and the OK ones into `into`."""
        from grasbot import LinkStatus

        ok = LinkStatus.OK
        return [r for r in self.resolutions(path) if r.status is not ok or r.target_path in into]

    def resolutions(self, path: str) -> list[Resolution]:
        from grasbot.links import link_key
        from grasbot import name_key

        from grasbot import LinkStatus

        note = self.notes[path]
        names = {link_key(link.target) for link in note.links if link.target}
        resolver = self._resolver_for(names, set())
        out = [resolver.resolve(link, path, self._anchor_table) for link in note.links]
        broken = {name_key(r.link.target) for r in out if r.status is LinkStatus.BROKEN}
        if broken:  # aliases only name the likely target of a broken link: indexed only then
            resolver = self._resolver_for(names, broken)
            out = [resolver.resolve(link, path, self._anchor_table) for link in note.links]
        return out


def _name_index(notes, files) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Note paths by the `name_key` of their file name without `.md`, and other files' paths by the `name_key`
    of their file name: a link can only resolve to a file of its own name, so an incremental run indexes just
    those (paths in sorted order, as the resolver was fed before)."""
    from grasbot import name_key

    by_note: dict[str, list[str]] = {}
    for path in sorted(notes):
        base = path.rsplit("/", 1)[-1]
        by_note.setdefault(name_key(base[:-3] if base.lower().endswith(".md") else base), []).append(path)
    by_file: dict[str, list[str]] = {}
    for path in sorted(files):
        by_file.setdefault(name_key(path.rsplit("/", 1)[-1]), []).append(path)
    return by_note, by_file


def _stand_in(path: str, ex: tuple) -> Note:
    headings, blocks, slug, aliases, _keys, visibility, _private, _book = ex
    meta: dict[str, Any] = {}
    if slug is not None:
        meta["slug"] = slug
    if aliases:
        meta["aliases"] = [a for a in aliases if a is not None]
    if visibility is not None:
        meta["visibility"] = visibility  # a non-string was stored as its repr: still private, as before
    note = Note(path=path, text="", meta=meta, body="", body_line=1, has_frontmatter=True,
                headings=[Heading(t, lvl, 0) for t, lvl in headings], block_ids=set(blocks))
    if _private and not note.is_private:  # private by another field, a folder or a tag: as it was read
        note.withheld = "private when it was last read"
    return note


class LintCache:
    """Use `open`, then `answer` (or `fast_result`); else pass it to `lint_vault(cache=...)` and `record` the
    result. `report` gives the report from the stored parts; `save` writes the cache when it changed."""

    def __init__(self, file: Path | None, key: str, root: Path) -> None:
        self.file = file
        self.key = key
        self.root = root
        self.snapshot: dict[str, Any] | None = None
        self._dirty = False  # changed in ways the delta file can hold (see `save`)
        self._full_dirty = False  # changed in any other way: the whole file is rewritten
        self._base: str | None = None  # the id of the main file the snapshot came from (its delta names it)
        self._delta: dict[str, dict] = _new_delta()  # what changed since that file was written
        self.hits = 0
        self.misses = 0
        self.mode = "full"  # how the last run was answered: "unchanged", "incremental" or "full"
        self._counts: tuple[int, int, int] | None = None  # (errors, warnings, fixable) of an answered run
        self._recorded: Any = None  # the result `record` stored

    @property
    def dirty(self) -> bool:
        """Whether `save` has something to write. Setting it marks the whole snapshot as changed."""
        return self._dirty or self._full_dirty

    @dirty.setter
    def dirty(self, value: bool) -> None:
        self._full_dirty = bool(value)
        if not value:
            self._dirty = False

    def _changed(self, stats: str | None = None, note: str | None = None, part: tuple[str, bytes | None] | None = None) -> None:
        """Remember a change the delta file can hold: one file's stat, one note's entry, one report part."""
        if stats is not None:
            self._delta["stats"][stats] = self.snapshot["stats"][stats]  # type: ignore[index]
        if note is not None:
            self._delta["notes"][note] = self.snapshot["notes"][note]  # type: ignore[index]
        if part is not None:
            self._delta["parts"][part[0]] = part[1]
        self._dirty = True

    @classmethod
    def open(cls, root: Path, taxonomy: Any, config: LintConfig, today: _dt.date | None = None) -> LintCache:
        from vaulttools.lint.rule import ENGINE_VERSION

        tax_digest = ""
        tax_path = getattr(taxonomy, "path", None)
        if tax_path is not None:
            # the file, not the way it was named: `lint vault` and `lint /abs/vault` share one cache
            try:
                tax_path = Path(tax_path).resolve()
            except (OSError, RuntimeError):  # a symlink loop: the path as given
                tax_path = Path(tax_path)
            try:
                tax_digest = hashlib.blake2b(Path(tax_path).read_bytes(), digest_size=12).hexdigest()
            except OSError:
                tax_digest = "unreadable"
        from grasbot import read_privacy

        from vaulttools.lint.urls import DOCS_URL  # (the stored reports hold the rules' URLs)

        key = "|".join([CACHE_FORMAT, ENGINE_VERSION, sys.version.split()[0], str(tax_path or ""), tax_digest,
                        config.digest(), read_privacy(root)[0].digest(), (today or _dt.date.today()).isoformat(),
                        DOCS_URL])
        cache = cls(cache_dir(root) / _FILE, key, Path(root))
        try:
            data = _read(cache.file)
            if isinstance(data, dict) and data.get("key") == key and isinstance(data.get("snapshot"), dict):
                cache.snapshot = data["snapshot"]
                cache._base = data.get("id")
        except (OSError, ValueError, EOFError, TypeError):
            pass
        if cache.snapshot is not None:
            try:
                cache._apply_delta()
            except Exception:  # a damaged delta, maybe applied in part: start empty (a full run)
                cache.snapshot = None
                cache._base = None
                cache._delta = _new_delta()
        return cache

    def _delta_file(self) -> Path:
        assert self.file is not None
        return self.file.with_name(_DELTA_FILE)

    def _apply_delta(self) -> None:
        """Apply the delta file written by incremental runs since the main file, when it belongs to that file."""
        try:
            delta = _read(self._delta_file())
        except FileNotFoundError:
            return
        if not (isinstance(delta, dict) and delta.get("key") == self.key and self._base
                and delta.get("base") == self._base):
            return  # another main file's delta (or none of ours): ignored, replaced by the next write
        snap = self.snapshot
        assert snap is not None
        for name in ("stats", "notes", "parts"):
            if not isinstance(delta.get(name), dict):
                raise ValueError("damaged delta")
        snap["stats"].update(delta["stats"])
        notes = snap["notes"]
        for path, entry in delta["notes"].items():
            if path not in notes:
                raise ValueError("damaged delta")
            notes[path] = entry
        stored = snap.get("report")
        if delta["parts"]:
            if not stored:
                raise ValueError("damaged delta")
            parts = stored[2]
            added = False
            for path, part in delta["parts"].items():
                if part is None:
                    parts.pop(path, None)
                else:
                    added = added or path not in parts
                    parts[path] = part
            if added:  # keep the parts in path order, as the report lists them
                snap["report"] = (stored[0], stored[1], {p: parts[p] for p in notes if p in parts})
        self._delta = {name: dict(delta[name]) for name in ("stats", "notes", "parts")}

    # -- note-local findings (used by lint_vault) --------------------------------------------------------
    def get(self, note: Note) -> list[Diagnostic] | None:
        """The note-local findings of `note` from the last run, if its content is the same."""
        from vaulttools.lint.suppression import has_directive

        try:
            entry = self.snapshot["notes"].get(note.path) if self.snapshot else None
            # a note with `%% vaulttools-ignore %%` comments is checked again: its stored findings are those
            # left after its comments silenced some, and which comment silences something is decided anew
            if entry is None or entry[0] != note.digest or not note.digest or has_directive(note):
                self.misses += 1
                return None
            rows = marshal.loads(entry[2]) if entry[3] or entry[4] else ()
        except Exception:  # a damaged entry: check the note again
            self.misses += 1
            return None
        self.hits += 1
        # the stored findings are final (after select/ignore/suppression, with the same configuration):
        # filtering them again in lint_vault gives the same list
        return [_decode(note.path, row) for row in rows if row[4] not in CROSS_NOTE_RULES]

    def put(self, note: Note, diagnostics: list[Diagnostic]) -> None:
        """Nothing to do: `record` stores every note's findings at the end of the run."""

    # -- whole results -------------------------------------------------------------------------------
    def record(self, vault: Any, result: Any, answers_checked: bool) -> None:
        """Remember a full run's findings and what they depend on, for `answer` next time."""
        by_path: dict[str, list[Diagnostic]] = {}
        for diag in result.diagnostics:
            by_path.setdefault(diag.path, []).append(diag)
        notes = {}
        identity = []
        dumps = marshal.dumps
        try:
            for path in sorted(vault.notes):  # the order answers return findings in
                note = vault.notes[path]
                ex = exports(note)
                identity.append((path, ex[2], ex[3], ex[4], ex[6]))
                notes[path] = _entry(note.digest, dumps(ex), by_path.get(path, ()))
            identity_blob = dumps(identity)
            names_blob = dumps(_name_index(notes, vault.files))
        except ValueError:  # something marshal cannot store: no cache this time (and no stale one used)
            self.snapshot = None
            self.dirty = False
            return
        self.snapshot = {
            "stats": _walk(self.root),
            "notes": notes,
            "identity": identity_blob,
            "names": names_blob,
            "files": sorted(vault.files),
            "linted": result.notes,
            "taxonomy": str(result.taxonomy) if result.taxonomy else None,
            "notices": list(result.notices),
            "answers_checked": answers_checked,
            "report": None,  # (format, path prefix, {path: part}) of the last report: see `report`
        }
        self._counts = None
        self._recorded = result
        self._full_dirty = True

    def answer(self, taxonomy: Any, config: LintConfig, today: _dt.date | None = None) -> bool:
        """Bring the stored findings up to date without loading the vault, when they can be reused (sets
        `mode`); False when a full run is needed."""
        try:
            return self._answer(taxonomy, config, today)
        except Exception:  # a cache from another version or damaged on disk: never an error, a full run
            self.snapshot = None
            self._counts = None
            self.mode = "full"
            return False

    def fast_result(self, taxonomy: Any, config: LintConfig, today: _dt.date | None = None) -> Any:
        """The findings without loading the vault, when the stored ones can be reused; else None."""
        if not self.answer(taxonomy, config, today):
            return None
        try:
            return self.result()
        except Exception:
            self.snapshot = None
            self.mode = "full"
            return None

    def result(self) -> Any:
        """The `LintResult` of an answered run (`answer` returned True)."""
        from vaulttools.lint.engine import LintResult

        snap = self.snapshot
        assert snap is not None
        loads = marshal.loads
        # stored in path order with each note's findings sorted: already in report order
        diagnostics = [_decode(path, row) for path, entry in snap["notes"].items() if entry[3] or entry[4]
                       for row in loads(entry[2])]
        return LintResult(root=self.root.resolve(), notes=snap["linted"], diagnostics=diagnostics,
                          taxonomy=Path(snap["taxonomy"]) if snap["taxonomy"] else None, notices=list(snap["notices"]))

    @property
    def has_errors(self) -> bool:
        """Whether an answered run has an error-level finding."""
        return bool(self._totals()[0])

    def _totals(self) -> tuple[int, int, int]:
        if self._counts is None:
            errors = warnings = fixable = 0
            for entry in self.snapshot["notes"].values():  # type: ignore[index]
                errors += entry[3]
                warnings += entry[4]
                fixable += entry[5]
            self._counts = (errors, warnings, fixable)
        return self._counts

    def report(self, fmt: str, cwd: Path | None = None, result: Any = None) -> bytes | None:
        """The report in `fmt`, as UTF-8 bytes, from the stored per-note parts (built and stored when the last
        report was in another format or seen from another folder); `result` is the full run just recorded, if
        any. None for a format not built from parts (sarif): render the `result()` then."""
        from vaulttools.lint.formats import PART_FORMATS, Totals, assemble_bytes, path_prefix

        snap = self.snapshot
        if fmt not in PART_FORMATS or not snap or (result is not None and result is not self._recorded):
            return None
        prefix = path_prefix(result.root if result is not None else self.root, cwd)
        stored = snap.get("report")
        if stored and stored[0] == fmt and stored[1] == prefix:
            parts = stored[2]
        else:
            try:
                parts = self._parts(fmt, prefix, result)
            except UnicodeEncodeError:  # a path that is not valid Unicode (surrogate escapes): render it whole
                parts = None
            if parts is None:
                return None
            snap["report"] = (fmt, prefix, parts)
            self._full_dirty = True
        if result is not None:
            totals = Totals.of(result)
        else:
            errors, warnings, fixable = self._totals()
            noted = sum(1 for entry in snap["notes"].values() if entry[3] or entry[4])
            totals = Totals(self.root.resolve(), snap["linted"], Path(snap["taxonomy"]) if snap["taxonomy"] else None,
                            tuple(snap["notices"]), errors, warnings, fixable, noted)
        return assemble_bytes(fmt, totals, parts.values())

    def _parts(self, fmt: str, prefix: str, result: Any) -> dict[str, bytes] | None:
        from vaulttools.lint.formats import note_part

        snap = self.snapshot
        assert snap is not None
        parts: dict[str, bytes] = {}
        if result is not None:
            by_path: dict[str, list[Diagnostic]] = {}
            for diag in result.diagnostics:
                by_path.setdefault(diag.path, []).append(diag)
            if not by_path.keys() <= snap["notes"].keys():
                return None  # a finding outside the stored notes: the report is rendered whole
            for path in snap["notes"]:
                if path in by_path:
                    parts[path] = note_part(fmt, by_path[path], prefix).encode("utf-8")
        else:
            for path, entry in snap["notes"].items():
                if entry[3] or entry[4]:
                    diags = [_decode(path, row) for row in marshal.loads(entry[2])]
                    parts[path] = note_part(fmt, diags, prefix).encode("utf-8")
        return parts

    def _answer(self, taxonomy: Any, config: LintConfig, today: _dt.date | None) -> bool:
        snap = self.snapshot
        if not snap:
            return False
        stats = _walk(self.root)
        old_stats = snap["stats"]
        if stats.keys() != old_stats.keys():
            return False  # a file added, removed or renamed
        notes = snap["notes"]
        changed: dict[str, Note] = {}
        for rel, sig in stats.items():
            if old_stats[rel] == sig:
                continue
            entry = notes.get(rel)
            if entry is None:
                return False  # an attachment or a document changed
            try:
                raw = (self.root / rel).read_bytes()
            except OSError:
                return False
            from grasbot import read_note, read_privacy

            note = read_note(rel, raw)
            policy = read_privacy(self.root)[0]  # (unchanged since the snapshot: the file is in `stats`)
            if policy:
                note.withheld = policy.withheld(note)
            if note.digest == entry[0]:
                old_stats[rel] = sig  # touched, not changed
                self._changed(stats=rel)
                continue
            mine = exports(note)
            if mine != marshal.loads(entry[1]):
                return False
            if mine[7] is not None:
                return False  # an imported book's note: section-duplicate compares it with the others

            changed[rel] = note
        if changed and snap["answers_checked"]:
            return False  # answer-not-retrieved depends on the whole index: a full run
        for entry in notes.values():  # a damaged store must not give a wrong answer
            if type(entry) is not tuple or len(entry) != 6:
                return False
        if changed:
            self._relint(changed, taxonomy, config, today)
            self.mode = "incremental"
        else:
            self.mode = "unchanged"
        self._counts = None
        return True

    def _relint(self, changed: dict[str, Note], taxonomy: Any, config: LintConfig, today: _dt.date | None) -> None:
        from vaulttools.lint.engine import check_one_note, is_kept, new_context
        from vaulttools.lint.registry import RULE_NAMES, suppressed_rules
        from vaulttools.lint.rules import links, slugs
        from vaulttools.lint.rules.families import note_rules, vault_passes
        from vaulttools.lint.suppression import apply_inline

        snap = self.snapshot
        assert snap is not None
        vault = _CachedVault(self.root.resolve(), snap, changed)
        ctx = new_context(vault, taxonomy, config, today=today)
        rules = note_rules(config.enabled)
        # the vault rules an edit that exports nothing new can change: its own duplicates and links
        passes = vault_passes(config.enabled, only=(slugs, links))
        stored = snap.get("report")
        paths = sorted(p for p in changed if not config.excluded(p))
        for path in paths:
            note = changed[path]
            found = check_one_note(note, ctx, rules)
            for vault_pass, on in passes:
                found += list(vault_pass(ctx, [path], on))
            suppressed = suppressed_rules(note)
            kept = [d for d in found if is_kept(d, config, suppressed)]
            kept = apply_inline(kept, {path: note}.get, (path,), config.enabled, suppressed_rules, RULE_NAMES,
                                ctx.severity, ("answer-not-retrieved",))
            kept.sort(key=lambda d: d.sort_key)
            entry = snap["notes"][path]
            snap["notes"][path] = _entry(note.digest, entry[1], kept)
            self._changed(note=path)
            if stored:
                from vaulttools.lint.formats import note_part

                part = note_part(stored[0], kept, stored[1]).encode("utf-8")
                parts = stored[2]
                if part and path not in parts:  # a new part: keep them in path order, as the report lists them
                    parts[path] = part
                    snap["report"] = stored = (stored[0], stored[1], {p: parts[p] for p in snap["notes"] if p in parts})
                elif part:
                    parts[path] = part
                else:
                    parts.pop(path, None)
                self._changed(part=(path, part or None))
        for path in changed:
            snap["stats"][path] = _stat_sig(self.root / path)
            self._changed(stats=path)

    def save(self) -> None:
        """Write what changed, atomically (temporary file + rename), only when something did; errors are ignored.

        An incremental run changes a few notes' entries: those go to a small delta file beside the main one
        (applied when the cache is opened, as long as the main file is the one it was written against), so
        that saving one edit does not rewrite 30 MB. Past `DELTA_MAX` changed entries, or after any other
        change, the whole cache is written again and the delta file removed."""
        if self.file is None or not self.dirty or self.snapshot is None:
            return
        if not os.environ.get("VAULTTOOLS_CACHE_DIR") and _read_only(self.root):
            return  # a vault folder without write permission is read-only on purpose, even for root
        folder = self.file.parent
        small = len(self._delta["notes"]) + len(self._delta["stats"]) <= DELTA_MAX
        try:
            folder.mkdir(parents=True, exist_ok=True)
            ignore = folder / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# created by vaulttools lint\n*\n", encoding="utf-8")
            if not self._full_dirty and self._base is not None and small:
                _write(self._delta_file(), {"key": self.key, "base": self._base, **self._delta})
            else:
                base = os.urandom(12).hex()  # names this very file: a delta written against another is ignored
                _write(self.file, {"key": self.key, "id": base, "snapshot": self.snapshot})
                self._base = base
                self._delta = _new_delta()
                try:
                    self._delta_file().unlink()
                except FileNotFoundError:
                    pass
            self._dirty = self._full_dirty = False
        except (OSError, ValueError):
            pass


def profile_has_findings(root: Path, config: Any) -> bool:
    """Whether the vault's answering profile has findings (`profile-invalid`): the lint cache stores per-note
    findings only, so such a run goes without it (a profile is one small file: reading it is cheap)."""
    if not config.enabled("profile-invalid"):
        return False
    from vaulttools.lint.rules.profile import check_profile

    return bool(check_profile(root))


def lint_through_cache(vault: Any, taxonomy: Any, config: LintConfig, index: Any = None) -> Any:
    """What `lint_vault(vault, taxonomy, config, index=index)` returns, from the lint cache when it answers
    for the vault folder as it is now (nothing changed, or a few notes re-checked: `LintCache.answer`), else
    from a full run, then recorded in the cache (written at once). How the TUI and `vaulttools watch` start
    their live lint: a warm start does not lint 10k notes again (tests/test_live.py compares it with a
    full run). `vault` is the folder as loaded just before (its snapshot refreshed from the same stat walk
    the cache compares, so both describe the folder as it is)."""
    from vaulttools.lint.engine import lint_vault

    root = Path(vault.root)
    if profile_has_findings(root, config):
        return lint_vault(vault, taxonomy, config, index=index)
    cache = LintCache.open(root, taxonomy, config)
    result = cache.fast_result(taxonomy, config)
    if result is None:
        result = lint_vault(vault, taxonomy, config, index=index, cache=cache)
        cache.record(vault, result, result.answers_checked)
    cache.save()
    return result


def _new_delta() -> dict[str, dict]:
    return {"stats": {}, "notes": {}, "parts": {}}


def _write(file: Path, data: Any) -> None:
    """Write `data` (magic line + marshal) to `file` atomically."""
    from grasbot.files import write_atomic  # only when writing: a run answered without change imports nothing more

    write_atomic(file, _MAGIC + marshal.dumps(data))


def _entry(digest: str, exports_blob: bytes, diagnostics) -> tuple:
    """One note's stored state: (digest, exports, findings, errors, warnings, fixable). Exports and findings are
    marshal blobs, decoded only when used: loading the cache of a 10k-note vault then builds 10k small tuples,
    not half a million objects."""
    errors = warnings = fixable = 0
    for d in diagnostics:
        if d.severity is Severity.ERROR:
            errors += 1
        else:
            warnings += 1
        if d.fix is not None:
            fixable += 1
    return (digest, exports_blob, marshal.dumps(tuple(_encode(d) for d in diagnostics)), errors, warnings, fixable)


def _read(file: Path) -> Any:
    """The object stored in a cache file, or None when it does not start with the magic line. Mapped rather than
    read: the 30 MB of a 10k-note vault's cache are decoded without first being copied."""
    with open(file, "rb") as handle:
        try:
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):  # empty, or a file system without mmap
            raw = handle.read()
            return marshal.loads(raw[len(_MAGIC):]) if raw.startswith(_MAGIC) else None
    with mapped:
        if mapped[: len(_MAGIC)] != _MAGIC:
            return None
        with memoryview(mapped) as view, view[len(_MAGIC):] as body:
            return marshal.loads(body)


def _read_only(root: Path) -> bool:
    try:
        return not os.stat(root).st_mode & 0o200
    except OSError:
        return True


def _stat_sig(path: Path) -> tuple[int, int, int]:
    """(mtime_ns, size, ctime_ns): see the module's docstring for why the change time is part of it."""
    st = os.stat(path)
    return (st.st_mtime_ns, st.st_size, st.st_ctime_ns)
