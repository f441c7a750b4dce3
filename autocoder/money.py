"""Money as pages show it: amounts in the site's currency (settings.COST_CURRENCY).

Costs of model calls (autocoder/llm/pricing.py) and teams' budgets (teams/selectors/site.py)
are shown alike.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from django.conf import settings


def currency() -> str:
    return str(settings.COST_CURRENCY)


def money(amount: Decimal | float | int) -> str:
    """"0.0421 USD", "0.50 USD", "12.50 USD": cents, with four places for a fraction of one
    unit of the currency that is not a whole number of cents."""
    value = Decimal(amount)
    cents = Decimal("0.01")
    places = (cents if abs(value) >= 1 or value == value.quantize(cents)
              else Decimal("0.0001"))
    return f"{value.quantize(places, rounding=ROUND_HALF_UP):,} {currency()}"
