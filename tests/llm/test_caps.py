"""Every call for a role carries a reply cap, whoever makes it: without one, a small local model
writes until its context is full (minutes on a laptop) and a run's budget is gone.

The wire is checked on the fake HTTP servers of tests/llm/fakeserver.py (loopback stand-ins for
the hosted APIs); the in-process llama.cpp provider is checked with the real tiny model.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autocoder.llm import LLMConfigError, Message, ProviderConfig, build_provider, role_config
from autocoder.llm.config import ROLE_MAX_TOKENS
from autocoder.llm.env import LLMSettingsError, role_env_overrides
from tests.llm.conftest import require_llama_cpp
from tests.llm.fakeserver import FakeServer, Reply

ASK = [Message("system", "Be brief."), Message("user", "Say hi")]
OK = Reply(body={"id": "1", "object": "chat.completion", "created": 1, "model": "m",
                 "choices": [{"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": "hi"}}],
                 "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6}})


@pytest.fixture
def openai_env(settings, fake_server: FakeServer):
    settings.LLM_PROVIDER = "openai"
    settings.LLM_BASE_URL = fake_server.url + "/v1"
    settings.LLM_MODEL = "served-model"
    settings.LLM_API_KEY = "sk-env"
    settings.LLM_MAX_TOKENS = 0
    settings.LLM_ROLE_OVERRIDES = {}
    fake_server.queue(OK)
    return settings


def sent_cap(fake_server: FakeServer, role: str, **kwargs: object) -> int:
    build_provider(role_config(role)).complete(ASK, role=role, **kwargs)  # type: ignore[arg-type]
    return int(fake_server.requests[-1].body["max_tokens"])


def test_each_role_sends_its_own_cap_sized_for_a_whole_reply(openai_env,
                                                              fake_server: FakeServer) -> None:
    assert {role: sent_cap(fake_server, role) for role in ROLE_MAX_TOKENS} == {
        "analyst": 1000, "architect": 1200, "implementer": 6000, "tester": 3000,
        "reviewer": 1000, "reflector": 700}


def test_the_length_each_prompt_asks_for_fits_well_inside_its_roles_cap() -> None:
    from autocoder.engine.prompting import build_messages
    from autocoder.llm.config import REPLY_WORDS
    from tests.engine.test_prompting import context

    for role, words in REPLY_WORDS.items():
        # 1.3 tokens a word, and half again for a reply that runs over or comes as JSON.
        assert words * 1.3 * 1.5 <= ROLE_MAX_TOKENS[role], role
        text = "\n".join(m.content for m in build_messages(role, context()))
        assert f"at most {words} words" in text, role


def test_a_cap_is_fitted_to_the_context_window_beside_the_prompt() -> None:
    from autocoder.llm.config import fitted_cap, prompt_room_chars

    assert fitted_cap(6000, context=0, prompt_chars=90_000) == 6000  # window unknown
    assert fitted_cap(6000, context=4096, prompt_chars=6000) == 4096 - 1500 - 16
    assert fitted_cap(1200, context=32_000, prompt_chars=6000) == 1200
    # A prompt that fills the window keeps a quarter of it for the reply: the prompt must shrink.
    assert fitted_cap(6000, context=4096, prompt_chars=30_000) == 1024
    assert fitted_cap(700, context=4096, prompt_chars=30_000) == 700
    # A prompt leaves the reply its cap, or half the window where the cap is larger.
    assert prompt_room_chars(6000, context=4096) == (4096 - 2048 - 16) * 3
    assert prompt_room_chars(700, context=4096) == (4096 - 700 - 16) * 3
    assert prompt_room_chars(700, context=0) is None


def test_a_caller_that_asks_for_a_cap_gets_its_own(openai_env, fake_server: FakeServer) -> None:
    assert sent_cap(fake_server, "analyst", max_tokens=800) == 800


def test_the_environment_replaces_the_caps(openai_env, fake_server: FakeServer) -> None:
    openai_env.LLM_MAX_TOKENS = 3000
    openai_env.LLM_ROLE_OVERRIDES = role_env_overrides({"LLM_MAX_TOKENS_REFLECTOR": "250"})
    assert sent_cap(fake_server, "implementer") == 3000
    assert sent_cap(fake_server, "architect") == 3000
    assert sent_cap(fake_server, "reflector") == 250  # the role's own variable wins


def test_role_variables_for_caps_and_idle_timeouts_are_read() -> None:
    env = {"LLM_MAX_TOKENS_IMPLEMENTER": "4000", "LLM_IDLE_TIMEOUT_S_TESTER": "300",
           "LLM_TIMEOUT_S_REVIEWER": "45"}  # the older name still works
    assert role_env_overrides(env) == {"implementer": {"max_tokens": 4000},
                                       "tester": {"timeout_s": 300.0},
                                       "reviewer": {"timeout_s": 45.0}}
    with pytest.raises(LLMSettingsError, match="LLM_MAX_TOKENS_TESTER='lots' is not a number"):
        role_env_overrides({"LLM_MAX_TOKENS_TESTER": "lots"})
    with pytest.raises(LLMSettingsError, match="unknown role 'coder'"):
        role_env_overrides({"LLM_MAX_TOKENS_CODER": "10"})


def test_a_cap_must_be_positive() -> None:
    with pytest.raises(LLMConfigError, match="max_tokens must be positive"):
        ProviderConfig(provider="openai", max_tokens=0)


def test_anthropic_sends_the_roles_cap_instead_of_its_own_default(
        fake_server: FakeServer) -> None:
    fake_server.queue(Reply(body={
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test-1",
        "stop_reason": "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 5, "output_tokens": 1},
        "content": [{"type": "text", "text": "hi"}]}))
    config = ProviderConfig(provider="anthropic", model="claude-test-1", base_url=fake_server.url,
                            api_key="sk-ant-test", max_tokens=ROLE_MAX_TOKENS["reviewer"])
    build_provider(config).complete(ASK, role="reviewer")
    assert fake_server.requests[0].body["max_tokens"] == ROLE_MAX_TOKENS["reviewer"] == 1000


def test_the_local_model_stops_at_the_roles_cap(gguf_model: Path) -> None:
    require_llama_cpp()
    from autocoder.llm.llamacpp import LlamaCppProvider

    config = ProviderConfig(provider="llamacpp", model=str(gguf_model), max_tokens=6)
    story = [Message("user", "Write a long story about a lighthouse keeper.")]
    # n_ctx as in test_llamacpp.py, so the loaded model is shared (memory grows with context).
    completion = LlamaCppProvider(config, n_ctx=2048).complete(story, role="implementer",
                                                               temperature=0)
    assert completion.completion_tokens <= 6 and completion.finish_reason == "length"
