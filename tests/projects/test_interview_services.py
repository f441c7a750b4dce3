"""Issue 27 in the interview: "Does this tool need to talk to another system?" on the last page
of questions, and what the spec records (docs/engine.md, "Spec format", `services`).

The wizard is walked through its pages as a requester (Django test client, real database, the
scripted analyst as in tests/projects/test_interviews.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from autocoder.engine.spec import spec_from_dict
from projects.interview import other_systems
from projects.models import Interview
from runs.models import Project
from tests.projects.test_interviews import (
    ANSWERS,
    client_for,
    page,
    post_page,
    script_file,  # noqa: F401  (a fixture, used by every test here)
    start_interview,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("script_file")]

HOOK = "https://hooks.slack.com/services/T1/B2"

# The browser posts every field of the section, the blank rows included.
NO_SERVICE = {
    "svc-uses": "no", "svc-service": "", "svc-address": "", "svc-method": "POST",
    "svc-sample": "",
    "svc-setting-0-name": "", "svc-setting-0-description": "", "svc-setting-0-value": "",
    "svc-setting-1-name": "", "svc-setting-1-description": "", "svc-setting-1-value": "",
}


def with_service(**changes: str) -> dict[str, str]:
    data = {
        **NO_SERVICE, "svc-uses": "yes", "svc-service": "our Slack", "svc-address": HOOK,
        "svc-setting-0-name": "Channel name",
        "svc-setting-0-description": "The channel the summary goes to",
        "svc-setting-0-value": "#general",
        "svc-setting-1-name": "token", "svc-setting-1-description": "The Slack bot token",
        "svc-setting-1-secret": "1",
        "svc-storage": "1", "svc-sample": "ok",
    }
    data.update(changes)
    return data


def walk_to_summary(client: Client, interview: Interview, services: dict[str, str]) -> Any:
    """Pages 1-4 (the section is on page 4), then the analyst's question."""
    for data in ANSWERS[:-1]:
        assert post_page(client, interview, data).status_code == 302
    response = post_page(client, interview, {**ANSWERS[-1], **services})
    assert response.status_code == 302, page(response)
    post_page(client, interview, {"q-a1-1": "Casual.", "q-a1-2": ""})
    return client.get(reverse("interview_summary", args=[interview.pk]))


def start(client: Client, interview: Interview) -> dict[str, Any]:
    response = client.post(reverse("interview_start", args=[interview.pk]))
    assert response.status_code == 302, page(response)
    return Project.objects.get(pk=interview.project_id).spec


