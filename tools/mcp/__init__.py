"""The team's tools over the Model Context Protocol (docs/tools.md)."""
