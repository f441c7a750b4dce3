"""What the portal tells the apps built on it, without importing them.

The tools app sits above the portal (docs/development.md, "Layers"): the portal must not call
its services, so it sends these signals and the tools app answers (tools/receivers.py). Like
the runs app's signals (runs/signals.py), they are sent synchronously, inside the transaction
of the change they announce, so a receiver's writes commit or roll back with it.
"""

from __future__ import annotations

from django.dispatch import Signal

# A member left a team (teams/services/teams.py, membership_remove); kwargs: team, user,
# actor (who removed them, or None). The tools app pauses the schedules they set up there.
membership_removed = Signal()
