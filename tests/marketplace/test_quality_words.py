"""The upload page says the quality score's parts in points and counts tests as tests (issue
44; docs/engine.md, "The quality score"): an upload whose only test calls its command reads
"Tests: 35 of 35 points (1 test, passing)", and its command counts as run by a test."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.urls import reverse

from tests.marketplace.conftest import Submit, client_for


def _text(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


@pytest.mark.django_db
def test_the_upload_page_names_points_and_tests_rightly(market: dict[str, Any],
                                                         submit: Submit) -> None:
    version = submit()  # word-count: one command, one test that calls it (the scaffold's)
    assert version.test_report["passed"] == 1
    coverage = next(s for s in version.quality["stages"] if s["stage"] == "coverage")
    assert coverage["detail"]["uncovered_commands"] == [], coverage

    page = client_for(market["requester"]).get(
        reverse("marketplace:version", args=["word-count", "0.1.0"])).content.decode()
    words = _text(page)
    assert "Tests 35 of 35 points (1 test, passing)" in words, words
    assert "The plugin's own tests : 1 test, passing" in words
    assert "no test runs the command" not in words
    points = int(re.search(r"Coverage (\d+) of 15 points", words).group(1))  # type: ignore[union-attr]
    assert points > 0
    assert "and its command" in words
    assert "35 of 35 tests" not in words and "Tests passing" not in words
