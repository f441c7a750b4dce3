"""The interview wizard through its pages (Django test client) on the real database.

The analyst is the real scripted provider reading a script file (LLM_SCRIPT), as in a recorded
demo; no model is mocked. Runs are started through the engine's real services; in these
non-transactional tests their first Dramatiq message is never sent (on_commit does not fire).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from autocoder.engine.scaffold import scaffold_files
from autocoder.engine.spec import spec_from_dict
from projects.models import Interview
from runs.models import LLMCall, Project, Run
from teams.models import AuditEntry
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

REQUEST = "I need something that greets a person by name, politely."
ANALYST_REPLY = json.dumps([
    {"question": "Should the greeting be formal or casual?", "priority": "essential",
     "assumption": "Casual."},
    {"question": "Should it use emoji?", "priority": "nice", "assumption": "No emoji."},
])
ANSWERS: list[dict[str, str]] = [
    {"commands": "greet: say hello to someone"},
    {"cmd-c1-inputs": "name", "cmd-c1-outputs": "message"},
    {"ex-c1-0-in": "name: Ada", "ex-c1-0-out": "message: Hello, Ada!",
     "ex-c1-1-in": "name: Linus", "ex-c1-1-out": "message: Hello, Linus!",
     "ex-c1-2-in": "", "ex-c1-2-out": "", "cmd-c1-edge_cases": "Refuse an empty name."},
    {"autonomy": "full", "constraints": "Standard library only"},
]


@pytest.fixture
def script_file(tmp_path: Path, settings: Any) -> Path:
    """The scripted provider's file (docs/llm.md, "The scripted provider"): the analyst's reply
    plus a generation script."""
    engine = Path(__file__).resolve().parents[1] / "engine" / "scripts" / "success.json"
    script = {"analyst": [ANALYST_REPLY], **json.loads(engine.read_text())}
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    settings.LLM_PROVIDER = "scripted"
    settings.LLM_SCRIPT = str(path)
    return path


@pytest.fixture
def no_model(settings: Any) -> None:
    """What a fresh installation has: no model in the environment, none on the Model page."""
    settings.LLM_PROVIDER = settings.LLM_MODEL = settings.LLM_BASE_URL = ""
    settings.LLM_API_KEY = settings.LLM_SCRIPT = ""
    settings.LLM_ROLE_OVERRIDES = {}


def client_for(user: object) -> Client:
    client = Client()
    client.force_login(user)
    return client


def page(response: Any) -> str:
    return response.content.decode()


def counters(html: str) -> list[tuple[int, int]]:
    """The page counters on a questions page: [(page, of pages)]."""
    return [(int(a), int(b)) for a, b in re.findall(r"\(page (\d+) of (\d+)\)", html)]


def start_interview(client: Client, slug: str = "acme") -> Interview:
    response = client.post(reverse("interview_new", args=[slug]), {"request": REQUEST})
    interview = Interview.objects.latest("pk")
    assert response.status_code == 302
    assert response["Location"] == reverse("interview_questions", args=[interview.pk])
    return interview


def post_page(client: Client, interview: Interview, data: dict[str, str], *,
              group: int | None = None, **extra: str) -> Any:
    """Post the questions page that `data` answers (the page the wizard shows)."""
    interview.refresh_from_db()
    from projects.interview import navigation

    groups = navigation.question_groups(interview.questions)
    if group is None:
        group = navigation.first_open_group(interview.questions, interview.state) or 0
    ids = [q["id"] for q in groups[group]]
    body = {"group": str(group), "question": ids, **data, **extra}
    return client.post(reverse("interview_questions", args=[interview.pk]), body)


def answer_checklist(client: Client, interview: Interview) -> Any:
    response = None
    for data in ANSWERS:
        response = post_page(client, interview, data)
        assert response.status_code == 302, page(response)
    return response


# -- step 1 ---------------------------------------------------------------------------------


def test_describing_a_need_puts_it_on_the_board_and_opens_the_questions(
        team_with_roles: dict, no_model: None) -> None:
    member = team_with_roles["member"]
    interview = start_interview(client_for(member))
    project = interview.project
    assert (project.team, project.requester, project.status) == (
        team_with_roles["team"], member, Project.Status.INTERVIEWING)
    assert project.name == interview.state["name"] == "person-greeter"
    assert interview.request == REQUEST and interview.step == Interview.Step.QUESTIONS
    response = client_for(member).get(reverse("interview_questions", args=[interview.pk]))
    assert "What tasks should it do for you?" in page(response)


def test_pages_that_consult_the_analyst_say_so_while_it_works(
        team_with_roles: dict, no_model: None) -> None:
    """The analyst model can take seconds: the form shows a status line and disables its
    buttons while the request is in flight (htmx), so nobody clicks twice or wonders."""
    member = client_for(team_with_roles["member"])
    interview = start_interview(member)
    for url in (reverse("interview_new", args=["acme"]),
                reverse("interview_questions", args=[interview.pk])):
        html = page(member.get(url))
        form = re.search(r"<form[^>]*hx-post[^>]*>", html)
        assert form and 'hx-indicator="#analyst-busy"' in form.group(0)
        assert 'hx-disabled-elt="find button[type=submit]"' in form.group(0)
        busy = re.search(r'<p id="analyst-busy"[^>]*>', html)
        assert busy and 'role="status"' in busy.group(0)
        assert "checking what is still unclear" in html


def test_a_too_short_request_is_refused_in_plain_words_next_to_the_field(
        team_with_roles: dict, no_model: None) -> None:
    response = client_for(team_with_roles["member"]).post(
        reverse("interview_new", args=["acme"]), {"request": "greeter"})
    html = page(response)
    assert response.status_code == 200
    assert "Please say a little more: a sentence or two about what it should do." in html
    assert re.search(r'id="request-error"', html) and 'aria-invalid="true"' in html
    assert ">greeter</textarea>" in html  # what was typed is still there
    assert not Project.objects.exists()


def test_new_request_link_goes_to_the_current_team(team_with_roles: dict) -> None:
    client = client_for(team_with_roles["member"])
    home = page(client.get(reverse("home")))
    assert f'href="{reverse("interview_new_current")}"' in home and "New request" in home
    response = client.get(reverse("interview_new_current"))
    assert response["Location"] == reverse("interview_new", args=["acme"])
    lonely = client_for(UserFactory()).get(reverse("interview_new_current"))
    assert lonely["Location"] == reverse("home")


# -- access ---------------------------------------------------------------------------------


def test_outsiders_get_404_everywhere_members_see_only_requester_and_reviewers_edit(
        team_with_roles: dict, no_model: None) -> None:
    interview = start_interview(client_for(team_with_roles["member"]))
    outsider = client_for(team_with_roles["outsider"])
    assert outsider.get(reverse("interview_new", args=["acme"])).status_code == 404
    for name in ("interview_detail", "interview_describe", "interview_questions",
                 "interview_summary"):
        assert outsider.get(reverse(name, args=[interview.pk])).status_code == 404, name
    assert outsider.post(reverse("interview_start", args=[interview.pk])).status_code == 404

    other_requester = UserFactory()
    MembershipFactory(team=team_with_roles["team"], user=other_requester, role="requester")
    other = client_for(other_requester)
    assert other.get(reverse("interview_summary", args=[interview.pk])).status_code == 200
    assert other.get(reverse("interview_questions", args=[interview.pk])).status_code == 403
    assert post_page(other, interview, ANSWERS[0]).status_code == 403
    interview.refresh_from_db()
    assert interview.state["commands"] == []

    reviewer = UserFactory()
    MembershipFactory(team=team_with_roles["team"], user=reviewer, role="reviewer")
    assert post_page(client_for(reviewer), interview, ANSWERS[0]).status_code == 302
    interview.refresh_from_db()
    assert [c["name"] for c in interview.state["commands"]] == ["greet"]


def test_anonymous_users_are_sent_to_log_in(team_with_roles: dict) -> None:
    response = Client().get(reverse("interview_new", args=["acme"]))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


# -- step 2 ---------------------------------------------------------------------------------


def test_every_answer_is_saved_even_when_the_page_has_an_error(
        team_with_roles: dict, no_model: None) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    post_page(client, interview, ANSWERS[0])
    post_page(client, interview, ANSWERS[1])
    response = post_page(client, interview, {
        "ex-c1-0-in": "name: Ada", "ex-c1-0-out": "message: Hello, Ada!",
        "ex-c1-1-in": "name: Linus", "ex-c1-1-out": "", "cmd-c1-edge_cases": "Refuse empty"})
    html = page(response)
    assert response.status_code == 200
    assert "Example 2 has no result: say what should come back for this input." in html
    assert 'id="ex-c1-1-out-error"' in html and 'href="#ex-c1-1-out"' in html
    interview.refresh_from_db()
    command = interview.state["commands"][0]
    assert command["examples"][1]["input"] == "name: Linus"
    assert command["edge_cases"] == "Refuse empty"


def test_skipping_shows_the_stated_assumption_and_back_goes_to_the_previous_page(
        team_with_roles: dict, no_model: None) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    post_page(client, interview, ANSWERS[0])
    response = post_page(client, interview, {"cmd-c1-outputs": "message"}, skip="inputs:c1")
    html = page(response)
    assert response.status_code == 200
    assert "We will assume: \u201cgreet\u201d needs exactly the information used in its " \
           "examples." in html
    interview.refresh_from_db()
    assert interview.state["commands"][0]["outputs"] == "message"

    back = post_page(client, interview, {}, group=1, action="back")
    assert back["Location"] == reverse("interview_questions", args=[interview.pk]) + "?group=0"
    to_describe = post_page(client, interview, {}, group=0, action="back")
    assert to_describe["Location"] == reverse("interview_describe", args=[interview.pk])


def test_changing_the_request_keeps_the_answers(team_with_roles: dict, no_model: None) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    post_page(client, interview, ANSWERS[0])
    new_text = "I need something that greets people by name, in French."
    client.post(reverse("interview_describe", args=[interview.pk]), {"request": new_text})
    interview.refresh_from_db()
    assert interview.request == new_text
    assert interview.state["summary"] == "Greets people by name, in French."  # proposed anew
    assert [c["name"] for c in interview.state["commands"]] == ["greet"]


def test_analyst_questions_are_asked_after_the_checklist_and_it_stops_when_satisfied(
        team_with_roles: dict, script_file: Path) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    interview.refresh_from_db()
    assert [q["text"] for q in interview.questions if q["source"] == "analyst"] == [
        "Should the greeting be formal or casual?", "Should it use emoji?"]
    assert LLMCall.objects.filter(role="analyst", run=None).count() == 1
    answer_checklist(client, interview)
    response = post_page(client, interview, {"q-a1-1": "Formal, always.", "q-a1-2": ""})
    # The analyst is asked once more, repeats itself (nothing new), so the summary follows.
    assert response["Location"] == reverse("interview_summary", args=[interview.pk])
    interview.refresh_from_db()
    assert interview.step == Interview.Step.SUMMARY and interview.analyst_done
    assert interview.analyst_rounds == 2
    summary = page(client.get(response["Location"]))
    assert "Q: Should the greeting be formal or casual? A: Formal, always." in summary
    assert "No emoji." in summary  # the blank nice-to-have became a stated assumption


def test_without_a_model_the_checklist_alone_reaches_the_summary(
        team_with_roles: dict, no_model: None) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    response = answer_checklist(client, interview)
    assert response["Location"] == reverse("interview_summary", args=[interview.pk])
    interview.refresh_from_db()
    assert not [q for q in interview.questions if q["source"] == "analyst"]


def test_htmx_gets_the_wizard_fragment_and_the_new_url(
        team_with_roles: dict, no_model: None) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    interview.refresh_from_db()
    body = {"group": "0", "question": ["commands"], **ANSWERS[0]}
    response = client.post(reverse("interview_questions", args=[interview.pk]), body,
                           HTTP_HX_REQUEST="true")
    html = page(response)
    assert response.status_code == 200 and "<html" not in html
    # The fragment brings the tab's new title (htmx applies a top-level <title>), then the wizard.
    assert re.match(r'\s*(<!--.*?-->\s*)?<title>What goes in and what comes out, page 2 of 4 '
                    r'\u00b7 person-greeter \u00b7 Autocoder</title>\s*<div id="wizard"', html)
    assert "What will you give it for \u201cgreet\u201d?" in html
    assert response["HX-Push-Url"] == reverse("interview_questions",
                                              args=[interview.pk]) + "?group=1"


def test_every_hx_attribute_has_a_plain_fallback(team_with_roles: dict, no_model: None) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    answer_checklist(client, interview)
    for url in (reverse("interview_new", args=["acme"]),
                reverse("interview_questions", args=[interview.pk]),
                reverse("interview_summary", args=[interview.pk]),
                reverse("interview_summary", args=[interview.pk]) + "?edit=1"):
        html = page(client.get(url))
        for tag in re.findall(r"<(?:form|a)\b[^>]*\bhx-(?:post|get)=[^>]*>", html):
            assert 'action="' in tag or 'href="' in tag, tag


# -- resume ---------------------------------------------------------------------------------


def test_a_half_finished_interview_is_listed_and_resumes_where_it_was_left(
        team_with_roles: dict, no_model: None) -> None:
    member = team_with_roles["member"]
    interview = start_interview(client_for(member))
    post_page(client_for(member), interview, ANSWERS[0])
    fresh = client_for(member)  # a new session: logged out and back in
    home = page(fresh.get(reverse("home")))
    assert "Continue where you left off" in home
    assert reverse("interview_detail", args=[interview.pk]) in home
    resume = fresh.get(reverse("interview_detail", args=[interview.pk]), follow=True)
    html = page(resume)
    assert "What will you give it for \u201cgreet\u201d?" in html


# -- step 3 ---------------------------------------------------------------------------------


def summary_form(interview: Interview, **changes: str) -> dict[str, str]:
    interview.refresh_from_db()
    state = interview.state
    data = {"name": state["name"], "summary": state["summary"], "autonomy": state["autonomy"],
            "constraints": state["constraints"]}
    for command in state["commands"]:
        key = command["key"]
        for part in ("name", "description", "inputs", "outputs", "edge_cases"):
            data[f"cmd-{key}-{part}"] = command[part]
        for index, example in enumerate(command["examples"] + [{"input": "", "output": ""}]):
            data[f"ex-{key}-{index}-in"] = example["input"]
            data[f"ex-{key}-{index}-out"] = example["output"]
    data.update(changes)
    return data


def test_summary_is_readable_and_editable(team_with_roles: dict, no_model: None) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    answer_checklist(client, interview)
    url = reverse("interview_summary", args=[interview.pk])
    html = page(client.get(url))
    assert "Check your request" in html and "Fully automatic" in html
    assert "message: Hello, Ada!" in html and "Standard library only" in html
    response = client.post(url, summary_form(interview, name="greeter"))
    assert response.status_code == 302
    interview.refresh_from_db()
    assert interview.state["name"] == "greeter" and interview.project.name == "greeter"


def test_summary_edit_errors_are_shown_next_to_the_field_and_saved_anyway(
        team_with_roles: dict, no_model: None) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    answer_checklist(client, interview)
    url = reverse("interview_summary", args=[interview.pk])
    response = client.post(url, summary_form(interview, name="my greeter!",
                                             **{"ex-c1-1-out": ""}))
    html = page(response)
    assert response.status_code == 200 and "Your changes are saved." in html
    assert 'id="name-error"' in html and (
        "\u201cmy greeter!\u201d cannot be used as a name: use only letters, digits" in html)
    assert 'id="ex-c1-1-out-error"' in html and "Example 2 has no result" in html
    interview.refresh_from_db()
    assert interview.state["name"] == "my greeter!"


def test_start_stores_the_spec_queues_the_project_and_starts_a_run(
        team_with_roles: dict, script_file: Path) -> None:
    member = team_with_roles["member"]
    client = client_for(member)
    interview = start_interview(client)
    answer_checklist(client, interview)
    post_page(client, interview, {"q-a1-1": "Casual.", "q-a1-2": ""})
    client.post(reverse("interview_summary", args=[interview.pk]),
                summary_form(interview, name="greeter"))
    response = client.post(reverse("interview_start", args=[interview.pk]))
    assert response.status_code == 302
    project = Project.objects.get(pk=interview.project_id)
    run = Run.objects.get(project=project)
    assert project.status == Project.Status.QUEUED and project.queue_position == 1
    assert project.spec["name"] == "greeter" and project.spec["autonomy"] == "full"
    assert project.spec["commands"][0]["examples"][0] == {
        "input": {"name": "Ada"}, "output": {"message": "Hello, Ada!"}}
    assert (run.provider, run.autonomy, run.status) == ("scripted", "full", "queued")
    assert run.script["implementer"]  # the configured script travels with the run
    assert AuditEntry.objects.filter(action="project.start", actor=member).exists()
    interview.refresh_from_db()
    assert interview.step == Interview.Step.STARTED

    again = client.post(reverse("interview_start", args=[interview.pk]), follow=True)
    assert "already started" in page(again)
    assert Run.objects.filter(project=project).count() == 1
    closed = post_page(client, interview, {"autonomy": "guided"}, group=0)
    assert closed.status_code == 302
    interview.refresh_from_db()
    assert interview.state["autonomy"] == "full"


def test_start_with_problems_changes_nothing_and_says_what_to_fix(
        team_with_roles: dict, no_model: None) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    for data in ANSWERS[:2]:
        post_page(client, interview, data)
    response = client.post(reverse("interview_start", args=[interview.pk]))
    html = page(response)
    assert response.status_code == 200 and "Before you can start, please fix these:" in html
    assert "Give at least two examples for \u201cgreet\u201d (none yet)." in html
    assert "Choose how often a person checks the work." in html
    project = Project.objects.get(pk=interview.project_id)
    assert project.status == Project.Status.INTERVIEWING and not project.runs.exists()


def test_start_without_a_configured_model_queues_the_request_and_says_so(
        team_with_roles: dict, no_model: None) -> None:
    """No model is a state of the installation, not the requester's problem: the request is
    saved and waits in the queue (its run held), and the page says so in plain words."""
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    answer_checklist(client, interview)
    response = client.post(reverse("interview_start", args=[interview.pk]), follow=True)
    html = page(response)
    assert "Generation is not connected yet: your request is saved and waits in the queue; " \
           "your admins have been told." in html
    assert "LLM_PROVIDER" not in html  # the fix is for admins, not for the requester
    interview.refresh_from_db()
    assert interview.step == Interview.Step.STARTED
    run = Run.objects.get(project_id=interview.project_id)
    assert (run.status, run.held_by) == (Run.Status.HELD, "model")
    assert Project.objects.get(pk=interview.project_id).status == Project.Status.QUEUED


def test_an_unreachable_model_does_not_stop_the_interview(
        team_with_roles: dict, settings: Any) -> None:
    """A real OpenAI-compatible provider pointed at a port nobody listens on."""
    from tests.live import free_port

    settings.LLM_PROVIDER, settings.LLM_MODEL = "openai", "analyst-model"
    settings.LLM_BASE_URL = f"http://127.0.0.1:{free_port()}/v1"
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    interview.refresh_from_db()
    assert not [q for q in interview.questions if q["source"] == "analyst"]
    calls = LLMCall.objects.filter(role="analyst")  # one row per attempt
    assert calls and all(c.error and c.provider == "openai" and c.reply == "" for c in calls)
    response = answer_checklist(client, interview)
    assert response["Location"] == reverse("interview_summary", args=[interview.pk])


def test_operators_find_interviews_in_the_admin(team_with_roles: dict, no_model: None) -> None:
    interview = start_interview(client_for(team_with_roles["member"]))
    admin_user = UserFactory(is_staff=True, is_superuser=True)
    html = page(client_for(admin_user).get(reverse("admin:projects_interview_changelist")))
    assert interview.project.name in html


@pytest.mark.django_db
def test_the_recommended_autonomy_is_preselected_and_named_alike_everywhere(
        team_with_roles: dict) -> None:
    """The wizard calls Semi-automatic a good default, so it starts selected; runs use the
    wizard's words (not "Semi-autonomous")."""
    client = Client()
    client.force_login(team_with_roles["member"])
    client.post(reverse("interview_new", args=["acme"]),
                {"request": "Turn my list of meetings into a weekly summary table."})
    interview = Interview.objects.get()
    pages = [client.get(reverse("interview_questions", args=[interview.pk]), {"group": n})
             .content.decode() for n in range(6)]
    radios = [page for page in pages if 'name="autonomy"' in page]
    assert radios, "no page asks about autonomy"
    assert 'value="semi" checked' in radios[0]
    assert dict(Run.Autonomy.choices)["semi"] == "Semi-automatic"
    assert dict(Run.Autonomy.choices)["full"] == "Fully automatic"


