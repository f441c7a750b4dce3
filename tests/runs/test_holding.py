"""A model server that stops in the middle of a run, on real workers: the run is held (never
failed), the admins are told once, and when the server is back the run goes on by itself and
succeeds with nothing lost, nothing redone and nothing charged twice.

The model is a loopback OpenAI-compatible server (tests/llm/fakeserver.py, streamed as runs ask)
that we stop and start on the same port: hosted and self-run model servers are a boundary we
cannot reach here. Each role has its own model name on the Model page, so the server answers
each role from the recorded "success" script. Everything else is real: an in-process Dramatiq
worker on the session's Redis, PostgreSQL committed for real, the bwrap sandbox, the watchdog.
"""

from __future__ import annotations

import threading
import time
from http.server import ThreadingHTTPServer
from typing import Any

import dramatiq
import pytest
from django.test import Client
from django.urls import reverse

from autocoder.heartbeat import watchdog_sweep
from autocoder.llm.services import site_model_config_set
from autocoder.llm.types import ROLES
from runs.models import LLMCall, Run
from runs.services import holding, starting
from teams.models import Notification
from tests.engine.conftest import greeter_spec, load_script
from tests.factories import MembershipFactory, UserFactory
from tests.live import free_port
from tests.llm.fakeserver import Reply
from tests.runs.test_llm_calls import COMPLETION, PROMPT, ModelServer
from tests.runs.test_tasks import wait_until_settled

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

HELD_WORDS = "Generation cannot reach the model; your admins have been told."


class RoleServer(ModelServer):
    """Answers each role (its model name) with the script's reply, on a fixed port; with
    `stop_at` set, the first request for that role finds the server going down: its
    connection is dropped unanswered and the port closes (a server stopped mid-run)."""

    def __init__(self, port: int, script: dict[str, list[str]], stop_at: str = "") -> None:
        super().__init__("openai")
        self._httpd.server_close()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,),
                                        daemon=True)
        self.script, self.stop_at = script, stop_at

    def _next(self) -> Reply:
        role = str((self.requests[-1].body or {}).get("model", ""))
        if role == self.stop_at:
            self.stop_at = ""
            threading.Thread(target=self.stop, daemon=True).start()
            raise ConnectionAbortedError("the model server is going down")
        self.answer((self.script.get(role) or [""])[0], role)
        return super()._next()



def wait_for(run_id: int, status: str, timeout_s: float = 120) -> Run:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = Run.objects.get(id=run_id)
        if run.status == status or run.is_terminal:
            return run
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} is {Run.objects.get(id=run_id).status}, not {status}")


def test_a_model_server_stopped_mid_run_holds_the_run_and_it_goes_on_when_it_is_back(
        engine_settings: Any, people: dict[str, Any], worker: dramatiq.Worker) -> None:
    settings = engine_settings
    settings.LLM_PROVIDER = settings.LLM_MODEL = settings.LLM_BASE_URL = ""
    settings.LLM_API_KEY = settings.LLM_SCRIPT = ""
    settings.LLM_ROLE_OVERRIDES = {}
    settings.LLM_MAX_RETRIES, settings.LLM_TIMEOUT_S = 0, 30.0
    team, requester = people["team"], people["requester"]
    team_admin, site_admin = UserFactory(), UserFactory(is_staff=True)
    MembershipFactory(team=team, user=team_admin, role="admin")
    port, script = free_port(), load_script("success")
    server = RoleServer(port, script, stop_at="implementer").start()
    site_model_config_set(actor=site_admin, provider="openai",
                          base_url=f"http://127.0.0.1:{port}/v1", model="architect",
                          role_models={role: role for role in ROLES})

    project = starting.project_create(team=team, requester=requester, spec=greeter_spec())
    run = starting.run_start(project=project, autonomy="full", use_lessons=False,
                             started_by=requester)

    # The plan is made; the implementer's call finds the server going down: held, not failed.
    held = wait_for(run.id, Run.Status.HELD)
    assert (held.status, held.held_by) == (Run.Status.HELD, "model_reach"), held.error
    assert (held.phase, held.iteration) == (Run.Phase.IMPLEMENT, 0) and held.plan
    assert f"127.0.0.1:{port}/v1 could not be reached" in held.error
    requester_page = Client()
    requester_page.force_login(requester)
    page = requester_page.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert HELD_WORDS in page and "could not be retried" not in page
    time.sleep(1.5)  # the worker's watchdog may look meanwhile: the server is still down
    assert Run.objects.get(id=run.id).status == Run.Status.HELD
    assert holding.runs_held_release() == [], "nothing goes on while the model is away"

    # Back on the same address: the watchdog's check calls it and lets the run go on.
    server = RoleServer(port, script).start()
    try:
        watchdog_sweep()
        final = wait_until_settled(run.id)
    finally:
        server.stop()

    assert final.status == Run.Status.SUCCEEDED, final.error
    assert [it.number for it in final.iterations.all()] == [1], "no iteration redone"
    # Told once: the team's admin and the site admin, one notice each.
    notices = Notification.objects.filter(kind=Notification.Kind.INSTALLATION)
    assert sorted(n.user_id for n in notices) == sorted([team_admin.pk, site_admin.pk])
    # Nothing lost or charged twice: the plan was asked for once; the implementer's dropped
    # call is on record without tokens, then asked again once; every token is a reply's.
    calls = list(LLMCall.objects.filter(run=final).order_by("id"))
    answered = [c.role for c in calls if not c.error]
    assert answered.count("architect") == 1 and answered.count("implementer") == 1
    dropped = [c for c in calls if c.error]  # the first, then the step's retries
    assert dropped and {(c.role, c.prompt_tokens, c.completion_tokens, c.cost)
                        for c in dropped} == {("implementer", 0, 0, 0)}
    assert all(c.error.startswith("LLMConnectionError") for c in dropped)
    assert final.tokens_prompt == PROMPT * len(answered) == sum(c.prompt_tokens for c in calls)
    assert final.tokens_completion == COMPLETION * len(answered)
    # On the wire after the restart: the watchdog's short checks, then the run's own calls
    # from where it stopped (no plan again).
    streamed = [r.body["model"] for r in server.requests if r.body.get("stream")]
    assert streamed[0] == "implementer" and "architect" not in streamed
    assert all(r.body["max_tokens"] <= 8 for r in server.requests if not r.body.get("stream"))
