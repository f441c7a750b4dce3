"""An uploaded plugin that talks to another service is tested like a generated one: its tests
get the harness's `plugin_api` (docs/plugins.md, "Testing a plugin that talks to other
services") in the upload's real checks, with no network."""

from __future__ import annotations

from typing import Any

import pytest

from autocoder.engine.scaffold import scaffold_files
from autocoder.engine.spec import spec_from_dict
from marketplace.models import PluginVersion
from marketplace.validation import PackageError
from tests.sandbox.test_plugin_testing import GOOD, SPEC

pytestmark = pytest.mark.django_db


def test_an_upload_whose_tests_use_the_harness_passes_its_checks(submit: Any) -> None:
    files = {**scaffold_files(spec_from_dict(SPEC)), "volunteer_hours/plugin.py": GOOD}
    version = submit(files)
    assert version.status == PluginVersion.Status.PENDING, version.check_errors
    assert version.test_report["passed"] == 1 and version.test_report["failed"] == 0
    assert version.safety_verdict == "pass"


def test_an_upload_that_reaches_an_undeclared_host_fails_its_tests(submit: Any) -> None:
    files = {**scaffold_files(spec_from_dict(SPEC)),
             "volunteer_hours/plugin.py": GOOD.replace("hooks.slack.com", "evil.example.com")}
    with pytest.raises(PackageError) as caught:
        submit(files)
    assert PluginVersion.objects.get().status == PluginVersion.Status.FAILED
    # the uploader reads the host's sentence, not only where the exception was raised
    assert any("HttpError: evil.example.com is not one of the hosts plugin.toml declares" in e
               for e in caught.value.errors), caught.value.errors
