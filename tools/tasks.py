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


# The short follow-up interview of a change request: the analyst's questions, or the change
# spec once they are answered (one model call, bounded; a redelivered message does nothing).
@dramatiq.actor(max_retries=0, time_limit=3 * 60 * 1000)
def change_request_follow_up(change_request_id: int) -> None:
    """Ask the analyst about change request `change_request_id` and store its reply."""
    from tools.services.change_questions import follow_up_perform

    follow_up_perform(request_id=change_request_id)
