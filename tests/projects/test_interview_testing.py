"""Issue 30 in the interview: the requester picks how hard the plugin is tested (basic,
comprehensive, stress; autocoder/quality/strategies.py), sees and may change the quality needed
and the attempts it implies on the summary, and may give the services' API documentation.

The wizard is walked through as a requester (Django test client, real database, the scripted
analyst as in tests/projects/test_interviews.py).
"""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from autocoder.engine.prompting import PromptContext, build_messages
from autocoder.engine.spec import spec_from_dict
from projects.interview import navigation
from projects.models import Interview
from runs.models import Run
from tests.projects.test_interview_services import NO_SERVICE, start, walk_to_summary, with_service
from tests.projects.test_interviews import (
    ANSWERS,
    client_for,
    page,
    post_page,
    script_file,  # noqa: F401  (a fixture, used by every test here)
    start_interview,
    summary_form,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("script_file")]

API_DOCS = "chat.postMessage\nPOST https://slack.com/api/chat.postMessage\nArguments: channel, text"


def checked(html: str, key: str) -> bool:
    return f'id="testing-strategy-{key}" name="testing-strategy" value="{key}" checked' in html


def save_testing(client: Client, interview: Interview, **data: str) -> Any:
    return client.post(reverse("interview_summary", args=[interview.pk]),
                       {"form": "testing", **data})


