"""API tokens: who a raw token belongs to, and a user's tokens."""

from __future__ import annotations

import hashlib
from datetime import timedelta

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet
from django.utils import timezone

from marketplace.models import ApiToken

TOKEN_TOUCH_INTERVAL = timedelta(minutes=1)


def token_hash(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8", errors="replace")).hexdigest()


def api_token_user(raw: str) -> AbstractBaseUser | None:
    """The active user owning token `raw`, or None; last_used_at is refreshed at most once a
    minute so that pip's many requests do not each cost a write."""
    token = (ApiToken.objects.select_related("user")
             .filter(token_hash=token_hash(raw), revoked_at__isnull=True).first())
    if token is None or not token.user.is_active:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at > TOKEN_TOUCH_INTERVAL:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token.user


def api_tokens_of(user_id: int) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user_id=user_id).order_by("revoked_at", "-created_at")
