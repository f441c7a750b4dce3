"""The Model page (/settings/model/) through the Django test client, on the real database.

"Test connection" makes real HTTP calls through the real OpenAI-compatible provider to the
loopback fake server (tests/llm/fakeserver.py), which stands in for the hosted and self-run
model servers we cannot reach here; an unreachable address is a real port nobody listens on.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from autocoder.llm.config import role_config
from autocoder.llm.models import SiteModelConfig
from autocoder.llm.selectors import SITE_MODEL_ACTION
from teams.models import AuditEntry
from tests.factories import UserFactory
from tests.live import free_port
from tests.llm.conftest import chat_reply
from tests.llm.fakeserver import FakeServer, Reply

pytestmark = pytest.mark.django_db

PAGE = "/settings/model/"
TEST = "/settings/model/test/"
KEY = "sk-page-secret-4f9a"


def chat(text: str, *, prompt_tokens: int = 20) -> Reply:
    return chat_reply(text, prompt_tokens=prompt_tokens)


@pytest.fixture(autouse=True)
def no_model(no_model_in_environment: Any) -> Any:
    return no_model_in_environment


@pytest.fixture
def staff() -> Client:
    client = Client()
    client.force_login(UserFactory(is_staff=True))
    return client


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def form(**values: str) -> dict[str, str]:
    # Saved anyway unless a test says otherwise: most addresses here lead nowhere (the check
    # on save has its own tests below).
    return {"provider": "openai", "base_url": "", "new_api_key": "", "model": "",
            "save_anyway": "1", **values}


def html(response: Any) -> str:
    return response.content.decode()


# -- access --------------------------------------------------------------------------------------


def test_only_site_admins_reach_the_page(staff: Client, team_with_roles: dict) -> None:
    assert staff.get(PAGE).status_code == 200
    superuser = UserFactory(is_superuser=True)
    assert client_for(superuser).get(PAGE).status_code == 200
    for name in ("owner", "member", "outsider"):  # a team admin is not a site admin
        client = client_for(team_with_roles[name])
        assert client.get(PAGE).status_code == 404
        assert client.post(PAGE, form(model="m")).status_code == 404
        assert client.post(TEST, form(model="m")).status_code == 404
    assert not SiteModelConfig.objects.exists()
    anonymous = Client().get(PAGE)
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]


def test_the_navigation_links_the_page_for_site_admins_only(staff: Client,
                                                           team_with_roles: dict) -> None:
    assert f'href="{PAGE}"' in html(staff.get("/"))
    assert f'href="{PAGE}"' not in html(client_for(team_with_roles["owner"]).get("/"))


# -- saving --------------------------------------------------------------------------------------


def test_a_saved_key_is_sealed_write_only_and_kept_when_left_empty(staff: Client) -> None:
    saved = staff.post(PAGE, form(base_url="http://gpu-box:8000/v1", model="coder-7b",
                                  new_api_key=KEY))
    assert saved.status_code == 302
    site = SiteModelConfig.objects.get()
    assert site.api_key_sealed.startswith("sealed:v1:") and KEY not in site.api_key_sealed
    assert site.api_key == KEY
    page = html(staff.get(PAGE))
    assert KEY not in page and "Stored key: set." in page
    assert 'name="new_api_key"' in page and 'value="' + KEY not in page

    staff.post(PAGE, form(base_url="http://gpu-box:8000/v1", model="coder-14b"))  # key empty
    site.refresh_from_db()
    assert (site.model, site.api_key) == ("coder-14b", KEY)
    staff.post(PAGE, form(base_url="http://gpu-box:8000/v1", model="coder-14b",
                          clear_api_key="on"))
    site.refresh_from_db()
    assert site.api_key_sealed == ""


def test_every_change_is_in_the_audit_log_without_the_key(staff: Client) -> None:
    staff.post(PAGE, form(base_url="http://gpu-box:8000/v1", model="coder-7b",
                          new_api_key=KEY, model_implementer="coder-32b"))
    staff.post(PAGE, form(base_url="http://gpu-box:8000/v1", model="coder-7b",
                          model_implementer="coder-32b"))  # nothing changed: no entry
    [entry] = AuditEntry.objects.filter(action=SITE_MODEL_ACTION)
    assert entry.team_id is None and entry.actor_name.startswith("user")
    assert entry.after == {"provider": "openai", "base_url": "http://gpu-box:8000/v1",
                           "model": "coder-7b", "role_models": {"implementer": "coder-32b"},
                           "api_key": "set (new key entered)"}
    assert entry.before["api_key"] == "not set"
    assert KEY not in json.dumps([entry.before, entry.after])
    assert "coder-32b" in html(staff.get(PAGE))  # the page lists recent changes


def test_the_page_sets_each_roles_model(staff: Client) -> None:
    staff.post(PAGE, form(base_url="http://gpu-box:8000/v1", model="coder-7b",
                          model_implementer="coder-32b", new_api_key=KEY))
    implementer, tester = role_config("implementer"), role_config("tester")
    assert (implementer.provider, implementer.model, implementer.api_key) == (
        "openai", "coder-32b", KEY)
    assert (tester.model, tester.base_url) == ("coder-7b", "http://gpu-box:8000/v1")


def test_a_remote_set_up_that_cannot_work_is_not_saved(staff: Client) -> None:
    response = staff.post(PAGE, form(base_url="http://gpu-box:8000/v1"))  # no model name
    assert response.status_code == 200
    assert "This set-up cannot work: the openai provider has no model name" in html(response)
    response = staff.post(PAGE, form(provider="anthropic", model="claude-sonnet-4-5"))
    assert "the Anthropic provider has no API key" in html(response)
    assert not SiteModelConfig.objects.exists()


def test_a_local_model_is_stored_as_the_absolute_path_of_its_file(staff: Client) -> None:
    relative = staff.post(PAGE, form(provider="llamacpp", model="models/coder.gguf"))
    assert "absolute path" in html(relative) and not SiteModelConfig.objects.exists()
    staff.post(PAGE, form(provider="llamacpp", model="/srv/models/coder.gguf"))
    assert role_config("analyst").provider == "llamacpp"
    assert role_config("analyst").model == "/srv/models/coder.gguf"


# -- the environment wins ------------------------------------------------------------------------


def test_values_from_the_environment_win_and_show_read_only(
        staff: Client, no_model_in_environment: Any) -> None:
    env = no_model_in_environment
    env.LLM_BASE_URL, env.LLM_API_KEY = "http://env-server:8000/v1", "env-key-77"
    env.LLM_ROLE_OVERRIDES = {"reviewer": {"model": "env-reviewer"}}
    page = html(staff.get(PAGE))
    assert "Set by LLM_BASE_URL in the environment, which wins over this page." in page
    assert "Set by LLM_API_KEY in the environment" in page
    assert "Set by LLM_MODEL_REVIEWER in the environment" in page
    assert "env-key-77" not in page
    assert 'value="http://env-server:8000/v1"' in page and "disabled" in page

    staff.post(PAGE, form(base_url="http://page-server/v1", model="page-model",
                          model_reviewer="page-reviewer", new_api_key=KEY))
    site = SiteModelConfig.objects.get()
    assert site.base_url == "" and site.api_key == "" and "reviewer" not in site.role_models
    analyst, reviewer = role_config("analyst"), role_config("reviewer")
    assert (analyst.base_url, analyst.api_key, analyst.model) == (
        "http://env-server:8000/v1", "env-key-77", "page-model")
    assert reviewer.model == "env-reviewer"


def test_page_values_saved_for_another_provider_are_not_used(
        staff: Client, no_model_in_environment: Any) -> None:
    """A key belongs to its endpoint: the page's Anthropic key never goes to the
    environment's OpenAI-compatible server."""
    staff.post(PAGE, form(provider="anthropic", model="claude-sonnet-4-5", new_api_key=KEY))
    no_model_in_environment.LLM_PROVIDER = "openai"
    no_model_in_environment.LLM_BASE_URL = "http://ollama:11434/v1"
    config = role_config("analyst")
    assert (config.provider, config.api_key, config.model) == ("openai", "", "")
    page = html(staff.get(PAGE))
    assert "were saved for the provider \u201canthropic\u201d" in page


