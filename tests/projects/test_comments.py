"""Comment threads on a project, a run and an approval request (issue 18): mentions notify
exactly the mentioned member of the team, markdown is sanitised like a plugin README, edits and
deletions are in the audit log, outsiders get 404, a question reaches the reviewers and the
answer the requester, and a new comment reaches another open page over a real websocket."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from websockets.sync.client import ClientConnection

from projects.models import Comment
from projects.services.comments import comment_add, mentioned_names
from runs.models import Project, Run
from teams.models import AuditEntry, Notification
from tests.live import LiveServer, live_asgi_server
from tests.projects.portal_factories import ProjectFactory, approval_for, run_with_history
from tests.projects.test_live import next_event, open_socket
from tests.teams.conftest import Portal


def make_run(portal: Portal, status: str = Run.Status.RUNNING) -> Run:
    project = ProjectFactory(team=portal.team, requester=portal.requester, name="pdf-merger",
                             status=Project.Status.GENERATING)
    return run_with_history(project=project, status=status)


def comment_notices(user: object) -> list[Notification]:
    return list(Notification.objects.filter(user=user, kind=Notification.Kind.COMMENT))


@pytest.mark.django_db
def test_a_mention_notifies_exactly_the_mentioned_member_never_another_team(
        portal: Portal) -> None:
    run = make_run(portal)
    client = portal.client(portal.colleague)
    response = client.post(reverse("run_comments", args=[run.pk]), {
        "body": "@rita can you look at attempt 2? Also @otto and @colin (myself) and @nobody.",
        "next": reverse("run_detail", args=[run.pk])})
    assert response.status_code == 302
    comment = Comment.objects.get()
    assert response["Location"] == reverse("run_detail", args=[run.pk]) + f"#comment-{comment.pk}"
    notified = Notification.objects.filter(kind=Notification.Kind.COMMENT)
    assert [n.user for n in notified] == [portal.reviewer]
    notice = notified.get()
    assert notice.team == portal.team
    assert notice.message.startswith("colin mentioned you about “pdf-merger” (run ")
    assert notice.url.endswith(f"#comment-{comment.pk}")
    # otto is admin of another team: not told, even when named
    assert comment_notices(portal.outsider) == []
    assert comment_notices(portal.colleague) == []


@pytest.mark.django_db
def test_mention_words() -> None:
    assert mentioned_names("hi @rita. and @bo-b, mail a@b.org, `@x`") == {"rita", "bo-b", "x"}


@pytest.mark.django_db
def test_an_edit_tells_only_the_newly_mentioned(portal: Portal) -> None:
    run = make_run(portal)
    comment = comment_add(author=portal.colleague, project=run.project, run=run,
                          body="ping @rita")
    client = portal.client(portal.colleague)
    response = client.post(reverse("comment_edit", args=[comment.pk]),
                           {"body": "ping @rita and @alice"})
    assert response.status_code == 302
    assert len(comment_notices(portal.reviewer)) == 1
    assert len(comment_notices(portal.admin)) == 1


@pytest.mark.django_db
@pytest.mark.parametrize("body", [
    "<script>alert(1)</script>hello",
    "[click](javascript:alert(1))",
    '<img src=x onerror="alert(1)">',
    '<a href="javascript:alert(1)" onclick="alert(1)">x</a>',
    "<svg onload=alert(1)></svg>",
])
def test_comment_markdown_cannot_inject_script(portal: Portal, body: str) -> None:
    run = make_run(portal)
    comment_add(author=portal.colleague, project=run.project, run=run, body=body)
    page = portal.client(portal.reviewer).get(reverse("run_detail", args=[run.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    thread = html[html.index('id="comments-run-'):html.index('id="comment-form-run-')]
    assert "<script" not in thread
    assert "javascript:" not in thread
    assert "onerror" not in thread and "onclick" not in thread and "onload" not in thread


@pytest.mark.django_db
def test_markdown_is_rendered(portal: Portal) -> None:
    run = make_run(portal)
    comment_add(author=portal.colleague, project=run.project, run=run,
                body="**Looks good** - see [the docs](https://example.org)")
    html = portal.client(portal.requester).get(reverse("run_detail", args=[run.pk])).content
    assert b"<strong>Looks good</strong>" in html
    assert b'href="https://example.org"' in html


@pytest.mark.django_db
def test_edit_and_delete_are_audited_and_a_deleted_comment_says_so(portal: Portal) -> None:
    run = make_run(portal)
    comment = comment_add(author=portal.colleague, project=run.project, run=run,
                          body="first words")
    author = portal.client(portal.colleague)
    assert author.get(reverse("comment_edit", args=[comment.pk])).status_code == 200
    author.post(reverse("comment_edit", args=[comment.pk]), {"body": "second words"})
    edit = AuditEntry.objects.get(action="comment.edit")
    assert edit.before == {"body": "first words"} and edit.after == {"body": "second words"}
    assert edit.actor == portal.colleague and edit.team == portal.team
    assert edit.target_type == "comment" and edit.target_id == str(comment.pk)

    response = portal.client(portal.admin).post(reverse("comment_delete", args=[comment.pk]))
    assert response.status_code == 302
    deleted = AuditEntry.objects.get(action="comment.delete")
    assert deleted.before == {"body": "second words", "author": "colin"}
    assert deleted.after == {"deleted_by": "alice"} and deleted.actor == portal.admin
    comment.refresh_from_db()
    assert comment.is_deleted and comment.body == ""
    html = author.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "This comment was deleted by alice." in html
    assert "second words" not in html


@pytest.mark.django_db
def test_only_the_author_edits_and_the_author_or_an_admin_deletes(portal: Portal) -> None:
    run = make_run(portal)
    comment = comment_add(author=portal.colleague, project=run.project, run=run, body="mine")
    reviewer = portal.client(portal.reviewer)
    assert reviewer.get(reverse("comment_edit", args=[comment.pk])).status_code == 403
    assert reviewer.post(reverse("comment_edit", args=[comment.pk]),
                         {"body": "theirs"}).status_code == 403
    assert reviewer.post(reverse("comment_delete", args=[comment.pk])).status_code == 403
    comment.refresh_from_db()
    assert comment.body == "mine" and not comment.is_deleted
    assert not AuditEntry.objects.filter(action__startswith="comment.").exists()
    assert portal.client(portal.colleague).post(
        reverse("comment_delete", args=[comment.pk])).status_code == 302


@pytest.mark.django_db
def test_an_outsider_gets_404_everywhere(portal: Portal) -> None:
    run = make_run(portal)
    approval = approval_for(run)
    comment = comment_add(author=portal.colleague, project=run.project, run=run, body="x")
    outsider = portal.client(portal.outsider)
    for url in (reverse("run_comments", args=[run.pk]),
                reverse("project_comments", args=[run.project.pk]),
                reverse("approval_comments", args=[approval.pk])):
        assert outsider.get(url).status_code == 404
        assert outsider.post(url, {"body": "hello"}).status_code == 404
    assert outsider.get(reverse("comment_edit", args=[comment.pk])).status_code == 404
    assert outsider.post(reverse("comment_edit", args=[comment.pk]),
                         {"body": "y"}).status_code == 404
    assert outsider.post(reverse("comment_delete", args=[comment.pk])).status_code == 404
    assert Comment.objects.count() == 1
    anonymous = Client().post(reverse("run_comments", args=[run.pk]), {"body": "hello"})
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]


@pytest.mark.django_db
def test_the_three_threads_are_apart(portal: Portal) -> None:
    run = make_run(portal, status=Run.Status.AWAITING_APPROVAL)
    approval = approval_for(run)
    client = portal.client(portal.reviewer)
    client.post(reverse("project_comments", args=[run.project.pk]), {"body": "about the ask"})
    client.post(reverse("run_comments", args=[run.pk]), {"body": "about the run"})
    client.post(reverse("approval_comments", args=[approval.pk]), {"body": "about the gate"})
    run_page = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "About this request" in run_page and "About this run" in run_page
    assert "about the ask" in run_page and "about the run" in run_page
    assert "about the gate" not in run_page
    approval_page = client.get(reverse("approval_detail", args=[approval.pk])).content.decode()
    assert "about the gate" in approval_page and "about the run" not in approval_page
    assert f'ws-connect="/ws/runs/{run.pk}/"' in approval_page
    # An empty comment is refused in plain words, and nothing is saved.
    response = client.post(reverse("run_comments", args=[run.pk]), {"body": "   "})
    assert response.status_code == 400
    assert "Write something first" in response.content.decode()
    assert Comment.objects.count() == 3


@pytest.mark.django_db
def test_htmx_gets_the_form_and_the_list_back(portal: Portal) -> None:
    run = make_run(portal)
    client = portal.client(portal.reviewer)
    response = client.post(reverse("run_comments", args=[run.pk]),
                           {"body": "via htmx", "next": reverse("run_detail", args=[run.pk])},
                           headers={"HX-Request": "true"})
    html = response.content.decode()
    assert response.status_code == 200
    assert f'id="comment-form-run-{run.pk}"' in html and 'hx-swap-oob="outerHTML"' in html
    assert "via htmx" in html
    listed = client.get(reverse("run_comments", args=[run.pk]), headers={"HX-Request": "true"})
    assert "via htmx" in listed.content.decode()
    plain = client.get(reverse("run_comments", args=[run.pk]))
    assert plain.status_code == 302
    assert plain["Location"] == reverse("run_detail", args=[run.pk]) + f"#thread-run-{run.pk}"


@pytest.mark.django_db
def test_a_requester_asks_while_the_run_waits_and_the_answer_reaches_them(
        portal: Portal) -> None:
    run = make_run(portal, status=Run.Status.AWAITING_APPROVAL)
    requester = portal.client(portal.requester)
    page = requester.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "Ask the reviewers a question" in page
    requester.post(reverse("run_comments", args=[run.pk]), {"body": "Why does it wait?"})
    question = Comment.objects.get()
    assert question.is_question
    told = {n.user for n in Notification.objects.filter(kind=Notification.Kind.COMMENT)}
    assert told == {portal.reviewer, portal.admin}  # the reviewers, not the other requester

    portal.client(portal.reviewer).post(reverse("run_comments", args=[run.pk]),
                                        {"body": "It waits for the plan's approval."})
    answer = comment_notices(portal.requester)
    assert len(answer) == 1 and answer[0].message.startswith("rita replied about")
    assert answer[0].url == reverse("run_detail", args=[run.pk]) + \
        f"#comment-{Comment.objects.latest('id').pk}"
    shown = requester.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert "It waits for the plan&#x27;s approval." in shown or \
        "It waits for the plan's approval." in shown
    # A running run: the requester's comment is an ordinary one
    busy = make_run(portal)
    comment = comment_add(author=portal.requester, project=busy.project, run=busy, body="hi")
    assert not comment.is_question


def thread_event(ws: ClientConnection, thread: str) -> dict[str, Any]:
    """The next comment.changed event of `thread` within a second (a socket also holds the
    events of the run's other threads)."""
    while True:
        event = next_event(ws, "comment.changed")
        if event["data"]["thread"] == thread:
            return event


@pytest.fixture
def server(clean_redis: object) -> Iterator[LiveServer]:
    with live_asgi_server() as live:
        yield live


@pytest.mark.django_db(transaction=True)
def test_a_new_comment_reaches_a_second_open_page(server: LiveServer, portal: Portal) -> None:
    run = make_run(portal, status=Run.Status.AWAITING_APPROVAL)
    approval = approval_for(run)
    with open_socket(server, f"ws/runs/{run.pk}/", portal.requester) as first, \
            open_socket(server, f"ws/runs/{run.pk}/", portal.reviewer) as second:
        portal.client(portal.colleague).post(reverse("run_comments", args=[run.pk]),
                                             {"body": "new words"})
        comment = Comment.objects.get()
        for ws in (first, second):
            event = next_event(ws, "comment.changed")
            assert event["data"] == {"thread": f"run-{run.pk}", "comment_id": comment.pk,
                                     "message": "New comment by colin."}
        # the project's thread and an approval's reach the run's pages too
        portal.client(portal.colleague).post(
            reverse("project_comments", args=[run.project.pk]), {"body": "about the ask"})
        thread_event(second, f"project-{run.project.pk}")
        portal.client(portal.colleague).post(reverse("comment_delete", args=[comment.pk]))
        assert thread_event(second, f"run-{run.pk}")["data"]["message"] == \
            "colin deleted a comment."
        portal.client(portal.reviewer).post(reverse("approval_comments", args=[approval.pk]),
                                            {"body": "on the gate"})
        assert thread_event(first, f"approval-{approval.pk}")["data"]["comment_id"] == \
            Comment.objects.latest("id").pk
