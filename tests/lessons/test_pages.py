"""Lesson pages, with owner (team admin), reviewer, member (requester) and outsider per rule."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from django.test import Client
from django.utils.html import escape

from autocoder.lessons.models import Lesson
from autocoder.lessons.selectors import lessons_retrieve
from autocoder.lessons.services import lesson_create, lessons_extract_from_run
from tests.factories import MembershipFactory, UserFactory
from tests.lessons.conftest import MISSING_PAYLOAD_KEY, WEEKDAY_CASE_RUN1, note

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("embedder")]


@pytest.fixture
def people(team_with_roles: dict[str, Any]) -> dict[str, Any]:
    """owner = admin of acme, member = requester of acme, outsider = admin of 'other'."""
    reviewer, staff = UserFactory(), UserFactory(is_staff=True)
    MembershipFactory(team=team_with_roles["team"], user=reviewer, role="reviewer")
    return {**team_with_roles, "reviewer": reviewer, "staff": staff}


@pytest.fixture
def lessons(people: dict[str, Any], make_summary: Any) -> dict[str, Lesson]:
    team = people["team"]
    other = people["outsider"].memberships.get().team
    weekday, payload = lessons_extract_from_run(summary=make_summary(
        team.pk, [note(**WEEKDAY_CASE_RUN1), note(**MISSING_PAYLOAD_KEY, iteration=2)],
        run_id=4242, final_approach=""))
    secret = lesson_create(kind="negative", team_id=other.pk, title="Rival secret lesson",
                           avoidance_rule="Only the rival team may read this.")
    shared = lesson_create(kind="positive", team_id=None, title="Global shared lesson",
                           avoidance_rule="Keep command dispatch in a dict.")
    return {"weekday": weekday, "payload": payload, "secret": secret, "shared": shared}


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_browse_shows_the_teams_own_and_global_lessons(people, lessons):
    page = client_for(people["member"]).get("/lessons/")
    assert page.status_code == 200
    text = page.content.decode()
    assert escape(lessons["weekday"].title) in text and "Global shared lesson" in text
    assert "Rival secret lesson" not in text

    outsider = client_for(people["outsider"])
    text = outsider.get("/lessons/").content.decode()
    assert "Rival secret lesson" in text and "Global shared lesson" in text
    assert escape(lessons["weekday"].title) not in text
    assert outsider.get("/lessons/?team=acme").status_code == 404
    assert Client().get("/lessons/").status_code == 302  # anonymous: to the login page


def test_browse_filters_and_paginates(people):
    team = people["team"]
    rng = np.random.default_rng(1)
    rows = []
    for i in range(25):
        vector = rng.standard_normal(384)
        rows.append(Lesson(kind="negative" if i % 5 else "positive", team=team,
                           title=f"Lesson number {i:02d}", avoidance_rule="rule",
                           tags=["dates"] if i < 3 else ["json"],
                           embedding=vector / np.linalg.norm(vector)))
    Lesson.objects.bulk_create(rows)
    client = client_for(people["member"])

    first, second = client.get("/lessons/"), client.get("/lessons/?page=2")
    assert first.content.decode().count('class="card lesson-item"') == 20
    assert second.content.decode().count('class="card lesson-item"') == 5
    assert "Page 2 of 2" in second.content.decode() and 'rel="prev"' in second.content.decode()
    assert client.get("/lessons/?kind=positive").content.decode().count("lesson-item") == 5
    assert client.get("/lessons/?tag=dates").content.decode().count("lesson-item") == 3
    empty = client.get("/lessons/?tag=nothing-like-this").content.decode()
    assert "No lessons match these filters" in empty
    partial = client.get("/lessons/?kind=positive", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in partial and partial.count("lesson-item") == 5


def test_empty_state_and_accessible_filters(people):
    text = client_for(people["member"]).get("/lessons/").content.decode()
    assert "No lessons yet" in text
    for field in ("filter-kind", "filter-tag", "filter-status"):
        assert f'<label for="{field}">' in text and f'id="{field}"' in text
    assert '<a href="/lessons/">Lessons</a>' in text  # the navigation link


def test_lesson_page_shows_its_source_run_to_the_team_only(people, lessons):
    url = f"/lessons/{lessons['weekday'].pk}/"
    page = client_for(people["member"]).get(url)
    assert page.status_code == 200
    text = page.content.decode()
    assert "/runs/4242/" in text and escape(lessons["weekday"].avoidance_rule) in text
    assert "Edit lesson" not in text  # a requester cannot curate
    assert client_for(people["outsider"]).get(url).status_code == 404
    assert client_for(people["outsider"]).get(
        f"/lessons/{lessons['shared'].pk}/").status_code == 200
    assert client_for(people["member"]).get("/lessons/999999/").status_code == 404


def test_edit_is_for_reviewers_and_admins_of_the_team(people, lessons):
    lesson = lessons["weekday"]
    url = f"/lessons/{lesson.pk}/edit/"
    assert client_for(people["owner"]).get(url).status_code == 200
    assert client_for(people["member"]).get(url).status_code == 403
    assert client_for(people["outsider"]).get(url).status_code == 404
    assert client_for(people["staff"]).get(url).status_code == 404  # staff is not in the team

    old_vector = np.asarray(lesson.embedding)
    response = client_for(people["reviewer"]).post(url, {
        "kind": "negative", "title": "Weekday names: compare case-insensitively",
        "avoidance_rule": "Compare weekday names with casefold() on both sides.",
        "resolution": "casefold() both the key and the lookup", "failed_approach": "",
        "error_signature": "KeyError: <val>", "task_context": "", "tags": "Dates, keyerror"})
    assert response.status_code == 302
    lesson.refresh_from_db()
    assert lesson.title == "Weekday names: compare case-insensitively"
    assert lesson.tags == ["dates", "keyerror"]
    assert float(np.asarray(lesson.embedding) @ old_vector) < 0.99  # embedded again
    found = lessons_retrieve(team_id=people["team"].pk, query="casefold weekday comparison")
    assert found and found[0].id == lesson.pk


def test_edit_with_bad_input_shows_errors_and_changes_nothing(people, lessons):
    lesson = lessons["weekday"]
    response = client_for(people["owner"]).post(f"/lessons/{lesson.pk}/edit/", {
        "kind": "negative", "title": "   ", "avoidance_rule": "", "tags": ""})
    assert response.status_code == 200
    text = response.content.decode()
    assert "Give the lesson a title." in text and "Write the rule a future run" in text
    assert 'role="alert"' in text and 'for="id_title"' in text
    assert Lesson.objects.get(pk=lesson.pk).title == lesson.title


def test_global_lessons_are_curated_by_staff_only(people, lessons):
    url = f"/lessons/{lessons['shared'].pk}/edit/"
    assert client_for(people["staff"]).get(url).status_code == 200
    assert client_for(people["owner"]).get(url).status_code == 403
    assert client_for(people["owner"]).post(
        f"/lessons/{lessons['shared'].pk}/retire/").status_code == 403
    assert client_for(people["staff"]).post(
        f"/lessons/{lessons['shared'].pk}/promote/").status_code == 403  # already global


def test_retire_and_restore(people, lessons):
    lesson = lessons["payload"]
    retire = f"/lessons/{lesson.pk}/retire/"
    assert client_for(people["owner"]).get(retire).status_code == 405
    assert client_for(people["member"]).post(retire).status_code == 403
    assert client_for(people["outsider"]).post(retire).status_code == 404
    assert Lesson.objects.get(pk=lesson.pk).retired_at is None

    reviewer = client_for(people["reviewer"])
    page = reviewer.post(retire, follow=True).content.decode()
    assert "Lesson retired" in page and "Restore lesson" in page
    assert escape(lesson.title) not in reviewer.get("/lessons/").content.decode()
    assert escape(lesson.title) in reviewer.get("/lessons/?status=retired").content.decode()
    reviewer.post(f"/lessons/{lesson.pk}/restore/")
    assert Lesson.objects.get(pk=lesson.pk).retired_at is None


def test_site_staff_promote_a_team_lesson_to_global(people, lessons):
    """Every team's prompts are at stake: a team's reviewers and admins may not promote."""
    lesson = lessons["weekday"]
    promote = f"/lessons/{lesson.pk}/promote/"
    other = people["outsider"].memberships.get().team
    assert client_for(people["member"]).post(promote).status_code == 403
    assert client_for(people["outsider"]).post(promote).status_code == 404
    assert client_for(people["reviewer"]).post(promote).status_code == 403
    assert client_for(people["owner"]).post(promote).status_code == 403
    assert "Promote to global" not in client_for(people["reviewer"]).get(
        f"/lessons/{lesson.pk}/").content.decode()
    assert client_for(people["staff"]).post(promote).status_code == 404  # not in the team
    assert lessons_retrieve(team_id=other.pk, query=WEEKDAY_CASE_RUN1["error"]) == []

    MembershipFactory(team=people["team"], user=people["staff"], role="requester")
    page = client_for(people["staff"]).post(promote, follow=True).content.decode()
    assert "every team now retrieves it" in page
    assert Lesson.objects.get(pk=lesson.pk).team_id is None
    found = lessons_retrieve(team_id=other.pk, query=WEEKDAY_CASE_RUN1["error"])
    assert [f.id for f in found] == [lesson.pk]
    seen_by_outsider = client_for(people["outsider"]).get(f"/lessons/{lesson.pk}/")
    assert seen_by_outsider.status_code == 200
    assert "/runs/4242/" not in seen_by_outsider.content.decode()  # another team's run
    # From now on a global lesson: staff curate it, the team's reviewer no longer can.
    assert client_for(people["reviewer"]).get(f"/lessons/{lesson.pk}/edit/").status_code == 403


def test_search_by_meaning_and_by_words(people, lessons):
    member, outsider = client_for(people["member"]), client_for(people["outsider"])
    page = member.get("/lessons/search/", {"q": "the day name is capitalised", "mode": "semantic"})
    text = page.content.decode()
    assert escape(lessons["weekday"].title) in text and "similarity" in text
    assert 'role="search"' in text and '<legend>Match</legend>' in text

    words = member.get("/lessons/search/", {"q": "malformed", "mode": "text"}).content.decode()
    assert escape(lessons["payload"].title) in words
    assert escape(lessons["weekday"].title) not in words

    for mode in ("semantic", "text"):
        theirs = outsider.get("/lessons/search/", {"q": "weekday KeyError", "mode": mode})
        assert escape(lessons["weekday"].title) not in theirs.content.decode()

    none = member.get("/lessons/search/", {"q": "zzqx", "mode": "text"}).content.decode()
    assert "No lesson matches" in none
    partial = member.get("/lessons/search/", {"q": "payload", "mode": "text"},
                         HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in partial and escape(lessons["payload"].title) in partial


def test_staff_curate_lessons_in_the_admin_without_touching_embeddings(people, lessons):
    admin = UserFactory(is_staff=True, is_superuser=True)
    client = client_for(admin)
    assert client.get("/admin/lessons/lesson/").status_code == 200
    lesson = lessons["shared"]
    page = client.get(f"/admin/lessons/lesson/{lesson.pk}/change/")
    assert page.status_code == 200 and "embedding" not in page.content.decode().lower()
    assert client.get("/admin/lessons/lesson/add/").status_code == 403
