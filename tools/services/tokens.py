"""API tokens of a team for one activated plugin, or for all of the team's tools (`plugin`
None: an assistant over MCP, docs/tools.md): made by a team admin, shown once, stored as a
SHA-256 (the marketplace's `token_hash`, the one way tokens are hashed), revocable."""

from __future__ import annotations

import secrets

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from marketplace.models import Plugin
from marketplace.selectors.tokens import token_hash
from teams.models import Team
from teams.services.audit import audit_record
from tools.models import ToolToken
from tools.services.activations import ActivationError, check_may_decide

TOKEN_PREFIX = "actl_"  # noqa: S105 - a marker that makes leaked tool tokens greppable
MAX_NAME_CHARS = 80


def tool_token_create(*, team: Team, plugin: Plugin | None, user: User,
                      name: str) -> tuple[ToolToken, str]:
    """A new token; the raw token is returned once and never stored."""
    check_may_decide(team=team, user=user)
    name = " ".join(name.split())
    if not name:
        raise ActivationError("Name the token (for example the system that will use it).")
    if len(name) > MAX_NAME_CHARS:
        raise ActivationError(f"A token's name has at most {MAX_NAME_CHARS} characters.")
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        token = ToolToken.objects.create(team=team, plugin=plugin, name=name, prefix=raw[:12],
                                         token_hash=token_hash(raw), created_by=user)
        audit_record(actor=user, action="tool.token_created", team=team, target=token,
                     after={"plugin": _covers(plugin), "name": name, "prefix": token.prefix})
    return token, raw


def tool_token_revoke(*, team: Team, plugin: Plugin, user: User, token_id: int) -> bool:
    """Revoke at once: the next request with it is refused (401). The tokens page of any of
    the team's tools revokes a token of all its tools too."""
    check_may_decide(team=team, user=user)
    with transaction.atomic():
        token = (ToolToken.objects.filter(pk=token_id, team=team, revoked_at__isnull=True)
                 .filter(Q(plugin=plugin) | Q(plugin__isnull=True)).first())
        if token is None:
            return False
        ToolToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
        audit_record(actor=user, action="tool.token_revoked", team=team, target=token,
                     after={"plugin": _covers(token.plugin), "name": token.name})
    return True


def _covers(plugin: Plugin | None) -> str:
    return plugin.name if plugin is not None else "all of the team's tools"


def tool_token_used(*, token: ToolToken) -> None:
    """Refresh last_used_at at most once a minute, so a busy client costs no write per call."""
    now = timezone.now()
    if token.last_used_at is None or (now - token.last_used_at).total_seconds() > 60:
        ToolToken.objects.filter(pk=token.pk).update(last_used_at=now)
