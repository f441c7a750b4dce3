"""Where her request stands, in her words (issue 48), in Chromium at 1280 and 390 px, axe
finding nothing serious and nothing scrolling sideways: the requester's home says a run held
by a broken model and one a person cancelled as they are, and while her built tool waits for a
reviewer its run page says so and who acts next, with no "Publish to the marketplace" form
that would change the request she waits on; the reviewer is led to the request to decide.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from runs.models import Project, Run
from tests.browser.checks import accessible_and_fits
from tests.browser.journey import WIDTHS, succeeded_run
from tests.browser.pages import log_in
from tests.live import LiveServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def test_the_requester_reads_where_each_request_stands_and_who_acts_next(
        server: LiveServer, people: dict[str, Any], context_factory: Any) -> None:
    team, rita = people["team"], people["requester"]
    held = Project.objects.create(team=team, requester=rita, name="held-tool",
                                  status=Project.Status.QUEUED)
    Run.objects.create(project=held, status=Run.Status.HELD, held_by="model")
    cancelled = Project.objects.create(team=team, requester=rita, name="cancelled-tool",
                                       status=Project.Status.FAILED)
    Run.objects.create(project=cancelled, status=Run.Status.CANCELLED, error="cancelled")
    gate = succeeded_run(team, rita, "word-count")
    run_page = f"{server.url}{reverse('run_detail', args=[gate.run_id]).lstrip('/')}"

    for width, height in WIDTHS:
        page = context_factory(viewport={"width": width, "height": height},
                               bypass_csp=True).new_page()
        log_in(page, server, "rita")
        requests = page.get_by_role("region", name="Your requests")
        expect(requests.get_by_role("listitem").filter(has_text="held-tool")).to_contain_text(
            "Held: generation is not connected yet; your admins have been told")
        expect(requests.get_by_role("listitem").filter(has_text="cancelled-tool")
               ).to_contain_text("Cancelled by a person")
        expect(requests.get_by_role("listitem").filter(has_text="word-count")
               ).to_contain_text("Waiting for a reviewer")
        accessible_and_fits(page, "the requester's home", width)

        page.goto(run_page)
        expect(page.locator("#publish-next")).to_contain_text(
            "Where it stands: built and tested; waiting for a reviewer to publish it. rob can "
            "decide this publish request. You will get a notification when it is decided.")
        expect(page.get_by_role("link", name="Publish to the marketplace")).to_have_count(0)
        page.get_by_role("link", name="See the publish request").click()
        expect(page.get_by_text("rob can decide this request.")).to_be_visible()
        accessible_and_fits(page, "the publish request, as its requester", width)
        page.goto(run_page)
        accessible_and_fits(page, "the run waiting for its publish request", width)

    reviewer = context_factory(bypass_csp=True).new_page()
    log_in(reviewer, server, "rob")
    reviewer.goto(run_page)
    reviewer.get_by_role("link", name="Decide the publish request").click()
    expect(reviewer.get_by_role("button", name="Send decision")).to_be_visible()
