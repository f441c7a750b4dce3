"""The installation's SECRET_KEY: DJANGO_SECRET_KEY, else a random key kept in the var directory.

Django signs sessions and password-reset links with SECRET_KEY, and autocoder/sealing.py derives
the key that seals stored API keys and plugin secrets from it. A key everyone knows (a default
written in the code or in .env.example) opens every sealed value of a database dump, so when
DJANGO_SECRET_KEY is not set (or empty) the first process that reads the settings makes a
random key and keeps it in `<var>/secret_key`, readable by its owner only; every later process
of the installation (`up`'s web processes and workers, any `manage.py` command, the tests on
their own var directory) reads that file. The key is never printed or logged.

Django-free: the settings import this module before Django is configured.
"""

from __future__ import annotations

import os
import secrets
import stat
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from autocoder import config

KEY_FILE_NAME = "secret_key"
# Django's own idea of a strong key (security.W009): at least 50 characters, 5 distinct ones.
MIN_LENGTH = 50
MIN_UNIQUE_CHARACTERS = 5
# The default settings.py had before keys were generated; values sealed under it are public.
OLD_DEVELOPMENT_DEFAULT = "dev-only-insecure-key-change-me-in-production"
# Published keys (the old default, .env.example's placeholders) and Django's template prefix.
PUBLISHED_KEYS = frozenset({OLD_DEVELOPMENT_DEFAULT, "change-me", "change-me-too"})
PUBLISHED_PREFIXES = ("change-me", "changeme", "django-insecure-")
GENERATE_COMMAND = "python -c 'import secrets; print(secrets.token_urlsafe(50))'"
HOW_TO_FIX = (
    f"generate a new key with `{GENERATE_COMMAND}` and set DJANGO_SECRET_KEY to it (or remove "
    "DJANGO_SECRET_KEY to let the portal keep a random one in var/secret_key on this machine); "
    "to keep the stored API keys and plugin secrets, put the old key in "
    "DJANGO_SECRET_KEY_FALLBACKS and run `python manage.py secrets_reseal` (docs/operating.md, "
    "\"Rotating the secret key\")")


class SecretKeyFileError(RuntimeError):
    """The key file cannot be made or read; the message says what to do."""


def key_file(env: Mapping[str, str] = os.environ) -> Path:
    return config.var_dir(env) / KEY_FILE_NAME


def configured_key(env: Mapping[str, str] = os.environ) -> str:
    """DJANGO_SECRET_KEY as set; empty when it is unset or empty (then the key file is used)."""
    return env.get("DJANGO_SECRET_KEY", "")


def installation_key(path: Path) -> str:
    """The key kept in `path`, made (random, mode 0600) when there is none yet.

    Several processes may start at once on a fresh var directory: each writes a complete key
    to a file of its own and links it into place; the first link wins and everyone reads it.
    """
    try:
        if not path.exists():
            _create(path)
        return _read(path)
    except OSError as error:
        raise SecretKeyFileError(
            f"cannot keep the secret key in {path} ({error.strerror or error}): make the var "
            "directory (AUTOCODER_VAR_DIR) writable, or set DJANGO_SECRET_KEY") from error


def _create(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, draft = tempfile.mkstemp(prefix=".secret_key-", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(handle, "w") as file:
            file.write(secrets.token_urlsafe(MIN_LENGTH) + "\n")
            file.flush()
            os.fsync(file.fileno())
        try:
            os.link(draft, path)
        except FileExistsError:
            pass  # another process was first: its key is the installation's
    finally:
        os.unlink(draft)


def _read(path: Path) -> str:
    if path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        try:  # copied or restored with wider rights: only the owner may read it
            path.chmod(0o600)
        except PermissionError:
            pass  # someone else's file; `doctor` reports its rights
    key = path.read_text().strip()
    if not key:
        raise SecretKeyFileError(f"{path} is empty: delete it to have a new key made, or set "
                                 "DJANGO_SECRET_KEY (sealed values need the key they were "
                                 "sealed under: docs/operating.md)")
    return key


def secret_key(env: Mapping[str, str] = os.environ) -> str:
    """The key the settings use: DJANGO_SECRET_KEY, else the installation's key file."""
    return configured_key(env) or installation_key(key_file(env))


def weakness(key: str) -> str | None:
    """Why `key` must not be used, in plain words (never the key itself); None if it is fine."""
    if not key.strip():
        return "it is empty"
    if key in PUBLISHED_KEYS or key.lower().startswith(PUBLISHED_PREFIXES):
        return ("it is a published default (the old built-in development key or the "
                "placeholder of .env.example), so anyone can open the API keys and plugin "
                "secrets sealed under it in a database dump and forge password-reset links")
    if len(key) < MIN_LENGTH:
        return f"it is only {len(key)} characters long (at least {MIN_LENGTH} are needed)"
    if len(set(key)) < MIN_UNIQUE_CHARACTERS:
        return f"it uses fewer than {MIN_UNIQUE_CHARACTERS} different characters"
    return None


def weak_fallbacks(fallbacks: Iterable[str]) -> list[str]:
    """The reasons why keys in SECRET_KEY_FALLBACKS must go (numbered from 1, no key shown)."""
    found = ((number, weakness(key)) for number, key in enumerate(fallbacks, 1))
    return [f"fallback key {number}: {reason}" for number, reason in found if reason]
