"""The append-only audit log: every decision, setting change and publish leaves an entry."""

from __future__ import annotations

import json
from collections.abc import Mapping

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

from teams.models import AuditEntry, Team

SYSTEM_ACTOR = "system"


def _jsonable(value: Mapping[str, object] | None) -> dict[str, object] | None:
    # Dates, decimals and UUIDs become strings now, so the stored row is plain JSON forever.
    if value is None:
        return None
    return json.loads(json.dumps(value, cls=DjangoJSONEncoder))


def _actor_fields(actor: AbstractBaseUser | AnonymousUser | None) -> dict[str, object]:
    if actor is None or not actor.is_authenticated:
        return {"actor": None, "actor_name": SYSTEM_ACTOR}
    return {"actor": actor, "actor_name": actor.get_username()}


def _target_fields(target: models.Model | None) -> dict[str, str]:
    if target is None:
        return {}
    return {"target_type": target._meta.model_name or "", "target_id": str(target.pk),
            "target_repr": str(target)[:200]}


def audit_record(*, actor: AbstractBaseUser | AnonymousUser | None, action: str,
                 team: Team | None, target: models.Model | None = None,
                 target_type: str = "", target_id: str = "", target_repr: str = "",
                 before: Mapping[str, object] | None = None,
                 after: Mapping[str, object] | None = None) -> AuditEntry:
    """Append one entry. `target` names a model instance; the target_* strings name anything else
    (they win over what `target` implies). `actor=None` records the system itself."""
    fields: dict[str, str] = {"target_type": "", "target_id": "", "target_repr": ""}
    fields.update(_target_fields(target))
    fields.update({key: value for key, value in (("target_type", target_type),
                                                 ("target_id", target_id),
                                                 ("target_repr", target_repr[:200])) if value})
    return AuditEntry.objects.create(team=team, action=action, before=_jsonable(before),
                                     after=_jsonable(after), **_actor_fields(actor), **fields)
