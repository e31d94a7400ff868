"""Under load: 100 concurrent /ask with a /reload-vault in the middle, zero failures, no mixed index.

Every note carries its edition (`EDITION-1`, then `EDITION-2` after the reload, which also adds a note).
The fake model answers with the editions it found in its prompt, so each answer shows which snapshot built
its prompt: exactly one edition per answer, and the `vault_size` of that same edition.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import httpx

from tests.fake_ollama import FakeOllama
from tests.service_fixtures import *  # noqa: F403
from tests.service_fixtures import run_server, service_settings, write_note

NOTES = 8
QUESTION = "Que fait-il dans l'atelier de poterie ?"


def write_vault(root: Path, edition: int, count: int) -> None:
    for i in range(count):
        write_note(
            root,
            f"ateliers/atelier-{i}.md",
            f"title: Atelier de poterie {i}\nslug: atelier-{i}\ntype: projet\naliases: [atelier de poterie]\n"
            f'answers: ["{QUESTION}"]\nvisibility: public',
            f"# Atelier {i}\n\nL'atelier de poterie numéro {i} tourne le grès. EDITION-{edition}.\n\n"
            + "Un paragraphe de contexte sur la poterie et le tour. " * 20,
        )


def editions(body: dict[str, Any]) -> str:
    found = sorted(set(re.findall(r"EDITION-\d", "\n".join(m["content"] for m in body["messages"]))))
    return "éditions: " + ",".join(found)


def test_concurrent_asks_with_a_reload(tmp_path: Path, fake_ollama: FakeOllama) -> None:
    vault = tmp_path / "vault"
    write_vault(vault, 1, NOTES)
    # The model takes a moment, so the first requests are still in flight while the reload swaps the index.
    fake_ollama.script(reply=editions, delay=0.2)
    # A generous connect timeout: on a loaded machine 100 connections at once can wait for accept().
    with run_server(service_settings(fake_ollama, llm_timeout=30.0, llm_connect_timeout=10.0), vault) as server:

        async def scenario() -> tuple[list[httpx.Response], list[httpx.Response], httpx.Response]:
            limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
            async with server.async_client(limits=limits) as client:
                first = [asyncio.create_task(client.get("/ask", params={"q": QUESTION})) for _ in range(50)]
                for _ in range(1000):  # reload once requests are really in flight at the model
                    if len(fake_ollama.chat_requests()) >= 10:
                        break
                    await asyncio.sleep(0.005)
                in_flight = len(fake_ollama.chat_requests())
                write_vault(vault, 2, NOTES + 1)
                reload = await client.post("/reload-vault")
                assert in_flight >= 10
                second = [asyncio.create_task(client.get("/ask", params={"q": QUESTION})) for _ in range(50)]
                return list(await asyncio.gather(*first)), list(await asyncio.gather(*second)), reload

        first, second, reload = asyncio.run(asyncio.wait_for(scenario(), timeout=90))
        responses = first + second
        assert reload.status_code == 200, reload.text
        assert reload.json()["added"] == [f"atelier-{NOTES}"]
        assert len(reload.json()["modified"]) == NOTES

        failures = [(r.status_code, r.text[:200]) for r in responses if r.status_code != 200]
        assert failures == []
        seen: dict[str, int] = {}
        for r in responses:
            body = r.json()
            assert body["grounded"] is True and body["sources"]
            # One edition per answer, and the vault size of that same edition: never a mix of two indexes.
            assert body["response"] in {"éditions: EDITION-1", "éditions: EDITION-2"}, body["response"]
            expected_size = NOTES if body["response"].endswith("1") else NOTES + 1
            assert body["vault_size"] == expected_size
            seen[body["response"]] = seen.get(body["response"], 0) + 1
        assert len(seen) == 2, seen  # the reload really happened in the middle
        # Requests at the model when the reload started finish on the old index; later ones use the new.
        assert sum(r.json()["response"].endswith("1") for r in first) >= 10
        assert all(r.json()["response"].endswith("2") for r in second)
        after = server.client().get("/ask", params={"q": QUESTION}).json()
        assert after["response"] == "éditions: EDITION-2"