def test_the_question_is_on_the_last_page_and_no_is_the_default(
        team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    for data in ANSWERS[:-1]:
        post_page(client, interview, data)
    html = page(client.get(reverse("interview_questions", args=[interview.pk])))
    assert "Does this tool need to talk to another system, like your team chat" in html
    assert 'id="svc-uses-no" name="svc-uses" value="no" checked' in html
    assert '<label for="svc-address">Its web address</label>' in html
    assert 'This is a secret (a password, key or token)' in html
    assert '<label for="svc-storage">It must remember things between uses</label>' in html


def test_a_service_gives_a_spec_with_its_host_settings_secret_and_storage(
        team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    summary = page(walk_to_summary(client, interview, with_service()))

    assert "<dt>Talks to</dt><dd>hooks.slack.com (our Slack)</dd>" in summary
    assert "<dt>Your team enters</dt><dd>channel_name, token (secret)</dd>" in summary
    assert "<dt>Remembers data between uses</dt><dd>yes</dd>" in summary

    spec = start(client, interview)
    assert spec["services"] == {
        "hosts": ["hooks.slack.com"],
        "settings": [
            {"name": "channel_name", "description": "The channel the summary goes to",
             "secret": False},
            {"name": "token", "description": "The Slack bot token", "secret": True}],
        "storage": True}
    example = spec["commands"][0]["examples"][0]
    assert example["input"] == {"name": "Ada"}
    assert example["settings"] == {"channel_name": "#general"}  # the secret has no value
    assert example["http"] == [{"method": "POST", "url": HOOK, "status": 200, "text": "ok"}]
    assert "It talks to our Slack at hooks.slack.com." in spec["constraints"]
    checked = spec_from_dict(spec)
    assert checked.services.secret_names == ("token",) and checked.services.storage


def test_a_sample_in_json_for_a_bare_host_is_answered_at_its_root(
        team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    walk_to_summary(client, interview, with_service(
        **{"svc-address": "api.example.com:8443", "svc-method": "GET",
           "svc-sample": '{"events": []}', "svc-storage": ""}))
    spec = start(client, interview)
    assert spec["services"]["hosts"] == ["api.example.com:8443"]
    assert spec["services"]["storage"] is False
    assert spec["commands"][0]["examples"][1]["http"] == [
        {"method": "GET", "url": "https://api.example.com:8443/", "status": 200,
         "json": {"events": []}}]


def test_an_invalid_address_is_said_next_to_it_and_every_answer_is_kept(
        team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    for data in ANSWERS[:-1]:
        post_page(client, interview, data)
    response = post_page(client, interview, {
        **ANSWERS[-1], **with_service(**{"svc-address": "hooks slack com",
                                         "svc-setting-1-value": "abc"})})
    html = page(response)
    assert response.status_code == 200  # the same page again
    assert 'id="svc-address-error"' in html
    assert "The web address must not contain spaces." in html
    assert 'id="svc-setting-1-name-error"' in html and "Leave the example value empty" in html
    assert 'value="hooks slack com"' in html and 'value="our Slack"' in html
    assert 'value="Channel name"' in html and "Saved as <code>channel_name</code>" in html
    assert 'id="svc-storage" name="svc-storage" value="1" checked' in html
    assert "Standard library only</textarea>" in html
    interview.refresh_from_db()
    assert interview.state["autonomy"] == "full"
    assert interview.state["services"]["address"] == "hooks slack com"
    assert interview.state["services"]["settings"][1]["secret"] is True

    fixed = post_page(client, interview, with_service(**{"svc-address": HOOK}), group=3)
    assert fixed.status_code == 302, page(fixed)


def test_no_keeps_the_spec_as_it_always_was_even_with_details_typed_before(
        team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    summary = page(walk_to_summary(client, interview, with_service(
        **{"svc-uses": "no", "svc-storage": "", "svc-address": "not an address"})))
    assert "<dt>Talks to</dt><dd>no other service</dd>" in summary
    assert "<dt>Remembers data between uses</dt><dd>no</dd>" in summary
    spec = start(client, interview)
    assert "services" not in spec
    assert spec["commands"][0]["examples"][0] == {
        "input": {"name": "Ada"}, "output": {"message": "Hello, Ada!"}}
    assert not [line for line in spec["constraints"] if "talks to" in line]
    interview.refresh_from_db()  # what was typed before answering no is still there
    assert interview.state["services"]["service"] == "our Slack"


def test_remembering_without_another_service_is_recorded_alone(
        team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    walk_to_summary(client, interview, {**NO_SERVICE, "svc-storage": "1"})
    spec = start(client, interview)
    assert spec["services"] == {"hosts": [], "settings": [], "storage": True}


@pytest.mark.parametrize(("typed", "name"), [
    ("Channel name", "channel_name"), ("API token", "api_token"), ("token", "token"),
    ("2FA code", "setting_2fa_code"), ("Café", "cafe")])
def test_names_typed_as_words_become_setting_names(typed: str, name: str) -> None:
    assert other_systems.setting_name(typed) == name


@pytest.mark.parametrize(("typed", "problem"), [
    ("", "Give the service's web address"),
    ("slack", "is not a whole web address"),
    ("ftp://files.example.com", "the scheme 'ftp' is not allowed"),
    ("me@hooks.slack.com", "must not contain a user name or password"),
])
def test_addresses_that_cannot_be_used_say_why(typed: str, problem: str) -> None:
    assert problem in other_systems.read_address(typed).problem


def test_the_analyst_is_told_what_the_person_said_about_other_systems() -> None:
    from projects.interview.analyst import analyst_messages

    state: dict[str, Any] = {"commands": [], "services": {
        "uses": "yes", "service": "our Slack", "address": "https://hooks.slack.com/services/T1",
        "storage": True, "settings": [{"name": "token", "description": "The token",
                                       "secret": True, "value": ""}]}}
    system, user = analyst_messages("Post the hours to our chat", state, [])
    assert "whether it talks to another system" in system.content  # so it does not ask again
    assert "Talks to: hooks.slack.com (our Slack)" in user.content
    assert "Your team enters: token (secret)" in user.content
    assert "Remembers data between uses: yes" in user.content
    plain, _ = analyst_messages("Count words", {"commands": []}, [])
    assert "Talks to" not in analyst_messages("Count words", {"commands": []}, [])[1].content
    assert plain.content == system.content
