"""Reads of the projects app (the board, the reviewer's inbox, requests, insights, comments), one
module per area."""
