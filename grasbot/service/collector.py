"""Python's cyclic garbage collector, paused while `grasbot serve` starts (docs/architecture.md, "Fast starts").

A start allocates about a million objects that live as long as the server: the modules (FastAPI, pydantic
and their models), the routes, the vault and its index. With the collector on, each collection rescans the
objects piled up so far, again and again as they grow: ~0.1 s of CPU of a warm start (benchmarks/README.md,
"Snapshot and replicas"). `grasbot serve` pauses it before the app is imported, and the app's lifespan
resumes it once the service has started (whether the start succeeded or not), so a running server
collects as any Python program does. An app built another way (`uvicorn --factory`, tests) never pauses it.
"""

from __future__ import annotations

import gc

_paused = False  # paused by `pause`, not yet resumed


def pause() -> None:
    """Turn the collector off until `resume` (nothing when it is already off: who turned it off keeps it)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Turn the collector back on if `pause` turned it off; otherwise nothing."""
    global _paused
    if _paused:
        _paused = False
        gc.enable()
