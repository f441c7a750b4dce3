"""Writes of the runs app, one module per verb of a run's life:

- starting: a project from a spec, a run of it queued (or held), a retry;
- stepping: performing one step (claim, budgets, retries, failure); progress: committing it;
- waiting: pause, resume, waiting at a gate and going on; holding: held by the installation
  and released; finishing: cancel, the final status, the publish request;
- deciding: what approving or rejecting a gate does to the run (votes: approvals);
- resending: kicks and the watchdog's re-sends; driving: a run in this process;
- project_status: the one place a run writes its project's status;
- common: what they share (RunStateError, step tokens, queuing a step, live events);
- outbox: step messages that survive a Redis outage.
"""
