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
    """Leaves hold a note's vault-relative path; folders hold ``"dir:" + folder path``.

    A folder's nodes are created when it is first unfolded (10k notes would otherwise mean 10k nodes
    built, and their widths measured, before the first screen); its badges are computed from the rows,
    so they are right even while it is folded.
    """

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
        self._shown: list[str] = []
        self._notes: dict[str, TreeNode[str]] = {}  # nodes built so far
        self._folders: dict[str, TreeNode[str]] = {}
        self._children: dict[str, list[tuple[bool, str]]] = {}  # folder -> (is_folder, path) in tree order
        self._populated: set[str] = set()
        self._folder_notes: dict[str, set[str]] = {}  # folder -> notes shown under it (any depth)
        self._expand_all = False

    # -- building -----------------------------------------------------------------------------------------
    @property
    def shown(self) -> list[str]:
        """Paths of the notes the filter lets through, in tree order."""
        return list(self._shown)

    def set_rows(self, rows: Iterable[NoteRow], *, linted: bool) -> None:
        self.rows = {r.path: r for r in rows}
        self.linted = linted
        self.rebuild()

    def set_filter(self, flt: NoteFilter) -> None:
        self.filter = flt
        self.rebuild()

    def rebuild(self, keep: str | None = None, sticky: Iterable[str] = ()) -> None:
        """Rebuild from `rows` and the filter; the note under the cursor (or `keep`) stays selected.
        `sticky` notes stay in the tree even if the filter no longer lets them through."""
        keep = keep or self.current_path
        self.cursor_line = -1  # forget the old node now, or the rebuilt tree highlights whatever takes its line
        self.clear()
        self._notes.clear()
        self._folders.clear()
        self._children = {"": []}
        self._populated.clear()
        self._folder_notes.clear()
        flt = self.filter
        rows = self.rows
        sticky = set(sticky)
        shown = [p for p in sorted(rows, key=tree_order) if not flt.active or p in sticky or flt.matches(rows[p])]
        self._shown = shown
        self._expand_all = len(shown) <= EXPAND_ALL_UP_TO or flt.active
        children, folder_notes = self._children, self._folder_notes
        for path in shown:
            folder = path.rpartition("/")[0]
            self._register_folder(folder)
            children[folder].append((False, path))
            while folder:
                folder_notes[folder].add(path)
                folder = folder.rpartition("/")[0]
        self._populate("")
        target = keep if keep and keep in set(shown) else None
        if target is None and shown and flt.active:
            target = shown[0]
        if target is not None:
            self._move_to_path(target)
            # The tree says which node is highlighted only when the cursor's line changes: a note that
            # lands on the line the old one had would leave the note pane on the old one, maybe hidden now.
            node = self.cursor_node
            if node is not None:
                self.post_message(Tree.NodeHighlighted(node))

    def _register_folder(self, folder: str) -> None:
        if folder in self._children:
            return
        parent = folder.rpartition("/")[0]
        self._register_folder(parent)
        self._children[parent].append((True, folder))
        self._children[folder] = []
        self._folder_notes[folder] = set()

    def _populate(self, folder: str) -> None:
        """Create the nodes of a folder's direct children (once)."""
        if folder in self._populated:
            return
        self._populated.add(folder)
        node = self.root if folder == "" else self._folders[folder]
        pending = not self.linted
        for is_folder, path in self._children.get(folder, ()):
            if is_folder:
                child = node.add(self._folder_label(path), data="dir:" + path, expand=False, allow_expand=True)
                self._folders[path] = child
                if self._expand_all or folder == "":
                    self._populate(path)
                    child.expand()
            else:
                self._notes[path] = node.add_leaf(note_label(self.rows[path], pending), data=path)

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[str]) -> None:
        data = event.node.data
        # the message may come from a node of a tree since rebuilt: only this tree's nodes count
        if data and data.startswith("dir:") and self._folders.get(data[4:]) is event.node:
            self._populate(data[4:])

    def _folder_label(self, folder: str) -> Text:
        paths = self._folder_notes.get(folder, set())
        rows = self.rows
        errors = sum(rows[p].errors for p in paths if p in rows)
        warnings = sum(rows[p].warnings for p in paths if p in rows)
        label = badges(errors, warnings, not self.linted)
        label.append(folder.rpartition("/")[2], style="bold")
        label.append(f" ({len(paths)})", style="dim")
        return label

    def _refresh_folder(self, folder: str) -> None:
        node = self._folders.get(folder)
        if node is not None:
            node.set_label(self._folder_label(folder))

    def _reveal_path(self, path: str) -> TreeNode[str] | None:
        """Unfold (and build) every folder above `path`; its node, or None when it is not shown."""
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            folder = "/".join(parts[:i])
            node = self._folders.get(folder)
            if node is None:
                return None
            self._populate(folder)
            if not node.is_expanded:
                node.expand()
        return self._notes.get(path)

    def _move_to_path(self, path: str) -> None:
        node = self._reveal_path(path)
        if node is not None:
            self._move_to(node)

    def _move_to(self, node: TreeNode[str]) -> None:
        """Put the cursor on `node` now and scroll it into view once drawn."""
        self._tree_lines  # noqa: B018 - lay the lines out now, so node._line is current
        self.cursor_line = node._line
        self.call_after_refresh(self.scroll_to_node, node, animate=False)

    # -- live updates -------------------------------------------------------------------------------------
    def update_rows(self, changed: dict[str, NoteRow | None], *, linted: bool | None = None) -> None:
        """Apply changed rows in place: labels change, deleted notes go; a new note rebuilds the tree (to
        land in its sorted place). Notes that stop matching the filter stay until the filter changes (the
        note being fixed must not vanish under the cursor)."""
        if linted is not None:
            self.linted = linted
        added = [p for p, r in changed.items() if r is not None and p not in self.rows]
        gone = [p for p, r in changed.items() if r is None and p in self.rows]
        shown = set(self._shown)
        flt = self.filter
        newly = [p for p, r in changed.items() if r is not None and p not in shown and flt.active and flt.matches(r)]
        for path, row in changed.items():
            if row is None:
                self.rows.pop(path, None)
            else:
                self.rows[path] = row
        if added or gone or newly:  # rare: rebuild; what was shown stays, the cursor too
            self.rebuild(sticky=shown)
            return
        touched_folders: set[str] = set()
        pending = not self.linted
        for path, row in sorted(changed.items()):
            node = self._notes.get(path)
            if node is not None and row is not None:
                node.set_label(note_label(row, pending))
            folder = path.rpartition("/")[0]
            while folder:
                touched_folders.add(folder)
                folder = folder.rpartition("/")[0]
        for folder in sorted(touched_folders):
            self._refresh_folder(folder)

    def relabel_all(self, *, linted: bool) -> None:
        self.linted = linted
        pending = not linted
        for path, node in self._notes.items():
            node.set_label(note_label(self.rows[path], pending))
        for folder in self._folders:
            self._refresh_folder(folder)

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
        if path not in set(self._shown):
            self.filter = NoteFilter.parse("")
            self.rebuild(keep=path)
            return True
        self._move_to_path(path)
        return True

    def next_with_problems(self, after: str | None) -> str | None:
        """The next shown note with a problem after `after` (wrapping), for the "next problem" key."""
        order = [p for p in self._shown if self.rows[p].problems]
        if not order:
            return None
        if after is None or after not in self.rows:
            return order[0]
        key = tree_order(after)
        for p in order:
            if tree_order(p) > key:
                return p
        return order[0]
