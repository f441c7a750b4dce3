"""Autocoder: turn a plain-words request into a tested, reviewed, installable plugin."""
