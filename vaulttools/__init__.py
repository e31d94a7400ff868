"""vaulttools: the author's toolkit around the GrasBot engine (lint, watch, TUI, authoring)."""

__version__ = "0.1.0"
