"""Runs honour every model setting: the per-role environment variables and the team's overrides.

The model endpoints are loopback fake servers (tests/llm/fakeserver.py): hosted LLM APIs are a
boundary we cannot reach here, so each configured endpoint is a real HTTP server on 127.0.0.1
answering as the API documents. Everything else is the production code: the services, the
real OpenAI and Anthropic SDKs behind our providers, the sandbox and PostgreSQL.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from autocoder.llm.env import role_env_overrides
from autocoder.llm.services import team_model_override_set
from runs.llm_calls import run_provider_choice
from runs.models import Run
from runs.services import driving
from tests.engine.conftest import greeter_spec, load_script
from tests.llm.fakeserver import FakeServer, Reply

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _keeps_system_messages(settings: Any) -> None:
    """The fake server here stands in for servers that read system messages; measuring that is
    tests/llm/test_system_role.py's (LLM_SYSTEM_MESSAGES=keep is what such a user may set)."""
    settings.LLM_SYSTEM_MESSAGES = "keep"
PROMPT, COMPLETION = 40, 10  # the usage every fake model reports


class ModelServer(FakeServer):
    """A fake model endpoint that gives every request the same reply, streamed when the
    request asks for a stream (as runs do, to show replies live) and whole otherwise."""

    def __init__(self, api: str, text: str = "", model: str = "") -> None:
        super().__init__()
        self.api, self.text, self.model = api, text, model

    def answer(self, text: str, model: str) -> None:
        self.text, self.model = text, model

    def _next(self) -> Reply:
        streamed = bool((self.requests[-1].body or {}).get("stream"))
        if self.api == "anthropic":
            return self._anthropic_stream() if streamed else self._anthropic()
        return self._openai_stream() if streamed else self._openai()

    def _openai(self) -> Reply:
        return Reply(body={
            "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": self.model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": self.text}}],
            "usage": {"prompt_tokens": PROMPT, "completion_tokens": COMPLETION,
                      "total_tokens": PROMPT + COMPLETION}})

    def _openai_stream(self) -> Reply:
        def chunk(choices: list[Any], usage: dict[str, int] | None = None) -> str:
            return "data: " + json.dumps({"id": "c", "object": "chat.completion.chunk",
                                          "created": 1, "model": self.model,
                                          "choices": choices, "usage": usage})
        usage = {"prompt_tokens": PROMPT, "completion_tokens": COMPLETION,
                 "total_tokens": PROMPT + COMPLETION}
        return Reply(sse=[
            chunk([{"index": 0, "delta": {"content": self.text}}]),
            chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
            chunk([], usage), "data: [DONE]"])

    def _anthropic(self) -> Reply:
        return Reply(body={
            "id": "msg_1", "type": "message", "role": "assistant", "model": self.model,
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": PROMPT, "output_tokens": COMPLETION},
            "content": [{"type": "text", "text": self.text}]})

    def _anthropic_stream(self) -> Reply:
        def event(kind: str, **data: Any) -> str:
            return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}"
        message: dict[str, Any] = {
            "id": "msg_1", "type": "message", "role": "assistant", "content": [],
            "model": self.model, "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": PROMPT, "output_tokens": 1}}
        return Reply(sse=[
            event("message_start", message=message),
            event("content_block_start", index=0, content_block={"type": "text", "text": ""}),
            event("content_block_delta", index=0,
                  delta={"type": "text_delta", "text": self.text}),
            event("content_block_stop", index=0),
            event("message_delta", delta={"stop_reason": "end_turn", "stop_sequence": None},
                  usage={"output_tokens": COMPLETION}),
            event("message_stop")])


@pytest.fixture
def servers() -> Iterator[dict[str, ModelServer]]:
    started = {name: ModelServer(api) for name, api in
               (("global", "openai"), ("reviewer", "anthropic"), ("team", "openai"))}
    for server in started.values():
        server.start()
    yield started
    for server in started.values():
        server.stop()


