"""Every `vaulttools …` and `grasbot …` command of the README's code blocks runs as written, on a copy of the
repository's layout (the sample vault, its TAXONOMIE.md beside it, the question sets, and the real GrasBot vault
at `../shared/corpora/`), so that the README stays true. Long-running commands (`watch`, `serve`) are started,
checked and stopped with Ctrl-C; the few that cannot run here are skipped with the reason."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import CORPORA, REPO
from tests.fake_ollama import FakeOllama, faithful_reply

BIN = Path(sys.executable).parent


def _commands() -> list[tuple[str, str]]:
    """(section title, command line) of every README shell line that runs `vaulttools` or `grasbot`, with or
    without variables set before it (`GRASBOT_PROFILE=textbook grasbot serve ...`)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    out = []
    section = ""
    in_block = False
    for line in text.splitlines():
        if line.startswith("#") and not in_block:
            section = line.lstrip("# ").strip()
        if line.startswith("```"):
            in_block = line.strip() == "```sh" if not in_block else False
            continue
        if in_block and re.match(r"([A-Z_]+=\S+ )*(\.venv/bin/)?(vaulttools|grasbot) ", line):
            out.append((section, line))
    return out


COMMANDS = _commands()

#: Why a command is not run here.
SKIPS = {
    "vaulttools tui": "a full-screen interactive program: tests/test_tui.py drives it with Textual's Pilot",
}
REAL_SERVICES = "Running against a real Ollama and Langfuse"
#: Commands that talk to a Langfuse project (its LANGFUSE_* keys): run against the local collector by their tests.
NEEDS_LANGFUSE = {
    "--export-dataset": "needs a Langfuse project: tests/test_eval_langfuse.py runs it against tests/langfuse_collector.py",
    "--langfuse-dataset": "needs a Langfuse project: tests/test_eval_langfuse.py (and test_eval_answers.py with --answers) "
                          "run it against tests/langfuse_collector.py",
    "grasbot prompt push": "needs a Langfuse project: tests/test_prompts_langfuse.py runs it against the collector",
}


#: The LLM the README's `--answers` line names (a local Ollama): here the tests' fake Ollama, a faithful model.
README_OLLAMA = "http://127.0.0.1:11434"
#: Variables of this machine's environment that must not reach a command answering through the fake LLM.
SERVICE_PREFIXES = ("LANGFUSE_", "GRASBOT_", "LLM_", "OLLAMA_")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The repository's layout in a temporary folder: `vault/` (+ TAXONOMIE.md beside it), the question sets,
    and the real GrasBot vault as `../shared/corpora/grasbot-vault` when it is on this machine."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "vault", root / "vault")
    shutil.copy2(REPO / "TAXONOMIE.md", root / "TAXONOMIE.md")
    shutil.copytree(REPO / "tests" / "eval", root / "tests" / "eval")
    (root / "benchmarks").mkdir()
    for pattern in ("questions-*.yaml", "verify-*.yaml"):
        for sets in (REPO / "benchmarks").glob(pattern):
            shutil.copy2(sets, root / "benchmarks" / sets.name)
    if (CORPORA / "grasbot-vault").is_dir():
        shutil.copytree(CORPORA / "grasbot-vault", tmp_path / "shared" / "corpora" / "grasbot-vault")
    if (CORPORA / "pdf").is_dir():
        shutil.copytree(CORPORA / "pdf", tmp_path / "shared" / "corpora" / "pdf")
    # the README's `cp -r vault /tmp/vault-copy && cp TAXONOMIE.md /tmp/`, here instead of /tmp
    shutil.copytree(REPO / "vault", tmp_path / "scratch" / "vault-copy")
    shutil.copy2(REPO / "TAXONOMIE.md", tmp_path / "scratch" / "TAXONOMIE.md")
    token = tmp_path / "home" / ".config" / "grasbot" / "reload-token"  # the README's `--token-file ~/...`
    token.parent.mkdir(parents=True)
    token.write_text("readme-token\n", encoding="utf-8")
    token.chmod(0o600)
    return root


def _env(home: Path, service: bool = True) -> dict[str, str]:
    """The commands' environment; without `service`, none of this machine's LLM, Langfuse or GrasBot variables."""
    inherited = {k: v for k, v in os.environ.items() if service or not k.startswith(SERVICE_PREFIXES)}
    return {**inherited, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "GRASBOT_RELOAD_TOKEN": "readme-token",
            "COLUMNS": "100", "HOME": str(home)}


