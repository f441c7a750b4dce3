"""Writes of the projects app (interviews, runs started from them, the board, comments), one
module per area."""
