"""System messages that a model's server drops (autocoder.llm.system_role, docs/llm.md "System
messages"): measured by the prompt's token count, remembered for the model, and folded into the
first user message for the role calls, so the role's instructions reach the model.

The real-wire tests use llama-cpp-python's server with the tiny Gemma 3 270M GGUF started with
`--chat_format gemma` (tests/llm/conftest.py), a format that leaves system messages out; and
the in-process provider with the same file, which picks that format itself. The fake server of
tests/llm/fakeserver.py stands in for a server that keeps them (OpenAI, vLLM, Ollama).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from autocoder.llm import Message, ProviderConfig, build_provider, structured, system_role
from autocoder.llm.models import ModelReplyForm
from autocoder.llm.readiness import system_role_probe
from autocoder.llm.types import Completion
from tests.llm.conftest import SERVER_API_KEY, chat_reply, require_llama_cpp
from tests.llm.fakeserver import FakeServer

INSTRUCTIONS = ("You write small Python plugins. The package is greeter; greeter/plugin.py "
                "defines class Plugin with on_command(name, payload). Reply with file blocks.")
ASK = [Message("system", INSTRUCTIONS), Message("user", "Write the greeter.")]


def test_folding_opens_the_first_user_message_with_the_system_text() -> None:
    messages = [Message("system", "Rules."), Message("user", "First."),
                Message("assistant", "Reply."), Message("user", "Second.")]
    assert system_role.folded(messages) == [
        Message("user", "Rules.\n\nFirst."), Message("assistant", "Reply."),
        Message("user", "Second.")]
    assert system_role.folded([Message("system", "Only rules.")]) == [
        Message("user", "Only rules.")]
    assert system_role.folded([Message("user", "Hi.")]) == [Message("user", "Hi.")]


def _completion(prompt_tokens: int) -> Completion:
    return Completion(text="yes", prompt_tokens=prompt_tokens, completion_tokens=1,
                      latency_ms=1, model="m", provider="openai")


@pytest.mark.parametrize(("with_system", "without", "finish", "state"), [
    (31, 12, "stop", system_role.KEPT), (12, 12, "stop", system_role.DROPPED),
    (0, 0, "stop", system_role.UNSURE), (31, 0, "deadline", "")])
def test_the_measure_compares_the_prompts_token_counts(with_system: int, without: int,
                                                       finish: str, state: str) -> None:
    sent: list[list[Message]] = []

    def call(messages: list[Message]) -> Completion:
        sent.append(messages)
        tokens = with_system if messages[0].role == "system" else without
        return dataclasses.replace(_completion(tokens), finish_reason=(
            finish if messages[0].role != "system" else "stop"))

    assert system_role.measure(call) == state
    assert [m.role for m in sent[0]] == ["system", "user"] and [m.role for m in sent[1]] == [
        "user"]


def _fake_provider(server: FakeServer):  # type: ignore[no-untyped-def]
    return build_provider(ProviderConfig(provider="openai", model="served-model",
                                         base_url=server.url + "/v1", timeout_s=5.0,
                                         max_retries=0))


@pytest.mark.django_db
def test_the_first_role_call_to_a_server_measures_once_and_folds_only_if_it_drops_them(
        fake_server: FakeServer) -> None:
    # One token with a system message, one without: 31 against 12, so it reads them.
    fake_server.queue(chat_reply("yes", prompt_tokens=31), chat_reply("yes", prompt_tokens=12),
                      chat_reply("ok"))
    provider = _fake_provider(fake_server)
    structured.complete(provider, ASK, role="implementer", schema=None)
    measured_with, measured_without, call = fake_server.requests
    assert measured_with.body["max_tokens"] == measured_without.body["max_tokens"] == 1
    assert [m["role"] for m in measured_with.body["messages"]] == ["system", "user"]
    assert [m["role"] for m in call.body["messages"]] == ["system", "user"]
    assert ModelReplyForm.objects.get().system_messages == system_role.KEPT
    structured.complete(provider, ASK, role="implementer", schema=None)
    assert len(fake_server.requests) == 4  # remembered: not measured again

    system_role.remember(provider, system_role.DROPPED)
    structured.complete(provider, ASK, role="implementer", schema=None)
    [message] = fake_server.requests[-1].body["messages"]
    assert message == {"role": "user", "content": f"{INSTRUCTIONS}\n\nWrite the greeter."}
    # Remembered beside the reply form, which it leaves alone.
    assert ModelReplyForm.objects.get().form == ""


@pytest.mark.django_db
@pytest.mark.parametrize(("mode", "roles"), [("keep", ["system", "user"]), ("fold", ["user"])])
def test_the_setting_settles_it_without_measuring(settings, fake_server: FakeServer,
                                                  mode: str, roles: list[str]) -> None:
    settings.LLM_SYSTEM_MESSAGES = mode
    fake_server.queue(chat_reply("ok"))
    structured.complete(_fake_provider(fake_server), ASK, role="implementer", schema=None)
    [call] = fake_server.requests
    assert [m["role"] for m in call.body["messages"]] == roles
    assert not ModelReplyForm.objects.exists()


@pytest.mark.django_db
def test_openais_own_service_is_not_measured() -> None:
    provider = build_provider(ProviderConfig(provider="openai", model="gpt-x", api_key="sk-x"))
    assert system_role.as_sent(provider, ASK) == ASK  # no call was made: there is no server


@pytest.mark.django_db
def test_a_server_that_counts_no_tokens_is_left_as_it_is(fake_server: FakeServer) -> None:
    fake_server.queue(chat_reply("yes", prompt_tokens=0))
    config = ProviderConfig(provider="openai", model="served-model",
                            base_url=fake_server.url + "/v1", timeout_s=5.0, max_retries=0)
    assert system_role_probe(config) == ""  # Test connection says nothing about it
    # Remembered as unsure, so role calls send system messages as they are, unmeasured.
    assert ModelReplyForm.objects.get().system_messages == system_role.UNSURE
    structured.complete(build_provider(config), ASK, role="implementer", schema=None)
    assert [m["role"] for m in fake_server.requests[-1].body["messages"]] == ["system", "user"]
    assert len(fake_server.requests) == 3


@pytest.mark.django_db
def test_a_real_server_that_drops_system_messages_gets_the_instructions_folded_in(
        llama_server: str) -> None:
    config = ProviderConfig(provider="openai", model="gemma-3-270m", base_url=llama_server,
                            api_key=SERVER_API_KEY, timeout_s=60, max_retries=0)
    provider = build_provider(config)
    bare = provider.complete([ASK[1]], role="implementer", max_tokens=1)
    sent_as_is = provider.complete(ASK, role="implementer", max_tokens=1)
    # What --chat_format gemma does: the system message never reaches the model.
    assert sent_as_is.prompt_tokens == bare.prompt_tokens

    # A role call measures it first, and sends the instructions where the model reads them.
    role_call = structured.complete(provider, ASK, role="implementer", schema=None,
                                    max_tokens=1)
    assert role_call.prompt_tokens >= bare.prompt_tokens + 20
    assert ModelReplyForm.objects.get(model="gemma-3-270m").system_messages == "dropped"
    # Test connection measures it again and says the same.
    assert system_role_probe(config) == system_role.DROPPED


def test_the_in_process_model_folds_them_by_itself(gguf_model: Path) -> None:
    require_llama_cpp()
    from autocoder.llm.llamacpp import LlamaCppProvider

    provider = LlamaCppProvider(ProviderConfig(provider="llamacpp", model=str(gguf_model),
                                               timeout_s=60, max_retries=0), n_ctx=2048)
    # The GGUF has no chat template; the provider picks llama-cpp-python's gemma format,
    # which leaves system messages out, and sees so by formatting a prompt.
    assert provider.folds_system_messages
    bare = provider.complete([ASK[1]], role="implementer", max_tokens=1)
    whole = provider.complete(ASK, role="implementer", max_tokens=1)
    assert whole.prompt_tokens >= bare.prompt_tokens + 20
