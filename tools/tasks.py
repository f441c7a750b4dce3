"""Dramatiq actors of the tools app: thin, they take ids and call a service."""

from __future__ import annotations

import dramatiq


# One call of a tool from the form or a schedule (the sandbox bounds it to INVOKE_LIMITS).
# Run once: a guarded update makes a redelivered message do nothing.
@dramatiq.actor(max_retries=0, time_limit=2 * 60 * 1000)
def tool_invocation_run(invocation_id: int) -> None:
    """Run queued invocation `invocation_id` and store its outcome."""
    from tools.services.invocations import invocation_perform

    invocation_perform(invocation_id=invocation_id)
