"""The error every reader of plugin.toml raises: all the problems found, each a sentence."""

from __future__ import annotations


class ManifestError(ValueError):
    """plugin.toml cannot be used as it is; `errors` lists every problem, each starting with
    "plugin.toml:" and naming the table and key."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(self.errors))
