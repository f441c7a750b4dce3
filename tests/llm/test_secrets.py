"""API keys never show up in logs, repr(), str() of a config, errors or call records.

A fake HTTP server (the hosted APIs are unreachable here) plays a provider that echoes the key
back in its error body, as real ones do for a wrong key.
"""

from __future__ import annotations

import logging

import pytest

from autocoder.llm import CallRecord, LLMError, Message, ProviderConfig, build_provider
from autocoder.llm.services import team_model_override_set
from tests.factories import TeamFactory
from tests.llm.fakeserver import FakeServer, Reply

KEY = "sk-live-SECRET-0d6f1e2a9b"
ASK = [Message("user", "hello")]


def echoing_error(status: int) -> Reply:
    return Reply(status=status, body={"error": {"message": f"Incorrect API key provided: {KEY}",
                                                "type": "invalid_request_error"}})


def test_config_repr_and_str_hide_the_key() -> None:
    config = ProviderConfig(provider="openai", model="m", base_url="https://u:pw@h.example/v1",
                            api_key=KEY)
    for text in (repr(config), str(config), f"{config}", repr([config])):
        assert KEY not in text and "pw" not in text
        assert "api_key=<set>" in text
    assert "api_key=<not set>" in repr(ProviderConfig(provider="openai"))


@pytest.mark.parametrize("provider_name", ["openai", "anthropic"])
@pytest.mark.parametrize("status", [401, 500])
def test_errors_logs_and_records_never_carry_the_key(
        fake_server: FakeServer, caplog: pytest.LogCaptureFixture, provider_name: str,
        status: int) -> None:
    fake_server.queue(echoing_error(status))
    base_url = fake_server.url + ("/v1" if provider_name == "openai" else "")
    provider = build_provider(ProviderConfig(provider=provider_name, model="m",
                                             base_url=base_url, api_key=KEY, max_retries=1))
    provider.retry_base_delay_s = 0.01  # type: ignore[attr-defined]
    records: list[CallRecord] = []
    caplog.set_level(logging.DEBUG)  # SDK and HTTP client debug logs included
    with pytest.raises(LLMError) as caught:
        provider.complete(ASK, role="implementer", record=records.append)
    error = caught.value
    assert "Incorrect API key provided: [redacted]" in str(error)
    for text in (str(error), repr(error), repr(provider), str(records), caplog.text,
                 str(error.__cause__), str(error.__context__)):
        assert KEY not in text
    assert len(fake_server.requests) == (1 if status == 401 else 2)
    # The key did go where it belongs: to the server.
    assert KEY in str(fake_server.requests[0].headers)


@pytest.mark.django_db
def test_a_stored_team_key_stays_out_of_repr_and_str() -> None:
    override = team_model_override_set(team=TeamFactory(), role="tester", provider="anthropic",
                                       model="claude", api_key=KEY)
    for text in (repr(override), str(override)):
        assert KEY not in text
    assert "api_key=set" in repr(override)
