"""The "Try it" button: a user's queued tries."""

from __future__ import annotations

from marketplace.models import TryRequest


def try_request_of(try_id: int, user_id: int | None) -> TryRequest | None:
    """A try, only for the user who asked for it."""
    if user_id is None:
        return None
    return TryRequest.objects.filter(pk=try_id, user_id=user_id).first()