# -- examples with real data ----------------------------------------------------------------

MEETINGS_CSV = ("day,start,title\nMon,09:00,Stand-up\nTue,10:30,Planning\n"
                "Wed,14:00,Retro")


def to_examples_page(client: Client, interview: Interview) -> None:
    post_page(client, interview, {"commands": "summarize: turn my meetings into a table"})
    post_page(client, interview, {"cmd-c1-inputs": "meetings", "cmd-c1-outputs": "table"})


def test_a_pasted_csv_example_is_accepted_and_shown_on_the_summary_as_a_table(
        team_with_roles: dict, no_model: None) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    to_examples_page(client, interview)
    mixed = post_page(client, interview, {
        "ex-c1-0-in": MEETINGS_CSV, "ex-c1-0-out": "meetings: 3",
        "ex-c1-1-in": "week: 20\nmeetings:\nThu 11:00 Demo\nFri 09:00 Review",
        "ex-c1-1-out": "meetings: 2",
        "ex-c1-2-in": "", "ex-c1-2-out": "", "cmd-c1-edge_cases": "Refuse an empty list."})
    assert mixed.status_code == 200  # one example names its values, the other does not
    assert "example 1 gives a pasted value without a name; example 2 gives meetings, week" in \
        page(mixed)
    response = post_page(client, interview, {
        "ex-c1-0-in": "week: 19\nmeetings:\n" + MEETINGS_CSV, "ex-c1-0-out": "meetings: 3",
        "ex-c1-1-in": "week: 20\nmeetings:\nThu 11:00 Demo\nFri 09:00 Review",
        "ex-c1-1-out": "meetings: 2",
        "ex-c1-2-in": "", "ex-c1-2-out": "", "cmd-c1-edge_cases": "Refuse an empty list."})
    assert response.status_code == 302, page(response)  # accepted: on to the next page
    post_page(client, interview, {"autonomy": "semi", "constraints": ""})
    html = page(client.get(reverse("interview_summary", args=[interview.pk])))
    table = re.search(r'<table class="sample-table">.*?</table>', html, re.S)
    assert table, html
    assert re.findall(r"<th scope=\"col\">(.*?)</th>", table.group(0)) == ["day", "start",
                                                                          "title"]
    assert "<tr><td>Tue</td><td>10:30</td><td>Planning</td></tr>" in re.sub(
        r">\s+<", "><", table.group(0))
    assert "<pre>week: 20</pre>" in html  # short values as "name: value" lines
    assert re.search(r'<p class="value-name">meetings:</p>\s*<pre>Thu 11:00 Demo\nFri 09:00 '
                     r'Review</pre>', html)
    interview.refresh_from_db()
    spec = assemble_spec(interview)
    assert spec["commands"][0]["examples"][0]["input"] == {"week": 19, "meetings": MEETINGS_CSV}


