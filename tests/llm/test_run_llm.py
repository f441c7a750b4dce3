"""Model calls made for a run (runs.llm_calls.RunLLM): the reply streams to the run
page while it is written, it may take as long as it keeps streaming up to the end of the run's
wall-time budget (where the text so far is kept and paid for), and a model that goes silent
fails the step once instead of being asked again and again.

The model server is the fake OpenAI-compatible server of tests/llm/fakeserver.py on loopback
(a boundary we cannot run at these speeds here; tests/engine/test_real_wire.py runs a real one).
The database, the Redis channel layer and the services are the real ones.
"""

from __future__ import annotations

import asyncio
import time
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.urls import reverse
from django.utils import timezone

from autocoder import realtime
from autocoder.llm import LLMTimeout, Message
from autocoder.llm.config import ROLE_MAX_TOKENS
from runs.llm_calls import STREAM_EVENT, RunLLM
from runs.models import LLMCall, Run
from runs.services import starting, stepping
from tests.engine.conftest import DispatchRecorder, greeter_spec
from tests.factories import MembershipFactory, TeamFactory, UserFactory
from tests.llm.fakeserver import FakeServer, Reply
from tests.llm.test_streaming import chunk, slow_reply

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _keeps_system_messages(settings: Any) -> None:
    """The fake server here stands in for servers that read system messages; measuring that is
    tests/llm/test_system_role.py's (LLM_SYSTEM_MESSAGES=keep is what such a user may set)."""
    settings.LLM_SYSTEM_MESSAGES = "keep"

ASK = [Message("system", "Write the plugin."), Message("user", "A greeter.")]


@pytest.fixture
def model_server(settings: Any, fake_server: FakeServer) -> FakeServer:
    """The environment points every role at the fake server, as a user's .env would."""
    settings.LLM_PROVIDER = "openai"
    settings.LLM_BASE_URL = fake_server.url + "/v1"
    settings.LLM_MODEL = "served-model"
    settings.LLM_API_KEY = ""
    settings.LLM_TIMEOUT_S = 5.0
    settings.LLM_MAX_RETRIES = 2
    settings.LLM_MAX_TOKENS = 0
    settings.LLM_ROLE_OVERRIDES = {}
    settings.ENGINE_RETRY_DELAY_MS = 0
    return fake_server


@pytest.fixture
def run(model_server: FakeServer) -> Run:
    team = TeamFactory()
    requester = UserFactory()
    MembershipFactory(team=team, user=requester, role="requester")
    project = starting.project_create(team=team, requester=requester, spec=greeter_spec())
    return starting.run_start(project=project, provider="openai", autonomy="full",
                              use_lessons=False, max_wall_s=600, dispatch=None)


def listen(run: Run) -> tuple[Any, str]:
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(realtime.run_group(run.id), channel)
    return layer, channel


def received(layer: Any, channel: str) -> list[dict[str, Any]]:
    async def drain() -> list[dict[str, Any]]:
        events = []
        while True:
            try:
                message = await asyncio.wait_for(layer.receive(channel), timeout=0.5)
            except TimeoutError:
                return events
            events.append(message["payload"])

    return [event["data"] for event in async_to_sync(drain)() if event["kind"] == STREAM_EVENT]


def test_a_reply_streams_to_the_run_page_at_most_twice_a_second(
        run: Run, model_server: FakeServer) -> None:
    model_server.queue(slow_reply(12, every_s=0.15))
    layer, channel = listen(run)
    started = time.monotonic()
    text = RunLLM(run=run, iteration=1).complete("implementer", ASK)
    elapsed = time.monotonic() - started

    events = received(layer, channel)
    assert [e["state"] for e in events[:2]] == ["reading", "writing"]
    writing = [e for e in events if e["state"] == "writing"]
    # 12 chunks in ~1.8 s, shown at most every 0.5 s (the first one at once).
    assert 2 <= len(writing) <= elapsed / 0.5 + 1
    assert all(e["role"] == "implementer" and e["iteration"] == 1 for e in events)
    assert [w["tokens"] for w in writing] == sorted(w["tokens"] for w in writing)
    assert events[-1] == {"run_id": run.id, "iteration": 1, "role": "implementer",
                          "state": "done", "tokens": 12, "tail": text}
    # The role's cap went over the wire, as for every door that calls the provider.
    assert model_server.requests[0].body["max_tokens"] == ROLE_MAX_TOKENS["implementer"]
    assert LLMCall.objects.get(run=run).completion_tokens == 12


