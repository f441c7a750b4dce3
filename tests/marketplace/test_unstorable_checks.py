"""A NUL made by a plugin's own code reaches the upload checks (issue 44): `plugin_publish`
(run as an operator runs it, in a subprocess) and a web upload's check on the worker record
what happened, with U+FFFD in its place, instead of crashing on PostgreSQL's DataError.

Two plugins, both on the real sandbox and the plugin runtime: one whose example fails with
chr(0) in its error (its acceptance test fails: the plugin is refused, in plain words), and one
whose tests pass but whose README's Python example fails with chr(0) (the quality pipeline's
docs stage quotes the error: the plugin is published, its quality report kept)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from marketplace.models import PluginVersion
from marketplace.services.checking import plugin_version_check
from marketplace.services.uploads import plugin_upload_store
from tests.live import child_env
from tests.marketplace.conftest import plugin_tree, zip_bytes

FFFD = "\ufffd"

# The example ("one two three") fails, with a NUL in the error's words.
EXAMPLE_FAILS = '''"""Fails on its example, quoting a NUL."""


class Plugin:
    def on_command(self, name, payload):
        words = str(payload.get("text", "")).split()
        if len(words) == 3:
            raise ValueError("cannot count" + chr(0) + "these words")
        return {"words": len(words)}
'''

# The example passes; four words fail, with a NUL, as in the README's example below.
FOUR_WORDS_FAIL = EXAMPLE_FAILS.replace("len(words) == 3", "len(words) > 3")
README_EXAMPLE = """
```python
from word_count.plugin import Plugin

print(Plugin().on_command("count-words", {"text": "one two three four"}))
```
"""


def readme_example_fails() -> dict[str, str]:
    files = plugin_tree(body=FOUR_WORDS_FAIL)
    return {**files, "README.md": files["README.md"] + README_EXAMPLE}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
    return root


def plugin_publish(directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "plugin_publish", str(directory), "--team", "acme",
         "--approve-as", "acme-admin"],
        cwd=settings.BASE_DIR, env=child_env(), capture_output=True, text=True, timeout=600,
        check=False)


def no_nul(value: Any) -> bool:
    return "\x00" not in str(value)


@pytest.mark.django_db(transaction=True)
def test_plugin_publish_refuses_a_plugin_whose_example_fails_with_a_nul_in_plain_words(
        market: dict, tmp_path: Path) -> None:
    directory = write_tree(tmp_path / "word-count", plugin_tree(body=EXAMPLE_FAILS))
    done = plugin_publish(directory)
    assert done.returncode == 1, (done.stdout, done.stderr)  # docs/marketplace.md
    assert "Traceback" not in done.stderr and "DataError" not in done.stderr, done.stderr
    assert "the plugin was not published:" in done.stderr
    assert "tests: 1 of 1 failed; every test must pass" in done.stderr
    assert f"ValueError: cannot count{FFFD}these words" in done.stderr, done.stderr
    assert not PluginVersion.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_plugin_publish_keeps_a_quality_report_that_quotes_a_nul(market: dict,
                                                                 tmp_path: Path) -> None:
    directory = write_tree(tmp_path / "word-count", readme_example_fails())
    done = plugin_publish(directory)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "published word-count 0.1.0" in done.stdout
    version = PluginVersion.objects.get()
    assert version.status == PluginVersion.Status.PUBLISHED
    [docs] = [s for s in version.quality["stages"] if s["stage"] == "docs"]
    words = " ".join(f["message"] for f in docs["findings"])
    assert f"fails: ValueError: cannot count{FFFD}these words" in words, docs
    assert no_nul(version.quality) and no_nul(version.test_report)


def store(market: dict, files: dict[str, str]) -> PluginVersion:
    return plugin_upload_store(team=market["acme"], user=market["requester"],
                               filename="plugin.zip", data=zip_bytes({**files}),
                               visibility="team", queue=False)


@pytest.mark.django_db
def test_an_uploads_check_records_the_failing_example_not_an_interruption(market: dict) -> None:
    version = store(market, plugin_tree(body=EXAMPLE_FAILS))
    checked = plugin_version_check(version_id=version.pk)  # what the worker's actor runs
    assert checked is not None, "the check crashed instead of recording its outcome"
    assert checked.status == PluginVersion.Status.FAILED and checked.check_attempts == 1
    assert checked.check_errors[0] == "tests: 1 of 1 failed; every test must pass"
    assert any(f"ValueError: cannot count{FFFD}these words" in e
               for e in checked.check_errors), checked.check_errors
    assert not any("interrupted" in e for e in checked.check_errors)


@pytest.mark.django_db
def test_an_uploads_check_keeps_test_results_and_quality_that_quote_a_nul(market: dict) -> None:
    version = store(market, readme_example_fails())
    checked = plugin_version_check(version_id=version.pk)
    assert checked is not None, "the check crashed instead of recording its outcome"
    assert checked.status == PluginVersion.Status.PENDING, checked.check_errors
    assert checked.test_report["passed"] == 1
    assert f"cannot count{FFFD}these words" in str(checked.quality)
    assert no_nul(checked.quality) and no_nul(checked.test_report)
