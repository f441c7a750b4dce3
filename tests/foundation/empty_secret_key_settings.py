"""Settings of a deployment whose own settings module leaves SECRET_KEY empty
(tests/foundation/test_secret_key.py runs `doctor` and `check --deploy` on them)."""

from config.settings import *  # noqa: F403

SECRET_KEY = ""
