"""A broken installation is not the model's failure: the run is held, nothing is charged to the
model, admins are told what to fix, and the run goes on by itself once the part works.

The runtime is broken on purpose (a runtime without pytest, or none at all); the model is the
scripted provider (the only stand-in: no model that writes code is reachable here).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.conf import settings as django_settings

from autocoder.lessons.models import Lesson
from config import health
from runs.models import LoopEvent, Project, Run
from runs.services import driving, holding, starting
from teams.models import Notification
from tests.engine.conftest import greeter_spec, load_script
from tests.factories import MembershipFactory, TeamFactory, UserFactory
from tests.runtime.conftest import forget_probe

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture
def team_with_admin(db: None) -> dict[str, Any]:
    team = TeamFactory(slug="install-team")
    requester, admin = UserFactory(), UserFactory()
    MembershipFactory(team=team, user=requester, role="requester")
    MembershipFactory(team=team, user=admin, role="admin")
    return {"team": team, "requester": requester, "admin": admin}


@pytest.fixture
def start(team_with_admin: dict[str, Any], settings: Any) -> Callable[[], Run]:
    settings.ENGINE_RETRY_DELAY_MS = 0

    def start_run() -> Run:
        project = starting.project_create(team=team_with_admin["team"],
                                          requester=team_with_admin["requester"],
                                          spec=greeter_spec())
        run = starting.run_start(project=project, provider="scripted",
                                 script=load_script("success"), autonomy="full",
                                 use_lessons=True, dispatch=None)
        return driving.run_drive(run_id=run.id)

    return start_run


def _assert_held_and_nothing_charged(run: Run, admin: Any, words: str) -> None:
    assert run.status == Run.Status.HELD and run.held_by == "runtime"
    assert "the plugin runtime is broken" in run.error and words in run.error
    assert "make run" in run.error  # the fix is named
    assert run.iterations.count() == 0 and run.iteration == 0
    assert not LoopEvent.objects.filter(run=run).exists()
    assert not run.approvals.exists()
    assert run.lessons_written == 0 and not Lesson.objects.exists()
    assert run.project.status == Project.Status.QUEUED
    [notice] = Notification.objects.filter(user=admin, kind=Notification.Kind.INSTALLATION)
    assert "plugin runtime is broken" in notice.message


def test_a_runtime_without_pytest_holds_the_run_and_it_resumes_once_fixed(
        start: Callable[[], Run], team_with_admin: dict[str, Any],
        runtime_without_pytest: Any, settings: Any) -> None:
    run = start()
    _assert_held_and_nothing_charged(run, team_with_admin["admin"], "No module named pytest")
    # Not released while the runtime is still broken.
    assert holding.runs_held_release(dispatch=None) == []
    # The admin fixes it (here: points back at the working runtime); the run goes on.
    del settings.PLUGIN_RUNTIME_DIR
    forget_probe()
    assert holding.runs_held_release(dispatch=None) == [run.id]
    run = driving.run_drive(run_id=run.id)
    assert run.status == Run.Status.SUCCEEDED, run.error
    assert run.iteration == 1 and not run.error


def test_a_missing_runtime_holds_the_run_with_the_command_that_builds_it(
        start: Callable[[], Run], team_with_admin: dict[str, Any],
        runtime_missing: Any) -> None:
    run = start()
    _assert_held_and_nothing_charged(run, team_with_admin["admin"], "it is not built")


def test_many_held_runs_make_one_notice_per_admin(
        start: Callable[[], Run], team_with_admin: dict[str, Any],
        runtime_missing: Any) -> None:
    start()
    start()
    assert Notification.objects.filter(user=team_with_admin["admin"],
                                       kind=Notification.Kind.INSTALLATION).count() == 1


def test_doctor_reports_the_broken_runtime_with_its_fix(runtime_without_pytest: Any) -> None:
    check = health.check_sandbox()
    assert not check.ok
    assert "plugin runtime is broken" in check.detail and "pytest" in check.detail
    assert "make run" in check.hint


def test_doctor_reports_the_working_runtime() -> None:
    forget_probe()
    check = health.check_sandbox()
    assert check.ok, check.detail
    assert str(django_settings.PLUGIN_RUNTIME_DIR) in check.detail


def test_an_upload_meeting_a_broken_runtime_names_the_runtime_not_the_plugin(
        runtime_without_pytest: Any, team_with_admin: dict[str, Any]) -> None:
    from marketplace.services.uploads import plugin_upload_submit
    from marketplace.validation import PackageError
    from tests.marketplace.conftest import plugin_tree, zip_bytes

    with pytest.raises(PackageError) as caught:
        plugin_upload_submit(team=team_with_admin["team"],
                             user=team_with_admin["admin"], filename="plugin.zip",
                             data=zip_bytes(plugin_tree()), visibility="team")
    [error] = [e for e in caught.value.errors if "plugin runtime is broken" in e]
    assert "Nothing was found wrong with the plugin" in error and "make run" in error
