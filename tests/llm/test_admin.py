"""Team model overrides in the Django admin: the API key can be written, never read back."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from autocoder.llm.models import TeamModelOverride
from autocoder.llm.services import team_model_override_set
from tests.factories import TeamFactory, UserFactory

SECRET = "sk-admin-never-shown-5150"
pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client_() -> Client:
    client = Client()
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


def form(team_id: int, **fields: str) -> dict[str, str]:
    return {"team": str(team_id), "role": "implementer", "provider": "openai",
            "model": "qwen2.5-coder:32b", "base_url": "http://ollama:11434/v1",
            "new_api_key": "", **fields}


def test_adding_an_override_stores_the_key_and_never_shows_it(admin_client_: Client) -> None:
    team = TeamFactory()
    response = admin_client_.post(reverse("admin:llm_teammodeloverride_add"),
                                  form(team.id, new_api_key=SECRET))
    assert response.status_code == 302, response.content.decode()[:2000]
    override = TeamModelOverride.objects.get(team=team, role="implementer")
    assert override.api_key == SECRET

    change = admin_client_.get(reverse("admin:llm_teammodeloverride_change", args=[override.id]))
    assert change.status_code == 200
    assert SECRET not in change.content.decode()
    listing = admin_client_.get(reverse("admin:llm_teammodeloverride_changelist"))
    assert SECRET not in listing.content.decode()
    assert ">set<" in listing.content.decode()


def test_saving_with_a_blank_key_keeps_the_stored_one(admin_client_: Client) -> None:
    team = TeamFactory()
    override = team_model_override_set(team=team, role="implementer", provider="openai",
                                       model="a", api_key=SECRET)
    url = reverse("admin:llm_teammodeloverride_change", args=[override.id])
    response = admin_client_.post(url, form(team.id, model="b"))
    assert response.status_code == 302
    override.refresh_from_db()
    assert (override.model, override.api_key) == ("b", SECRET)


def test_the_key_can_be_replaced_or_removed(admin_client_: Client) -> None:
    team = TeamFactory()
    override = team_model_override_set(team=team, role="implementer", api_key=SECRET)
    url = reverse("admin:llm_teammodeloverride_change", args=[override.id])
    admin_client_.post(url, form(team.id, new_api_key="sk-new"))
    override.refresh_from_db()
    assert override.api_key == "sk-new"
    admin_client_.post(url, form(team.id, clear_api_key="on"))
    override.refresh_from_db()
    assert override.api_key == ""
    listing = admin_client_.get(reverse("admin:llm_teammodeloverride_changelist"))
    assert ">not set<" in listing.content.decode()


def test_contradictory_or_invalid_input_is_refused_and_loses_nothing(
        admin_client_: Client) -> None:
    team = TeamFactory()
    override = team_model_override_set(team=team, role="implementer", model="a",
                                       api_key=SECRET)
    url = reverse("admin:llm_teammodeloverride_change", args=[override.id])
    both = admin_client_.post(url, form(team.id, new_api_key="x", clear_api_key="on"))
    assert both.status_code == 200 and "not both" in both.content.decode()
    bad_url = admin_client_.post(url, form(team.id, base_url="ollama:11434", model="z"))
    assert bad_url.status_code == 200 and "http://" in bad_url.content.decode()
    override.refresh_from_db()
    assert (override.model, override.api_key) == ("a", SECRET)


def test_one_override_per_team_and_role(admin_client_: Client) -> None:
    team = TeamFactory()
    team_model_override_set(team=team, role="implementer", model="a")
    response = admin_client_.post(reverse("admin:llm_teammodeloverride_add"), form(team.id))
    assert response.status_code == 200
    assert TeamModelOverride.objects.filter(team=team).count() == 1


def test_non_staff_users_cannot_reach_the_overrides() -> None:
    client = Client()
    client.force_login(UserFactory())
    response = client.get(reverse("admin:llm_teammodeloverride_changelist"))
    assert response.status_code == 302 and "/login/" in response["Location"]