@pytest.fixture
def configured(settings: Any, engine_settings: Any, servers: dict[str, ModelServer]) -> Any:
    """The installation's model: an OpenAI-compatible server for every role, except the
    reviewer, which the environment moves to Anthropic (LLM_<FIELD>_REVIEWER)."""
    settings.LLM_PROVIDER, settings.LLM_MODEL = "openai", "global-model"
    settings.LLM_BASE_URL, settings.LLM_API_KEY = servers["global"].url, "global-key"
    settings.LLM_TIMEOUT_S, settings.LLM_MAX_RETRIES = 20.0, 0
    settings.LLM_ROLE_OVERRIDES = role_env_overrides({
        "LLM_PROVIDER_REVIEWER": "anthropic", "LLM_MODEL_REVIEWER": "claude-env",
        "LLM_BASE_URL_REVIEWER": servers["reviewer"].url, "LLM_API_KEY_REVIEWER": "ant-key",
    })
    return settings


def test_each_role_calls_the_model_its_settings_name(
        configured: Any, servers: dict[str, ModelServer], people: dict[str, Any]) -> None:
    # Each server answers every request the same way, so nothing depends on call order: the
    # architect's plan is also what the tester gets (no file blocks, so no extra tests).
    servers["global"].answer("Plan: one greet method that says 'Hello, <name>!'.",
                             "global-model")
    servers["team"].answer(load_script("success")["implementer"][0], "team-coder")
    servers["reviewer"].answer("VERDICT: approve\nSmall and clear.", "claude-env")
    team_model_override_set(team=people["team"], role="implementer", model="team-coder",
                            base_url=servers["team"].url, api_key="team-key")

    run = driving.generation_run(team=people["team"], requester=people["requester"],
                                  spec=greeter_spec(), autonomy="full", use_lessons=False)

    assert run.status == Run.Status.SUCCEEDED, run.error
    assert run.provider == "", "no provider was chosen for the run: each role uses its own"
    calls = {(c.role, c.provider, c.model) for c in run.llm_calls.filter(error="")}
    assert calls == {("architect", "openai", "global-model"), ("tester", "openai", "global-model"),
                     ("implementer", "openai", "team-coder"),
                     ("reviewer", "anthropic", "claude-env")}
    # On the wire: each server got only its roles, with its own model name and key.
    team_calls = servers["team"].requests
    assert [(r.body["model"], r.headers["authorization"]) for r in team_calls] == [
        ("team-coder", "Bearer team-key")]
    (review,) = servers["reviewer"].requests
    assert (review.path, review.body["model"]) == ("/v1/messages", "claude-env")
    sent_key = review.headers.get("x-api-key") or review.headers["authorization"][7:]
    assert sent_key == "ant-key"
    assert {(r.body["model"], r.headers["authorization"])
            for r in servers["global"].requests} == {("global-model", "Bearer global-key")}
    assert len(servers["global"].requests) == 2  # the architect and the tester
    # The reviewer's tokens count like every other call's.
    assert [(c.prompt_tokens, c.completion_tokens) for c in run.llm_calls.all()] == [
        (PROMPT, COMPLETION)] * 4
    assert (run.tokens_prompt, run.tokens_completion) == (4 * PROMPT, 4 * COMPLETION)
    assert run.approvals.get().payload["second_opinion"]["verdict"] == "approve"


def test_only_a_provider_chosen_for_the_run_forces_every_role(configured: Any) -> None:
    assert run_provider_choice("") == "", "nothing chosen: each role as configured"
    assert run_provider_choice("Anthropic") == "anthropic"  # generate --provider anthropic
    assert run_provider_choice("", script={"implementer": ["x"]}) == "scripted"
    configured.LLM_PROVIDER = "scripted"  # the recorded demo: its script belongs to the run
    assert run_provider_choice("") == "scripted"
