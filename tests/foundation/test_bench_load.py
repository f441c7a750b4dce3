"""`bench_load` against a live server: it logs in, loads both pages and counts what it saw.
(The figures themselves are for people to read; this checks that the bench measures.)"""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from config.benchmarks.load import page_urls, run_load
from tests.factories import PASSWORD, MembershipFactory, TeamFactory, UserFactory
from tests.live import live_asgi_server

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def member() -> str:
    team = TeamFactory(slug="bench", name="Bench")
    user = UserFactory(username="benchy")
    MembershipFactory(team=team, user=user, role="reviewer")
    return user.username


def test_the_bench_loads_both_pages_and_reports_each_request(member: str) -> None:
    with live_asgi_server() as live:
        for page in ("board", "catalogue"):
            result = run_load(base_url=live.url, page=page, team="bench", clients=3,
                              seconds=2, username=member, password=PASSWORD, warmup=3)
            figures = result.as_dict()
            print(figures)
            assert figures["errors"] == 0 and result.requests >= 3
            assert 0 < figures["p50_ms"] <= figures["p95_ms"]
        # A team the user is not in answers 404: every request counts as an error.
        outsider = run_load(base_url=live.url, page="board", team="nobody", clients=2,
                            seconds=1, username=member, password=PASSWORD, warmup=0)
        assert outsider.errors == outsider.requests > 0
        assert "HTTP 404" in outsider.error_samples[0]


def test_catalogue_searches_are_all_new() -> None:
    urls = page_urls("catalogue", "demo")
    first = [next(urls) for _ in range(100)]
    assert len(set(first)) == 100


def test_a_wrong_password_says_the_bench_could_not_log_in(member: str) -> None:
    with live_asgi_server() as live, pytest.raises(CommandError, match="logging in as"):
        call_command("bench_load", url=live.url, user=member, password="wrong",
                     seconds=1, clients=1, stdout=io.StringIO(), stderr=io.StringIO())


def test_seed_fills_the_board_and_catalogue_once(member: str) -> None:
    """`bench_load --seed`: the data the documented figures were measured with, added once."""
    from config.benchmarks.load import SEED_PLUGINS, SEED_PROJECTS, seed_sample_data
    from marketplace.models import Plugin
    from runs.models import Project

    first = seed_sample_data(team_slug="bench")
    again = seed_sample_data(team_slug="bench")

    assert (first.projects, first.plugins) == (SEED_PROJECTS, SEED_PLUGINS)
    assert (again.projects, again.plugins) == (0, 0)
    assert Project.objects.filter(team__slug="bench").count() == SEED_PROJECTS
    assert Plugin.objects.count() == SEED_PLUGINS
