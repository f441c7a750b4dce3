"""The secret key: made per installation, never shown, refused when it is a known one, and
rotated without losing the sealed secrets (docs/operating.md, "Rotating the secret key").

Real processes: the settings of fresh `python` processes, `manage.py doctor`, `check --deploy`
and `secrets_reseal` in subprocesses, and `manage.py up` on a var directory of its own.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from django.conf import settings
from django.db import connection
from django.test import override_settings

from autocoder import secret_key
from autocoder.llm.models import SiteModelConfig, TeamModelOverride
from autocoder.llm.services import team_model_override_set
from autocoder.sealing import PREFIX, UnsealError, seal, unseal
from marketplace.models import Plugin
from tests.factories import TeamFactory
from tests.foundation.test_security_settings import production_env
from tests.foundation.test_up import log_in, start_up, stop_up, stopped_on_failure
from tests.live import child_env, free_port
from tools.models import ToolSetting

ROOT = Path(settings.BASE_DIR)
OLD_KEY = "an-old-installation-key-" + "Qv7#pL2!xR9$mK4&" * 3
NEW_KEY = "the-new-installation-key-" + "Zt3@wN8^cH5*bJ1%" * 3
API_KEY = "sk-live-Sealed-0c9e77a1"
PLUGIN_SECRET = "plugin-secret-5b21f3"
# What an operator may have: the old built-in default, .env.example's placeholder, too short.
KNOWN_KEYS = {
    "the old built-in default": secret_key.OLD_DEVELOPMENT_DEFAULT,
    ".env.example's placeholder": "change-me",
    "a short key": "s3cr3t-but-short",
}
# The test session's services: `up` and the commands that join it use their own instead.
SESSION_SERVICES = ("DATABASE_URL", "REDIS_URL", "DRAMATIQ_NAMESPACE", "CHANNELS_PREFIX")
PRINT_KEY_HASH = ("import hashlib; from django.conf import settings; "
                  "print(hashlib.sha256(settings.SECRET_KEY.encode()).hexdigest())")


def fingerprint(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def without_configured_key(var_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a process with no DJANGO_SECRET_KEY (empty beats a .env file's)."""
    return {**os.environ, "AUTOCODER_VAR_DIR": str(var_dir), "DJANGO_SECRET_KEY": "",
            "DJANGO_SETTINGS_MODULE": "config.settings", **extra}