def assemble_spec(interview: Interview) -> dict[str, Any]:
    from projects.interview import spec_assembly

    return spec_assembly.assemble(interview.request, interview.state, interview.questions).spec


def test_an_attached_sample_file_becomes_the_example_input_without_javascript(
        team_with_roles: dict, no_model: None) -> None:
    """A plain multipart form post, as a browser without JavaScript sends it."""
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    to_examples_page(client, interview)
    upload = SimpleUploadedFile("meetings.csv", MEETINGS_CSV.encode(), "text/csv")
    response = post_page(client, interview, {
        "ex-c1-0-in": "week: 19", "ex-c1-0-out": "meetings: 3", "ex-c1-0-file": upload,
        "ex-c1-1-in": "", "ex-c1-1-out": "", "cmd-c1-edge_cases": "Refuse an empty list."})
    # One example is not enough, so the page is shown again, with the file's content in place.
    assert response.status_code == 200
    html = page(response)
    assert "week: 19\nmeetings:\n  day,start,title\n  Mon,09:00,Stand-up" in html
    interview.refresh_from_db()
    example = interview.state["commands"][0]["examples"][0]
    assert example["input"].startswith("week: 19\nmeetings:\n  day,start,title")
    assert assemble_spec(interview)["commands"][0]["examples"][0]["input"] == {
        "week": 19, "meetings": MEETINGS_CSV}


