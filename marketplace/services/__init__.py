"""Writes of the marketplace, one module per area (keyword-only, typed, named <entity>_<action>).

- `uploads`: an upload stored as a version being checked, its checks queued;
- `checking`: the checks of an upload on a worker, and the watchdog's sweeps of them;
- `submissions`: a checked plugin made a version (plugin row, listing, artifacts), shared;
- `publishing`: a succeeded run submitted under its publish request, the command line's publish;
- `gate`: the publish gate (reviewers' decisions, publishing or rejecting a version);
- `listing`, `yanking`, `reviews`, `tokens`, `trying`: what their names say.

A new version is born "pending" only after every automatic check passed (marketplace/checks.py)
and its artifacts are on disk, in one transaction: a failed submission leaves no row and no file.
"""
