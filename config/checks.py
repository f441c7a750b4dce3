"""The secret key's checks: a Django system check for `check --deploy` and a `doctor` line.

Both refuse a SECRET_KEY (or a key in SECRET_KEY_FALLBACKS) that is a published default, empty
or too short (autocoder/secret_key.py): whoever knows it opens the sealed API keys and plugin
secrets of a database dump and signs what Django signs. Neither ever shows a key.
"""

from __future__ import annotations

import stat
from collections.abc import Sequence
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from autocoder import secret_key
from config.health import Check

FALLBACK_FIX = ("once every stored secret is sealed under the current key "
                "(`python manage.py secrets_reseal`), remove it from DJANGO_SECRET_KEY_FALLBACKS")


def _current_key() -> str:
    try:
        return str(settings.SECRET_KEY)
    except ImproperlyConfigured:  # Django refuses to hand out an empty SECRET_KEY
        return ""


def key_problem() -> str | None:
    reason = secret_key.weakness(_current_key())
    return f"SECRET_KEY is unsafe: {reason}" if reason else None


def fallback_problems() -> list[str]:
    return [f"DJANGO_SECRET_KEY_FALLBACKS is unsafe: {reason}"
            for reason in secret_key.weak_fallbacks(settings.SECRET_KEY_FALLBACKS)]


@checks.register(checks.Tags.security, deploy=True)
def check_secret_key(app_configs: Sequence[AppConfig] | None = None,
                     **kwargs: Any) -> list[checks.CheckMessage]:
    found: list[checks.CheckMessage] = []
    problem = key_problem()
    if problem:
        found.append(checks.Error(problem, hint=secret_key.HOW_TO_FIX, id="autocoder.E001"))
    found += [checks.Error(problem, hint=FALLBACK_FIX, id="autocoder.E002")
              for problem in fallback_problems()]
    return found


def _key_file_problem() -> str | None:
    path = secret_key.key_file()
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:  # settings of their own set SECRET_KEY
        return None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        return f"{path} can be read by other users of this machine"
    return None


def secret_key_health() -> Check:
    """`doctor`'s line: where the key comes from, or what is wrong with it."""
    problem = key_problem()
    if problem:
        return Check("secrets", False, problem, secret_key.HOW_TO_FIX)
    if secret_key.configured_key():
        source = "SECRET_KEY from DJANGO_SECRET_KEY"
    else:
        source = f"SECRET_KEY kept in {secret_key.key_file()}"
        unsafe_file = _key_file_problem()
        if unsafe_file:
            return Check("secrets", False, unsafe_file, f"run `chmod 600 {secret_key.key_file()}`")
    fallbacks = fallback_problems()
    if fallbacks:
        return Check("secrets", False, "; ".join(fallbacks), FALLBACK_FIX)
    count = len(settings.SECRET_KEY_FALLBACKS)
    return Check("secrets", True, source + (f", {count} fallback key(s)" if count else ""))