def test_the_runs_acceptance_test_calls_the_plugin_with_the_attached_sample(
        team_with_roles: dict, no_model: None) -> None:
    """What the requester attached is what the generated plugin is tested with: the run's
    read-only acceptance tests (autocoder/engine/scaffold.py) embed the example's input."""
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    to_examples_page(client, interview)
    upload = SimpleUploadedFile("meetings.csv", MEETINGS_CSV.encode(), "text/csv")
    post_page(client, interview, {
        "ex-c1-0-in": "week: 19", "ex-c1-0-out": "meetings: 3", "ex-c1-0-file": upload,
        "ex-c1-1-in": "week: 20", "ex-c1-1-out": "meetings: 0",
        "cmd-c1-edge_cases": "Refuse an empty list."})
    interview.refresh_from_db()
    spec = spec_from_dict(assemble_spec(interview))

    acceptance = next(text for text in scaffold_files(spec).values()
                      if "Acceptance tests generated" in text)
    payloads = [json.loads(ast.literal_eval(literal)) for literal in
                re.findall(r"payload = json\.loads\((.+)\)\n", acceptance)]

    assert {"week": 19, "meetings": MEETINGS_CSV} in payloads
    assert "Mon,09:00,Stand-up" in payloads[0]["meetings"]


def test_a_too_big_file_is_refused_with_a_clear_message_and_the_other_answers_are_kept(
        team_with_roles: dict, no_model: None) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    to_examples_page(client, interview)
    rows = b"day,start,title\n" + b"Mon,09:00,Stand-up\n" * 120_000
    big = SimpleUploadedFile("year.csv", rows[:2 * 1024 * 1024], "text/csv")  # 2 MB
    response = post_page(client, interview, {
        "ex-c1-0-in": "week: 19", "ex-c1-0-out": "meetings: 3", "ex-c1-0-file": big,
        "ex-c1-1-in": "week: 20", "ex-c1-1-out": "meetings: 0",
        "cmd-c1-edge_cases": "Refuse an empty list."})
    html = page(response)
    assert response.status_code == 200
    assert "\u201cyear.csv\u201d is 2.0 MB; a sample file can be at most 16 KB." in html
    assert 'id="ex-c1-0-file-error"' in html and 'href="#ex-c1-0-file"' in html
    interview.refresh_from_db()
    command = interview.state["commands"][0]
    assert [e["input"] for e in command["examples"]] == ["week: 19", "week: 20"]
    assert command["edge_cases"] == "Refuse an empty list."
    edge = next(q for q in interview.questions if q["id"] == "edge_cases:c1")
    assert not edge["skipped"]
    assert counters(html) == [(3, 4)]  # still on the examples page, to see why


