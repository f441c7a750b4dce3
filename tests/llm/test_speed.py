"""A model's measured speed (autocoder/llm/speed.py; docs/llm.md, "How fast the model writes"):
counted on replies long enough to tell, weighted towards the latest, never for a script."""

from __future__ import annotations

import pytest

from autocoder.llm import ProviderConfig, build_provider
from autocoder.llm.scripted import ScriptedProvider
from autocoder.llm.speed import seconds_for, speed_of, speed_record
from autocoder.llm.types import DEADLINE, Completion

pytestmark = pytest.mark.django_db

CONFIG = ProviderConfig(provider="openai", model="coder-7b", base_url="http://127.0.0.1:9/v1")


def reply(tokens: int, seconds: float, finish: str = "stop") -> Completion:
    return Completion(text="x " * tokens, prompt_tokens=50, completion_tokens=tokens,
                      latency_ms=int(seconds * 1000), model="coder-7b", provider="openai",
                      finish_reason=finish)


def test_speed_is_measured_on_whole_replies_and_follows_the_latest() -> None:
    provider = build_provider(CONFIG)
    assert speed_of(provider) is None and seconds_for(400, CONFIG) is None
    speed_record(provider, reply(10, 1.0))  # too short to tell
    speed_record(provider, reply(200, 20.0, finish=DEADLINE))  # cut: no end to time
    assert speed_of(CONFIG) is None
    speed_record(provider, reply(200, 10.0))
    assert speed_of(CONFIG) == pytest.approx(20.0)
    speed_record(provider, reply(100, 10.0))  # the machine got slower
    assert speed_of(provider) == pytest.approx(20.0 * 0.7 + 10.0 * 0.3)
    assert seconds_for(400, CONFIG) == pytest.approx(400 / 17.0)
    # Another address is another model's figure; a script has none.
    other = ProviderConfig(provider="openai", model="coder-7b", base_url="http://127.0.0.1:8/v1")
    assert speed_of(other) is None
    scripted = ScriptedProvider({"analyst": ["[]"]})
    speed_record(scripted, reply(200, 1.0))
    assert speed_of(scripted) is None
