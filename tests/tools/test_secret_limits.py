"""Secrets (issues 28, 27): a secret never enters the plugin's sandbox; the hosts the plugin
declares receive it, and the page where an admin types one says so plainly."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from tests.tools.conftest import client_for
from tests.tools.test_schedule_results import text_of
from tools.models import Activation

pytestmark = pytest.mark.django_db


def test_the_settings_page_says_plainly_who_receives_a_secret(
        active: Activation, world: dict[str, Any]) -> None:
    page = text_of(client_for(world["admin"]).get(reverse("tools:settings", args=[
        "acme", "month-totals"])))
    assert "A secret never enters the plugin's sandbox" in page
    assert "to the hosts it declares, and to no others" in page
