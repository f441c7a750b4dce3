"""Tokens into money: the price table (ModelPrice, set by site admins) and how a cost is shown.

A call is priced when it is recorded (runs.llm_calls); its model's price at that moment is the
price. A call to a model without a price keeps its tokens only, and every figure built from it
says "no price set" instead of pretending the tokens were free.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from autocoder.llm.models import ModelPrice
from autocoder.money import money

NO_PRICE = "no price set"


def prices_for(models: Iterable[str]) -> dict[str, ModelPrice]:
    """{model name: its price} for those of `models` that have one (one query)."""
    names = {name for name in models if name}
    if not names:
        return {}
    return {price.model: price for price in ModelPrice.objects.filter(model__in=names)}


def cost_text(cost: Decimal | float | int | None, *, unpriced_tokens: int = 0,
              tokens: int | None = None) -> str:
    """What a page says about the cost of some calls: the money, and "no price set" when some
    (or all) of their tokens came from models without a price."""
    if unpriced_tokens and (tokens is None or unpriced_tokens >= tokens) and not cost:
        return NO_PRICE
    text = money(cost or 0)
    if unpriced_tokens:
        text += f" (+{unpriced_tokens:,} tokens: {NO_PRICE})"
    return text
