"""`grasbot serve`: run the API with uvicorn; `grasbot prompt push`: the system prompt to Langfuse Prompts.

The app is built by the factory `grasbot.service.app:create_app` in each worker process, so `--workers N` runs N
independent copies (each with its own vault snapshot, memory and Langfuse client). `--vault` is passed to
the workers through `VAULT_DIR`, which wins over a `.env` file.
"""

from __future__ import annotations

import argparse
import copy
import ipaddress
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from grasbot import __version__

#: h11's default (16 KiB) is below a 2,000-character question written in percent-encoded accented letters.
MAX_REQUEST_HEAD = 64 * 1024

#: The body of uvicorn's 400 for a request it cannot read at all (malformed, or a request line and headers
#: over MAX_REQUEST_HEAD, e.g. a URL with a 1 MB `q`): JSON with a stable code, like every other error.
BAD_HTTP_REQUEST = {
    "error": "bad_http_request",
    "message": "the HTTP request could not be read: malformed, or its URL and headers are over 64 KiB",
}


def _no_delay_protocol() -> type:
    """uvicorn's h11 protocol with TCP_NODELAY set on every connection.

    With `--workers N` uvicorn binds the socket itself without saying it is TCP, so asyncio does not set
    TCP_NODELAY on accepted connections; a response (headers and body written separately) then waits for
    the client's delayed ACK on every answer (measured by benchmarks/bench_server.py; benchmarks/README.md).
    """
    import socket

    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class NoDelayH11Protocol(H11Protocol):
        def connection_made(self, transport):  # type: ignore[no-untyped-def]
            sock = transport.get_extra_info("socket")
            if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
                try:
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                except OSError:
                    pass
            super().connection_made(transport)

        def send_400_response(self, msg: str) -> None:  # noqa: ARG002 - uvicorn's text is not sent
            # uvicorn answers a request h11 rejects with a plain-text 400 through this method; the same
            # framing, with a JSON body. (Were uvicorn to rename it, clients would get the plain text again,
            # and tests/test_api.py::test_unreadable_request_is_json_400 would say so.)
            body = json.dumps(BAD_HTTP_REQUEST).encode()
            headers = [
                (b"content-type", b"application/json"),
                # The request's headers were not read, so its Origin is unknown: any page may read this
                # constant refusal (it says nothing else), and an EventSource that can read it stops
                # instead of retrying a CORS failure for ever (docs/service.md, "The stream").
                (b"access-control-allow-origin", b"*"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ]
            self.transport.write(self.conn.send(h11.Response(status_code=400, headers=headers, reason=b"Bad Request")))
            self.transport.write(self.conn.send(h11.Data(data=body)))
            self.transport.write(self.conn.send(h11.EndOfMessage()))
            self.transport.close()

    return NoDelayH11Protocol


def __getattr__(name: str) -> type:
    # Resolved lazily (uvicorn imports it by name in each worker) so `grasbot --help` stays light.
    if name == "NoDelayH11Protocol":
        return _no_delay_protocol()
    raise AttributeError(name)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="grasbot", description="GrasBot, the vault's chatbot API.")
    parser.add_argument("--version", action="version", version=f"grasbot {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run the HTTP API (GET /ask, GET /ask/stream, GET /health, POST /reload-vault)")
    serve.add_argument("--vault", metavar="DIR", help="the vault folder (default: VAULT_DIR, then ./vault)")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: loopback only)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    serve.add_argument("--workers", type=int, default=1, help="worker processes (default 1)")
    serve.add_argument(
        "--allow-open-reload",
        action="store_true",
        help="bind a non-loopback --host even though GRASBOT_RELOAD_TOKEN is not set (anyone who reaches the "
        "server may then trigger POST /reload-vault); also GRASBOT_ALLOW_OPEN_RELOAD=true",
    )
    serve.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="level of uvicorn's and GrasBot's log lines, on stderr (default info)",
    )
    add_prompt_commands(sub)
    return parser


