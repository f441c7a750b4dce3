from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.factories import PASSWORD, UserFactory

pytestmark = pytest.mark.django_db


def test_log_in_and_out() -> None:
    user = UserFactory()
    client = Client()
    response = client.post(reverse("login"), {"username": user.username, "password": PASSWORD})
    assert response.status_code == 302 and response["Location"] == reverse("home")
    assert client.get(reverse("home")).status_code == 200
    client.post(reverse("logout"))
    assert client.get(reverse("home")).status_code == 302


def test_wrong_password_shows_an_error_on_the_form() -> None:
    user = UserFactory()
    response = Client().post(reverse("login"), {"username": user.username, "password": "nope"})
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()


def test_repeated_failures_lock_the_account_even_with_the_right_password(settings: object) -> None:
    user = UserFactory()
    client = Client(REMOTE_ADDR="203.0.113.9")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post(reverse("login"), {"username": user.username, "password": "wrong"})
    response = client.post(reverse("login"), {"username": user.username, "password": PASSWORD})
    assert response.status_code == 429
    assert "Too many failed log-ins" in response.content.decode()
    assert client.get(reverse("home")).status_code == 302  # still not logged in


def test_other_users_are_not_locked_by_someone_elses_failures(settings: object) -> None:
    victim, bystander = UserFactory(), UserFactory()
    client = Client(REMOTE_ADDR="203.0.113.10")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post(reverse("login"), {"username": victim.username, "password": "wrong"})
    response = client.post(reverse("login"),
                           {"username": bystander.username, "password": PASSWORD})
    assert response.status_code == 302
