"""The interview's other systems (issues 27 and 45): "Does this tool need to talk to other
systems?" on the last page of questions, any number of systems, each with what the tool does
there, its address if the requester knows it ("I don't know, our admin does" is an answer),
what the team provides; and what the spec records (docs/engine.md, "Spec format", `services`).

The wizard is walked through its pages as a requester (Django test client, real database, the
scripted analyst as in tests/projects/test_interviews.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from autocoder.engine.spec import spec_from_dict
from projects.interview import other_systems, spec_assembly
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
SLACK = {"name": "our Slack", "does": "sends", "address": HOOK, "sample": "ok",
         "needs": [{"name": "Channel name", "description": "The channel the summary goes to",
                    "value": "#general"},
                   {"name": "token", "description": "The Slack bot token", "secret": "1"}]}
BOOKINGS = {"name": "Our booking system", "does": "reads", "address": "",
            "sample": '{"hours": 12}',
            "needs": [{"name": "API key", "description": "The booking system's key",
                       "secret": "1"}]}


def section(*systems: dict[str, Any], uses: str = "yes", storage: bool = False,
            action: str = "next") -> dict[str, str]:
    """The section as the browser posts it: every system's fields, its rows and one blank row
    of what the team provides, the count of systems shown."""
    data = {"svc-uses": uses, "svc-count": str(len(systems) or 1), "action": action}
    for index, system in enumerate(systems or [{}]):
        for part in ("name", "address", "sample", "method"):
            data[f"svc-{index}-{part}"] = str(system.get(part, ""))
        if system.get("does"):
            data[f"svc-{index}-does"] = system["does"]
        for row, need in enumerate([*system.get("needs", []), {}]):
            for part in ("name", "description", "value"):
                data[f"svc-{index}-need-{row}-{part}"] = need.get(part, "")
            if need.get("secret"):
                data[f"svc-{index}-need-{row}-secret"] = "1"
    if storage:
        data["svc-storage"] = "1"
    return data


NO_SERVICE = section(uses="no")


def with_service(**changes: str) -> dict[str, str]:
    """One system (our Slack, its address known), with `changes` to the posted fields."""
    return {**section(SLACK, storage=True), **changes}


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


def on_last_page(client: Client, interview: Interview) -> None:
    for data in ANSWERS[:-1]:
        post_page(client, interview, data)


def test_the_question_is_on_the_last_page_and_no_is_the_default(
        team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    on_last_page(client, interview)
    html = page(client.get(reverse("interview_questions", args=[interview.pk])))
    assert "Does this tool need to talk to other systems, like your team chat" in html
    assert 'id="svc-uses-no" name="svc-uses" value="no" checked' in html
    assert '<label for="svc-0-name">What is it, in your words?</label>' in html
    assert "Don't know it?</strong> Leave it empty" in html
    assert "This is a secret (a password, key or token)" in html
    assert '<label for="svc-storage">It must remember things between uses</label>' in html
    assert 'id="sch-how-click" name="sch-how" value="click" checked' in html


def test_one_system_gives_a_spec_with_its_host_settings_secret_and_storage(
        team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    summary = page(walk_to_summary(client, interview, section(SLACK, storage=True)))

    assert ("<dt>Talks to</dt><dd>our Slack: it sends to it, at hooks.slack.com</dd>"
            in summary)
    assert "<dt>Your team enters</dt><dd>channel_name, token (secret)</dd>" in summary
    assert "<dt>Remembers data between uses</dt><dd>yes</dd>" in summary

    spec = start(client, interview)
    assert spec["services"] == {
        "hosts": ["hooks.slack.com"],
        "settings": [
            {"name": "channel_name", "description": "The channel the summary goes to",
             "secret": False},
            {"name": "token", "description": "The Slack bot token", "secret": True}],
        "systems": [{"name": "our Slack", "does": "sends", "host": "hooks.slack.com",
                     "address_setting": None, "needs": ["channel_name", "token"]}],
        "storage": True}
    example = spec["commands"][0]["examples"][0]
    assert example["input"] == {"name": "Ada"}
    assert example["settings"] == {"channel_name": "#general"}  # the secret has no value
    assert example["http"] == [{"method": "POST", "url": HOOK, "status": 200, "text": "ok"}]
    assert "It sends to our Slack at hooks.slack.com." in spec["constraints"]
    checked = spec_from_dict(spec)
    assert checked.services.secret_names == ("token",) and checked.services.storage


def test_two_systems_one_address_unknown_start_and_record_both(team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    summary = page(walk_to_summary(client, interview, section(BOOKINGS, SLACK)))

    assert ("<dt>Talks to</dt><dd>Our booking system: it reads from it, its address: your "
            "team&#x27;s admin enters it when the tool is activated</dd>") in summary
    assert "<dt>Talks to</dt><dd>our Slack: it sends to it, at hooks.slack.com</dd>" in summary
    assert ("our_booking_system_address (the address of Our booking system)" in summary)

    spec = start(client, interview)  # Start does not ask for the unknown address
    services = spec["services"]
    assert services["hosts"] == ["hooks.slack.com"]  # only the address the requester knew
    assert services["systems"] == [
        {"name": "Our booking system", "does": "reads", "host": None,
         "address_setting": "our_booking_system_address", "needs": ["api_key"]},
        {"name": "our Slack", "does": "sends", "host": "hooks.slack.com",
         "address_setting": None, "needs": ["channel_name", "token"]}]
    address = next(s for s in services["settings"] if s["name"] == "our_booking_system_address")
    assert address == {"name": "our_booking_system_address", "secret": False, "kind": "address",
                       "description": "The web address of Our booking system (e.g. "
                                      "https://bookings.example.org)"}
    example = spec["commands"][0]["examples"][0]
    # The tests reach the unknown system at a placeholder address the example gives it.
    assert example["settings"] == {"our_booking_system_address":
                                   "https://our-booking-system.example",
                                   "channel_name": "#general"}
    assert example["http"] == [
        {"method": "GET", "url": "https://our-booking-system.example/", "status": 200,
         "json": {"hours": 12}},
        {"method": "POST", "url": HOOK, "status": 200, "text": "ok"}]
    assert any("whose address the team's admin enters as the setting our_booking_system_address"
               in line for line in spec["constraints"])
    checked = spec_from_dict(spec)
    assert [s.address_setting for s in checked.services.systems] == [
        "our_booking_system_address", None]
    assert checked.testing_strategy == "comprehensive"


def test_adding_and_removing_rows_keeps_what_was_typed(team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    on_last_page(client, interview)

    added = post_page(client, interview, {**ANSWERS[-1], **section(SLACK, action="svc-add")})
    html = page(added)
    assert added.status_code == 200  # the same page, one system more
    assert 'id="svc-1-name" name="svc-1-name" value=""' in html
    assert "autofocus" in html.split('id="svc-1-name"')[1].split(">")[0]
    assert 'value="our Slack"' in html and 'value="Channel name"' in html
    interview.refresh_from_db()
    assert len(interview.state["services"]["systems"]) == 2

    two = section(SLACK, BOOKINGS, action="svc-remove-0")
    removed = page(post_page(client, interview, {**ANSWERS[-1], **two}, group=3))
    assert 'value="Our booking system"' in removed and 'value="our Slack"' not in removed
    assert "autofocus" in removed.split('id="svc-add-system"')[1].split(">")[0]
    interview.refresh_from_db()
    assert [s["name"] for s in interview.state["services"]["systems"]] == [
        "Our booking system"]

    dropped = page(post_page(client, interview, {
        **ANSWERS[-1], **section(SLACK, action="svc-remove-need-0-0")}, group=3))
    assert 'value="Channel name"' not in dropped and 'value="The Slack bot token"' in dropped
    assert "autofocus" in dropped.split('id="svc-0-add-need"')[1].split(">")[0]


def test_an_invalid_address_is_said_next_to_it_and_every_answer_is_kept(
        team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    on_last_page(client, interview)
    bad = {**SLACK, "address": "hooks slack com",
           "needs": [SLACK["needs"][0], {**SLACK["needs"][1], "value": "abc"}]}
    response = post_page(client, interview, {**ANSWERS[-1], **section(bad, storage=True)})
    html = page(response)
    assert response.status_code == 200  # the same page again
    assert 'id="svc-0-address-error"' in html
    assert "The web address must not contain spaces." in html
    assert 'id="svc-0-need-1-name-error"' in html and "Leave the example value empty" in html
    assert 'value="hooks slack com"' in html and 'value="our Slack"' in html
    assert 'value="Channel name"' in html and "Saved as <code>channel_name</code>" in html
    assert 'id="svc-storage" name="svc-storage" value="1" checked' in html
    assert "Standard library only</textarea>" in html
    interview.refresh_from_db()
    assert interview.state["autonomy"] == "full"
    assert interview.state["services"]["systems"][0]["address"] == "hooks slack com"
    assert interview.state["services"]["systems"][0]["needs"][1]["secret"] is True

    fixed = post_page(client, interview, section(SLACK), group=3)
    assert fixed.status_code == 302, page(fixed)


def test_a_named_system_needs_what_the_tool_does_there(team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    on_last_page(client, interview)
    html = page(post_page(client, interview, {**ANSWERS[-1], **section(
        {**BOOKINGS, "does": ""})}))
    assert 'id="svc-0-does-error"' in html and "reads from it, sends to it, or both" in html
    yes_but_nothing = page(post_page(client, interview, section(), group=3))
    assert "Say which system it talks to, or answer" in yes_but_nothing


def test_no_keeps_the_spec_as_it_always_was_even_with_details_typed_before(
        team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    summary = page(walk_to_summary(client, interview, section(
        {**SLACK, "address": "not an address"}, uses="no")))
    assert "<dt>Talks to</dt><dd>no other service</dd>" in summary
    assert "<dt>Remembers data between uses</dt><dd>no</dd>" in summary
    spec = start(client, interview)
    assert "services" not in spec and "schedule" not in spec
    assert spec["commands"][0]["examples"][0] == {
        "input": {"name": "Ada"}, "output": {"message": "Hello, Ada!"}}
    assert not [line for line in spec["constraints"] if "sends to" in line]
    interview.refresh_from_db()  # what was typed before answering no is still there
    assert interview.state["services"]["systems"][0]["name"] == "our Slack"


def test_remembering_without_another_service_is_recorded_alone(
        team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    walk_to_summary(client, interview, section(uses="no", storage=True))
    spec = start(client, interview)
    assert spec["services"] == {"hosts": [], "settings": [], "storage": True}


def test_an_interview_saved_with_one_service_still_gives_its_spec() -> None:
    """The state an interview kept before several systems were asked (issue 27)."""
    state: dict[str, Any] = {
        "name": "hours", "summary": "Post the hours.", "autonomy": "semi", "constraints": "",
        "commands": [{"key": "c1", "name": "post", "description": "", "inputs": "",
                      "outputs": "", "edge_cases": "", "examples": [
                          {"input": "hours: 3", "output": "posted: true", "json": False},
                          {"input": "hours: 4", "output": "posted: true", "json": False}]}],
        "services": {"uses": "yes", "service": "our Slack", "address": HOOK, "method": "POST",
                     "storage": False, "sample": "ok", "settings": [
                         {"name": "token", "description": "The token", "secret": True,
                          "value": ""}]}}
    assembly = spec_assembly.assemble("Post the hours", state, [])
    assert assembly.errors == {}
    assert assembly.spec["services"]["hosts"] == ["hooks.slack.com"]
    assert assembly.spec["services"]["systems"] == [
        {"name": "our Slack", "does": "sends", "host": "hooks.slack.com",
         "address_setting": None, "needs": ["token"]}]
    assert assembly.spec["commands"][0]["examples"][0]["http"] == [
        {"method": "POST", "url": HOOK, "status": 200, "text": "ok"}]
    spec_from_dict(assembly.spec)


@pytest.mark.parametrize(("typed", "name"), [
    ("Channel name", "channel_name"), ("API token", "api_token"), ("token", "token"),
    ("2FA code", "setting_2fa_code"), ("Café", "cafe")])
def test_names_typed_as_words_become_setting_names(typed: str, name: str) -> None:
    from projects.interview.system_answers import setting_name

    assert setting_name(typed) == name


@pytest.mark.parametrize(("typed", "problem"), [
    ("slack", "is not a whole web address"),
    ("ftp://files.example.com", "the scheme 'ftp' is not allowed"),
    ("me@hooks.slack.com", "must not contain a user name or password"),
])
def test_addresses_that_cannot_be_used_say_why(typed: str, problem: str) -> None:
    from projects.interview.system_answers import read_address

    assert problem in read_address(typed).problem


def test_the_analyst_is_told_what_the_person_said_about_other_systems() -> None:
    from projects.interview.analyst import analyst_messages

    state: dict[str, Any] = {"commands": [], "services": {
        "uses": "yes", "storage": True, "systems": [
            {"name": "our Slack", "does": "sends", "address": HOOK, "needs": [
                {"name": "token", "description": "The token", "secret": True, "value": ""}]},
            {"name": "the booking system", "does": "reads", "address": ""}]},
        "schedule": {"how": "weekly", "days": ["mon"], "time": "08:00",
                     "period": "last_week"}}
    system, user = analyst_messages("Post the hours to our chat", state, [])
    assert "whether it talks to another system" in system.content  # so it does not ask again
    assert "how often it runs" in system.content
    assert "Talks to: our Slack: it sends to it, at hooks.slack.com" in user.content
    assert "Talks to: the booking system: it reads from it, its address:" in user.content
    assert "Your team enters: token (secret)" in user.content
    assert "Remembers data between uses: yes" in user.content
    assert "Runs: every week on Monday at 08:00" in user.content
    assert "Each run covers: Last week (Monday to Sunday)" in user.content
    plain, _ = analyst_messages("Count words", {"commands": []}, [])
    assert "Talks to" not in analyst_messages("Count words", {"commands": []}, [])[1].content
    assert plain.content == system.content


def test_twenty_systems_at_most() -> None:
    state = {"services": {"uses": "yes", "systems": [
        {"name": f"system {n}", "does": "reads", "address": f"s{n}.example.org"}
        for n in range(21)]}}
    assert "at most 20 systems" in other_systems.services_errors(state)["svc-systems"][0]
