"""Ask for a change where the problem is seen (issue 29): from a call in the log or a result
(its input and answer attached), from the marketplace page of a public plugin (the request
goes to the team that makes it), and what the owning team does with it: start a change run
from the version in use, or decline with a reason the asker reads. The plugin runs for real in
the sandbox for the call."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.urls import reverse

from projects.selectors.inbox import inbox_page
from runs.models import Project
from teams.models import AuditEntry, Notification
from tests.tools.conftest import client_for, publish_version
from tools.models import Activation, ChangeRequest, Invocation
from tools.services.activations import activation_decide, activation_request
from tools.services.invocations import invocation_perform

pytestmark = pytest.mark.django_db(transaction=True)

ASK = "tools:change_ask"


def ask_url(query: str = "") -> str:
    return reverse(ASK, args=["month-totals"]) + query


def a_call(client: Any) -> Invocation:
    """The requester adds up a CSV through the form; the worker runs it in the sandbox."""
    csv = io.BytesIO(b"month,amount\nJan,2\nJan,3.5\nFeb,1\n")
    csv.name = "expenses.csv"
    response = client.post(reverse("tools:run", args=["acme", "month-totals", "totals"]),
                           {"totals-rows__file": csv})
    assert response.status_code == 302, response.content.decode()[:2000]
    invocation = Invocation.objects.latest("pk")
    invocation_perform(invocation_id=invocation.pk)
    invocation.refresh_from_db()
    assert invocation.status == "ok", invocation.error
    return invocation


def in_inbox(user: Any) -> list[str]:
    return [f"{item.what}: {item.subject} ({item.requested_by})"
            for item in inbox_page(user).object_list]


def test_asking_from_a_call_attaches_its_input_and_what_came_back(
        active: Activation, world: dict[str, Any]) -> None:
    client = client_for(world["requester"])
    call = a_call(client)
    # The log and the result both offer it, for this call.
    for page in (reverse("tools:log", args=["acme", "month-totals"]),
                 reverse("tools:result", args=["acme", "month-totals", call.pk])):
        assert f"?team=acme&amp;invocation={call.pk}" in client.get(page).content.decode()
    form = client.get(ask_url(f"?team=acme&invocation={call.pk}"))
    html = form.content.decode()
    assert form.status_code == 200
    assert "What did you expect instead" in html and "What came back" in html
    assert "&quot;Feb&quot;" in html and "5.5" in html  # its input and its answer, shown

    sent = client.post(ask_url(), {
        "team": "acme", "invocation": str(call.pk), "version": "1.0.0",
        "description": "Amounts in cents should be added up as euros.",
        "keep": "The order of the months.",
        "input": json.dumps(call.payload),
        "expected": '{"totals": [{"month": "Jan", "total": 0.055}, '
                    '{"month": "Feb", "total": 0.01}]}'})
    assert sent.status_code == 302, sent.content.decode()[:3000]
    asked = ChangeRequest.objects.get()
    assert sent["Location"] == reverse("tools:change", args=[asked.pk])
    assert (asked.team, asked.from_team, asked.asked_by) == (world["acme"], world["acme"],
                                                             world["requester"])
    assert asked.invocation == call and asked.version == active.version
    assert asked.status == "open" and asked.keep == "The order of the months."
    [case] = asked.cases
    assert case["command"] == "totals" and case["input"] == call.payload
    assert case["got"] == call.output and case["failed"] is False
    assert case["expected"]["totals"][0] == {"month": "Jan", "total": 0.055}

    # The team's reviewers are told and find it in Reviews; the asker reads it on its page.
    assert "Change asked: month-totals (acme-requester)" in in_inbox(world["reviewer"])
    assert Notification.objects.filter(user=world["reviewer"], kind="review_requested",
                                       url=reverse("tools:change", args=[asked.pk])).exists()
    page = client.get(reverse("tools:change", args=[asked.pk])).content.decode()
    assert "Amounts in cents" in page and "Waiting for the plugin" in page
    assert "Start a change run" not in page  # a requester does not decide it
    assert AuditEntry.objects.filter(action="tool.change_asked", team=world["acme"]).exists()


def test_a_failed_call_brings_its_error_as_what_came_back(
        active: Activation, world: dict[str, Any]) -> None:
    client = client_for(world["requester"])
    response = client.post(reverse("tools:run", args=["acme", "month-totals", "fail"]), {})
    assert response.status_code == 302
    call = Invocation.objects.latest("pk")
    invocation_perform(invocation_id=call.pk)
    sent = client.post(ask_url(), {"team": "acme", "invocation": str(call.pk),
                                   "description": "It should not fail on an empty input.",
                                   "input": "{}", "expected": "an empty list of totals"})
    assert sent.status_code == 302, sent.content.decode()[:3000]
    [case] = ChangeRequest.objects.get().cases
    assert case["failed"] is True and "there is nothing to add up" in case["got"]
    # Plain words say what was expected; they are not the answer itself: the reviewer reads
    # them and writes the exact answer, which only then makes the example a test.
    assert "expected" not in case and case["expected_words"] == "an empty list of totals"
    page = client_for(world["reviewer"]).get(
        reverse("tools:change", args=[ChangeRequest.objects.get().pk])).content.decode()
    assert "What they expected, in their words</strong>: an empty list of totals" in page
    assert 'for="expected-0"' in page  # the field for the exact answer


def use_from_other_team(world: dict[str, Any], version: Any) -> None:
    asked = activation_request(team=world["other"], version=version, user=world["other_admin"])
    activation_decide(activation=asked, user=world["other_admin"], approve=True)


def test_another_teams_request_of_a_public_plugin_goes_to_the_owning_team(
        active: Activation, world: dict[str, Any]) -> None:
    use_from_other_team(world, active.version)
    outsider = client_for(world["other_admin"])
    plugin_page = outsider.get(reverse("marketplace:plugin", args=["month-totals"]))
    assert ask_url("?version=1.0.0").replace("&", "&amp;") in plugin_page.content.decode()
    sent = outsider.post(ask_url(), {
        "team": "other", "version": "1.0.0", "description": "Add a column with the VAT.",
        "command": "totals", "input": '{"rows": [{"month": "Jan", "amount": 10}]}',
        "expected": '{"totals": [{"month": "Jan", "total": 10, "vat": 2.1}]}'})
    assert sent.status_code == 302, sent.content.decode()[:3000]
    asked = ChangeRequest.objects.get()
    assert asked.team == world["acme"] and asked.from_team == world["other"]
    assert asked.cases[0]["input"] == {"rows": [{"month": "Jan", "amount": 10}]}

    # The owning team's reviewers see it in Reviews, with where it comes from.
    assert "Change asked: month-totals (other-admin (Other))" in in_inbox(world["reviewer"])
    assert in_inbox(world["other_admin"]) == []  # not the asker's team's decision
    # The asker sees their request's status, never a way to start it or the owner's run.
    page = outsider.get(reverse("tools:change", args=[asked.pk]))
    assert page.status_code == 200 and "Waiting for the plugin" in page.content.decode()
    assert "Start a change run" not in page.content.decode()
    start = outsider.post(reverse("tools:change", args=[asked.pk]), {"decision": "start"})
    assert start.status_code == 404
    asked.refresh_from_db()
    assert asked.status == "open" and asked.project is None
    listing = outsider.get(reverse("tools:changes", args=["other"])).content.decode()
    assert "Add a column with the VAT" in listing
    # Both teams' tool pages list it with its status.
    for client, team in ((outsider, "other"), (client_for(world["requester"]), "acme")):
        tool_page = client.get(reverse("tools:detail", args=[team, "month-totals"]))
        assert "Add a column with the VAT" in tool_page.content.decode()


def test_a_team_only_plugin_does_not_exist_for_another_team(
        world: dict[str, Any]) -> None:
    version = publish_version(world["acme"], visibility="team")
    own = client_for(world["requester"])
    assert own.get(ask_url("?team=acme")).status_code == 200
    sent = own.post(ask_url(), {"team": "acme", "description": "Round to cents."})
    assert sent.status_code == 302
    asked = ChangeRequest.objects.get()
    assert asked.version == version and asked.cases == []

    outsider = client_for(world["other_admin"])
    assert outsider.get(ask_url()).status_code == 404
    assert outsider.post(ask_url(), {"team": "other", "description": "x"}).status_code == 404
    assert outsider.get(reverse("tools:change", args=[asked.pk])).status_code == 404
    assert ChangeRequest.objects.count() == 1


def test_a_call_of_another_team_cannot_be_attached(
        active: Activation, world: dict[str, Any]) -> None:
    call = a_call(client_for(world["requester"]))
    use_from_other_team(world, active.version)
    outsider = client_for(world["other_admin"])
    assert outsider.get(ask_url(f"?team=other&invocation={call.pk}")).status_code == 404
    assert outsider.get(ask_url(f"?team=acme&invocation={call.pk}")).status_code == 404


def test_bad_json_in_what_was_expected_is_explained_and_nothing_typed_is_lost(
        active: Activation, world: dict[str, Any]) -> None:
    client = client_for(world["requester"])
    typed = '{"totals": [{"month": "Jan", "total": 412.50}'
    response = client.post(ask_url(), {
        "team": "acme", "description": "March is wrong.", "keep": "The months' order.",
        "command": "totals", "input": '{"rows": []}', "expected": typed})
    assert response.status_code == 400
    html = response.content.decode()
    assert "starts like JSON but is not valid JSON" in html and 'role="alert"' in html
    assert "March is wrong." in html and "The months&#x27; order." in html
    assert '{&quot;totals&quot;: [{&quot;month&quot;: &quot;Jan&quot;, &quot;total&quot;: ' \
           '412.50}</textarea>' in html
    assert 'aria-describedby="change-expected-help change-expected-error"' in html
    assert ChangeRequest.objects.count() == 0


def asked_without_expected(world: dict[str, Any], client: Any) -> ChangeRequest:
    call = a_call(client)
    sent = client.post(ask_url(), {"team": "acme", "invocation": str(call.pk),
                                   "description": "February is missing a row.",
                                   "input": json.dumps(call.payload), "expected": ""})
    assert sent.status_code == 302, sent.content.decode()[:3000]
    return ChangeRequest.objects.get()


def test_a_reviewer_declines_and_the_asker_reads_why(
        active: Activation, world: dict[str, Any]) -> None:
    asked = asked_without_expected(world, client_for(world["requester"]))
    reviewer = client_for(world["reviewer"])
    url = reverse("tools:change", args=[asked.pk])
    # A requester of the owning team may ask, not decide.
    refused = client_for(world["requester"]).post(url, {"decision": "decline",
                                                        "reason": "no"})
    assert refused.status_code in (403, 404)
    no_reason = reviewer.post(url, {"decision": "decline", "reason": " "})
    assert no_reason.status_code == 400 and "Say why" in no_reason.content.decode()
    declined = reviewer.post(url, {"decision": "decline",
                                   "reason": "February has no data in this file."})
    assert declined.status_code == 302
    asked.refresh_from_db()
    assert asked.status == "declined" and asked.decided_by == world["reviewer"]
    note = Notification.objects.get(user=world["requester"], kind="decided")
    assert "declined" in note.message and "February has no data" in note.message
    page = client_for(world["requester"]).get(url).content.decode()
    assert "Declined" in page and "February has no data in this file." in page
    assert "Change asked" not in " ".join(in_inbox(world["reviewer"]))
    assert AuditEntry.objects.filter(action="tool.change_declined").exists()


def test_a_reviewer_fills_in_the_expected_answer_and_starts_a_change_run(
        active: Activation, world: dict[str, Any]) -> None:
    asked = asked_without_expected(world, client_for(world["requester"]))
    reviewer = client_for(world["reviewer"])
    url = reverse("tools:change", args=[asked.pk])
    page = reviewer.get(url).content.decode()
    assert "Start a change run" in page and 'for="expected-0"' in page

    # No expected answer: the run cannot start, and the page says so.
    nothing = reviewer.post(url, {"decision": "start", "expected-0": ""})
    assert nothing.status_code == 400
    assert ChangeRequest.objects.get().status == "open"
    # A typo in the JSON keeps what was typed.
    typo = reviewer.post(url, {"decision": "start", "expected-0": '{"totals": ['})
    assert typo.status_code == 400
    assert '{&quot;totals&quot;: [</textarea>' in typo.content.decode()
    assert "not valid JSON" in typo.content.decode()

    expected = {"totals": [{"month": "Jan", "total": 5.5}, {"month": "Feb", "total": 1},
                           {"month": "Mar", "total": 0}]}
    started = reviewer.post(url, {"decision": "start", "expected-0": json.dumps(expected)})
    assert started.status_code == 302, started.content.decode()[:3000]
    asked.refresh_from_db()
    assert asked.status == "started" and asked.project is not None
    project = Project.objects.get(pk=asked.project_id)
    assert project.team == world["acme"] and project.requester == world["requester"]
    assert asked.cases[0]["expected"] == expected
    note = Notification.objects.get(user=world["requester"], kind="decided")
    assert "started a change run" in note.message
    # The asker reads that it started; the reviewer follows the run from the page.
    assert "A change run started" in client_for(world["requester"]).get(url).content.decode()
    assert AuditEntry.objects.filter(action="tool.change_started").exists()

    from tools.services.changes import change_request_shipped

    assert change_request_shipped(project) == 1
    asked.refresh_from_db()
    assert asked.status == "shipped"
    assert Notification.objects.filter(user=world["requester"], kind="decided",
                                       message__contains="is out").exists()


def test_the_reviewer_says_the_request_changes_behaviour_and_the_run_may_change_tests(
        active: Activation, world: dict[str, Any]) -> None:
    asked = asked_without_expected(world, client_for(world["requester"]))
    reviewer = client_for(world["reviewer"])
    url = reverse("tools:change", args=[asked.pk])
    assert "The request changes what the tool does today" in reviewer.get(url).content.decode()
    # a mistake keeps the box as it was ticked
    typo = reviewer.post(url, {"decision": "start", "expected-0": "{", "behaviour_changes": "1"})
    assert typo.status_code == 400 and 'value="1" aria-describedby="behaviour-changes-help" ' \
        'checked' in typo.content.decode()
    started = reviewer.post(url, {"decision": "start", "behaviour_changes": "1",
                                  "expected-0": json.dumps({"totals": []})})
    assert started.status_code == 302, started.content.decode()[:3000]
    asked.refresh_from_db()
    run = Project.objects.get(pk=asked.project_id).runs.get()
    assert run.base_tests_may_change is True
