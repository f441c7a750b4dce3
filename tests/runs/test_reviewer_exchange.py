"""The run page tells the reviewing model's exchange with the loop in plain words
(docs/engine.md, "The reviewer model"): what it said, that the work went back, what came of it.
Written from the run's facts (runs/summary.py), with no model and no sandbox. The team's
insights count the loop detector's patterns only, not this exchange."""

from __future__ import annotations

import pytest
from django.utils import timezone

from projects.selectors.insights import Period, team_insights
from runs.models import LoopEvent
from runs.summary import AttemptFacts, LoopFact, RunFacts, loop_sentence, summarize
from tests.projects.portal_factories import ProjectFactory, RunFactory


def passed(number: int) -> AttemptFacts:
    return AttemptFacts(number=number, tests_ran=True, succeeded=True, acceptance_passed=True,
                        pass_rate=1.0)


@pytest.mark.parametrize(("action", "words"), [
    ("send_back", "The reviewing model asked for changes, so the work went back to the model "
                  "with its reasons (round 2 of 2)."),
    ("to_person", "The reviewing model still asks for changes, but the work may not go back "
                  "again, so a person decides when approving the publish request."),
    ("satisfied", "The reviewing model is satisfied with the changes."),
    ("sent_back_by_person", "A person sent the work back to the model with the reviewing "
                            "model's reasons."),
])
def test_each_step_of_the_exchange_in_words(action: str, words: str) -> None:
    assert loop_sentence(LoopFact(attempt=1, kind="reviewer", action=action,
                                  occurrences=2)) == words


def test_a_run_sent_back_says_it_is_making_the_reviewers_changes() -> None:
    facts = RunFacts(status="running", phase="implement", completed=1, max_attempts=10,
                     latest=passed(1),
                     events=(LoopFact(attempt=1, kind="reviewer", action="send_back",
                                      occurrences=1),))
    summary = summarize(facts)

    assert summary.headline == ("Attempt 2 of 10: every example gives the expected answer and "
                                "100% of the tests pass; making the changes the reviewing model "
                                "asked for.")
    assert summary.notes == ("The reviewing model asked for changes, so the work went back to "
                             "the model with its reasons (round 1 of 2).",)


def test_a_passing_attempt_without_a_send_back_is_still_finishing_up() -> None:
    facts = RunFacts(status="running", phase="learn", completed=1, max_attempts=10,
                     latest=passed(1))

    assert summarize(facts).headline.endswith("; finishing up.")


@pytest.mark.django_db
def test_the_insights_count_loop_patterns_not_the_reviewers_exchange() -> None:
    run = RunFactory(project=ProjectFactory())
    LoopEvent.objects.create(run=run, iteration=1, type="repeated_error", action="reset_context")
    LoopEvent.objects.create(run=run, iteration=1, type="reviewer", action="send_back")

    insights = team_insights(team=run.project.team,
                             period=Period.last_weeks(1, today=timezone.localdate()))

    assert insights.loop_events == [("repeated_error", 1)]
