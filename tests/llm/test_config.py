"""Which model a role uses: environment defaults <- per-role environment <- team override."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from autocoder.llm import (
    LLMConfigError,
    ProviderConfig,
    ScriptedProvider,
    build_provider,
    provider_for_role,
    role_config,
)
from autocoder.llm.anthropic_provider import AnthropicProvider
from autocoder.llm.env import LLMSettingsError, role_env_overrides
from autocoder.llm.openai_compat import OpenAICompatibleProvider
from autocoder.llm.services import team_model_override_delete, team_model_override_set
from tests.factories import TeamFactory


@pytest.fixture
def llm_env(settings):
    settings.LLM_PROVIDER = "openai"
    settings.LLM_BASE_URL = "http://ollama:11434/v1"
    settings.LLM_API_KEY = "global-key"
    settings.LLM_MODEL = "qwen2.5-coder:7b"
    settings.LLM_TIMEOUT_S = 90.0
    settings.LLM_MAX_RETRIES = 3
    settings.LLM_ROLE_OVERRIDES = {}
    return settings


def test_the_environment_sets_every_role(llm_env) -> None:
    for role, cap in (("analyst", 1000), ("implementer", 6000), ("reflector", 700)):
        assert role_config(role) == ProviderConfig(
            provider="openai", model="qwen2.5-coder:7b", base_url="http://ollama:11434/v1",
            api_key="global-key", timeout_s=90.0, max_retries=3, max_tokens=cap)


def test_per_role_variables_are_read_generically() -> None:
    env = {"LLM_MODEL_IMPLEMENTER": "qwen2.5-coder:32b", "LLM_PROVIDER_REFLECTOR": "Anthropic",
           "LLM_API_KEY_REFLECTOR": "ant-key", "LLM_BASE_URL_TESTER": "http://vllm:8000/v1",
           "LLM_TIMEOUT_S_IMPLEMENTER": "600", "LLM_MAX_RETRIES_TESTER": "0",
           "LLM_MODEL": "global", "LLM_MODEL_ANALYST": "  ", "PATH": "/usr/bin"}
    assert role_env_overrides(env) == {
        "implementer": {"model": "qwen2.5-coder:32b", "timeout_s": 600.0},
        "reflector": {"provider": "anthropic", "api_key": "ant-key"},
        "tester": {"base_url": "http://vllm:8000/v1", "max_retries": 0},
    }


@pytest.mark.parametrize(("env", "expected"), [
    ({"LLM_MODEL_IMPLEMENTOR": "x"}, "LLM_MODEL_IMPLEMENTOR: unknown role 'implementor'"),
    ({"LLM_TIMEOUT_S_TESTER": "soon"}, "LLM_TIMEOUT_S_TESTER='soon' is not a number"),
])
def test_a_misspelt_or_malformed_variable_fails_at_start_up(env: dict, expected: str) -> None:
    with pytest.raises(LLMSettingsError, match=expected):
        role_env_overrides(env)


def test_a_role_variable_wins_over_the_global_one(llm_env) -> None:
    llm_env.LLM_ROLE_OVERRIDES = {"implementer": {"model": "qwen2.5-coder:32b",
                                                  "timeout_s": 600.0}}
    implementer = role_config("implementer")
    assert (implementer.model, implementer.timeout_s) == ("qwen2.5-coder:32b", 600.0)
    assert implementer.api_key == "global-key"  # same endpoint, same key
    assert role_config("tester").model == "qwen2.5-coder:7b"


def test_moving_a_role_to_another_provider_does_not_send_it_the_other_key(llm_env) -> None:
    llm_env.LLM_ROLE_OVERRIDES = {"reflector": {"provider": "anthropic", "model": "claude"}}
    reflector = role_config("reflector")
    assert (reflector.provider, reflector.api_key) == ("anthropic", "")
    with pytest.raises(LLMConfigError, match="needs an API key"):
        build_provider(reflector)


@pytest.mark.django_db
def test_a_team_override_wins_and_blank_fields_inherit(llm_env) -> None:
    acme, other = TeamFactory(), TeamFactory()
    team_model_override_set(team=acme, role="implementer", model="deepseek-coder-v2")
    config = role_config("implementer", team_id=acme.id)
    assert (config.provider, config.model, config.base_url, config.api_key) == (
        "openai", "deepseek-coder-v2", "http://ollama:11434/v1", "global-key")
    assert role_config("implementer", team_id=other.id).model == "qwen2.5-coder:7b"
    assert role_config("tester", team_id=acme.id).model == "qwen2.5-coder:7b"


@pytest.mark.django_db
def test_a_team_with_its_own_endpoint_uses_its_own_key(llm_env) -> None:
    team = TeamFactory()
    team_model_override_set(team=team, role="reviewer", provider="anthropic",
                            model="claude-team", api_key="team-ant-key")
    team_model_override_set(team=team, role="architect", base_url="https://llm.acme.example/v1")
    reviewer = role_config("reviewer", team_id=team.id)
    assert (reviewer.provider, reviewer.model, reviewer.api_key) == (
        "anthropic", "claude-team", "team-ant-key")
    assert isinstance(provider_for_role("reviewer", team_id=team.id), AnthropicProvider)
    architect = role_config("architect", team_id=team.id)
    assert (architect.base_url, architect.api_key) == ("https://llm.acme.example/v1", "")


@pytest.mark.django_db
def test_updating_an_override_keeps_the_stored_key_unless_replaced(llm_env) -> None:
    team = TeamFactory()
    team_model_override_set(team=team, role="tester", provider="anthropic", model="c",
                            api_key="first")
    team_model_override_set(team=team, role="tester", provider="anthropic", model="c2")
    assert role_config("tester", team_id=team.id).api_key == "first"
    team_model_override_set(team=team, role="tester", provider="anthropic", model="c2",
                            api_key="")
    assert role_config("tester", team_id=team.id).api_key == ""
    assert team_model_override_delete(team=team, role="tester")
    assert role_config("tester", team_id=team.id).provider == "openai"


@pytest.mark.django_db
@pytest.mark.parametrize(("fields", "bad_field"), [
    ({"base_url": "ollama:11434"}, "base_url"),
    ({"provider": "gpt"}, "provider"),
    ({"role": "coder"}, "role"),
])
def test_invalid_overrides_are_refused_and_nothing_is_saved(llm_env, fields: dict,
                                                            bad_field: str) -> None:
    team = TeamFactory()
    with pytest.raises(ValidationError) as caught:
        team_model_override_set(team=team, **{"role": "tester", **fields})
    assert bad_field in caught.value.message_dict
    assert not team.model_overrides.exists()


def test_provider_for_role_builds_the_configured_kind(llm_env) -> None:
    assert isinstance(provider_for_role("implementer"), OpenAICompatibleProvider)
    scripted = provider_for_role("implementer", script={"implementer": ["code"]})
    assert isinstance(scripted, ScriptedProvider)
    assert isinstance(provider_for_role("implementer", provider="scripted",
                                        script={}), ScriptedProvider)


def test_a_runs_provider_choice_replaces_the_configured_one(llm_env) -> None:
    llm_env.LLM_SCRIPT = ""
    with pytest.raises(LLMConfigError, match="needs a script"):
        provider_for_role("implementer", provider="scripted")
    with pytest.raises(LLMConfigError, match="needs an API key"):
        provider_for_role("implementer", provider="anthropic")  # the openai key stays behind


@pytest.mark.parametrize("alias", ["ollama", "vLLM", "openai-compatible", "lmstudio"])
def test_common_names_for_the_openai_protocol_are_accepted(llm_env, alias: str) -> None:
    llm_env.LLM_PROVIDER = alias
    assert isinstance(provider_for_role("analyst"), OpenAICompatibleProvider)


def test_unknown_provider_or_role_is_a_clear_error(llm_env) -> None:
    llm_env.LLM_PROVIDER = "gpt-5-direct"
    with pytest.raises(LLMConfigError, match="unknown LLM provider 'gpt-5-direct'; choose one"):
        provider_for_role("analyst")
    with pytest.raises(LLMConfigError, match="unknown role 'coder'"):
        role_config("coder")


@pytest.mark.parametrize(("field", "value"), [("timeout_s", 0), ("max_retries", -1)])
def test_nonsense_limits_are_refused(field: str, value: float) -> None:
    with pytest.raises(LLMConfigError, match=field):
        ProviderConfig(provider="openai", **{field: value})
