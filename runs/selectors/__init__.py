"""Reads of the runs app: the run page (runs), approval requests (approvals), a run's result
(results)."""
