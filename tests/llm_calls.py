"""One chat and one stream through any LLM backend (`grasbot.llm.LLMBackend`), the client closed after:
what the backend tests of each protocol (test_llm.py for Ollama, test_llm_openai.py) call."""

from __future__ import annotations

import asyncio
from typing import Any

from grasbot.llm import Generation, LLMBackend

MESSAGES = [{"role": "system", "content": "règles"}, {"role": "user", "content": "Bonjour ?"}]


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, timeout=30))


async def chat_once(client: LLMBackend) -> Generation:
    try:
        return await client.chat(MESSAGES)
    finally:
        await client.close()


async def stream_once(client: LLMBackend) -> tuple[list[str], Generation]:
    result = Generation()
    pieces: list[str] = []
    try:
        async for piece in client.stream(MESSAGES, result):
            pieces.append(piece)
    finally:
        await client.close()
    return pieces, result
