"""The session store (autocoder/sessions.py) reads its row with a prepared statement: a
session logs in, survives requests, ends at logout and at expiry like Django's own, and a
forged or unknown session key is an anonymous visitor. The user of each request is read the
same way (autocoder/authentication.py) and is exactly who Django's ModelBackend would give."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone

from autocoder import authentication
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


def logged_in(username: str = "sam", password: str = "a long enough password") -> Client:
    user = UserFactory(username=username)
    user.set_password(password)
    user.save()
    client = Client()
    assert client.post("/login/", {"username": username, "password": password}).status_code == 302
    return client


def session_of(client: Client) -> SessionStore:
    return SessionStore(client.cookies[settings.SESSION_COOKIE_NAME].value)


def test_a_login_names_the_prepared_backend_and_each_page_has_its_user() -> None:
    client = logged_in("sam")
    assert session_of(client).load()["_auth_user_backend"] == authentication.PATH
    page = client.get("/notifications/")
    assert page.status_code == 200
    user = page.wsgi_request.user
    assert (user.username, user.is_authenticated, user.is_staff) == ("sam", True, False)
    assert user.last_login is not None and user.last_login.tzinfo is not None


def test_a_session_made_with_djangos_backend_stays_logged_in() -> None:
    client = logged_in("sam")
    store = session_of(client)
    store["_auth_user_backend"] = authentication.DJANGO_MODEL_BACKEND  # as before the change
    store.save()

    assert client.get("/notifications/").status_code == 200


def test_a_deactivated_removed_or_repassworded_user_is_logged_out() -> None:
    deactivated, removed, repassworded = logged_in("dee"), logged_in("rem"), logged_in("rep")
    User = get_user_model()  # noqa: N806 (a class)
    User.objects.filter(username="dee").update(is_active=False)
    User.objects.filter(username="rem").delete()
    someone = User.objects.get(username="rep")
    someone.set_password("another long password")
    someone.save()

    for client in (deactivated, removed, repassworded):
        assert client.get("/notifications/").status_code == 302


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
