"""The audit log is append-only: through the ORM, the admin and plain SQL."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction
from django.test import Client
from django.urls import reverse

from teams.models import AuditEntry
from teams.models.records import AppendOnlyError
from teams.services.audit import audit_record
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def client_for(user: object) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def entry(team_with_roles: dict) -> AuditEntry:
    team = team_with_roles["team"]
    return audit_record(actor=team_with_roles["owner"], action="team.settings_update", team=team,
                        target=team, before={"required_approvals": 1},
                        after={"required_approvals": 2})


def test_entry_records_actor_target_and_states(entry: AuditEntry, team_with_roles: dict) -> None:
    stored = AuditEntry.objects.get(pk=entry.pk)
    assert stored.actor_name == team_with_roles["owner"].username
    assert (stored.target_type, stored.target_id) == ("team", str(team_with_roles["team"].pk))
    assert stored.target_repr == "Acme"
    assert (stored.before, stored.after) == ({"required_approvals": 1}, {"required_approvals": 2})


def test_system_actor_and_explicit_target(team_with_roles: dict) -> None:
    stored = audit_record(actor=None, action="plugin.publish", team=team_with_roles["team"],
                          target_type="plugin_version", target_id="weekly-scheduler==0.1.0",
                          target_repr="weekly-scheduler 0.1.0")
    assert stored.actor_name == "system" and stored.actor is None
    assert stored.target_id == "weekly-scheduler==0.1.0"


def test_existing_entry_cannot_be_saved_again(entry: AuditEntry) -> None:
    entry.action = "something.else"
    with pytest.raises(AppendOnlyError):
        entry.save()
    assert AuditEntry.objects.get(pk=entry.pk).action == "team.settings_update"


def test_entry_cannot_be_deleted_through_the_orm(entry: AuditEntry) -> None:
    with pytest.raises(AppendOnlyError):
        entry.delete()
    with pytest.raises(AppendOnlyError):
        AuditEntry.objects.filter(pk=entry.pk).delete()
    with pytest.raises(AppendOnlyError):
        AuditEntry.objects.filter(pk=entry.pk).update(action="edited")
    assert AuditEntry.objects.filter(pk=entry.pk, action="team.settings_update").exists()


@pytest.mark.parametrize("statement", [
    "UPDATE projects_auditentry SET action = 'edited' WHERE id = %s",
    "DELETE FROM projects_auditentry WHERE id = %s",
])
def test_database_refuses_sql_changes(entry: AuditEntry, statement: str) -> None:
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(statement, [entry.pk])
    assert AuditEntry.objects.get(pk=entry.pk).action == "team.settings_update"


def test_entries_outlive_the_actor(entry: AuditEntry, team_with_roles: dict) -> None:
    team_with_roles["owner"].delete()
    assert AuditEntry.objects.get(pk=entry.pk).actor_name == entry.actor_name


def test_team_settings_change_is_audited_with_before_and_after(team_with_roles: dict) -> None:
    url = reverse("team_settings", args=["acme"])
    owner = client_for(team_with_roles["owner"])
    owner.post(url, {"requester_may_approve": "on", "required_approvals": "2"})
    owner.post(url, {"requester_may_approve": "on", "required_approvals": "2"})  # no change
    entries = list(AuditEntry.objects.filter(action="team.settings_update"))
    assert len(entries) == 1
    assert entries[0].before == {"requester_may_approve": False, "required_approvals": 1}
    assert entries[0].after == {"requester_may_approve": True, "required_approvals": 2}
    assert entries[0].actor_name == team_with_roles["owner"].username


def test_refused_settings_change_leaves_no_entry(team_with_roles: dict) -> None:
    url = reverse("team_settings", args=["acme"])
    client_for(team_with_roles["member"]).post(url, {"required_approvals": "3"})
    client_for(team_with_roles["owner"]).post(url, {"required_approvals": "9"})
    assert not AuditEntry.objects.exists()


def test_admin_shows_entries_read_only(entry: AuditEntry) -> None:
    superuser = UserFactory(is_staff=True, is_superuser=True)
    admin = client_for(superuser)
    listing = admin.get(reverse("admin:teams_auditentry_changelist"))
    assert listing.status_code == 200 and "team.settings_update" in listing.content.decode()
    detail = admin.get(reverse("admin:teams_auditentry_change", args=[entry.pk]))
    assert detail.status_code == 200 and 'name="_save"' not in detail.content.decode()
    posted = admin.post(reverse("admin:teams_auditentry_change", args=[entry.pk]),
                        {"action": "edited"})
    assert posted.status_code == 403
    assert admin.post(reverse("admin:teams_auditentry_delete", args=[entry.pk]),
                      {"post": "yes"}).status_code == 403
    assert admin.get(reverse("admin:teams_auditentry_add")).status_code == 403
    assert AuditEntry.objects.get(pk=entry.pk).action == "team.settings_update"
