"""The scripted provider replays a script per role exactly as docs/llm.md, "The scripted
provider" describes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autocoder.llm import (
    CallRecord,
    LLMBadRequest,
    LLMConfigError,
    Message,
    ScriptedProvider,
    build_provider,
    provider_for_role,
    role_config,
)

ASK = [Message("system", "You write plugins."), Message("user", "make a weekly scheduler")]


def replies(provider: ScriptedProvider, role: str, n: int) -> list[str]:
    return [provider.complete(ASK, role=role).text for _ in range(n)]


def test_each_call_takes_the_next_reply_and_the_last_repeats() -> None:
    provider = ScriptedProvider({"implementer": ["one", "two"], "architect": ["plan"]})
    assert replies(provider, "implementer", 4) == ["one", "two", "two", "two"]
    assert replies(provider, "architect", 2) == ["plan", "plan"]


def test_roles_keep_separate_positions() -> None:
    provider = ScriptedProvider({"implementer": ["i1", "i2"], "tester": ["t1", "t2"]})
    assert provider.complete(ASK, role="implementer").text == "i1"
    assert provider.complete(ASK, role="tester").text == "t1"
    assert provider.complete(ASK, role="implementer").text == "i2"
    assert provider.position() == {"implementer": 2, "tester": 1}


def test_an_absent_role_or_empty_list_replies_with_an_empty_string() -> None:
    provider = ScriptedProvider({"implementer": ["code"], "reviewer": []})
    assert replies(provider, "analyst", 2) == ["", ""]
    assert provider.complete(ASK, role="reviewer").text == ""


def test_reads_the_script_file_format(tmp_path: Path) -> None:
    path = tmp_path / "demo.json"
    path.write_text(json.dumps({"implementer": ["reply 1", "reply 2"], "architect": ["..."]}))
    provider = ScriptedProvider.from_file(path)
    assert replies(provider, "implementer", 3) == ["reply 1", "reply 2", "reply 2"]
    assert provider.complete(ASK, role="architect").text == "..."


@pytest.mark.parametrize(("content", "expected"), [
    ('{"implementor": ["x"]}', "unknown role 'implementor'"),
    ('{"implementer": "just one string"}', "must be a list of strings"),
    ('{"implementer": [1, 2]}', "must be a list of strings"),
    ('["implementer"]', "expected a JSON object"),
    ('{"implementer": [', "not valid JSON"),
])
def test_a_bad_script_file_says_what_is_wrong_and_where(tmp_path: Path, content: str,
                                                         expected: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(LLMConfigError, match=expected) as caught:
        ScriptedProvider.from_file(path)
    assert str(path) in str(caught.value)
    assert path.read_text() == content  # nothing is rewritten or lost


def test_a_missing_script_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(LLMConfigError, match="script file not found"):
        ScriptedProvider.from_file(tmp_path / "nope.json")


def test_position_survives_a_move_to_another_worker_process() -> None:
    script = {"implementer": ["a", "b", "c"], "reflector": ["r1", "r2"]}
    first = ScriptedProvider(script)
    replies(first, "implementer", 2)
    first.complete(ASK, role="reflector")
    saved = json.loads(json.dumps(first.position()))  # as stored in the run's checkpoint

    resumed = ScriptedProvider(script)
    resumed.restore(saved)
    assert resumed.complete(ASK, role="implementer").text == "c"
    assert resumed.complete(ASK, role="reflector").text == "r2"


@pytest.mark.parametrize("position", [{"coder": 1}, {"implementer": -1}, {"implementer": "2"}])
def test_restore_rejects_a_corrupt_position(position: dict[str, object]) -> None:
    provider = ScriptedProvider({"implementer": ["a"]})
    with pytest.raises(LLMConfigError):
        provider.restore(position)  # type: ignore[arg-type]
    assert provider.position() == {}


def test_token_usage_is_a_word_count_estimate_and_every_call_is_recorded() -> None:
    records: list[CallRecord] = []
    provider = ScriptedProvider({"implementer": ["here is the code"]})
    completion = provider.complete(ASK, role="implementer", record=records.append)
    # "You write plugins." + "make a weekly scheduler" = 7 words; the reply has 4.
    assert (completion.prompt_tokens, completion.completion_tokens) == (7, 4)
    assert (completion.provider, completion.model) == ("scripted", "script")
    assert records == [CallRecord(role="implementer", provider="scripted", model="script",
                                  prompt_tokens=7, completion_tokens=4,
                                  latency_ms=records[0].latency_ms, error=None, attempts=1)]


def test_streaming_callback_receives_the_reply() -> None:
    seen: list[str] = []
    provider = ScriptedProvider({"tester": ["def test_x(): pass"]})
    provider.complete(ASK, role="tester", on_text=seen.append)
    assert seen == ["def test_x(): pass"]


def test_an_unknown_role_is_rejected_and_recorded_without_moving_the_script() -> None:
    records: list[CallRecord] = []
    provider = ScriptedProvider({"implementer": ["a", "b"]})
    with pytest.raises(LLMBadRequest, match="unknown role 'coder'"):
        provider.complete(ASK, role="coder", record=records.append)
    assert records[0].error is not None and "unknown role" in records[0].error
    assert provider.complete(ASK, role="implementer").text == "a"


def test_the_dict_is_copied_so_later_edits_do_not_change_a_running_script() -> None:
    script = {"implementer": ["first"]}
    provider = ScriptedProvider(script)
    script["implementer"].append("second")
    assert replies(provider, "implementer", 2) == ["first", "first"]


@pytest.mark.django_db  # with no model in the environment, role_config reads the Model page
def test_build_provider_with_a_script_replays_it() -> None:
    provider = build_provider(role_config("implementer"), script={"implementer": ["x"]})
    assert isinstance(provider, ScriptedProvider)
    assert provider.complete(ASK, role="implementer").text == "x"


def test_scripted_without_any_script_explains_how_to_give_one(settings) -> None:
    settings.LLM_PROVIDER, settings.LLM_SCRIPT = "scripted", ""
    with pytest.raises(LLMConfigError, match="--script FILE.json or set LLM_SCRIPT"):
        provider_for_role("implementer")


def test_llm_script_setting_points_at_a_script_file(settings, tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('{"analyst": ["What should happen on holidays?"]}')
    settings.LLM_PROVIDER, settings.LLM_SCRIPT = "scripted", str(path)
    provider = provider_for_role("analyst")
    assert provider.complete(ASK, role="analyst").text == "What should happen on holidays?"