def _adapt(line: str, port: int, scratch: Path) -> str:
    """The line as it runs here: `.venv/bin/` is this interpreter's folder, and the API's port one that is free
    (another program may use 8000 on this machine)."""
    line = re.sub(r"^((?:[A-Z_]+=\S+ )*)\.venv/bin/", lambda m: f"{m.group(1)}{BIN}/", line)  # after any VAR=value
    return line.replace("127.0.0.1:8000", f"127.0.0.1:{port}").replace("/tmp/vault-copy", str(scratch / "vault-copy"))


def _run(line: str, cwd: Path, timeout: float = 120, service: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=_env(cwd.parent / "home", service), capture_output=True,
                          text=True, timeout=timeout)


def _run_until(line: str, cwd: Path, ready, timeout: float = 60) -> tuple[int, str]:
    """Start a long-running command, wait until `ready(output so far)` is true, stop it with Ctrl-C (SIGINT)."""
    proc = subprocess.Popen(["bash", "-c", "exec env " + line], cwd=cwd, env=_env(cwd.parent / "home"), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(iter(proc.stdout.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and proc.poll() is None and not ready("".join(out)):
            time.sleep(0.1)
        assert proc.poll() is None, "".join(out)
        assert ready("".join(out)), "not ready in time: " + "".join(out)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(timeout=10)
    rest = ""
    return proc.returncode, "".join(out) + (rest or "")


@pytest.mark.parametrize("section, line", COMMANDS, ids=[line.split("#")[0].strip() for _, line in COMMANDS])
def test_readme_command(section: str, line: str, repo: Path) -> None:
    if section == REAL_SERVICES:
        pytest.skip("needs a real Ollama and Langfuse (the README's section for them); the same commands run "
                    "above against the sample vault")
    for prefix, reason in SKIPS.items():
        if line.startswith(prefix):
            pytest.skip(reason)
    for part, reason in NEEDS_LANGFUSE.items():
        if part in line:
            pytest.skip(reason)
    corpus = re.search(r"\.\./shared/corpora/([^/\s]+)", line)
    if corpus and not (repo.parent / "shared" / "corpora" / corpus.group(1)).is_dir():
        pytest.skip(f"the real vaults are not on this machine ({CORPORA})")
    port = _closed_port()
    command = _adapt(line, port, repo.parent / "scratch")
    if "compare_quality.py" in line:
        pytest.skip("a benchmark run of several minutes over every question set (`make bench` runs it)")
    if " watch " in f" {line} ":
        code, out = _run_until(command, repo, lambda text: "watching" in text or '"event"' in text)
        assert code == 0 and "Traceback" not in out, out
        return
    if " serve " in f" {line} ":
        command = re.sub(r"\s+#.*$", "", command) + f" --port {port}"  # before the line's comment

        def up(_text: str) -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/health", timeout=2, trust_env=False).status_code == 200
            except httpx.HTTPError:
                return False

        code, out = _run_until(command, repo, up)
        assert code == 0 and "Traceback" not in out, out
        return
    baseline = re.search(r"--baseline (\S+)", line)
    if baseline and not (repo / baseline.group(1)).exists():  # the README writes it one line above
        vault = line.split()[2]
        assert _run(f"vaulttools lint {vault} --write-baseline {baseline.group(1)}", repo).returncode == 0
    if "--answers" in line:
        assert README_OLLAMA in line, "an --answers line names the LLM it answers with"
        with FakeOllama() as fake:
            fake.script(reply=faithful_reply)
            done = _run(command.replace(README_OLLAMA, fake.url), repo, service=False)
            asked = len(fake.chat_requests())
        assert done.returncode == 0 and "faithfulness" in done.stdout and "Traceback" not in done.stderr, done.stdout + done.stderr
        assert asked == int(re.search(r": (\d+) questions", done.stdout).group(1))  # every answer came from that LLM
        return
    done = _run(command, repo)
    output = done.stdout + done.stderr
    assert "Traceback" not in output and "internal error" not in output, output
    expected = {0}
    if line.startswith("vaulttools reload"):
        expected = {2}  # no API is listening on that port here: said in one line
        assert "API unreachable" in output
    if re.match(r"(echo .*\| )?vaulttools verify", line):
        # 0 verified or abstained, 1 a sentence flagged (the README's examples show both): a verdict either way
        expected = {0, 1}
        assert "status" in output
    assert done.returncode in expected, output


def test_the_readme_has_commands_to_check() -> None:
    names = {line.split()[1] for _, line in COMMANDS if line.startswith("vaulttools")}
    assert {"lint", "ask", "eval", "new", "watch", "tui", "reload"} <= names
    assert any(line.startswith("grasbot serve") for _, line in COMMANDS)
