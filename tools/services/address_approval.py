"""Approving an activation with the addresses its address settings need, entered on the review
page (or by `manage.py tool_activate --setting`): the addresses are checked first, saved with
the team's settings, and approved with the activation, in one transaction (docs/safety.md,
"Hosts a version may reach")."""

from __future__ import annotations

from collections.abc import Mapping

from django.contrib.auth.models import User
from django.db import transaction

from tools.models import Activation
from tools.selectors import setting_rows
from tools.services.activations import ActivationError, activation_decide
from tools.services.addresses import address_settings, address_values_check
from tools.services.tool_settings import tool_settings_save


class AddressesRefused(ActivationError):
    """Addresses that are not web addresses the tool can reach; `errors` says each, by setting."""

    def __init__(self, errors: dict[str, str]) -> None:
        self.errors = errors
        super().__init__(" ".join(f"{name}: {problem}" for name, problem in errors.items()))


def activation_approve(*, activation: Activation, user: User, comment: str = "",
                       addresses: Mapping[str, str] | None = None) -> Activation:
    """Approve `activation` (activation_decide's rules) with the addresses given for its
    address settings; AddressesRefused (nothing saved) when one is no address."""
    given = {name: value for name, value in (addresses or {}).items()
             if name in {item.name for item in address_settings(activation.version)}}
    if not given:
        return activation_decide(activation=activation, user=user, approve=True,
                                 comment=comment)
    cleaned, problems = address_values_check(activation.version, given)
    if problems:
        raise AddressesRefused(problems)
    rows = setting_rows(activation.team, activation.plugin)
    secret = {name for name, row in rows.items() if row.secret}
    values = {name: row.value for name, row in rows.items() if name not in secret}
    with transaction.atomic():
        # Saved first: the decision then approves the addresses the settings hold.
        tool_settings_save(team=activation.team, plugin=activation.plugin,
                           version=activation.version, user=user, values={**values, **cleaned})
        return activation_decide(activation=activation, user=user, approve=True,
                                 comment=comment)