def run(command: list[str], env: dict[str, str], timeout: int = 180
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


# -- 1. a key of the installation's own, kept in var/ --------------------------------------------


def test_a_fresh_var_directory_gets_one_private_key_that_every_process_reads(
        tmp_path: Path) -> None:
    var_dir = tmp_path / "var"
    env = without_configured_key(var_dir)
    # Several processes start at once on the fresh directory, as `up`'s children could.
    starting = [subprocess.Popen([sys.executable, "-c", PRINT_KEY_HASH], cwd=ROOT, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(4)]
    printed = {process.communicate(timeout=120)[0].strip() for process in starting}
    key_file = var_dir / "secret_key"
    key = key_file.read_text().strip()
    assert printed == {fingerprint(key)}
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert sorted(path.name for path in var_dir.iterdir()) == ["secret_key"]  # no drafts left
    assert secret_key.weakness(key) is None and key != secret_key.OLD_DEVELOPMENT_DEFAULT

    made_at = key_file.stat().st_mtime_ns
    later = run([sys.executable, "-c", PRINT_KEY_HASH], env)
    assert later.stdout.strip() == fingerprint(key) and key_file.stat().st_mtime_ns == made_at
    other = run([sys.executable, "-c", PRINT_KEY_HASH], without_configured_key(tmp_path / "v2"))
    assert other.stdout.strip() != fingerprint(key)  # every installation has a key of its own


def test_a_configured_key_wins_and_no_file_is_made(tmp_path: Path) -> None:
    env = {**without_configured_key(tmp_path), "DJANGO_SECRET_KEY": NEW_KEY}
    assert run([sys.executable, "-c", PRINT_KEY_HASH], env).stdout.strip() == fingerprint(NEW_KEY)
    assert not (tmp_path / "secret_key").exists()


def test_the_test_session_keeps_its_key_out_of_the_checkout() -> None:
    assert Path(os.environ["AUTOCODER_VAR_DIR"]) != ROOT / "var"
    assert secret_key.key_file() == Path(os.environ["AUTOCODER_VAR_DIR"]) / "secret_key"
    if not secret_key.configured_key():
        assert settings.SECRET_KEY == secret_key.key_file().read_text().strip()


# -- 2. doctor and check --deploy refuse a known key ---------------------------------------------


def doctor(env: dict[str, str]) -> tuple[int, str]:
    result = run([sys.executable, "manage.py", "doctor"], env)
    return result.returncode, result.stdout + result.stderr


def secrets_line(output: str) -> str:
    return next(line for line in output.splitlines()
                if line.startswith(("ok   secrets ", "FAIL secrets ")))


@pytest.mark.slow
@pytest.mark.parametrize("key", list(KNOWN_KEYS.values()), ids=list(KNOWN_KEYS))
def test_doctor_fails_on_a_known_key_and_says_how_to_fix_it(key: str, tmp_path: Path) -> None:
    code, output = doctor({**without_configured_key(tmp_path), "DJANGO_SECRET_KEY": key})
    assert code == 1
    assert secrets_line(output).startswith("FAIL secrets   SECRET_KEY is unsafe: it is ")
    assert "generate a new key with" in output and "DJANGO_SECRET_KEY_FALLBACKS" in output
    assert "secrets_reseal" in output
    assert not re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", output), "the key is shown"


@pytest.mark.slow
def test_doctor_fails_on_settings_that_leave_the_key_empty(tmp_path: Path) -> None:
    env = without_configured_key(
        tmp_path, DJANGO_SETTINGS_MODULE="tests.foundation.empty_secret_key_settings")
    code, output = doctor(env)
    assert code == 1 and "FAIL secrets   SECRET_KEY is unsafe: it is empty" in output


def check_deploy(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "manage.py", "check", "--deploy"], env)


@pytest.mark.parametrize("key", list(KNOWN_KEYS.values()), ids=list(KNOWN_KEYS))
def test_check_deploy_fails_on_a_known_key(key: str) -> None:
    result = check_deploy({**production_env(), "DJANGO_SECRET_KEY": key})
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "(autocoder.E001) SECRET_KEY is unsafe: it is " in output
    assert "HINT: generate a new key with" in output


def test_check_deploy_fails_on_empty_settings_and_on_a_known_fallback() -> None:
    empty = check_deploy({**production_env(),
                          "DJANGO_SETTINGS_MODULE": "tests.foundation.empty_secret_key_settings"})
    assert empty.returncode != 0 and "SECRET_KEY is unsafe: it is empty" in empty.stderr
    fallback = check_deploy({**production_env(), "DJANGO_SECRET_KEY_FALLBACKS": "change-me"})
    assert fallback.returncode != 0
    assert "(autocoder.E002) DJANGO_SECRET_KEY_FALLBACKS is unsafe: fallback key 1: it is a " \
           "published default" in fallback.stderr
    assert "secrets_reseal" in fallback.stderr


def test_the_known_keys_are_refused_and_generated_ones_are_not() -> None:
    for key in (*KNOWN_KEYS.values(), "", "   ", "change-me-to-something-long-" + "a" * 40,
                "django-insecure-" + "k" * 50, "ab" * 40):
        assert secret_key.weakness(key), key
    assert secret_key.weakness(NEW_KEY) is None


# -- 3. rotating the key keeps the sealed secrets ------------------------------------------------


Place = tuple[str, type[SiteModelConfig | TeamModelOverride | ToolSetting], int, str]


def stored(place: Place) -> str:
    _, model, pk, column = place
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {column} FROM {model._meta.db_table} WHERE id = %s",  # noqa: S608
                       [pk])
        return str(cursor.fetchone()[0])


