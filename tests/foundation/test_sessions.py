"""The session store (autocoder/sessions.py) reads its row with a prepared statement: a
session logs in, survives requests, ends at logout and at expiry like Django's own, and a
forged or unknown session key is an anonymous visitor."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone

from autocoder.sessions import SessionStore
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_the_portal_uses_the_prepared_session_store() -> None:
    assert settings.SESSION_ENGINE == "autocoder.sessions"


def test_a_session_lives_from_login_to_logout() -> None:
    user = UserFactory(username="sam")
    user.set_password("a long enough password")
    user.save()
    client = Client()
    assert client.post("/login/", {"username": "sam", "password": "a long enough password"}
                       ).status_code == 302
    assert client.get("/notifications/").status_code == 200
    key = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert SessionStore(key).load()["_auth_user_id"] == str(user.pk)

    client.post("/logout/")
    assert client.get("/notifications/").status_code == 302, "logged out"
    assert SessionStore(key).load() == {}


def test_an_expired_or_unknown_session_is_nobody() -> None:
    store = SessionStore()
    store["team"] = "acme"
    store.create()
    assert SessionStore(store.session_key).load() == {"team": "acme"}

    Session.objects.filter(session_key=store.session_key).update(
        expire_date=timezone.now() - timedelta(seconds=1))
    expired = SessionStore(store.session_key)
    assert expired.load() == {} and expired.session_key is None

    forged = SessionStore("x" * 32)
    assert forged.load() == {} and forged.session_key is None
    client = Client()
    client.cookies[settings.SESSION_COOKIE_NAME] = store.session_key
    assert client.get("/notifications/").status_code == 302
