"""No model set up is a visible state: doctor, /healthz, `up`, the run page and the Model page
say so, requests wait in the queue, and they go on by themselves once a model works.

The model servers are the loopback fake server (tests/llm/fakeserver.py), standing in for the
hosted and self-run servers we cannot reach here; the calls go through the real
OpenAI-compatible provider. Everything else is real: database, services, views.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from autocoder.llm.readiness import model_fault
from config.health import REQUIRED_FOR_SERVICE, check_llm
from config.management.commands.up import Command as UpCommand
from runs.models import Project, Run
from runs.services.stepping import run_step_perform
from teams.models import Notification
from tests.factories import UserFactory
from tests.live import free_port
from tests.llm.conftest import chat_reply
from tests.llm.fakeserver import FakeServer, Reply
from tests.projects.test_interviews import answer_checklist, start_interview

pytestmark = pytest.mark.django_db

HEADLINE = ("Generation is not connected yet: your request is saved and waits in the queue; "
            "your admins have been told.")
SCRIPTS = Path(__file__).resolve().parents[1] / "engine" / "scripts"


def chat(text: str) -> Reply:
    return chat_reply(text, prompt_tokens=30, completion_tokens=5)


@pytest.fixture(autouse=True)
def fresh(no_model_in_environment: Any) -> Any:
    return no_model_in_environment


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_no_model_is_a_fault_that_says_where_to_set_one_up() -> None:
    fault = model_fault()
    assert fault is not None and fault.part == "model"
    assert fault.problem == "no model is set up"
    assert "/settings/model/" in fault.fix and "LLM_PROVIDER" in fault.fix


def test_a_script_of_recorded_replies_counts_as_set_up(fresh: Any) -> None:
    fresh.LLM_PROVIDER, fresh.LLM_SCRIPT = "scripted", str(SCRIPTS / "success.json")
    assert model_fault() is None
    check = check_llm()
    assert check.ok and "scripted provider" in check.detail and "not a model" in check.detail


def test_a_misspelled_system_messages_setting_is_a_fault_with_the_fix(fresh: Any) -> None:
    fresh.LLM_PROVIDER, fresh.LLM_SCRIPT = "scripted", str(SCRIPTS / "success.json")
    fresh.LLM_SYSTEM_MESSAGES = "folded"
    fault = model_fault()
    assert fault is not None and fault.part == "model"
    assert fault.problem == "LLM_SYSTEM_MESSAGES is 'folded', which is none of measure, keep, fold"
    assert "docs/llm.md" in fault.fix


# -- doctor and /healthz -------------------------------------------------------------------------


def test_doctor_reports_no_model_as_failing_with_the_fix() -> None:
    check = check_llm()
    assert (check.name, check.ok, check.detail) == ("llm", False, "no model is set up")
    assert "/settings/model/" in check.hint


def test_healthz_reports_no_model_without_taking_the_portal_down() -> None:
    body = Client().get("/healthz").json()
    assert body["checks"]["llm"]["ok"] is False
    assert "/settings/model/" in body["checks"]["llm"]["hint"]
    assert "llm" not in REQUIRED_FOR_SERVICE  # requests wait; the portal itself works


def test_doctor_calls_a_configured_model_and_reports_its_latency(
        fresh: Any, fake_server: FakeServer) -> None:
    fresh.LLM_PROVIDER, fresh.LLM_MODEL = "openai", "coder-7b"
    fresh.LLM_BASE_URL = fake_server.url + "/v1"
    fake_server.queue(chat("ready"))
    check = check_llm()
    assert check.ok, check
    assert "openai model coder-7b at http://127.0.0.1:" in check.detail
    assert "answered in" in check.detail and check.detail.endswith(" ms")
    [request] = fake_server.requests  # one call for the six roles that share the model
    assert request.path == "/v1/chat/completions" and request.body["max_tokens"] <= 8


def test_doctor_never_reports_ok_for_a_refused_key_or_a_dead_address(
        fresh: Any, fake_server: FakeServer) -> None:
    fresh.LLM_PROVIDER, fresh.LLM_MODEL = "openai", "coder-7b"
    fresh.LLM_BASE_URL, fresh.LLM_API_KEY = fake_server.url + "/v1", "sk-revoked"
    fake_server.queue(Reply(status=401, body={"error": {"message": "Incorrect API key"}}))
    refused = check_llm()
    assert not refused.ok and "refused the API key" in refused.detail
    assert "API key" in refused.hint and "sk-revoked" not in refused.detail

    fresh.LLM_BASE_URL = f"http://127.0.0.1:{free_port()}/v1"
    dead = check_llm()
    assert not dead.ok and "could not be reached" in dead.detail
    assert "start the model server" in dead.hint


def test_up_prints_what_to_do_when_no_model_is_set_up() -> None:
    out = io.StringIO()
    UpCommand(stdout=out)._print_model_state("http://127.0.0.1:8000/")
    assert ("No model is set up: open http://127.0.0.1:8000/settings/model/ as admin, or set "
            "LLM_PROVIDER") in out.getvalue()


def test_up_says_nothing_about_a_working_model(fresh: Any) -> None:
    fresh.LLM_PROVIDER, fresh.LLM_SCRIPT = "scripted", str(SCRIPTS / "success.json")
    out = io.StringIO()
    UpCommand(stdout=out)._print_model_state("http://127.0.0.1:8000/")
    assert out.getvalue() == ""


# -- a request waits for the model, then goes on -------------------------------------------------


def test_a_request_waits_for_a_model_and_goes_on_once_an_admin_sets_one_up(
        team_with_roles: dict, fake_server: FakeServer) -> None:
    requester, team_admin = team_with_roles["member"], team_with_roles["owner"]
    client = client_for(requester)
    interview = start_interview(client)
    answer_checklist(client, interview)
    landed = client.post(reverse("interview_start", args=[interview.pk]), follow=True)
    assert HEADLINE in landed.content.decode()  # on the run page the wizard leads to

    run = Run.objects.get(project_id=interview.project_id)
    assert (run.status, run.held_by, run.iteration) == (Run.Status.HELD, "model", 0)
    assert Project.objects.get(pk=run.project_id).status == Project.Status.QUEUED
    [notice] = Notification.objects.filter(kind=Notification.Kind.INSTALLATION)
    assert notice.user == team_admin and "no model is set up" in notice.message
    admin_view = client_for(team_admin).get(reverse("run_detail", args=[run.pk])).content
    assert b"/settings/model/" in admin_view  # admins see the fix, requesters the headline

    fake_server.queue(chat("1. Write greet.\n2. Test it."))
    staff = client_for(UserFactory(is_staff=True))
    saved = staff.post("/settings/model/", {"provider": "openai", "model": "coder-7b",
                                            "base_url": fake_server.url + "/v1"}, follow=True)
    assert "1 waiting request started with the new model." in saved.content.decode()
    run.refresh_from_db()
    assert (run.status, run.held_by) == (Run.Status.QUEUED, "")

    # The step the worker would now receive, performed here: it calls the model just saved.
    run_step_perform(run_id=run.pk, token=run.step_token, dispatch=None)
    run.refresh_from_db()
    assert run.status == Run.Status.RUNNING and run.phase == Run.Phase.IMPLEMENT
    assert Project.objects.get(pk=run.project_id).status == Project.Status.GENERATING
    # The save called the model once (the check on save), the release once more (it lets
    # held runs go on only once a real call works), then the step: its first call to this
    # model measures, with one token twice, whether it reads system messages.
    *checks, with_system, without, call = fake_server.requests
    assert len(checks) == 2 and all(c.body["max_tokens"] == 8 for c in checks)
    assert with_system.body["max_tokens"] == without.body["max_tokens"] == 1
    assert call.body["model"] == "coder-7b" and call.body["stream"]
    page = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert HEADLINE not in page