def sealed_under_old_key() -> list[Place]:
    """One secret in each place that stores sealed values, sealed under OLD_KEY: (its plain
    text, model, row, column)."""
    team = TeamFactory()
    plugin = Plugin.objects.create(name="month-totals", normalized_name="month-totals", team=team)
    with override_settings(SECRET_KEY=OLD_KEY, SECRET_KEY_FALLBACKS=[]):
        site = SiteModelConfig.objects.create(pk=SiteModelConfig.SINGLETON_ID, provider="openai",
                                              model="coder", api_key_sealed=seal(API_KEY))
        override = team_model_override_set(team=team, role="tester", provider="anthropic",
                                           api_key=API_KEY)
        secret = ToolSetting.objects.create(team=team, plugin=plugin, name="api_key",
                                            value=seal(PLUGIN_SECRET), secret=True)
    ToolSetting.objects.create(team=team, plugin=plugin, name="greeting", value="sealed:v1:hi")
    return [(API_KEY, SiteModelConfig, site.pk, "api_key_sealed"),
            (API_KEY, TeamModelOverride, override.pk, "api_key_sealed"),
            (PLUGIN_SECRET, ToolSetting, secret.pk, "value")]


def reseal(**extra: str) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "manage.py", "secrets_reseal"], child_env(**extra))


@pytest.mark.django_db(transaction=True)
def test_values_sealed_under_the_old_key_open_with_it_as_fallback_and_are_sealed_again() -> None:
    places = sealed_under_old_key()
    before = [stored(place) for place in places]
    with override_settings(SECRET_KEY=NEW_KEY, SECRET_KEY_FALLBACKS=[]):
        for raw in before:
            with pytest.raises(UnsealError):
                unseal(raw)
    with override_settings(SECRET_KEY=NEW_KEY, SECRET_KEY_FALLBACKS=[OLD_KEY]):
        assert [unseal(raw) for raw in before] == [place[0] for place in places]
        assert SiteModelConfig.objects.get().api_key_status == "set"

    result = reseal(DJANGO_SECRET_KEY=NEW_KEY, DJANGO_SECRET_KEY_FALLBACKS=OLD_KEY)
    assert result.returncode == 0, result.stderr
    assert "3 stored secret(s) sealed again under the current SECRET_KEY; 0 already were." \
        in result.stdout
    assert "remove DJANGO_SECRET_KEY_FALLBACKS" in result.stdout
    for secret in (API_KEY, PLUGIN_SECRET, OLD_KEY, NEW_KEY):
        assert secret not in result.stdout + result.stderr

    after = [stored(place) for place in places]
    with override_settings(SECRET_KEY=NEW_KEY, SECRET_KEY_FALLBACKS=[]):
        for place, old_raw, raw in zip(places, before, after, strict=True):
            assert raw.startswith(PREFIX) and raw != old_raw
            assert unseal(raw) == place[0]
        assert TeamModelOverride.objects.get().api_key == API_KEY
        assert SiteModelConfig.objects.get().api_key_status == "set"
    with override_settings(SECRET_KEY=OLD_KEY, SECRET_KEY_FALLBACKS=[]):
        for raw in after:
            with pytest.raises(UnsealError):
                unseal(raw)
    assert ToolSetting.objects.get(name="greeting").value == "sealed:v1:hi"  # not a secret

    again = reseal(DJANGO_SECRET_KEY=NEW_KEY)
    assert "0 stored secret(s) sealed again under the current SECRET_KEY; 3 already were." \
        in again.stdout
    assert [stored(place) for place in places] == after


