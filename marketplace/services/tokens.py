"""API tokens for the package index."""

from __future__ import annotations

import secrets

from django.contrib.auth.models import User
from django.utils import timezone

from marketplace.models import ApiToken
from marketplace.selectors.tokens import token_hash
from marketplace.validation import PackageError

TOKEN_PREFIX = "acpi_"  # noqa: S105 - a marker that makes leaked tokens greppable


def api_token_create(*, user: User, name: str) -> tuple[ApiToken, str]:
    """A new token for the package index; the raw token is returned once and never stored."""
    name = " ".join(name.split())[:80]
    if not name:
        raise PackageError(["name the token (for example the machine that will use it)"])
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name, prefix=raw[:12],
                                    token_hash=token_hash(raw))
    return token, raw


def api_token_revoke(*, user: User, token_id: int) -> bool:
    return bool(ApiToken.objects.filter(pk=token_id, user=user, revoked_at__isnull=True)
                .update(revoked_at=timezone.now()))