def test_every_form_with_examples_sends_files(team_with_roles: dict, no_model: None) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    answer_checklist(client, interview)
    for url in (reverse("interview_questions", args=[interview.pk]) + "?group=2",
                reverse("interview_summary", args=[interview.pk]) + "?edit=1"):
        html = page(client.get(url))
        assert 'type="file"' in html
        for form in re.findall(r"<form\b[^>]*>.*?</form>", html, re.S):
            if 'type="file"' in form:
                assert 'enctype="multipart/form-data"' in form.split(">", 1)[0]


# -- wording, page counter and titles -------------------------------------------------------


def test_the_questions_are_in_everyday_words(team_with_roles: dict, no_model: None) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    pages = []
    for data in ANSWERS:
        pages.append(page(client.get(reverse("interview_questions", args=[interview.pk]))))
        post_page(client, interview, data)
    text = " ".join(pages)
    for question in ("What tasks should it do for you?",
                     "What will you give it for \u201cgreet\u201d?",
                     "What should you get back from \u201cgreet\u201d?",
                     "Show two or more real examples for \u201cgreet\u201d.",
                     "What should \u201cgreet\u201d do when something is missing or looks wrong?",
                     "How often should a person check the work while it is built?"):
        assert question in text
    for jargon in ("separate actions", "offer?", "unusual input", "concrete", "autonomous"):
        assert jargon not in text


