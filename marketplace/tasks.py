"""Dramatiq actors of the marketplace: thin, they take ids and call a service.

Both are sent through the outbox (autocoder.durable.outbox_message_queue), so a message
written while Redis is down goes out once it answers, and both are idempotent: a version is
checked under a claim, a try runs once (a guarded update), so a message delivered twice does
nothing more.
"""

from __future__ import annotations

import dramatiq


# The upload checks: the safety gate, the plugin's tests in the sandbox (up to 120 s) and the
# build. A worker killed mid-check is noticed by the watchdog (its heartbeat stops) and the
# check is sent again; the service counts attempts, so retries here only cover errors raised
# around it (a database that is briefly unavailable).
@dramatiq.actor(max_retries=3, min_backoff=2_000, time_limit=15 * 60 * 1000)
def plugin_version_check(version_id: int) -> None:
    """Check uploaded version `version_id` and record the outcome."""
    from marketplace.services.checking import plugin_version_check as check

    check(version_id=version_id)


# "Try it": one command of a plugin in the sandbox (15 s at most).
@dramatiq.actor(max_retries=0, time_limit=2 * 60 * 1000)
def plugin_try_run(try_id: int) -> None:
    """Run try `try_id` in the sandbox and store its result for the user who asked."""
    from marketplace.services.trying import plugin_try_perform

    plugin_try_perform(try_id=try_id)