@pytest.mark.django_db(transaction=True)
def test_a_value_no_key_opens_is_named_and_left_alone() -> None:
    places = sealed_under_old_key()
    result = reseal(DJANGO_SECRET_KEY=NEW_KEY, DJANGO_SECRET_KEY_FALLBACKS="")
    assert result.returncode == 1
    assert "3 stored secret(s) open with no key" in result.stderr
    assert "llm.SiteModelConfig 1 api_key_sealed" in result.stderr
    assert "enter them again" in result.stderr and "DJANGO_SECRET_KEY_FALLBACKS" in result.stderr
    with override_settings(SECRET_KEY=OLD_KEY, SECRET_KEY_FALLBACKS=[]):
        assert [unseal(stored(place)) for place in places] == [place[0] for place in places]


# -- up: its own key, never shown, and secrets of the old default sealed again -------------------


@pytest.fixture
def own_var_dir() -> Iterator[Path]:
    """Not under pytest's base directory, which other test sessions close to other users
    (0700) while the embedded PostgreSQL's user needs to reach it."""
    scratch = Path(tempfile.mkdtemp(prefix="autocoder-secret-key-"))
    try:
        yield scratch / "var"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.mark.slow
def test_up_makes_its_key_shows_it_nowhere_and_reseals_what_the_old_default_sealed(
        own_var_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    var_dir = own_var_dir
    old_install = {**without_configured_key(var_dir),
                   "DJANGO_SECRET_KEY": secret_key.OLD_DEVELOPMENT_DEFAULT}
    for name in SESSION_SERVICES:
        old_install.pop(name, None)
    # An installation that ran before keys were made: its model key sealed under the old default.
    made = run([sys.executable, "manage.py", "shell", "-c",
                "from django.core.management import call_command; "
                "call_command('migrate', verbosity=0); "
                "from autocoder.llm.models import SiteModelConfig; "
                f"site = SiteModelConfig(pk=1, provider='openai', model='coder'); "
                f"site.api_key = {API_KEY!r}; site.save()"], old_install, timeout=300)
    assert made.returncode == 0, made.stderr
    assert not (var_dir / "secret_key").exists()

    monkeypatch.setenv("DJANGO_SECRET_KEY", "")  # what start_up passes on: no key configured
    port = free_port()
    base = f"http://127.0.0.1:{port}/"
    process, lines = start_up(var_dir, port)
    with stopped_on_failure(process):
        key_file = var_dir / "secret_key"
        key = key_file.read_text().strip()
        assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
        assert secret_key.weakness(key) is None
        assert "Sealed 1 stored secret(s) again under this installation's own key" in "".join(lines)
        password = re.search(r"admin\s+password: (\S+)", "".join(lines)).group(1)
        # Signed in on one web process, still signed in on the others: one key for all.
        with httpx.Client(timeout=10, follow_redirects=False) as client:
            assert log_in(client, base, "admin", password).status_code == 302
            for _ in range(12):
                page = client.get(f"{base}t/demo/board/", headers={"Connection": "close"})
                assert page.status_code == 200
        status_of = ("from autocoder.llm.models import SiteModelConfig; "
                     "print(SiteModelConfig.objects.get().api_key_status)")
        joined = {name: value for name, value in without_configured_key(var_dir).items()
                  if name not in SESSION_SERVICES}
        now = run([sys.executable, "manage.py", "shell", "-c", status_of], joined)
        assert now.stdout.splitlines()[-1:] == ["set"], now.stderr  # with this key, and
        public = run([sys.executable, "manage.py", "shell", "-c", status_of],
                     {**joined, "DJANGO_SECRET_KEY": secret_key.OLD_DEVELOPMENT_DEFAULT})
        assert public.stdout.splitlines()[-1:] == ["unreadable: enter it again"]  # no more
        code, report = doctor(joined)
        assert secrets_line(report).startswith(f"ok   secrets   SECRET_KEY kept in {key_file}")
        assert key not in report and API_KEY not in report
    stop_up(process, signal.SIGTERM)
    assert key not in "".join(lines) and API_KEY not in "".join(lines)