@pytest.mark.parametrize("analyst", ["none", "scripted"])
def test_the_page_counter_says_the_same_total_on_every_page(
        team_with_roles: dict, request: pytest.FixtureRequest, analyst: str) -> None:
    """Without a model: 4 pages from the first to the last; with an analyst that asks: 5."""
    request.getfixturevalue("no_model" if analyst == "none" else "script_file")
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    url = reverse("interview_questions", args=[interview.pk])
    seen = counters(page(client.get(url)))
    for data in ANSWERS:
        response = post_page(client, interview, data)
        if response.status_code == 302 and "summary" not in response["Location"]:
            seen += counters(page(client.get(response["Location"])))
    total = 4 if analyst == "none" else 5
    assert seen == [(number, total) for number in range(1, total + 1)]


def test_each_step_has_its_own_tab_title_in_full_pages_and_htmx_swaps(
        team_with_roles: dict, no_model: None) -> None:
    client = client_for(team_with_roles["member"])
    new = page(client.get(reverse("interview_new", args=["acme"])))
    assert "<title>What do you need? (step 1 of 3) \u00b7 Autocoder</title>" in new
    interview = start_interview(client)
    questions = reverse("interview_questions", args=[interview.pk])
    name = interview.project.name
    first = page(client.get(questions))
    assert f"<title>What it should do, page 1 of 4 \u00b7 {name} \u00b7 Autocoder</title>" in first
    answer_checklist(client, interview)
    summary = reverse("interview_summary", args=[interview.pk])
    for url, title in ((summary, "Check your request (step 3 of 3)"),
                       (summary + "?edit=1", "Change your request (step 3 of 3)"),
                       (questions + "?group=2", "Examples, page 3 of 4")):
        for htmx in ({}, {"HTTP_HX_REQUEST": "true"}):
            html = page(client.get(url, **htmx))
            assert html.count("<title>") == 1
            assert f"<title>{title} \u00b7 {name} \u00b7 Autocoder</title>" in html, url


