"""Reviews: the rating rule, the public reviews and the publisher's own."""

from __future__ import annotations

from django.db.models import QuerySet

from marketplace.models import Plugin, Review
from marketplace.selectors.visibility import Viewer


def rates_as_publisher(viewer: Viewer, plugin: Plugin) -> bool:
    """The rating rule: everyone who may see a published plugin may rate it once; a member of
    the plugin's own team rates as its publisher, so that review is kept apart - shown to the
    team as its own feedback, never counted in the public rating (a team of one can still
    say what it thinks of its plugin, and nobody can raise its own average)."""
    return viewer.is_member(plugin.team_id)


def plugin_reviews(plugin: Plugin) -> QuerySet[Review]:
    """The public reviews: the ones the rating counts."""
    return plugin.reviews.filter(from_publisher=False).select_related("user").order_by(
        "-updated_at")


def publisher_reviews(plugin: Plugin) -> QuerySet[Review]:
    """The plugin team's own reviews (see `rates_as_publisher`), for that team's eyes."""
    return plugin.reviews.filter(from_publisher=True).select_related("user").order_by(
        "-updated_at")


def review_of(plugin: Plugin, user_id: int | None) -> Review | None:
    if user_id is None:
        return None
    return plugin.reviews.filter(user_id=user_id).first()
