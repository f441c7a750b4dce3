"""The held-out plugins under plugins/ are data for the quality pipeline, not tests of this
repository: pytest does not collect their tests (one of them fails on purpose)."""

collect_ignore_glob = ["plugins/*"]
