"""Ending a generation's task cleanly (docs/service.md, "The stream"): `cancel_and_wait`, used when a
visitor leaves, a stream ends and the server stops.
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio

#: How long a request that ends early waits for its cancelled generation to close its Ollama connection.
CANCEL_WAIT_SECONDS = 2.0


async def cancel_and_wait(task: asyncio.Task[Any], timeout: float = CANCEL_WAIT_SECONDS) -> None:
    """Cancel `task` once and give it up to `timeout` seconds to clean up (close its upstream connection).

    The task is cancelled exactly once: the caller may itself be under cancellation (Starlette cancels a
    streaming response when the client leaves, and anyio re-delivers that cancellation on every await),
    and awaiting the task directly would forward each of those cancellations into it and interrupt the
    HTTP client's own clean-up, which then leaves the connection to Ollama open and counted in the pool
    for good. `asyncio.wait` never cancels what it waits for, and the shielded scope keeps anyio's
    re-deliveries out of this wait.
    """
    if task.done():
        return
    task.cancel()
    with anyio.CancelScope(shield=True):
        await asyncio.wait({task}, timeout=timeout)
