"""Constrained replies (autocoder.llm.structured, docs/llm.md "Constrained replies"): the reply
held to the role's schema through the server's option, the forms tried in turn where a server
refuses one, the fenced protocol once every form is refused, and what settled it remembered
for the model so later calls go straight to it.

The server is the fake OpenAI-compatible server of tests/llm/fakeserver.py on loopback, standing
in for servers we cannot run here (OpenAI, vLLM, Ollama); tests/llm/test_llama_server.py holds a
real llama.cpp server to the schema.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from autocoder.engine.reply_formats import SCHEMAS
from autocoder.llm import LLMBadRequest, Message, ProviderConfig, structured
from autocoder.llm.models import ModelReplyForm
from autocoder.llm.openai_compat import OpenAICompatibleProvider
from autocoder.llm.scripted import ScriptedProvider
from tests.llm.conftest import chat_reply
from tests.llm.fakeserver import FakeServer, Reply

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _keeps_system_messages(settings: Any) -> None:
    """The fake server here stands in for servers that read system messages; measuring that is
    tests/llm/test_system_role.py's (LLM_SYSTEM_MESSAGES=keep is what such a user may set)."""
    settings.LLM_SYSTEM_MESSAGES = "keep"

ASK = [Message("system", "Write the plugin."), Message("user", "A greeter.")]
SCHEMA = SCHEMAS["implementer"]
FILES = json.dumps({"files": [{"path": "greeter/plugin.py", "content": "X = 1\n"}],
                    "reason": "first version"})


def provider(server: FakeServer) -> OpenAICompatibleProvider:
    return OpenAICompatibleProvider(ProviderConfig(
        provider="openai", model="served-model", base_url=server.url + "/v1", timeout_s=5.0,
        max_retries=0), retry_base_delay_s=0.01)


def refused(message: str, status: int = 400) -> Reply:
    return Reply(status=status, body={"error": {"message": message, "type": "invalid_request"}})


def formats(server: FakeServer) -> list[Any]:
    return [request.body.get("response_format") for request in server.requests]


def test_a_server_that_takes_json_schema_gets_the_schema_strict_and_the_hint(
        fake_server: FakeServer) -> None:
    fake_server.queue(chat_reply(FILES))
    completion = structured.complete(provider(fake_server), ASK, role="implementer",
                                     schema=SCHEMA)
    assert completion.reply_form == "json_schema" and json.loads(completion.text)["files"]
    [request] = fake_server.requests
    assert request.body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "implementer_files", "strict": True, "schema": SCHEMA.schema}}
    # The prompts describe file blocks; a model held to the schema is told what replaces them.
    assert request.body["messages"][-1]["content"].endswith(SCHEMA.hint)
    assert request.body["messages"][0]["content"] == "Write the plugin."
    assert ModelReplyForm.objects.get().form == "json_schema"


def test_a_refused_form_is_passed_over_for_the_next_and_that_one_is_remembered(
        fake_server: FakeServer) -> None:
    # llama-cpp-python's server validates response_format and knows only json_object.
    fake_server.queue(refused("response_format: Input should be 'text' or 'json_object'", 422),
                      chat_reply(FILES))
    first = structured.complete(provider(fake_server), ASK, role="implementer", schema=SCHEMA)
    assert first.reply_form == "json_object"
    assert [f and f["type"] for f in formats(fake_server)] == ["json_schema", "json_object"]
    assert formats(fake_server)[1]["schema"] == SCHEMA.schema
    remembered = ModelReplyForm.objects.get()
    assert (remembered.provider, remembered.model, remembered.form) == (
        "openai", "served-model", "json_object")
    assert remembered.base_url == fake_server.url + "/v1"

    fake_server.requests.clear()
    again = structured.complete(provider(fake_server), ASK, role="implementer", schema=SCHEMA)
    assert again.reply_form == "json_object"
    assert [f["type"] for f in formats(fake_server)] == ["json_object"]  # straight to it


def test_a_server_that_refuses_every_form_gets_the_fenced_protocol_once_and_then_always(
        fake_server: FakeServer) -> None:
    fence = "```python path=greeter/plugin.py\nX = 1\n```"
    fake_server.queue(refused("response_format is not supported"),
                      refused("unknown field: schema"), chat_reply(fence))
    completion = structured.complete(provider(fake_server), ASK, role="implementer",
                                     schema=SCHEMA)
    assert (completion.reply_form, completion.text) == ("fenced", fence)
    plain = fake_server.requests[-1].body
    assert "response_format" not in plain
    assert plain["messages"][-1]["content"] == "A greeter."  # no schema hint either
    remembered = ModelReplyForm.objects.get()
    assert remembered.form == "fenced"
    assert "response_format is not supported" in remembered.detail

    fake_server.requests.clear()
    structured.complete(provider(fake_server), ASK, role="implementer", schema=SCHEMA)
    assert formats(fake_server) == [None]


def test_a_request_refused_for_another_reason_settles_nothing(fake_server: FakeServer) -> None:
    fake_server.queue(refused("this prompt is longer than the context window"))
    with pytest.raises(LLMBadRequest, match="context window"):
        structured.complete(provider(fake_server), ASK, role="implementer", schema=SCHEMA)
    assert len(fake_server.requests) == 3  # json_schema, json_object, then plain: all refused
    assert not ModelReplyForm.objects.exists()


def test_a_provider_without_forms_and_a_call_without_schema_are_left_as_they_are(
        fake_server: FakeServer) -> None:
    scripted = ScriptedProvider({"implementer": [FILES]})
    completion = structured.complete(scripted, ASK, role="implementer", schema=SCHEMA)
    assert (completion.reply_form, completion.text) == ("fenced", FILES)
    fake_server.queue(chat_reply("plain words"))
    structured.complete(provider(fake_server), ASK, role="analyst", schema=None)
    assert formats(fake_server) == [None]
    assert not ModelReplyForm.objects.exists()


def test_every_schema_is_strict(fake_server: FakeServer) -> None:
    """OpenAI's strict mode: every object lists all its properties as required and no other."""
    def objects(node: Any) -> list[dict[str, Any]]:
        found = []
        if isinstance(node, dict):
            if node.get("type") == "object":
                found.append(node)
            for value in node.values():
                found += objects(value)
        elif isinstance(node, list):
            for value in node:
                found += objects(value)
        return found

    for schema in SCHEMAS.values():
        for node in objects(schema.schema):
            assert node["additionalProperties"] is False
            assert sorted(node["required"]) == sorted(node["properties"]), schema.name
        assert schema.hint and schema.name.isidentifier()


def test_a_server_error_that_names_the_option_is_a_refusal_not_a_fault_to_retry(
        fake_server: FakeServer) -> None:
    """llama-cpp-python's server answers an unknown response_format with HTTP 500 and its
    validation error; it is passed over at once, neither retried nor taken for a broken server."""
    crash = ("1 validation error: {'loc': ('body', 'response_format', 'type'), "
             "'msg': \"Input should be 'text' or 'json_object'\"}")
    fake_server.queue(refused(crash, 500), chat_reply(FILES))
    config = ProviderConfig(provider="openai", model="served-model",
                            base_url=fake_server.url + "/v1", timeout_s=5.0, max_retries=2)
    completion = structured.complete(OpenAICompatibleProvider(config, retry_base_delay_s=0.01),
                                     ASK, role="implementer", schema=SCHEMA)
    assert completion.reply_form == "json_object"
    assert [f["type"] for f in formats(fake_server)] == ["json_schema", "json_object"]
