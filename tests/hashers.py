"""The password hasher of the test session (tests/conftest.py).

Django's PBKDF2 with one round instead of a million: a test user costs microseconds, not the
0.4 s each that made user-creating fixtures most of the suite's set-up time. The algorithm
and the stored format are Django's own, rounds included, so a portal the tests start in a
child process (manage.py up, the ASGI server, workers), which keeps the product's hashers,
still verifies these passwords (and re-hashes them at the product's rounds on login).
"""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class OneRoundPBKDF2PasswordHasher(PBKDF2PasswordHasher):
    iterations = 1
