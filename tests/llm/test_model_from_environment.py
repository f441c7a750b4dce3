"""A model set in the environment (LLM_PROVIDER, LLM_BASE_URL, LLM_MODEL) is checked once when
`up` starts, with the Model page's check (`model_probes`), and a failure is then treated as one
the page found: /healthz and the admins' banner say so with the fix, and a new run is held at
once (admins told) instead of starting and meeting it. What a user met before: /healthz said
"ok (not called here)" until a requester's run failed.

The model servers are the loopback fake server (tests/llm/fakeserver.py), standing in for the
self-run servers we cannot run here; an unreachable address is a real loopback port nobody
listens on. Database, Redis, services, views and the provider code are the real ones.
`up` itself, in a subprocess, is tests/foundation/test_up_model_check.py.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
import redis
from django.test import Client

from config.health import check_llm
from config.management.commands.up import Command as UpCommand
from runs.models import Run
from runs.services import holding, starting
from teams.models import Notification
from tests.engine.conftest import DispatchRecorder, greeter_spec
from tests.factories import UserFactory
from tests.live import free_port
from tests.llm.conftest import chat_reply
from tests.llm.fakeserver import FakeServer

pytestmark = pytest.mark.django_db

URL = "http://127.0.0.1:8000/"


@pytest.fixture
def env_model(no_model_in_environment: Any, clean_redis: redis.Redis) -> Any:
    """The environment sets the model, as an operator's .env does; the page sets nothing."""
    settings = no_model_in_environment
    settings.LLM_PROVIDER, settings.LLM_MODEL, settings.LLM_MAX_RETRIES = "openai", "coder-7b", 0
    return settings


def up_says(env_model: Any) -> str:
    out = io.StringIO()
    UpCommand(stdout=out)._print_model_state(URL)
    return out.getvalue()


def start_run(team_with_roles: dict, dispatch: DispatchRecorder,
              capture: Any) -> Run:
    project = starting.project_create(team=team_with_roles["team"],
                                      requester=team_with_roles["member"], spec=greeter_spec())
    with capture(execute=True):
        run = starting.run_start(project=project, dispatch=dispatch,
                                 started_by=team_with_roles["member"])
    return Run.objects.get(pk=run.pk)


def test_a_dead_address_in_the_environment_is_found_at_start_and_holds_new_runs(
        env_model: Any, team_with_roles: dict, fake_server: FakeServer,
        django_capture_on_commit_callbacks: Any) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    env_model.LLM_BASE_URL = dead
    site_admin = UserFactory(is_staff=True)
    # The gap users met: nothing had called the model, so nothing was known to be wrong.
    assert check_llm(live=False).ok

    said = up_says(env_model)

    assert (f"The model set in the environment does not answer: The address {dead} could not "
            "be reached: is the server running, and is the address right?") in said
    assert "To fix it: start the model server, or correct the base URL" in said
    assert "new requests wait in the queue (held)" in said
    llm = Client().get("/healthz").json()["checks"]["llm"]
    assert llm["ok"] is False
    assert llm["detail"].startswith("the model is set up but does not answer: The address "
                                    f"{dead} could not be reached")
    assert "runs that need it wait (held)" in llm["detail"]
    assert "start the model server" in llm["hint"] and "LLM_BASE_URL" in llm["hint"]
    admin = Client()
    admin.force_login(team_with_roles["owner"])
    assert "the model is set up but does not answer" in admin.get("/").content.decode()

    # A new request is held at once, not started: no step is sent, no call is made.
    dispatch = DispatchRecorder()
    run = start_run(team_with_roles, dispatch, django_capture_on_commit_callbacks)
    assert (run.status, run.held_by, run.started_at) == (Run.Status.HELD, "model_reach", None)
    assert f"The address {dead} could not be reached" in run.error
    assert dispatch.sent == [] and not run.llm_calls.exists()
    notices = Notification.objects.filter(kind=Notification.Kind.INSTALLATION)
    assert sorted(n.user_id for n in notices) == sorted([team_with_roles["owner"].pk,
                                                         site_admin.pk])
    assert all("could not be reached" in n.message for n in notices)

    # The operator fixes the address; the watchdog's release calls the model and the run goes.
    fake_server.queue(chat_reply("ready"))
    env_model.LLM_BASE_URL = fake_server.url + "/v1"
    with django_capture_on_commit_callbacks(execute=True):
        assert holding.runs_held_release(dispatch=dispatch) == [run.pk]
    assert Run.objects.get(pk=run.pk).status == Run.Status.QUEUED and len(dispatch.sent) == 1


def test_a_model_in_the_environment_that_answers_is_ok_and_runs_start(
        env_model: Any, team_with_roles: dict, fake_server: FakeServer,
        django_capture_on_commit_callbacks: Any) -> None:
    env_model.LLM_BASE_URL = fake_server.url + "/v1"
    fake_server.queue(chat_reply("ready"))

    said = up_says(env_model)

    assert said.startswith(f"Model (set in the environment): openai model coder-7b at "
                           f"{fake_server.url}/v1 answered in ")
    [probe] = fake_server.requests  # one short call for every role sharing the model
    assert probe.path == "/v1/chat/completions" and probe.body["max_tokens"] <= 8
    llm = Client().get("/healthz").json()["checks"]["llm"]
    assert llm["ok"] is True, llm
    dispatch = DispatchRecorder()
    run = start_run(team_with_roles, dispatch, django_capture_on_commit_callbacks)
    assert run.status == Run.Status.QUEUED and dispatch.sent == [(run.pk, run.step_token, 0)]


def test_up_calls_nothing_for_a_model_set_up_on_the_page_only(
        no_model_in_environment: Any, fake_server: FakeServer, clean_redis: redis.Redis) -> None:
    """The page checked it when it was saved; `up` only checks what no page has."""
    from autocoder.llm.services import site_model_config_set

    fake_server.queue(chat_reply("ready"))
    site_model_config_set(actor=UserFactory(is_staff=True), provider="openai",
                          base_url=fake_server.url + "/v1", model="coder-7b")
    calls = len(fake_server.requests)

    assert up_says(no_model_in_environment) == ""
    assert len(fake_server.requests) == calls
