"""`manage.py up` with a model set in the environment that nothing listens for (LLM_BASE_URL at
a closed loopback port): `up` calls it once at start, as the Model page calls a set-up before
saving it, says what is wrong and how to fix it, and the running portal's /healthz says the same
(before: "ok ... not called here" until a requester's run failed). The held runs and the
answering model are tests/llm/test_model_from_environment.py."""

from __future__ import annotations

import signal

import httpx
import pytest

from tests.foundation.test_up import start_up, stop_up, stopped_on_failure
from tests.live import free_port

pytestmark = pytest.mark.slow


def test_up_checks_the_model_set_in_the_environment_and_healthz_says_so(
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    dead = f"http://127.0.0.1:{free_port()}/v1"
    for name, value in {"LLM_PROVIDER": "openai", "LLM_BASE_URL": dead, "LLM_MODEL": "coder-7b",
                        "LLM_API_KEY": "", "LLM_SCRIPT": ""}.items():
        monkeypatch.setenv(name, value)
    port = free_port()
    process, lines = start_up(tmp_path_factory.mktemp("up-var"), port)
    with stopped_on_failure(process):
        output = "".join(lines)
        assert (f"The model set in the environment does not answer: The address {dead} could "
                "not be reached: is the server running, and is the address right?") in output
        assert "To fix it: start the model server" in output
        health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10)
        assert health.status_code == 200  # the portal itself works without a model
        llm = health.json()["checks"]["llm"]
        assert llm["ok"] is False
        assert llm["detail"].startswith("the model is set up but does not answer: The address "
                                        f"{dead} could not be reached")
        assert "start the model server" in llm["hint"] and "LLM_BASE_URL" in llm["hint"]
    stop_up(process, signal.SIGTERM)
    assert process.returncode == 0