# -- test connection -----------------------------------------------------------------------------


def test_test_connection_calls_the_model_and_shows_its_reply_and_latency(
        staff: Client, fake_server: FakeServer) -> None:
    # The word, the word held to a schema, then one token with a system message and one
    # without (autocoder.llm.system_role): more tokens with it, so the model reads it.
    fake_server.queue(chat("ready"), chat("ready"), chat("yes", prompt_tokens=31),
                      chat("yes", prompt_tokens=12))
    response = staff.post(TEST, form(base_url=fake_server.url + "/v1", model="coder-7b",
                                     new_api_key=KEY), HTTP_HX_REQUEST="true")
    body = html(response)
    assert response.status_code == 200 and body.lstrip().startswith('<div id="test-result"')
    assert "Works" in body and "It replied \u201cready\u201d in" in body and " ms." in body
    request, held, with_system, without = fake_server.requests
    assert [m["role"] for m in with_system.body["messages"]] == ["system", "user"]
    assert [m["role"] for m in without.body["messages"]] == ["user"]
    assert "the model reads each role's instructions as its system message" in body
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert "response_format" not in request.body
    assert held.body["response_format"]["type"] == "json_schema"
    assert "Constrained replies: yes (json_schema)" in body
    assert request.body["model"] == "coder-7b"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert not SiteModelConfig.objects.exists()  # testing saves nothing


