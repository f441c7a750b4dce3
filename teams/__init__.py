"""Teams: who works together and what they may do (teams, memberships and roles, invitations,
the site's settings for teams), what the portal keeps around their decisions (the audit log,
people's notifications) and the access helpers every page starts with.

The bottom of the domain apps (docs/development.md, "Layers"): every app may import it; it
imports none of them.
"""
