"""A model that is set up but does not answer is the installation's problem, said plainly:
the Model page keeps the old set-up unless the admin insists, doctor and /healthz name the
model, and a run that meets it is held ("generation cannot reach the model; your admins have
been told"), never failed, and goes on once the model answers again.

The model servers are the loopback fake server (tests/llm/fakeserver.py), standing in for the
hosted and self-run servers we cannot reach here; an unreachable address is a real port nobody
listens on. Everything else is real: database, Redis, services, views, the provider code.
"""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.test import Client
from django.urls import reverse

from autocoder.llm.models import SiteModelConfig
from autocoder.llm.services import site_model_config_set
from config.health import REQUIRED_FOR_SERVICE, check_llm
from runs.models import LLMCall, Run
from runs.services import holding, starting, stepping
from teams.models import Notification
from tests.engine.conftest import greeter_spec
from tests.factories import UserFactory
from tests.live import free_port
from tests.llm.conftest import chat_reply
from tests.llm.fakeserver import FakeServer, Reply

pytestmark = pytest.mark.django_db

PAGE = "/settings/model/"
HELD_WORDS = "Generation cannot reach the model; your admins have been told."


@pytest.fixture(autouse=True)
def fresh(no_model_in_environment: Any, clean_redis: redis.Redis) -> Any:
    no_model_in_environment.LLM_MAX_RETRIES = 0
    return no_model_in_environment


@pytest.fixture
def site_admin() -> Any:
    return UserFactory(is_staff=True)


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def dead_address() -> str:
    return f"http://127.0.0.1:{free_port()}/v1"


def page_form(base_url: str, **extra: str) -> dict[str, str]:
    return {"provider": "openai", "base_url": base_url, "new_api_key": "",
            "model": "coder-7b", **extra}


# -- the Model page ------------------------------------------------------------------------------


def test_saving_an_unreachable_address_keeps_the_set_up_in_use_and_says_why(
        site_admin: Any, fake_server: FakeServer) -> None:
    staff = client_for(site_admin)
    fake_server.queue(chat_reply("ready"))
    assert staff.post(PAGE, page_form(fake_server.url + "/v1")).status_code == 302
    dead = dead_address()

    refused = staff.post(PAGE, page_form(dead))

    assert refused.status_code == 200
    body = refused.content.decode()
    assert (f"Not saved: The address {dead} could not be reached: is the server running, and "
            "is the address right?") in body
    assert "The set-up in use stays as it was." in body
    assert 'name="save_anyway" value="1"' in body and "Save anyway</button>" in body
    assert SiteModelConfig.objects.get().base_url == fake_server.url + "/v1"
    assert check_llm(live=False).ok, "the set-up in use still answers"


def test_save_anyway_stores_it_and_doctor_and_healthz_name_the_model(
        site_admin: Any, team_with_roles: dict) -> None:
    staff = client_for(site_admin)
    dead = dead_address()

    saved = staff.post(PAGE, page_form(dead, save_anyway="1"), follow=True)

    assert SiteModelConfig.objects.get().base_url == dead
    assert "Saved anyway: The address" in saved.content.decode()
    status = saved.content.decode().split('id="status-heading"', 1)[1].split("</section>")[0]
    assert "Not working" in status and "the model is set up but does not answer" in status.lower()
    health = Client().get("/healthz")
    llm = health.json()["checks"]["llm"]
    assert llm["ok"] is False
    assert llm["detail"].startswith("the model is set up but does not answer: The address "
                                    f"{dead} could not be reached")
    assert "start the model server" in llm["hint"]
    assert "llm" not in REQUIRED_FOR_SERVICE  # the portal itself works: no 503 for this
    doctor = check_llm(live=True)
    assert not doctor.ok and f"The address {dead} could not be reached" in doctor.detail
    # The banner for admins says so too, like no model at all.
    home = client_for(team_with_roles["owner"]).get("/").content.decode()
    assert "the model is set up but does not answer" in home


def test_healthz_turns_ok_again_once_the_model_answers(
        site_admin: Any, fake_server: FakeServer) -> None:
    from autocoder.llm.readiness import model_reach_recheck

    fake_server.queue(Reply(status=503, body={"error": "loading"}), chat_reply("ready"))
    client_for(site_admin).post(PAGE, page_form(fake_server.url + "/v1", save_anyway="1"))
    assert not check_llm(live=False).ok

    model_reach_recheck()  # the watchdog's minute (a slow sweep): the model is called again

    assert check_llm(live=False).ok