def test_test_connection_uses_the_stored_key_and_works_without_javascript(
        staff: Client, fake_server: FakeServer) -> None:
    staff.post(PAGE, form(base_url=fake_server.url + "/v1", model="coder-7b",
                          new_api_key=KEY))
    fake_server.queue(chat("ready"))
    response = staff.post(TEST, form(base_url=fake_server.url + "/v1", model="coder-7b"))
    assert "<h1>Model</h1>" in html(response) and "It replied \u201cready\u201d" in html(response)
    assert fake_server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_test_connection_names_a_refused_key(staff: Client, fake_server: FakeServer) -> None:
    fake_server.queue(Reply(status=401, body={"error": {"message": "Incorrect API key"}}))
    body = html(staff.post(TEST, form(base_url=fake_server.url + "/v1", model="coder-7b",
                                      new_api_key="sk-wrong"), HTTP_HX_REQUEST="true"))
    assert "Failed" in body and "refused the API key" in body
    assert "enter the right API key" in body and "sk-wrong" not in body


def test_test_connection_names_an_unknown_model(staff: Client, fake_server: FakeServer) -> None:
    fake_server.queue(Reply(status=404, body={"error": {"message": "model 'nope' not found"}}))
    body = html(staff.post(TEST, form(base_url=fake_server.url + "/v1", model="nope"),
                           HTTP_HX_REQUEST="true"))
    assert "does not know the model \u201cnope\u201d" in body


def test_test_connection_names_an_unreachable_address(staff: Client) -> None:
    address = f"http://127.0.0.1:{free_port()}/v1"
    body = html(staff.post(TEST, form(base_url=address, model="coder-7b"),
                           HTTP_HX_REQUEST="true"))
    assert f"The address {address} could not be reached" in body
    assert "start the model server, or correct the base URL" in body


def test_test_connection_without_a_model_says_what_is_missing(staff: Client) -> None:
    body = html(staff.post(TEST, form(provider=""), HTTP_HX_REQUEST="true"))
    assert "Not called: no model is set up." in body


# -- a stored key goes only to the address it was saved with --------------------------------------


@pytest.fixture
def elsewhere() -> Iterator[FakeServer]:
    """A second model server (another port: another address), recording what it receives."""
    server = FakeServer().start()
    yield server
    server.stop()


def keys_sent(server: FakeServer) -> list[str]:
    return [request.headers.get("authorization", "") for request in server.requests]


def saved_with_key(staff: Client, server: FakeServer) -> None:
    saved = staff.post(PAGE, form(base_url=server.url + "/v1", model="coder-7b",
                                  new_api_key=KEY))
    assert saved.status_code == 302 and SiteModelConfig.objects.get().api_key == KEY
    assert keys_sent(server) == [f"Bearer {KEY}"]  # the check on save, with the key typed
    server.requests.clear()


def test_testing_another_address_with_the_key_left_empty_sends_no_key_there(
        staff: Client, fake_server: FakeServer, elsewhere: FakeServer) -> None:
    saved_with_key(staff, fake_server)
    elsewhere.queue(chat("ready"))
    body = html(staff.post(TEST, form(base_url=elsewhere.url + "/v1", model="coder-7b"),
                           HTTP_HX_REQUEST="true"))
    # The word, the word held to a schema (constrained replies) and the two calls that
    # measure whether it reads system messages: none with the key.
    assert len(elsewhere.requests) == 4 and KEY not in " ".join(keys_sent(elsewhere))
    assert (f"the saved key is only sent to {fake_server.url}/v1; type the key to test this "
            "address with it") in body
    assert SiteModelConfig.objects.get().api_key == KEY  # testing changes nothing


def test_a_key_typed_for_another_address_is_sent_there(
        staff: Client, fake_server: FakeServer, elsewhere: FakeServer) -> None:
    saved_with_key(staff, fake_server)
    elsewhere.queue(chat("ready"))
    body = html(staff.post(TEST, form(base_url=elsewhere.url + "/v1", model="coder-7b",
                                      new_api_key="sk-typed-for-elsewhere"),
                           HTTP_HX_REQUEST="true"))
    assert keys_sent(elsewhere) == ["Bearer sk-typed-for-elsewhere"] * 4
    assert "only sent to" not in body