def test_the_cap_sent_is_fitted_to_the_models_context_window(
        run: Run, model_server: FakeServer, settings: Any) -> None:
    settings.LLM_CONTEXT_TOKENS = 4096
    model_server.queue(slow_reply(3, every_s=0.01))
    long_ask = [Message("system", "Write the plugin."), Message("user", "x" * 5983)]
    calls = RunLLM(run=run, iteration=1)
    calls.complete("implementer", long_ask)
    # 6000 characters of prompt (about 1500 tokens) leave 4096 - 1500 - 16 of the window.
    assert model_server.requests[0].body["max_tokens"] == 2580
    # The prompt the engine builds is kept to what leaves the reply half the window.
    assert calls.prompt_chars("implementer") == (4096 - 2048 - 16) * 3
    assert calls.prompt_chars("reflector") == (4096 - ROLE_MAX_TOKENS["reflector"] - 16) * 3
    settings.LLM_CONTEXT_TOKENS = 0
    assert calls.prompt_chars("implementer") is None


def test_a_reply_still_streaming_at_the_end_of_the_wall_budget_is_cut_and_kept(
        run: Run, model_server: FakeServer) -> None:
    # One second of the run's ten minutes is left.
    Run.objects.filter(id=run.id).update(started_at=timezone.now() - timedelta(seconds=599))
    run.refresh_from_db()
    model_server.queue(slow_reply(60, every_s=0.1))
    layer, channel = listen(run)
    started = time.monotonic()
    text = RunLLM(run=run, iteration=1).complete("architect", ASK)

    assert time.monotonic() - started < 2.0  # not the 6 s the model would have taken
    words = len(text.split())
    assert text.startswith("w0 w1 ") and 3 <= words < 60
    call = LLMCall.objects.get(run=run)
    assert (call.error, call.completion_tokens, call.reply) == ("", words, text)
    run.refresh_from_db()
    assert run.tokens_completion == words and run.tokens_prompt > 0
    assert received(layer, channel)[-1]["state"] == "cut"


def test_a_failure_to_publish_never_breaks_the_call(run: Run, model_server: FakeServer,
                                                    settings: Any) -> None:
    # A channel layer that cannot be reached (nothing listens on port 1).
    settings.CHANNEL_LAYERS = {"default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [{"address": "redis://127.0.0.1:1", "socket_connect_timeout": 1}]}}}
    model_server.queue(slow_reply(5, every_s=0.1))
    text = RunLLM(run=run, iteration=1).complete("tester", ASK)
    assert text == "w0 w1 w2 w3 w4 "
    assert LLMCall.objects.get(run=run).reply == text


def test_a_model_that_goes_silent_fails_the_step_once_and_it_is_not_redone(
        run: Run, model_server: FakeServer, settings: Any,
        django_capture_on_commit_callbacks: Any) -> None:
    settings.LLM_TIMEOUT_S = 0.5
    model_server.queue(Reply(sse=[chunk("The plan"), chunk(": "), 5.0, chunk("never")]))
    dispatch = DispatchRecorder()
    with django_capture_on_commit_callbacks(execute=True):
        token = stepping.run_step_perform(run_id=run.id, token=run.step_token,
                                          dispatch=dispatch)

    failed = Run.objects.get(id=run.id)
    # Not retried by the provider (one request) nor by the step (its next message is `learn`).
    assert len(model_server.requests) == 1
    assert failed.phase == Run.Phase.LEARN and token == failed.step_token
    assert dispatch.sent == [(run.id, token, 0)]
    reason = failed.pending["outcome"]["reason"]
    assert reason.startswith("step 'plan' of attempt 1 failed: LLMTimeout")
    assert "went silent" in reason
    [call] = LLMCall.objects.filter(run=run)
    assert call.error.startswith("LLMTimeout") and call.completion_tokens == 2

    stepping.run_step_perform(run_id=run.id, token=token, dispatch=dispatch)
    finished = Run.objects.get(id=run.id)
    assert finished.status == Run.Status.FAILED and "went silent" in finished.error
    assert len(model_server.requests) == 1


def test_the_run_page_has_a_place_for_the_streaming_reply(run: Run, client: Any) -> None:
    member = UserFactory()
    MembershipFactory(team=run.project.team, user=member, role="reviewer")
    client.force_login(member)
    page = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert f'id="llm-stream" class="panel" aria-labelledby="llm-stream-heading" ' \
           f'data-run="{run.pk}" hidden' in page
    assert "js/run_stream.js" in page


def test_a_silent_model_raises_for_a_caller_outside_a_step(run: Run, model_server: FakeServer,
                                                           settings: Any) -> None:
    settings.LLM_TIMEOUT_S = 0.5
    model_server.queue(Reply(sse=[chunk("x"), 3.0]))
    with pytest.raises(LLMTimeout):
        RunLLM(run=run, iteration=1).complete("reviewer", ASK)
    assert LLMCall.objects.get(run=run).error.startswith("LLMTimeout")