# -- the name -------------------------------------------------------------------------------


def test_the_name_edited_on_the_summary_is_the_projects_name(
        team_with_roles: dict, script_file: Path) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    answer_checklist(client, interview)
    post_page(client, interview, {"q-a1-1": "Casual.", "q-a1-2": ""})
    url = reverse("interview_summary", args=[interview.pk])
    html = page(client.get(url))
    form = re.search(r"<form[^>]*>(?:(?!</form>).)*name=\"form\" value=\"rename\".*?</form>",
                     html, re.S)
    assert form and 'value="person-greeter"' in form.group(0)  # on the summary, no Edit needed
    response = client.post(url, {"form": "rename", "name": " weekly-greeter "}, follow=True)
    assert "The name is now \u201cweekly-greeter\u201d." in page(response)
    interview.refresh_from_db()
    assert interview.project.name == "weekly-greeter"
    assert client.post(reverse("interview_start", args=[interview.pk])).status_code == 302
    assert Project.objects.get(pk=interview.project_id).spec["name"] == "weekly-greeter"


def test_an_invalid_name_on_the_summary_gets_a_clear_error_next_to_it(
        team_with_roles: dict, no_model: None) -> None:
    client = client_for(team_with_roles["member"])
    interview = start_interview(client)
    answer_checklist(client, interview)
    url = reverse("interview_summary", args=[interview.pk])
    response = client.post(url, {"form": "rename", "name": "my greeter!"},
                           HTTP_HX_REQUEST="true")
    html = page(response)
    assert response.status_code == 200
    assert "Check your request" in html  # the summary, not the whole edit form
    error = re.search(r'<ul class="field-errors" id="name-error">(.*?)</ul>', html, re.S)
    assert error and ("\u201cmy greeter!\u201d cannot be used as a name: use only letters, "
                      "digits, dashes (-) and underscores (_), no spaces") in error.group(1)
    assert re.search(r'<input[^>]*id="name"[^>]*value="my greeter!"[^>]*aria-invalid="true"',
                     html)
    interview.refresh_from_db()
    assert interview.project.name == "person-greeter"  # the board keeps the last good name
    start = page(client.post(reverse("interview_start", args=[interview.pk])))
    assert "cannot be used as a name" in start and not interview.project.runs.exists()


