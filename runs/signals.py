"""What the runs app tells the apps built on it, without importing them.

The runs app sits below the portal and the marketplace (docs/development.md, "Layers"): it
must not call their services, so it sends these signals and they answer. All are sent
synchronously, inside the transaction of the change they announce, so a receiver's writes
commit or roll back with it, and a receiver's exception fails the change (as a direct call
would). The portal connects the receivers (projects/receivers.py).
"""

from __future__ import annotations

from django.dispatch import Signal

# A run succeeded and its publish request is being written; kwargs: run, files (the candidate).
# Each receiver returns a dict merged into the request's payload: the marketplace adds the
# version, visibility and category it proposes and the files it would serve.
publish_payload_wanted = Signal()

# A run was held for a broken part of the installation; kwargs: team, fault.
run_held = Signal()

# A reviewer's vote was recorded; kwargs: approval, user, decision, comment, tally, decided
# (whether the vote settled the request).
approval_voted = Signal()

# An approval request was decided by a vote (the run has moved on); kwargs: approval, actor.
approval_decided = Signal()

# Older pending requests of a run were made stale by a newer one; kwargs: approval (the new
# one), replaced (the ids of the stale ones).
approvals_superseded = Signal()

# Spending crossed 80% of a budget (runs/budgets.py), announced once per budget level; kwargs:
# run, state (a budgets.BudgetState: which budget, spent, limit).
budget_nearly_spent = Signal()
