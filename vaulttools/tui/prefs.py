"""What the TUI remembers between runs: the chosen theme, in a small JSON file in the user's config folder
(``$XDG_CONFIG_HOME/vaulttools/tui.json``, usually ``~/.config/vaulttools/tui.json``, through platformdirs).

A file that cannot be read or does not hold what is expected is ignored (the defaults are used, and the
next change writes a good one); a write that fails is ignored too: a preference is never worth an error."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

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
        fd, tmp = tempfile.mkstemp(dir=file.parent, prefix=".tui.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, ensure_ascii=False, indent=2)
                handle.write("\n")
            os.replace(tmp, file)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError:
        pass
