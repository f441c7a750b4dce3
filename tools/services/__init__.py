"""Writes of the tools app: keyword-only, typed, named <entity>_<action>."""
