"""Users' reviews of a plugin and its public rating."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Avg, Count

from marketplace.models import Plugin, Review
from marketplace.selectors.reviews import rates_as_publisher
from marketplace.selectors.visibility import can_see, viewer_for
from marketplace.validation import PackageError

MAX_REVIEW_CHARS = 5000


def review_upsert(*, plugin: Plugin, user: User, rating: int,
                  body: str = "") -> Review:
    """Create or edit the user's review (one per user per plugin) and refresh the average.

    Rules: the plugin must be published and visible to the user; a member of its own team
    rates as its publisher (selectors.rates_as_publisher: kept apart, not in the public
    rating); the rating is a whole number from 1 to 5; the text is at most 5000 characters.
    """
    viewer = viewer_for(user)
    if not can_see(viewer, plugin) or plugin.published_at is None:
        raise PermissionDenied("This plugin cannot be reviewed.")
    if isinstance(rating, bool) or not isinstance(rating, int) or not 1 <= rating <= 5:
        raise PackageError(["rating: choose from 1 to 5 stars"])
    if len(body) > MAX_REVIEW_CHARS:
        raise PackageError([f"review: at most {MAX_REVIEW_CHARS} characters (got {len(body)})"])
    latest = plugin.latest_version.version if plugin.latest_version else ""
    with transaction.atomic():
        locked = Plugin.objects.select_for_update().get(pk=plugin.pk)
        review, _ = Review.objects.update_or_create(plugin=locked, user=user, defaults={
            "rating": rating, "body": body.strip(), "version": latest,
            "from_publisher": rates_as_publisher(viewer, plugin)})
        _rating_refresh(locked)
    return review


def review_delete(*, review: Review, user: User) -> None:
    if review.user_id != user.pk:
        raise PermissionDenied("Only its author can delete a review.")
    with transaction.atomic():
        locked = Plugin.objects.select_for_update().get(pk=review.plugin_id)
        review.delete()
        _rating_refresh(locked)


def _rating_refresh(plugin: Plugin) -> None:
    # The public rating: the publisher's own reviews are not in it.
    stats = plugin.reviews.filter(from_publisher=False).aggregate(count=Count("id"),
                                                                  avg=Avg("rating"))
    Plugin.objects.filter(pk=plugin.pk).update(rating_count=stats["count"] or 0,
                                               rating_avg=float(stats["avg"] or 0.0))
