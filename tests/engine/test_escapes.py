"""Escape choice: the right first rung per pattern, a ladder that always ends in abort."""

from __future__ import annotations

import itertools

import pytest

from autocoder.engine.detector import DETECTION_TYPES, Detection
from autocoder.engine.escapes import ESCAPES, EscapeDecision, choose_escape
from autocoder.engine.spec import AUTONOMY_LEVELS


def detection(kind: str, signature: str = "sig") -> Detection:
    return Detection(type=kind, signature=signature, confidence=0.8, occurrences=3, iteration=4)


def run_ladder(kind: str, autonomy: str = "semi", answered_after_escalate: bool = True,
               ) -> list[str]:
    """Decisions for one problem that never goes away, as the loop would record them."""
    tried: list[tuple[str, str]] = []
    answered = 0
    actions = []
    for _ in range(10):
        decision = choose_escape(detection(kind), tried=tried, autonomy=autonomy,
                                 escalations_answered=answered)
        actions.append(decision.action)
        if decision.action == "abort":
            break
        tried.append(("sig", decision.action))
        if decision.action == "escalate" and answered_after_escalate:
            answered += 1
    return actions


@pytest.mark.parametrize(("kind", "first"), [
    ("identical_replies", "reset_context"),
    ("no_progress", "reset_context"),
    ("repeated_error", "try_alternative"),
    ("test_failure_loop", "try_alternative"),
    ("oscillation", "try_alternative"),
])
def test_first_escape_by_pattern(kind: str, first: str) -> None:
    decision = choose_escape(detection(kind), tried=[], autonomy="semi", escalations_answered=0)
    assert decision == EscapeDecision(first, decision.reason, decision.detail)
    assert "sig" in decision.detail and kind in decision.detail
    assert "sig" not in decision.reason and kind not in decision.reason  # plain words


@pytest.mark.parametrize(("kind", "expected"), [
    ("identical_replies", ["reset_context", "try_alternative", "escalate", "abort"]),
    ("no_progress", ["reset_context", "try_alternative", "escalate", "abort"]),
    ("repeated_error", ["try_alternative", "escalate", "abort"]),
    ("test_failure_loop", ["try_alternative", "escalate", "abort"]),
    ("oscillation", ["try_alternative", "escalate", "abort"]),
])
def test_a_persistent_problem_climbs_the_ladder_to_abort(kind: str, expected: list[str]) -> None:
    assert run_ladder(kind) == expected


@pytest.mark.parametrize(("kind", "autonomy", "answered"), list(itertools.product(
    [*DETECTION_TYPES, "something_new"], AUTONOMY_LEVELS, [True, False])))
def test_every_ladder_ends_in_abort_within_four_decisions(kind: str, autonomy: str,
                                                          answered: bool) -> None:
    actions = run_ladder(kind, autonomy, answered)
    assert actions[-1] == "abort" and len(actions) <= 4
    assert len(set(actions)) == len(actions)  # no escape is chosen twice for one problem
    assert [ESCAPES.index(a) for a in actions] == sorted(ESCAPES.index(a) for a in actions)


def test_an_escape_tried_for_another_signature_does_not_count() -> None:
    decision = choose_escape(detection("repeated_error", "E1"),
                             tried=[("E2", "try_alternative"), ("E2", "escalate")],
                             autonomy="semi", escalations_answered=0)
    assert decision.action == "try_alternative"


def test_two_answered_escalations_with_the_problem_back_means_abort() -> None:
    decision = choose_escape(detection("repeated_error"), tried=[("sig", "try_alternative")],
                             autonomy="guided", escalations_answered=2)
    assert decision.action == "abort"
    assert "guidance 2 times" in decision.reason
    one = choose_escape(detection("repeated_error"), tried=[("sig", "try_alternative")],
                        autonomy="guided", escalations_answered=1)
    assert one.action == "escalate"


def test_full_autonomy_still_escalates_and_says_why() -> None:
    decision = choose_escape(detection("oscillation"), tried=[("sig", "try_alternative")],
                             autonomy="full", escalations_answered=0)
    assert decision.action == "escalate"
    assert "autonomy is full" in decision.reason and "last resort" in decision.reason
    semi = choose_escape(detection("oscillation"), tried=[("sig", "try_alternative")],
                         autonomy="semi", escalations_answered=0)
    assert "autonomy" not in semi.reason


def test_reason_lists_what_was_already_tried() -> None:
    decision = choose_escape(detection("no_progress"),
                             tried=[("sig", "try_alternative"), ("sig", "reset_context")],
                             autonomy="semi", escalations_answered=0)
    assert decision.action == "escalate"
    assert ("already tried for this problem: starting again from the spec and the best code "
            "so far, without the conversation that got stuck; asking for a different approach "
            "from every one tried so far") in decision.reason
    # Plain words first; the detector's terms only in the details.
    assert "reset_context" not in decision.reason and "sig" not in decision.reason
    assert decision.detail == ("loop detector: no_progress (sig); escape: escalate; escapes "
                               "already tried: reset_context, try_alternative")


def test_unknown_autonomy_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown autonomy 'yolo'"):
        choose_escape(detection("no_progress"), tried=[], autonomy="yolo", escalations_answered=0)
