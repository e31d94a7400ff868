"""The service's settings (pydantic-settings): variables, `.env`, defaults, messages, what /health shows."""

from __future__ import annotations

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
