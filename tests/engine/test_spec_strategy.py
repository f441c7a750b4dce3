"""A spec's testing strategy and API documentation (autocoder/engine/spec.py): they round-trip,
an older spec reads as the default for what its plugin touches, a wrong value is named; and the
tester is told what the strategy asks of its tests (autocoder/engine/prompting.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from autocoder.engine.prompting import PromptContext, build_messages
from autocoder.engine.spec import MAX_API_DOCS_CHARS, SpecError, spec_from_dict, spec_from_json


def plain_spec(**extra: Any) -> dict[str, Any]:
    return {"name": "row-counter", "summary": "Counts the rows of a CSV.",
            "commands": [{"name": "count", "examples": [{"input": {"csv": "a\n1"},
                                                         "output": 1}]}], **extra}


def chat_spec(**extra: Any) -> dict[str, Any]:
    return plain_spec(services={"hosts": ["hooks.slack.com"], "settings": [], "storage": False},
                      **extra)


def errors_of(data: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as caught:
        spec_from_dict(data)
    return caught.value.errors


def test_the_strategy_and_the_docs_round_trip_through_json() -> None:
    spec = spec_from_dict(chat_spec(testing_strategy="stress", api_docs="POST /hook: {text}"))
    assert (spec.testing_strategy, spec.api_docs) == ("stress", "POST /hook: {text}")
    assert spec_from_json(json.dumps(spec.as_dict())) == spec
    assert spec.as_dict()["testing_strategy"] == "stress"


def test_an_older_spec_reads_as_the_default_for_what_it_touches() -> None:
    assert spec_from_dict(plain_spec()).testing_strategy == "basic"
    assert spec_from_dict(chat_spec()).testing_strategy == "comprehensive"
    secret = plain_spec(services={"hosts": [], "settings": [
        {"name": "token", "description": "A key", "secret": True}], "storage": False})
    assert spec_from_dict(secret).testing_strategy == "comprehensive"
    assert "api_docs" not in spec_from_dict(plain_spec()).as_dict()


@pytest.mark.parametrize("value", ["thorough", 3, ["basic"]])
def test_an_unknown_strategy_is_named(value: object) -> None:
    assert errors_of(plain_spec(testing_strategy=value)) == [
        f"testing_strategy: must be one of basic, comprehensive, stress (got {value!r})"]


def test_api_docs_above_the_bound_are_refused() -> None:
    too_long = "x" * (MAX_API_DOCS_CHARS + 1)
    assert errors_of(chat_spec(api_docs=too_long)) == [
        f"api_docs: must be at most {MAX_API_DOCS_CHARS} characters (got {len(too_long)})"]
    assert errors_of(chat_spec(api_docs=7)) == ["api_docs: must be text"]


def prompt_for_tester(strategy: str) -> str:
    spec = spec_from_dict(plain_spec(testing_strategy=strategy))
    return build_messages("tester", PromptContext(spec=spec, iteration=2))[0].content


def test_the_tester_is_asked_for_the_tests_its_strategy_demands() -> None:
    basic, full, stress = (prompt_for_tester(s) for s in ("basic", "comprehensive", "stress"))
    assert "basic testing strategy" in basic and "main cases" in basic
    assert "Coverage: not required (basic strategy)" in basic and "Hypothesis" not in basic
    assert "comprehensive testing strategy" in full
    assert "test every command" in full and "edge cases" in full and "errors" in full
    assert "at least 80% of the plugin's lines" in full and "Hypothesis" not in full
    assert "stress testing strategy" in stress and "at least 80%" in stress
    assert "property-based tests with Hypothesis" in stress and "large input" in stress
