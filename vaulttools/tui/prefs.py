"""What the TUI remembers between runs: the chosen theme, in a small JSON file in the user's config folder
(``$XDG_CONFIG_HOME/vaulttools/tui.json``, usually ``~/.config/vaulttools/tui.json``, through platformdirs).

A file that cannot be read or does not hold what is expected is ignored (the defaults are used, and the
next change writes a good one); a write that fails is ignored too: a preference is never worth an error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grasbot.files import write_atomic

__all__ = ["prefs_file", "load_prefs", "save_pref"]


def prefs_file() -> Path:
    from platformdirs import user_config_path

    return user_config_path("vaulttools", appauthor=False) / "tui.json"


def load_prefs() -> dict[str, Any]:
    try:
        data = json.loads(prefs_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_pref(key: str, value: Any) -> None:
    """Set one preference, keeping the others; written atomically (a temporary file, then a rename)."""
    file = prefs_file()
    data = load_prefs()
    if data.get(key) == value:
        return
    data[key] = value
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(file, (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode("utf-8"))
    except OSError:
        pass