def add_prompt_commands(sub: Any) -> None:
    """`grasbot prompt push`: the profile's system prompt to Langfuse Prompts as a new version."""
    prompt = sub.add_parser("prompt", help="the system prompt in Langfuse Prompts (docs/service.md)")
    actions = prompt.add_subparsers(dest="action", required=True)
    push = actions.add_parser(
        "push", help="send the active profile's system prompt to Langfuse as a new version of the prompt"
    )
    push.add_argument("--vault", metavar="DIR", help="the vault folder (default: VAULT_DIR, then ./vault)")
    push.add_argument("--name", help="the prompt's name in Langfuse (default: GRASBOT_PROMPT_NAME)")
    push.add_argument("--label", help="the label the new version gets (default: GRASBOT_PROMPT_LABEL, then production)")
    push.add_argument("--profile", help="the profile to push (default: GRASBOT_PROFILE, then the vault's own, then site)")


def prompt_push(args: argparse.Namespace) -> int:
    """Push the local system prompt; prints the new version. Exit 2 on a configuration that cannot push."""
    from grasbot.answer.profile import ProfileError, load_profile
    from grasbot.service.prompts import push_local_prompt
    from grasbot.service.settings import ConfigError, Settings

    try:
        settings = Settings.from_env()
    except ConfigError as error:
        return _fail(str(error))
    vault = Path(args.vault).expanduser() if args.vault else settings.vault_dir
    name = args.name or settings.prompt_name
    label = args.label or settings.prompt_label
    if not name:
        return _fail("no prompt name: give --name NAME or set GRASBOT_PROMPT_NAME")
    if not settings.langfuse_enabled:
        return _fail("Langfuse is not configured: set LANGFUSE_PUBLIC_KEY, LANGFUSE_SECRET_KEY and LANGFUSE_BASE_URL")
    if not vault.is_dir():
        return _fail(f"vault folder not found: {vault} (use --vault DIR or VAULT_DIR)")
    try:
        profile = load_profile(vault, args.profile or settings.profile)
    except ProfileError as error:
        return _fail(str(error))
    try:
        from langfuse import Langfuse
    except ImportError:
        return _fail("the Langfuse SDK is not installed (pip install 'grasbot[serve]')")
    client = Langfuse(
        public_key=settings.langfuse_public_key,
        secret_key=settings.langfuse_secret_key,
        base_url=settings.langfuse_base_url,
        timeout=settings.langfuse_timeout,
        tracing_enabled=False,  # this command sends no trace
    )
    try:
        pushed = push_local_prompt(client, profile, name, label)
    except Exception as error:  # noqa: BLE001 - the SDK's errors: one line, no traceback
        status = getattr(error, "status_code", None)
        return _fail(f"Langfuse refused the prompt ({f'HTTP {status}' if status else type(error).__name__})")
    finally:
        client.shutdown()
    print(f"pushed {name} version {pushed.version} ({label}): profile {profile.name}@{profile.version}, {len(profile.system_prompt)} characters")
    return 0


def log_config(level: str) -> dict[str, Any]:
    """uvicorn's logging configuration, plus the `grasbot` loggers at `level` through uvicorn's own handler,
    and the Langfuse SDK's and OpenTelemetry's loggers through it too (at `level`, WARNING at least).

    GrasBot's lines then look like uvicorn's (`INFO:     GrasBot ready: ...`, on stderr), appear once (the
    `grasbot` logger does not propagate), and `--log-level` applies to both. Every worker applies it.
    """
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["grasbot"] = {"handlers": ["default"], "level": level.upper(), "propagate": False}
    # The lines of the Langfuse SDK and of its OpenTelemetry exporter (export failures...) the same way,
    # never below WARNING: their debug lines may show what is being sent.
    sdk_level = logging.getLevelName(max(logging.getLevelName(level.upper()), logging.WARNING))
    for name in ("langfuse", "opentelemetry"):
        config["loggers"][name] = {"handlers": ["default"], "level": sdk_level, "propagate": False}
    return config


def _fail(message: str) -> int:
    print(f"grasbot: error: {message}", file=sys.stderr)
    return 2