def test_the_analyst_reads_its_instructions_where_the_server_drops_system_messages(
        team_with_roles: dict, settings: Any) -> None:
    """A model known to drop system messages (docs/llm.md, "System messages") gets the
    analyst's instructions at the start of its user message; the wizard does not spend its
    few seconds measuring (one request only)."""
    from autocoder.llm.models import ModelReplyForm
    from tests.llm.conftest import chat_reply
    from tests.llm.fakeserver import FakeServer

    server = FakeServer().start()
    try:
        server.queue(chat_reply("[]"))
        settings.LLM_PROVIDER, settings.LLM_MODEL = "openai", "gemma-model"
        settings.LLM_BASE_URL, settings.LLM_API_KEY = server.url + "/v1", "sk-test"
        settings.LLM_SCRIPT, settings.LLM_ROLE_OVERRIDES = "", {}
        ModelReplyForm.objects.create(provider="openai", base_url=server.url + "/v1",
                                      model="gemma-model", form="", system_messages="dropped")
        start_interview(client_for(team_with_roles["member"]))
    finally:
        server.stop()
    [request] = server.requests
    [message] = request.body["messages"]
    assert message["role"] == "user" and "\n\n" in message["content"]


def test_a_slow_analyst_gives_way_to_the_usual_questions_within_its_bound(
        team_with_roles: dict, settings: Any) -> None:
    """The probe's first "Continue" took 31.8 s with a local model and asked nothing new. The
    analyst gets one try within INTERVIEW_ANALYST_TIMEOUT_S (the page says how long); a model
    server that answers later than that (a loopback server standing in for a slow model) leaves
    the checklist's questions alone, at once."""
    import time

    from tests.llm.fakeserver import FakeServer, Reply

    server = FakeServer().start()
    try:
        server.queue(Reply(delay_s=20, body={}))
        settings.LLM_PROVIDER, settings.LLM_MODEL = "openai", "slow-model"
        settings.LLM_BASE_URL, settings.LLM_API_KEY = server.url + "/v1", "sk-test"
        settings.LLM_SCRIPT, settings.LLM_ROLE_OVERRIDES = "", {}
        settings.INTERVIEW_ANALYST_TIMEOUT_S = 2
        member = client_for(team_with_roles["member"])
        form = page(member.get(reverse("interview_new", args=["acme"])))
        assert "This takes at most 2 seconds" in form
        started = time.monotonic()
        interview = start_interview(member)
        elapsed = time.monotonic() - started
    finally:
        server.stop()
    assert elapsed < 8, elapsed  # one try of 2 s, not 20 s nor two tries
    assert len(server.requests) == 1
    interview.refresh_from_db()
    assert interview.questions and not [q for q in interview.questions
                                        if q["source"] == "analyst"]
    html = page(member.get(reverse("interview_questions", args=[interview.pk])))
    assert "What tasks should it do for you?" in html
