"""Asking for a change from a call, in Chromium (issue 29): the requester follows "Ask for a
change" on a call of the invocation log, types JSON with a mistake in "what did you expect
instead", reads the error without losing anything typed, corrects it and sends it; the
reviewer finds it in Reviews and declines it with a reason the requester then reads. On a
desktop and on a phone-sized screen; axe finds nothing serious and nothing scrolls sideways.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.pages import log_in
from tests.browser.test_accessibility import FAILING, audit, describe
from tests.factories import MembershipFactory, UserFactory
from tests.live import LiveServer
from tests.tools.conftest import publish_version
from tools.models import ChangeRequest, Invocation
from tools.services.activations import activation_decide, activation_request

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

VIEWPORTS = ({"width": 1280, "height": 900}, {"width": 390, "height": 844})


def assert_fits_and_accessible(page: Any, name: str) -> None:
    failing = [v for v in audit(page) if v["impact"] in FAILING]
    assert not failing, f"{name}: {describe(failing)}"
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), name


def test_asking_for_a_change_from_a_call_at_desktop_and_phone_sizes(
        server: LiveServer, people: dict, context_factory: Any) -> None:
    admin = UserFactory(username="ada")
    MembershipFactory(team=people["team"], user=admin, role="admin")
    version = publish_version(people["team"], visibility="public")
    activation_decide(activation=activation_request(team=people["team"], version=version,
                                                    user=admin), user=admin, approve=True)
    # A call as the worker leaves it (the sandbox run itself is tests/tools' business).
    call = Invocation.objects.create(
        team=people["team"], plugin=version.plugin, version=version, command="totals",
        caller=Invocation.Caller.USER, user=people["requester"], status=Invocation.Status.OK,
        payload={"rows": [{"month": "Mar", "amount": 400}]},
        output={"totals": [{"month": "Mar", "total": 400}]})

    for viewport in VIEWPORTS:
        width = viewport["width"]
        page = context_factory(viewport=viewport, bypass_csp=True).new_page()
        log_in(page, server, "rita")
        page.goto(f"{server.url}t/acme/tools/month-totals/log/")
        page.get_by_role("link", name="Ask for a change about this call").first.click()
        expect(page.get_by_role("heading", name="Ask for a change of month-totals")).to_be_visible()
        expect(page.get_by_text('"total": 400')).to_be_visible()
        assert_fits_and_accessible(page, f"the request form at {width} px")

        page.get_by_label("What should be different").fill("March should be 412.50.")
        typo = '{"totals": [{"month": "Mar", "total": 412.5}'
        page.get_by_label("What did you expect instead").fill(typo)
        page.get_by_role("button", name="Send the request").click()
        expect(page.get_by_role("alert")).to_contain_text("not valid JSON")
        expect(page.get_by_label("What did you expect instead")).to_have_value(typo)
        expect(page.get_by_label("What should be different")).to_have_value(
            "March should be 412.50.")
        assert_fits_and_accessible(page, f"the form's error at {width} px")

        page.get_by_label("What did you expect instead").fill(typo + "]}")
        page.get_by_role("button", name="Send the request").click()
        expect(page.get_by_text("Sent to your team's reviewers.")).to_be_visible()
        expect(page.get_by_text('"total": 412.5')).to_be_visible()
        assert_fits_and_accessible(page, f"the request's page at {width} px")

    assert ChangeRequest.objects.filter(invocation=call).count() == len(VIEWPORTS)
    newest = ChangeRequest.objects.latest("pk")

    reviewer = context_factory(viewport=VIEWPORTS[1], bypass_csp=True).new_page()
    log_in(reviewer, server, "rob")
    reviewer.goto(f"{server.url}approvals/")
    reviewer.get_by_role("link", name="Change asked").last.click()
    expect(reviewer.get_by_role("button", name="Start a change run")).to_be_visible()
    assert_fits_and_accessible(reviewer, "the request for its reviewer at 390 px")
    reviewer.get_by_label("Why decline").fill("March is closed: the books are final.")
    reviewer.get_by_role("button", name="Decline").click()
    expect(reviewer.get_by_text("Declined. Whoever asked has been told why.")).to_be_visible()

    asker = context_factory(viewport=VIEWPORTS[1], bypass_csp=True).new_page()
    log_in(asker, server, "rita")
    asker.goto(f"{server.url}tools/changes/{newest.pk}/")
    expect(asker.get_by_text("March is closed: the books are final.")).to_be_visible()
