"""Runs and approvals: a run's models, lifecycle, approval gates and rules, and their reads.

It builds on the engine (autocoder/engine) and is built on by the portal and the marketplace;
see docs/development.md, "Layers"."""
