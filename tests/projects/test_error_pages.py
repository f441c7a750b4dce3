"""404, 403 and 500 are pages of the portal: plain words, a way back, the navigation where
there is a request to build it from."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db


def client_for(user: object) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_missing_page_keeps_the_navigation_and_says_why(team_with_roles: dict) -> None:
    response = client_for(team_with_roles["outsider"]).get(reverse("team_detail", args=["acme"]))
    page = response.content.decode()
    assert response.status_code == 404
    assert "This page does not exist" in page and "belongs to a team you are not in" in page
    assert 'aria-label="Main"' in page and reverse("home") in page


def test_a_refusal_says_what_is_not_allowed_and_who_can_change_it(team_with_roles: dict) -> None:
    response = client_for(team_with_roles["member"]).get(reverse("team_settings", args=["acme"]))
    page = response.content.decode()
    assert response.status_code == 403
    assert "Only team admins can change team settings." in page
    assert "ask an admin of your team" in page and 'aria-label="Main"' in page


def test_the_server_error_page_needs_neither_a_request_nor_the_database() -> None:
    page = render_to_string("500.html")
    assert "Something went wrong on our side" in page and "Nothing you did caused it" in page
    assert "{%" not in page and "{{" not in page