# -- a run whose model refuses the key is held, in plain words ----------------------------------


def test_a_refused_key_holds_the_run_with_the_installations_words(
        team_with_roles: dict, site_admin: Any, fake_server: FakeServer,
        django_capture_on_commit_callbacks: Any) -> None:
    team, requester = team_with_roles["team"], team_with_roles["member"]
    site_model_config_set(actor=site_admin, provider="openai", base_url=fake_server.url + "/v1",
                          model="coder-7b", api_key="sk-revoked")
    fake_server.queue(Reply(status=401, body={"error": {"message": "Incorrect API key"}}))
    runs = []
    for name in ("first", "second"):
        project = starting.project_create(team=team, requester=requester,
                                           spec=greeter_spec(name=name))
        run = starting.run_start(project=project, dispatch=None, started_by=requester)
        with django_capture_on_commit_callbacks(execute=True):
            stepping.run_step_perform(run_id=run.id, token=run.step_token, dispatch=None)
        runs.append(Run.objects.get(id=run.id))

    for run in runs:
        assert (run.status, run.held_by, run.phase) == (Run.Status.HELD, "model_reach",
                                                        Run.Phase.PLAN)
        assert "refused the API key" in run.error and "sk-revoked" not in run.error
    page = client_for(requester).get(reverse("run_detail", args=[runs[0].pk])).content.decode()
    assert HELD_WORDS in page
    assert "refused" not in page and "could not be retried" not in page
    # Told once: the team's admin and the site admin, one notice each for both runs.
    notices = Notification.objects.filter(kind=Notification.Kind.INSTALLATION)
    assert sorted(n.user_id for n in notices) == sorted([team_with_roles["owner"].pk,
                                                         site_admin.pk])
    assert all("refused the API key" in n.message for n in notices)
    assert notices.get(user=site_admin).url == PAGE
    # The refused call cost nothing and is on record once; the second run, started once the
    # refusal was known, was held before it called anything (no second refused call).
    assert [c.error.split(":")[0] for c in LLMCall.objects.all()] == ["LLMAuthError"]
    assert not runs[1].llm_calls.exists()

    # The key is fixed: the watchdog's check calls the model, and the runs go on.
    fake_server.replies.clear()
    fake_server.queue(chat_reply("1. Write greet.\n2. Test it."))
    site_model_config_set(actor=site_admin, provider="openai", base_url=fake_server.url + "/v1",
                          model="coder-7b", api_key="sk-good", release=False)
    released = holding.runs_held_release(dispatch=None)
    assert sorted(released) == sorted(run.id for run in runs)
    again = Run.objects.get(id=runs[0].id)
    assert (again.status, again.phase, again.iteration) == (Run.Status.RUNNING, Run.Phase.PLAN, 0)
    stepping.run_step_perform(run_id=again.id, token=again.step_token, dispatch=None)
    assert Run.objects.get(id=again.id).phase == Run.Phase.IMPLEMENT  # the plan, made once
    assert fake_server.requests[-1].headers["authorization"] == "Bearer sk-good"


def test_a_request_that_the_model_refuses_is_still_the_runs_failure(
        team_with_roles: dict, site_admin: Any, fake_server: FakeServer) -> None:
    """A 400 (the prompt is too long, say) is not the installation's: the step fails as
    before, and nobody is paged."""
    site_model_config_set(actor=site_admin, provider="openai", base_url=fake_server.url + "/v1",
                          model="coder-7b")
    fake_server.queue(Reply(status=400, body={"error": {"message": "prompt is too long"}}))
    project = starting.project_create(team=team_with_roles["team"],
                                       requester=team_with_roles["member"], spec=greeter_spec())
    run = starting.run_start(project=project, dispatch=None)
    stepping.run_step_perform(run_id=run.id, token=run.step_token, dispatch=None)
    run.refresh_from_db()
    assert run.status != Run.Status.HELD and run.phase == Run.Phase.LEARN
    assert not Notification.objects.filter(kind=Notification.Kind.INSTALLATION).exists()
