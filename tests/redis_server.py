"""A real redis-server on 127.0.0.1 for the tests that share state between replicas.

Debian's `redis-server` (or `valkey-server`) is started on a free port in a temporary folder, with no
persistence; `.ci/run` installs it when missing. Tests that need it skip, with the reason, when no binary can be
found."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def redis_binary() -> str | None:
    return shutil.which("redis-server") or shutil.which("valkey-server")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    def __init__(self, folder: Path, port: int | None = None) -> None:
        binary = redis_binary()
        if binary is None:
            pytest.skip("no redis-server or valkey-server binary on this machine (apt-get install redis-server)")
        self.binary = binary
        self.folder = folder
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(self.folder), "--protected-mode", "yes"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"redis-server did not start on port {self.port}")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=10)
            self.proc = None


@contextmanager
def running_redis(folder: Path) -> Iterator[RedisServer]:
    server = RedisServer(folder).start()
    try:
        yield server
    finally:
        server.stop()