def test_the_default_is_basic_and_comprehensive_once_it_talks_to_a_service(
        team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    alone = start_interview(client)
    html = page(walk_to_summary(client, alone, NO_SERVICE))
    assert "<legend>How thoroughly should the tool be tested?</legend>" in html
    assert checked(html, "basic") and not checked(html, "comprehensive")
    assert "<dt>Testing</dt><dd>Basic (recommended for this tool)</dd>" in html
    assert "<dt>Quality needed to finish</dt><dd>75%</dd>" in html
    assert "<dt>Attempts at most</dt><dd>8</dd>" in html
    assert "Tests for the examples and the main cases." in html  # the strategy's own words
    assert '<label for="testing-threshold">Quality needed to finish (percent)</label>' in html
    assert 'min="1" max="100"' in html and 'min="1" max="50"' in html

    chat = start_interview(client)
    html = page(walk_to_summary(client, chat, with_service()))
    assert checked(html, "comprehensive")
    assert "Comprehensive</strong> (recommended)" in html
    assert "<dt>Quality needed to finish</dt><dd>85%</dd>" in html
    assert start(client, chat)["testing_strategy"] == "comprehensive"


def test_the_choice_reaches_the_projects_spec_its_run_and_the_testers_prompt(
        team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    walk_to_summary(client, interview, NO_SERVICE)
    # The numbers still show basic's: they follow the new choice.
    response = save_testing(client, interview, **{"testing-strategy": "stress",
                                                  "testing-threshold": "75",
                                                  "testing-iterations": "8"})
    assert response.status_code == 302
    html = page(client.get(response["Location"]))
    assert "Saved: how hard it is tested." in html and checked(html, "stress")
    assert "<dt>Testing</dt><dd>Stress</dd>" in html
    assert "<dt>Quality needed to finish</dt><dd>90%</dd>" in html
    spec = start(client, interview)
    assert (spec["testing_strategy"], spec["quality_threshold"], spec["max_iterations"]) == (
        "stress", 0.9, 12)
    assert Run.objects.get(project_id=interview.project_id).max_iterations == 12
    tester = build_messages("tester", PromptContext(spec=spec_from_dict(spec), iteration=2))
    assert "property-based tests with Hypothesis" in tester[0].content
    assert "large input" in tester[0].content


def test_numbers_of_the_requesters_own_stay_when_the_strategy_changes(
        team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    walk_to_summary(client, interview, NO_SERVICE)
    save_testing(client, interview, **{"testing-strategy": "basic", "testing-threshold": "95",
                                       "testing-iterations": "8"})
    save_testing(client, interview, **{"testing-strategy": "comprehensive",
                                       "testing-threshold": "95", "testing-iterations": "8"})
    html = page(client.get(reverse("interview_summary", args=[interview.pk])))
    assert "<dt>Quality needed to finish</dt><dd>95%</dd>" in html  # typed: kept
    assert "<dt>Attempts at most</dt><dd>10</dd>" in html  # not typed: comprehensive's
    spec = start(client, interview)
    assert (spec["quality_threshold"], spec["max_iterations"]) == (0.95, 10)


def test_bad_numbers_get_a_clear_error_and_nothing_else_is_lost(team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    walk_to_summary(client, interview, NO_SERVICE)
    response = save_testing(client, interview, **{"testing-strategy": "comprehensive",
                                                  "testing-threshold": "150",
                                                  "testing-iterations": "lots"})
    html = page(response)
    assert response.status_code == 200
    assert ("Give the quality needed as a whole number from 1 to 100 (a percentage), e.g. 85; "
            "you typed \u201c150\u201d.") in html
    assert ("Give the number of attempts as a whole number from 1 to 50, e.g. 10; you typed "
            "\u201clots\u201d.") in html
    assert 'id="testing-threshold-error"' in html and 'id="testing-iterations-error"' in html
    assert 'value="150"' in html and 'value="lots"' in html and checked(html, "comprehensive")
    interview.refresh_from_db()
    assert interview.state["commands"][0]["name"] == "greet"
    assert interview.state["autonomy"] == "full"
    refused = client.post(reverse("interview_start", args=[interview.pk]))
    assert refused.status_code == 200 and "whole number from 1 to 100" in page(refused)

    # The whole edit form: the other answers are saved, the bad number is named.
    edited = client.post(reverse("interview_summary", args=[interview.pk]), summary_form(
        interview, name="greeter", **{"testing-strategy": "basic", "testing-threshold": "0",
                                      "testing-iterations": "9"}))
    html = page(edited)
    assert edited.status_code == 200 and "Your changes are saved." in html
    assert "you typed \u201c0\u201d" in html
    interview.refresh_from_db()
    assert interview.state["name"] == "greeter"
    assert interview.state["testing"] == {"strategy": "basic", "threshold": "0",
                                          "iterations": "9"}


def services_page(client: Client, interview: Interview, services: dict[str, Any]) -> Any:
    for data in ANSWERS[:-1]:
        assert post_page(client, interview, data).status_code == 302
    return post_page(client, interview, {**ANSWERS[-1], **services})


def test_pasted_api_docs_are_kept_in_the_spec(team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    html = page(walk_to_summary(client, interview, with_service(**{"api-docs": API_DOCS})))
    assert f"<dt>Its API documentation</dt><dd>given ({len(API_DOCS)} characters)" in html
    assert start(client, interview)["api_docs"] == API_DOCS

    alone = start_interview(client)  # a tool that talks to nothing keeps no docs
    walk_to_summary(client, alone, {**NO_SERVICE, "api-docs": API_DOCS})
    assert "api_docs" not in start(client, alone)


def test_the_docs_box_is_on_the_services_page_in_plain_words(team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    for data in ANSWERS[:-1]:
        post_page(client, interview, data)
    html = page(client.get(reverse("interview_questions", args=[interview.pk])))
    assert ("Paste the systems' API documentation, if you have it: the model reads it while "
            "writing the plugin.") in html
    assert '<label for="api-docs-upload">Or attach it as a file</label>' in html


def test_an_uploaded_web_page_becomes_the_docs_text(team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    upload = SimpleUploadedFile("slack-api.html", (
        b"<html><head><style>p{color:red}</style><script>alert(1)</script></head><body>"
        b"<h1>chat.postMessage</h1><p>Sends a message &amp; returns <code>ok</code>.</p>"
        b"</body></html>"), "text/html")
    response = services_page(client, interview, with_service(**{"api-docs": "",
                                                                "api-docs-upload": upload}))
    assert response.status_code == 302, page(response)
    interview.refresh_from_db()
    assert interview.state["api_docs"] == "chat.postMessage\n\nSends a message & returns ok."


def test_a_too_big_or_wrong_docs_file_is_refused_and_the_answers_are_kept(
        team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    big = SimpleUploadedFile("api.md", b"# API\n" + b"x" * (2 * 1024 * 1024), "text/markdown")
    response = services_page(client, interview, with_service(**{"api-docs": API_DOCS,
                                                                "api-docs-upload": big}))
    html = page(response)
    assert response.status_code == 200
    assert ("\u201capi.md\u201d is 2.0 MB; the documentation file can be at most 1 MB.") in html
    assert 'id="api-docs-upload-error"' in html and 'href="#api-docs-upload"' in html
    interview.refresh_from_db()
    assert interview.state["api_docs"] == API_DOCS
    assert interview.state["services"]["systems"][0]["name"] == "our Slack"

    pdf = SimpleUploadedFile("api.pdf", b"%PDF-1.4", "application/pdf")
    html = page(post_page(client, interview, with_service(**{"api-docs": API_DOCS,
                                                             "api-docs-upload": pdf}),
                          group=navigation.page_index(navigation.SERVICES_PAGE)))
    assert "\u201capi.pdf\u201d is not a text, Markdown or HTML file." in html

    long_text = "word " * 21_000  # 105,000 characters
    html = page(post_page(client, interview, with_service(**{"api-docs": long_text}),
                          group=navigation.page_index(navigation.SERVICES_PAGE)))
    assert "Please shorten the documentation to at most 100,000 characters" in html
    assert 'id="api-docs-error"' in html
