"""The notes as a tree by folder, each with its problem badges, type and a private mark.

Labels start with the badges (``✗2 !1``: errors, warnings) so they stay visible however narrow the pane;
a folder's badges add up its notes. Nodes are updated in place when a note changes on disk, so the
cursor and the folds stay where the author left them.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from vaulttools.tui.backend import NoteRow
from vaulttools.tui.filters import NoteFilter

#: With up to this many notes shown, every folder starts unfolded; above, only the top level.
EXPAND_ALL_UP_TO = 400

ERROR_STYLE = "bold red"
WARNING_STYLE = "yellow"
PRIVATE_STYLE = "magenta"
TYPE_STYLE = "dim"


def badges(errors: int, warnings: int, pending: bool = False) -> Text:
    """``✗2 !1 `` (or nothing when clean; ``… `` while the first lint runs)."""
    text = Text()
    if pending:
        text.append("… ", style="dim")
        return text
    if errors:
        text.append(f"✗{errors}", style=ERROR_STYLE)
        text.append(" ")
    if warnings:
        text.append(f"!{warnings}", style=WARNING_STYLE)
        text.append(" ")
    return text


def note_label(row: NoteRow, pending: bool = False) -> Text:
    name = row.path.rsplit("/", 1)[-1]
    if name.lower().endswith(".md"):
        name = name[:-3]
    text = badges(row.errors, row.warnings, pending)
    text.append(name)
    if row.type:
        text.append(f" {row.type}", style=TYPE_STYLE)
    if row.private:
        text.append(" private", style=PRIVATE_STYLE)
    return text


def tree_order(path: str) -> tuple[str, str]:
    """Case-insensitive path order (ties by the exact path, so the order never depends on the disk)."""
    return (path.casefold(), path)


class NoteTree(Tree[str]):
    """Leaves hold a note's vault-relative path; folders hold ``"dir:" + folder path``."""

    DEFAULT_CSS = """
    NoteTree { scrollbar-size-vertical: 1; overflow-x: hidden; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("vault", id=id)
        self.show_root = False
        self.guide_depth = 2
        self.auto_expand = True
        self.rows: dict[str, NoteRow] = {}
        self.linted = False
        self.filter = NoteFilter.parse("")
        self._notes: dict[str, TreeNode[str]] = {}
        self._folders: dict[str, TreeNode[str]] = {}
        self._folder_notes: dict[str, set[str]] = {}  # folder -> notes shown under it (any depth)

    # -- building -----------------------------------------------------------------------------------------
    @property
    def shown(self) -> list[str]:
        """Paths of the notes in the tree, in tree order."""
        return sorted(self._notes, key=tree_order)

    def set_rows(self, rows: Iterable[NoteRow], *, linted: bool) -> None:
        self.rows = {r.path: r for r in rows}
        self.linted = linted
        self.rebuild()

    def set_filter(self, flt: NoteFilter) -> None:
        self.filter = flt
        self.rebuild()

    def rebuild(self, keep: str | None = None) -> None:
        """Rebuild from `rows` and the filter; the note under the cursor (or `keep`) stays selected."""
        keep = keep or self.current_path
        self.clear()
        self._notes.clear()
        self._folders.clear()
        self._folder_notes.clear()
        flt = self.filter
        shown = [p for p in sorted(self.rows, key=tree_order) if not flt.active or flt.matches(self.rows[p])]
        expand_all = len(shown) <= EXPAND_ALL_UP_TO or flt.active
        for path in shown:
            self._add(path, expand_all)
        for folder in self._folders:
            self._refresh_folder(folder)
        node = self._notes.get(keep) if keep else None
        if node is not None:
            self._reveal(node)
            self.call_after_refresh(self.move_cursor, node)
        elif shown and flt.active:
            self.call_after_refresh(self.move_cursor, self._notes[shown[0]])

    def _folder_node(self, folder: str, expand_all: bool) -> TreeNode[str]:
        if folder == "":
            return self.root
        node = self._folders.get(folder)
        if node is not None:
            return node
        parent_path, _, name = folder.rpartition("/")
        parent = self._folder_node(parent_path, expand_all)
        node = parent.add(Text(name), data="dir:" + folder, expand=expand_all or parent is self.root)
        self._folders[folder] = node
        self._folder_notes[folder] = set()
        return node

    def _add(self, path: str, expand_all: bool) -> TreeNode[str]:
        folder = path.rpartition("/")[0]
        parent = self._folder_node(folder, expand_all)
        node = parent.add_leaf(note_label(self.rows[path], not self.linted), data=path)
        self._notes[path] = node
        while folder:
            self._folder_notes[folder].add(path)
            folder = folder.rpartition("/")[0]
        return node

    def _refresh_folder(self, folder: str) -> None:
        node = self._folders.get(folder)
        if node is None:
            return
        paths = self._folder_notes.get(folder, set())
        errors = sum(self.rows[p].errors for p in paths if p in self.rows)
        warnings = sum(self.rows[p].warnings for p in paths if p in self.rows)
        label = badges(errors, warnings, not self.linted)
        label.append(folder.rpartition("/")[2], style="bold")
        label.append(f" ({len(paths)})", style="dim")
        node.set_label(label)

    def _reveal(self, node: TreeNode[str]) -> None:
        parent = node.parent
        while parent is not None and parent is not self.root:
            parent.expand()
            parent = parent.parent

    # -- live updates -------------------------------------------------------------------------------------
    def update_rows(self, changed: dict[str, NoteRow | None], *, linted: bool | None = None) -> None:
        """Apply changed rows in place: labels change, new notes appear (if the filter shows them),
        deleted ones go; notes that stop matching the filter stay until the filter changes (the note
        being fixed must not vanish under the cursor)."""
        if linted is not None:
            self.linted = linted
        added = [p for p, r in changed.items() if r is not None and p not in self.rows]
        if added:  # rare (a new note): rebuild so it lands in its sorted place
            for path, row in changed.items():
                if row is None:
                    self.rows.pop(path, None)
                else:
                    self.rows[path] = row
            self.rebuild()
            return
        touched_folders: set[str] = set()
        for path, row in sorted(changed.items()):
            node = self._notes.get(path)
            if row is None:
                self.rows.pop(path, None)
                if node is not None:
                    self._remove(path, node)
            else:
                self.rows[path] = row
                if node is not None:
                    node.set_label(note_label(row, not self.linted))
                elif not self.filter.active or self.filter.matches(row):
                    self._add(path, True)
                else:
                    continue
            folder = path.rpartition("/")[0]
            while folder:
                touched_folders.add(folder)
                folder = folder.rpartition("/")[0]
        for folder in sorted(touched_folders):
            self._refresh_folder(folder)

    def relabel_all(self, *, linted: bool) -> None:
        self.linted = linted
        for path, node in self._notes.items():
            node.set_label(note_label(self.rows[path], not linted))
        for folder in self._folders:
            self._refresh_folder(folder)

    def _remove(self, path: str, node: TreeNode[str]) -> None:
        cursor = self.cursor_node
        del self._notes[path]
        folder = path.rpartition("/")[0]
        while folder:
            self._folder_notes.get(folder, set()).discard(path)
            folder = folder.rpartition("/")[0]
        node.remove()
        if cursor is node:
            self.call_after_refresh(self._cursor_to_valid)
        # drop folders left empty
        folder = path.rpartition("/")[0]
        while folder and not self._folder_notes.get(folder):
            fnode = self._folders.pop(folder, None)
            self._folder_notes.pop(folder, None)
            if fnode is not None:
                fnode.remove()
            folder = folder.rpartition("/")[0]

    def _cursor_to_valid(self) -> None:
        if self.cursor_line < 0 or self.cursor_line > self.last_line:
            self.cursor_line = max(0, min(self.cursor_line, self.last_line))

    # -- selection ----------------------------------------------------------------------------------------
    @property
    def current_path(self) -> str | None:
        node = self.cursor_node
        if node is None or node.data is None or node.data.startswith("dir:"):
            return None
        return node.data

    def select_path(self, path: str) -> bool:
        """Put the cursor on a note (clearing a filter that hides it); False when it is not a note."""
        if path not in self.rows:
            return False
        node = self._notes.get(path)
        if node is None:
            self.filter = NoteFilter.parse("")
            self.rebuild(keep=path)
            return True
        self._reveal(node)
        self.call_after_refresh(self.move_cursor, node)
        return True

    def next_with_problems(self, after: str | None) -> str | None:
        """The next shown note with a problem after `after` (wrapping), for the "next problem" key."""
        order = [p for p in self.shown if self.rows[p].problems]
        if not order:
            return None
        if after is None or after not in self._notes:
            return order[0]
        key = tree_order(after)
        for p in order:
            if tree_order(p) > key:
                return p
        return order[0]
