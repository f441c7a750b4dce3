"""Prices: the price table set by site admins (the Prices page and the admin) turns a run's
tokens into money when its calls are recorded; a model without a price shows tokens only and
says "no price set". The calls are the scripted provider's (model "script"), recorded by the
real RunLLM on the real database."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import reverse

from autocoder.llm import Message
from autocoder.llm.models import ModelPrice
from autocoder.llm.pricing import NO_PRICE, cost_text
from autocoder.llm.scripted import SCRIPTED_MODEL
from autocoder.llm.selectors import MODEL_PRICE_ACTION
from autocoder.money import money
from runs.llm_calls import RunLLM
from runs.models import LLMCall, Run
from teams.models import AuditEntry
from tests.factories import MembershipFactory, UserFactory
from tests.projects.portal_factories import RunFactory

pytestmark = pytest.mark.django_db

PAGE = "/settings/model/prices/"
ASK = [Message("system", "Plan the plugin."), Message("user", "A greeter that says hello.")]


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def scripted_run() -> Run:
    run: Run = RunFactory(provider="scripted", script={"architect": ["one two three four"]})
    return run


def test_only_site_admins_reach_the_prices_page(team_with_roles: dict) -> None:
    staff = client_for(UserFactory(is_staff=True))
    assert staff.get(PAGE).status_code == 200
    for name in ("owner", "member", "outsider"):  # a team admin is not a site admin
        client = client_for(team_with_roles[name])
        assert client.get(PAGE).status_code == 404
        assert client.post(PAGE, {"model": "m", "prompt_per_million": "1",
                                  "completion_per_million": "2"}).status_code == 404
    assert not ModelPrice.objects.exists()
    assert Client().get(PAGE).status_code == 302


def test_a_price_is_set_changed_and_removed_on_the_page_and_audited() -> None:
    staff = client_for(UserFactory(is_staff=True))
    saved = staff.post(PAGE, {"model": " gpt-4o-mini ", "prompt_per_million": "0.15",
                              "completion_per_million": "0.60"})
    assert saved.status_code == 302
    price = ModelPrice.objects.get()
    assert (price.model, price.prompt_per_million, price.completion_per_million) == (
        "gpt-4o-mini", Decimal("0.15"), Decimal("0.60"))
    staff.post(PAGE, {"model": "gpt-4o-mini", "prompt_per_million": "0.20",
                      "completion_per_million": "0.60"})
    assert ModelPrice.objects.get().prompt_per_million == Decimal("0.20")
    page = staff.get(PAGE).content.decode()
    assert "gpt-4o-mini" in page and "USD" in page
    refused = staff.post(PAGE, {"model": "x", "prompt_per_million": "-1",
                                "completion_per_million": "1"})
    assert refused.status_code == 200 and not ModelPrice.objects.filter(model="x").exists()
    staff.post(PAGE + "delete/", {"model": "gpt-4o-mini"})
    assert not ModelPrice.objects.exists()
    assert AuditEntry.objects.filter(action=MODEL_PRICE_ACTION).count() == 3


def test_the_price_table_is_in_the_admin() -> None:
    assert isinstance(admin.site._registry.get(ModelPrice), admin.ModelAdmin)
    superuser = client_for(UserFactory(is_staff=True, is_superuser=True))
    assert superuser.get("/admin/llm/modelprice/").status_code == 200


def test_a_call_is_priced_when_it_is_recorded(settings: Any) -> None:
    settings.COST_CURRENCY = "EUR"
    ModelPrice.objects.create(model=SCRIPTED_MODEL, prompt_per_million=Decimal("3"),
                              completion_per_million=Decimal("15"))
    run = scripted_run()
    RunLLM(run=run, iteration=1).complete("architect", ASK)

    call = LLMCall.objects.get(run=run)
    expected = (Decimal(3) * call.prompt_tokens + Decimal(15) * call.completion_tokens) / 10**6
    assert call.cost == expected > 0
    run.refresh_from_db()
    assert (run.cost, run.tokens_unpriced) == (expected, 0)
    assert run.cost_text == money(expected) and run.cost_text.endswith(" EUR")


def test_a_model_without_a_price_shows_tokens_only(client: Client) -> None:
    run = scripted_run()
    RunLLM(run=run, iteration=1).complete("architect", ASK)

    run.refresh_from_db()
    assert LLMCall.objects.get(run=run).cost is None
    assert run.cost == 0 and run.tokens_unpriced == run.tokens_total > 0
    assert run.cost_text == NO_PRICE
    member = UserFactory()
    MembershipFactory(team=run.project.team, user=member, role="requester")
    client.force_login(member)
    page = client.get(reverse("run_detail", args=[run.pk])).content.decode()
    assert f'<dd id="run-cost">{NO_PRICE}</dd>' in page
    # A price set later counts from the next call; the earlier tokens stay unpriced.
    ModelPrice.objects.create(model=SCRIPTED_MODEL, prompt_per_million=Decimal("1000"),
                              completion_per_million=Decimal("1000"))
    assert "no price set" in cost_text(Decimal("0.5"), unpriced_tokens=10, tokens=30)


def test_money_reads_well() -> None:
    assert money(Decimal("12.5")) == "12.50 USD"
    assert money(Decimal("0.0421")) == "0.0421 USD"
    assert money(0) == "0.00 USD"
    assert cost_text(0, unpriced_tokens=0, tokens=0) == "0.00 USD"
