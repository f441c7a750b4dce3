"""A team's API key is stored sealed: a database dump does not give it away, a rotated
SECRET_KEY keeps it readable through SECRET_KEY_FALLBACKS, and a lost key says what to do."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import override_settings

from autocoder.llm import LLMConfigError
from autocoder.llm.config import role_config
from autocoder.llm.models import TeamModelOverride
from autocoder.llm.services import team_model_override_set
from autocoder.sealing import PREFIX, UnsealError, seal, unseal
from tests.factories import TeamFactory

KEY = "sk-live-SECRET-7c41d09e"
pytestmark = pytest.mark.django_db


def stored_column(override: TeamModelOverride) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT api_key_sealed FROM llm_teammodeloverride WHERE id = %s",
                       [override.id])
        return str(cursor.fetchone()[0])


def test_the_database_holds_no_plain_key_and_the_worker_gets_the_real_one() -> None:
    team = TeamFactory()
    override = team_model_override_set(team=team, role="tester", provider="anthropic",
                                       model="claude", api_key=KEY)
    raw = stored_column(override)
    assert raw.startswith(PREFIX) and KEY not in raw
    assert role_config("tester", team_id=team.id).api_key == KEY


def test_sealing_the_same_key_twice_gives_different_text() -> None:
    assert seal(KEY) != seal(KEY) and unseal(seal(KEY)) == KEY
    assert seal("") == "" and unseal("") == ""


def test_a_rotated_secret_key_still_opens_keys_through_its_fallbacks() -> None:
    team = TeamFactory()
    with override_settings(SECRET_KEY="old-secret-key-" + "x" * 40):
        team_model_override_set(team=team, role="tester", provider="anthropic", api_key=KEY)
    with override_settings(SECRET_KEY="new-secret-key-" + "y" * 40,
                           SECRET_KEY_FALLBACKS=["old-secret-key-" + "x" * 40]):
        override = TeamModelOverride.objects.get(team=team)
        assert override.api_key_status == "set"
        assert role_config("tester", team_id=team.id).api_key == KEY


def test_a_key_sealed_under_a_lost_secret_key_is_reported_not_sent() -> None:
    team = TeamFactory()
    with override_settings(SECRET_KEY="lost-secret-key-" + "z" * 40):
        team_model_override_set(team=team, role="tester", provider="anthropic", api_key=KEY)
    override = TeamModelOverride.objects.get(team=team)
    assert override.api_key_status == "unreadable: enter it again"
    with pytest.raises(LLMConfigError, match="enter it again in the admin"):
        role_config("tester", team_id=team.id)
    with pytest.raises(UnsealError):
        unseal(PREFIX + "not-a-token")


@pytest.mark.django_db(transaction=True)
def test_the_migration_seals_keys_stored_in_plain_text() -> None:
    team = TeamFactory()
    executor = MigrationExecutor(connection)
    executor.migrate([("llm", "0001_initial")])
    try:
        old_model = executor.loader.project_state([("llm", "0001_initial")]).apps.get_model(
            "llm", "TeamModelOverride")
        old_model.objects.create(team_id=team.id, role="tester", api_key=KEY)
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes())
    override = TeamModelOverride.objects.get(team=team)
    assert KEY not in stored_column(override) and override.api_key == KEY
