"""Writes of the runs app, one module per area: lifecycle (a run's states and steps), approvals
(votes), outbox (step messages)."""
