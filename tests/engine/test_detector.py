"""Loop detector: each pattern fires when a run is stuck and stays quiet when it is not."""

from __future__ import annotations

from collections.abc import Iterable

from autocoder.engine.detector import (
    DETECTION_TYPES,
    Detection,
    IterationSnapshot,
    detect,
    failing_signature,
)


def snap(number: int, *, code: str | None = None, passes: int | None = None,
         failing: Iterable[str] = (), error: str = "", reply: str | None = None,
         tests_ran: bool = True) -> IterationSnapshot:
    """A snapshot that differs from its neighbours in everything not given."""
    return IterationSnapshot(
        number=number, code_hash=code if code is not None else f"code{number}",
        pass_count=passes if passes is not None else number, failing=frozenset(failing),
        error_signature=error, reply_hash=reply if reply is not None else f"reply{number}",
        tests_ran=tests_ran,
    )


def types(found: list[Detection]) -> list[str]:
    return [d.type for d in found]


def test_a_run_that_improves_every_iteration_is_not_stuck() -> None:
    history = [snap(n, failing=[f"t{n}"], error=f"E{n}") for n in range(1, 11)]
    assert detect(history) == []
    assert detect([]) == []


def test_repeated_error_three_times_in_a_row() -> None:
    history = [snap(n, error="TypeError: <val> object is not iterable") for n in (1, 2, 3)]
    found = detect(history)
    assert types(found) == ["repeated_error"]
    assert found[0].signature == "TypeError: <val> object is not iterable"
    assert (found[0].occurrences, found[0].iteration, found[0].confidence) == (3, 3, 0.7)


def test_repeated_error_allows_one_different_iteration_within_the_last_four() -> None:
    history = [snap(1, error="E"), snap(2, error="E"), snap(3, error="other"), snap(4, error="E")]
    assert types(detect(history)) == ["repeated_error"]


def test_repeated_error_spread_wider_than_four_is_not_a_loop() -> None:
    history = [snap(1, error="E"), snap(2, error="x"), snap(3, error="E"), snap(4, error="y"),
               snap(5, error="E")]
    assert detect(history) == []


def test_repeated_error_needs_the_latest_iteration_to_repeat_it() -> None:
    history = [snap(n, error="E") for n in (1, 2, 3)] + [snap(4, error="fixed, new problem")]
    assert "repeated_error" not in types(detect(history))


def test_empty_error_signatures_are_not_an_error() -> None:
    assert detect([snap(n, error="") for n in (1, 2, 3, 4)]) == []


def test_confidence_rises_with_occurrences() -> None:
    three = detect([snap(n, error="E") for n in range(1, 4)])[0]
    four = detect([snap(n, error="E") for n in range(1, 5)])[0]
    six = detect([snap(n, error="E") for n in range(1, 7)])[0]
    assert three.confidence < four.confidence < six.confidence <= 0.99
    assert (three.occurrences, four.occurrences, six.occurrences) == (3, 4, 6)


def test_no_progress_when_the_code_does_not_change() -> None:
    history = [snap(n, code="same", passes=2, reply=f"r{n}") for n in (1, 2, 3)]
    found = detect(history)
    assert types(found) == ["no_progress"]
    assert found[0].signature.startswith("code unchanged: same")
    assert not detect(history[:2])


def test_no_progress_when_the_pass_count_is_flat_behind_changing_code() -> None:
    history = [snap(n, passes=4) for n in (1, 2, 3)]
    found = detect(history)
    assert types(found) == ["no_progress"]
    assert found[0].signature == "pass count stuck at 4"
    unchanged_code = detect([snap(n, code="c", passes=4) for n in (1, 2, 3)])[0]
    assert found[0].confidence < unchanged_code.confidence


def test_test_failure_loop_needs_five_runs_with_the_same_failing_set() -> None:
    failing = ["tests/test_acceptance.py::test_count_example_1"]
    history = [snap(n, failing=failing, passes=n) for n in range(1, 6)]
    assert types(detect(history[:4])) == []
    found = detect(history)
    assert types(found) == ["test_failure_loop"]
    assert found[0].signature == failing_signature(frozenset(failing))
    assert "test_count_example_1" in found[0].signature


def test_test_failure_loop_breaks_on_a_different_set_or_a_run_without_tests() -> None:
    same = ["t::a"]
    changed = [snap(n, failing=same) for n in range(1, 5)] + [snap(5, failing=["t::b"])]
    assert "test_failure_loop" not in types(detect(changed))
    skipped = [snap(n, failing=same) for n in (1, 2, 3, 4)] + [snap(5, failing=same)]
    skipped[2] = snap(3, failing=same, tests_ran=False)
    assert "test_failure_loop" not in types(detect(skipped))


def test_oscillation_a_b_a() -> None:
    history = [snap(1, code="A"), snap(2, code="B"), snap(3, code="A")]
    found = detect(history)
    assert types(found) == ["oscillation"]
    assert found[0].signature == "code flips between A and B"
    later = detect(history + [snap(4, code="B")])
    assert later[0].signature == found[0].signature  # B, A, B is the same back-and-forth


def test_no_oscillation_without_a_different_state_in_between() -> None:
    assert "oscillation" not in types(detect([snap(1, code="A"), snap(2, code="A")]))
    assert detect([snap(1, code="A"), snap(2, code="B"), snap(3, code="C")]) == []


def test_oscillation_across_a_longer_gap() -> None:
    history = [snap(1, code="A"), snap(2, code="B"), snap(3, code="C"), snap(4, code="A")]
    assert types(detect(history)) == ["oscillation"]


def test_identical_replies_twice_in_a_row() -> None:
    found = detect([snap(1, reply="same"), snap(2, reply="same")])
    assert types(found) == ["identical_replies"]
    assert found[0].occurrences == 2 and found[0].signature == "reply same"
    assert detect([snap(1, reply=""), snap(2, reply="")]) == []


def test_a_stuck_model_trips_several_patterns_most_confident_first() -> None:
    history = [snap(n, code="c", passes=0, failing=["t::x"], error="E", reply="r")
               for n in range(1, 6)]
    found = detect(history)
    assert set(types(found)) == {"identical_replies", "no_progress", "repeated_error",
                                 "test_failure_loop"}
    confidences = [d.confidence for d in found]
    assert confidences == sorted(confidences, reverse=True)
    assert all(0 < c <= 1 for c in confidences) and all(d.iteration == 5 for d in found)
    assert all(d.type in DETECTION_TYPES for d in found)


def test_since_ignores_history_before_the_last_escape() -> None:
    history = [snap(n, error="E", reply="r") for n in range(1, 5)]
    assert detect(history, since=4) == []
    assert types(detect(history, since=2)) == ["identical_replies"]  # only 3 and 4 count
    assert types(detect(history + [snap(5, error="E", reply="r")], since=2)) == [
        "identical_replies", "repeated_error"]


def test_history_order_does_not_matter() -> None:
    history = [snap(3, code="A"), snap(1, code="A"), snap(2, code="B")]
    assert types(detect(history)) == ["oscillation"]


def test_failing_signature_is_bounded_and_distinguishes_sets() -> None:
    many = frozenset(f"tests/test_x.py::test_{'n' * 200}_{i}" for i in range(50))
    signature = failing_signature(many)
    assert len(signature) <= 300 and "(+47 more)" in signature
    assert failing_signature(many) != failing_signature(many - {next(iter(many))})