def test_the_same_server_gets_the_stored_key_whatever_the_path(
        staff: Client, fake_server: FakeServer) -> None:
    saved_with_key(staff, fake_server)
    fake_server.queue(chat("ready"))
    body = html(staff.post(TEST, form(base_url=fake_server.url + "/openai/v1", model="coder-7b"),
                           HTTP_HX_REQUEST="true"))
    assert keys_sent(fake_server) == [f"Bearer {KEY}"] * 4 and "only sent to" not in body


def test_saving_another_address_without_a_key_removes_the_stored_key(
        staff: Client, fake_server: FakeServer, elsewhere: FakeServer) -> None:
    saved_with_key(staff, fake_server)
    response = staff.post(PAGE, form(base_url=elsewhere.url + "/v1", model="coder-7b"),
                          follow=True)
    site = SiteModelConfig.objects.get()
    assert (site.base_url, site.api_key_sealed) == (elsewhere.url + "/v1", "")
    assert (f"the saved key was only sent to {fake_server.url}/v1, so it was removed"
            in html(response))
    elsewhere.queue(chat("ready"))
    staff.post(TEST, form(base_url=elsewhere.url + "/v1", model="coder-7b"))  # what is stored
    # The check on save and the test (the word, held to a schema, the two system-message
    # measures): no key sent there.
    assert len(elsewhere.requests) == 5 and KEY not in " ".join(keys_sent(elsewhere))
    assert role_config("implementer").api_key == ""  # nor do the runs send it there


def test_a_local_model_keeps_the_key_for_a_switch_back_to_its_address(
        staff: Client, fake_server: FakeServer, tmp_path: Any) -> None:
    saved_with_key(staff, fake_server)
    staff.post(PAGE, form(provider="llamacpp", base_url=fake_server.url + "/v1",
                          model=str(tmp_path / "coder.gguf")))
    assert SiteModelConfig.objects.get().api_key == KEY  # a local model sends it nowhere
    fake_server.queue(chat("ready"))
    staff.post(TEST, form(base_url=fake_server.url + "/v1", model="coder-7b"))
    assert keys_sent(fake_server) == [f"Bearer {KEY}"] * 4


def test_another_provider_on_its_own_service_does_not_get_the_key(
        staff: Client, fake_server: FakeServer) -> None:
    """A key saved for a self-run server is not sent to Anthropic's (an empty address)."""
    saved_with_key(staff, fake_server)
    body = html(staff.post(TEST, form(provider="anthropic", model="claude-x"),
                           HTTP_HX_REQUEST="true"))
    assert "the saved key is only sent to" in body
    assert "Not called: the Anthropic provider has no API key." in body


# -- the banner ----------------------------------------------------------------------------------


def test_admins_see_a_banner_while_no_model_works(staff: Client, team_with_roles: dict,
                                                  fake_server: FakeServer) -> None:
    home = html(staff.get("/"))
    assert 'id="model-banner"' in home and "no model is set up" in home
    assert f'<a href="{PAGE}">Set up the model</a>' in home
    team_admin = html(client_for(team_with_roles["owner"]).get("/"))
    assert 'id="model-banner"' in team_admin and "Ask a site administrator" in team_admin
    assert 'id="model-banner"' not in html(client_for(team_with_roles["member"]).get("/"))

    fake_server.queue(chat("ready"))  # it answers the check on save
    staff.post(PAGE, form(base_url=fake_server.url + "/v1", model="coder-7b"))
    assert 'id="model-banner"' not in html(staff.get("/"))


def test_test_connection_says_when_the_server_refuses_constrained_replies(
        staff: Client, fake_server: FakeServer) -> None:
    no = Reply(status=400, body={"error": {"message": "response_format is not supported"}})
    fake_server.queue(chat("ready"), no, no)
    body = html(staff.post(TEST, form(base_url=fake_server.url + "/v1", model="coder-7b"),
                           HTTP_HX_REQUEST="true"))
    assert "Works" in body and "Constrained replies: no." in body
    assert "response_format is not supported" in body and "fenced blocks" in body
    # Then the first system-message measure, refused too: that is left unknown.
    assert [r.body.get("response_format", {}).get("type") for r in fake_server.requests] == [
        None, "json_schema", "json_object", None]
    assert "Instructions:" not in body
