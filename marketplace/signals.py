"""What the marketplace tells the apps built on it, without importing them.

The tools app sits above the marketplace (docs/development.md, "Layers"): the marketplace must
not call its services, so it sends these signals and the tools app answers
(tools/receivers.py).
"""

from __future__ import annotations

from django.dispatch import Signal

# A version went live (the publish gate opened), sent once its transaction committed, next to
# the recording of the plugin's git history; kwargs: version (a PluginVersion), approver (a
# User or None). Receivers run outside that transaction: what they write is theirs, and a
# failure of one is logged without undoing the publication (send_robust).
version_published = Signal()
