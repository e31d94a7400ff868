"""The service's settings (pydantic-settings): variables, `.env`, defaults, messages, what /health shows."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from grasbot.service.settings import ENV_VARIABLES, ConfigError, Settings

REPO = Path(__file__).resolve().parents[1]


def env(**variables: str) -> Settings:
    return Settings.from_env(environ=variables, env_file=None)


def test_docs_table_lists_every_variable_and_no_other() -> None:
    text = (REPO / "docs" / "service.md").read_text(encoding="utf-8")
    section = text[text.index("## 3. Configuration") : text.index("## 4. Langfuse")]
    documented = {
        name for row in section.splitlines() if row.startswith("| `") for name in re.findall(r"`([A-Z][A-Z_]+)`", row.split(" | ")[0])
    }
    assert documented == set(ENV_VARIABLES)
    assert all(ENV_VARIABLES.values())  # every setting says what it is


def _table_rows(section: str) -> list[tuple[list[str], str]]:
    """The rows of the markdown tables in `section`: the variables of the first column, and the second."""
    rows = []
    for row in section.splitlines():
        if row.startswith("| `"):
            cells = row.split(" | ")
            rows.append((re.findall(r"`([A-Z][A-Z_]+)`", cells[0]), cells[1]))
    return rows


def _defaults(rows: list[tuple[list[str], str]]) -> list[tuple[str, str]]:
    """Each variable of `rows` with its default column; a row of N variables whose column is N literals
    (`30`, `10`) gives each its own."""
    pairs = []
    for names, column in rows:
        parts = column.split(", ")
        if len(names) > 1 and len(parts) == len(names) and all(re.fullmatch(r"`[^`]*`", p) for p in parts):
            pairs += list(zip(names, parts))
        else:
            pairs += [(name, column) for name in names]
    return pairs


def documented_default_matches(name: str, column: str) -> bool:
    """Whether a table's default column says what Settings() holds for the variable `name`: `unset` for
    nothing, else its first `literal` (a column in words, such as the engine's rule, is not compared)."""
    field = next(f for f, info in Settings.model_fields.items() if name in (info.json_schema_extra or {}).get("env", ()))
    value = getattr(Settings.from_env(environ={}, env_file=None), field)
    if column.startswith("unset"):
        return value in (None, (), "")
    literal = re.match(r"`([^`]*)`", column)
    if literal is None:
        return True
    text = literal.group(1)
    if value is None and name == "GRASBOT_STATE_DIR":  # computed at the start (grasbot/service/state.py)
        from grasbot.service.state import default_state_dir

        return "XDG_STATE_HOME" in os.environ or Path(text).expanduser() == default_state_dir()
    if isinstance(value, bool):
        return text == str(value).lower()
    if isinstance(value, (int, float)):
        return float(text) == value
    if isinstance(value, Path):
        return Path(text) == value
    return text == value


def test_docs_table_has_one_row_per_variable_with_its_default() -> None:
    # Each variable is described once (two rows for one variable end up saying different things), and
    # the default the table gives is the one the settings hold.
    text = (REPO / "docs" / "service.md").read_text(encoding="utf-8")
    rows = _table_rows(text[text.index("## 3. Configuration") : text.index("## 4. Langfuse")])
    names = [name for row_names, _ in rows for name in row_names]
    assert sorted(n for n in set(names) if names.count(n) > 1) == []
    wrong = [name for name, column in _defaults(rows) if not documented_default_matches(name, column)]
    assert wrong == []


def test_the_backend_and_its_url() -> None:
    assert (env().llm_backend, env().llm_url) == ("ollama", "http://localhost:11434")
    assert env(LLM_BACKEND="openai").llm_url == "http://localhost:8080/v1"
    assert env(LLM_BACKEND=" OpenAI ").llm_backend == "openai"
    # OLLAMA_URL, the older name, is still read for Ollama; LLM_BASE_URL wins; it never points the
    # OpenAI-compatible backend at an Ollama left in a .env file
    assert env(OLLAMA_URL="http://gpu:11434/").llm_url == "http://gpu:11434"
    assert env(OLLAMA_URL="http://gpu:11434", LLM_BASE_URL="http://other:11434").llm_url == "http://other:11434"
    assert env(LLM_BACKEND="openai", OLLAMA_URL="http://gpu:11434").llm_url == "http://localhost:8080/v1"
    config = env(LLM_BACKEND="openai", LLM_BASE_URL="https://api.example/v1", LLM_API_KEY=" sk-1 ", LLM_MODEL="m").llm_config()
    assert (config.backend, config.base_url, config.api_key, config.model) == ("openai", "https://api.example/v1", "sk-1", "m")
    assert "sk-1" not in repr(config)


def test_bad_values_name_the_variable_and_what_it_takes() -> None:
    cases = {
        "LLM_BACKEND": ("vllm", "LLM_BACKEND: expected one of ollama, openai, got 'vllm'"),
        "LLM_BASE_URL": ("localhost:8080", "LLM_BASE_URL: expected an http(s) URL"),
        "SEARCH_TOP_K": ("0", "SEARCH_TOP_K: must be at least 1, got '0'"),
        "LLM_TEMPERATURE": ("3", "LLM_TEMPERATURE: must be at most 2.0, got '3'"),
        "MEMORY_MAX_TURNS": ("4.5", "MEMORY_MAX_TURNS: expected an integer, got '4.5'"),
        "LANGFUSE_HOST": ("lf.example", "LANGFUSE_BASE_URL (or LANGFUSE_HOST): expected an http(s) URL"),
    }
    for name, (value, message) in cases.items():
        with pytest.raises(ConfigError) as info:
            env(**{name: value})
        assert str(info.value).startswith(message), str(info.value)
    with pytest.raises(ConfigError) as info:  # every bad variable at once, one per line
        env(SEARCH_TOP_K="x", LLM_TIMEOUT="y")
    assert str(info.value) == "LLM_TIMEOUT: expected a number, got 'y'; SEARCH_TOP_K: expected an integer, got 'x'"


def test_blank_is_unset_and_names_are_exact() -> None:
    s = env(SEARCH_TOP_K="  ", LLM_MODEL="", LLM_API_KEY=" ", CORS_ORIGINS=" , ", search_top_k="9")
    assert (s.search_top_k, s.llm_model, s.llm_api_key, s.cors_origins) == (5, "qwen3:8b", None, ())


def test_dotenv_keeps_other_programs_variables_out(tmp_path: Path) -> None:
    dotenv = tmp_path / ".env"
    dotenv.write_text("NODE_ENV=production\nLLM_BACKEND=openai\nLLM_API_KEY=sk-from-file\nSEARCH_TOP_K=\n", encoding="utf-8")
    s = Settings.from_env(environ={"LLM_MODEL": "m"}, env_file=dotenv)
    assert (s.llm_backend, s.llm_api_key, s.llm_model, s.search_top_k) == ("openai", "sk-from-file", "m", 5)
    assert Settings.from_env(environ={}, env_file=tmp_path / "absent.env") == Settings()


def test_public_view_shows_every_setting_but_the_secrets() -> None:
    s = env(
        LLM_API_KEY="sk-VERY-SECRET-1",
        GRASBOT_RELOAD_TOKEN="tok-VERY-SECRET-2",
        LANGFUSE_PUBLIC_KEY="pk-lf-VERY-SECRET-3",
        LANGFUSE_SECRET_KEY="sk-lf-VERY-SECRET-4",
        LLM_BASE_URL="http://user:VERY-SECRET-5@gpu:11434",
        LANGFUSE_BASE_URL="https://lf.example",
    )
    view = s.public_view()
    assert "VERY-SECRET" not in f"{view} {s!r} {s}"
    assert view["llm_api_key_set"] is True and view["reload_token_set"] is True and view["langfuse_enabled"] is True
    assert view["llm_base_url"] == view["llm_url"] == "http://***@gpu:11434"
    secrets = {"llm_api_key", "reload_token", "langfuse_public_key", "langfuse_secret_key", "redis_url", "private_folders", "private_tags", "session_key"}
    assert set(view) >= set(Settings.model_fields) - secrets and not secrets & set(view)


def test_with_overrides_checks_like_the_environment() -> None:
    s = env()
    assert s.with_overrides(llm_backend="openai", search_top_k=3).search_top_k == 3
    with pytest.raises(ConfigError, match="SEARCH_TOP_K: must be at least 1"):
        s.with_overrides(search_top_k=0)
    with pytest.raises(TypeError, match="ollama_ur"):
        s.with_overrides(ollama_ur="http://x")  # a typo is not silently ignored
    with pytest.raises(Exception):  # noqa: B017 - immutable
        s.search_top_k = 2  # type: ignore[misc]
