"""Views of the projects app, one module per area (teams, interviews, board, runs, approvals)."""
