"""Secrets (issue 28): a secret's value is blanked (`[secret]`) only as its exact text, so a
plugin returning it reversed or in base64 would hand it out. Until plugins stop receiving
secrets, the page where an admin types one says so plainly."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from tests.tools.conftest import client_for
from tests.tools.test_schedule_results import text_of
from tools.models import Activation

pytestmark = pytest.mark.django_db


def test_the_settings_page_says_plainly_what_blanking_a_secret_does_not_cover(
        active: Activation, world: dict[str, Any]) -> None:
    page = text_of(client_for(world["admin"]).get(reverse("tools:settings", args=[
        "acme", "month-totals"])))
    assert "only where it appears exactly as you typed it" in page
    assert "reversed, encoded (base64, for example) or in pieces would show it" in page