def is_loopback(host: str) -> bool:
    """True for an address only this machine reaches (127.0.0.0/8, ::1, `localhost`); any other name
    counts as reachable from elsewhere (fail closed: a name may resolve to a public address)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def open_reload_refusal(host: str, token_set: bool, allowed: bool) -> str | None:
    """Why `grasbot serve` refuses to start (None: it may): an open POST /reload-vault on an address
    other machines reach, not asked for."""
    if token_set or allowed or is_loopback(host):
        return None
    return (
        f"--host {host} is reachable from other machines, and POST /reload-vault needs no token: set "
        "GRASBOT_RELOAD_TOKEN (docs/service.md), or pass --allow-open-reload (GRASBOT_ALLOW_OPEN_RELOAD=true) "
        "if an open reload is meant"
    )


#: What `grasbot serve` imports, from the `serve` extra (pyproject.toml): checked first, for a clear message.
SERVE_MODULES = ("fastapi", "starlette", "pydantic", "uvicorn", "h11", "anyio", "ollama", "langfuse", "opentelemetry",
                 "dotenv", "fastapi_offline", "sse_starlette", "platformdirs")


def serve(args: argparse.Namespace) -> int:
    import importlib.util

    missing = [name for name in SERVE_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        return _fail(f"`grasbot serve` needs the `serve` extra, which is not installed (missing: {', '.join(missing)}): "
                     "pip install 'grasbot-vaulttools[serve]' (or, from a clone, pip install -e '.[serve]')")
    from grasbot.service import collector

    # With one worker the app starts in this process: no collection until it has started (the app's
    # lifespan resumes it; here too, on every way out). uvicorn's worker processes start as before.
    if args.workers == 1:
        collector.pause()
    try:
        return _serve(args)
    finally:
        collector.resume()


def _serve(args: argparse.Namespace) -> int:
    """`serve` once its libraries are there: checks what it is given, then runs uvicorn until stopped."""
    import uvicorn

    from grasbot.service.settings import ConfigError, Settings
    from grasbot.service.state import StateDirError, private_dir

    if args.vault:
        os.environ["VAULT_DIR"] = str(Path(args.vault).expanduser().resolve())
    try:
        settings = Settings.from_env()
    except ConfigError as error:
        return _fail(str(error))
    if not settings.vault_dir.is_dir():
        return _fail(f"vault folder not found: {settings.vault_dir} (use --vault DIR or VAULT_DIR)")
    try:  # a bad answering profile is one clear line naming its file, not a worker's traceback
        from grasbot.answer.profile import ProfileError, load_profile

        load_profile(settings.vault_dir, settings.profile)
    except ProfileError as error:
        return _fail(str(error))
    try:  # GRASBOT_SEMANTIC=e5 whose library is missing or cannot load its model: one line, before any worker starts
        from grasbot.search.semantic import SemanticUnavailable, check

        check(settings.semantic)
    except SemanticUnavailable as error:
        return _fail(str(error))
    if not 1 <= args.port <= 65535:
        return _fail(f"--port must be between 1 and 65535, got {args.port}")
    if args.workers < 1:
        return _fail(f"--workers must be at least 1, got {args.workers}")
    refusal = open_reload_refusal(
        args.host, settings.reload_token is not None, args.allow_open_reload or settings.allow_open_reload
    )
    if refusal is not None:
        return _fail(refusal)
    try:  # checked here too, so a state folder that cannot be used is one clear line, not a worker's traceback
        private_dir(settings.state_dir)
    except StateDirError as error:
        return _fail(str(error))
    uvicorn.run(
        "grasbot.service.app:create_app",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_level=args.log_level,
        log_config=log_config(args.log_level),
        h11_max_incomplete_event_size=MAX_REQUEST_HEAD,
        http="grasbot.service.cli:NoDelayH11Protocol",
        timeout_graceful_shutdown=10,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        return serve(args)
    if args.command == "prompt" and args.action == "push":
        return prompt_push(args)
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
