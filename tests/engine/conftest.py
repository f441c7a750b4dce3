"""Fixtures of the engine tests: scripted scenarios run through the real services, the real
sandbox (bwrap) and the real PostgreSQL of the test session."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runs.models import Run
from runs.services import outbox, starting
from tests.factories import MembershipFactory, TeamFactory, UserFactory

SCRIPTS = Path(__file__).resolve().parent / "scripts"


def load_script(name: str) -> dict[str, list[str]]:
    return json.loads((SCRIPTS / f"{name}.json").read_text())


def greeter_spec(**changes: Any) -> dict[str, Any]:
    spec = json.loads((SCRIPTS / "greeter.spec.json").read_text())
    spec.update(changes)
    return spec


class DispatchRecorder:
    """Stands in for the Dramatiq queue in tests that drive steps by hand: it keeps the
    messages the services would have sent."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, str, int]] = []

    def __call__(self, run_id: int, token: str, delay_ms: int = 0) -> None:
        self.sent.append((run_id, token, delay_ms))


@pytest.fixture
def engine_settings(settings: Any) -> Any:
    settings.ENGINE_RETRY_DELAY_MS = 0
    settings.ENGINE_SANDBOX_TIMEOUT_S = 20
    # A model is set up, so runs start instead of waiting for one; tests that bring their own
    # provider (a factory or a script) stand in for it, and none calls this address.
    settings.LLM_PROVIDER, settings.LLM_BASE_URL = "openai", "http://127.0.0.1:9/v1"
    settings.LLM_MODEL = "stand-in"
    return settings


@pytest.fixture
def people(db: None) -> dict[str, Any]:
    team = TeamFactory(slug="engine-team")
    requester, reviewer, outsider = UserFactory(), UserFactory(), UserFactory()
    MembershipFactory(team=team, user=requester, role="requester")
    MembershipFactory(team=team, user=reviewer, role="reviewer")
    return {"team": team, "requester": requester, "reviewer": reviewer, "outsider": outsider}


@pytest.fixture
def start_run(people: dict[str, Any], engine_settings: Any) -> Callable[..., Run]:
    def start(script: str | dict[str, list[str]] | None, *, autonomy: str = "full",
              max_iterations: int | None = None, use_lessons: bool = False,
              spec: dict[str, Any] | None = None, provider: str = "scripted",
              dispatch: outbox.Dispatch | None = None, **budgets: Any) -> Run:
        project = starting.project_create(team=people["team"], requester=people["requester"],
                                          spec=spec or greeter_spec())
        return starting.run_start(
            project=project, provider=provider,
            script=load_script(script) if isinstance(script, str) else script,
            autonomy=autonomy, max_iterations=max_iterations, use_lessons=use_lessons,
            dispatch=dispatch, **budgets)

    return start


def iterations(run: Run) -> list[Any]:
    return list(run.iterations.order_by("number"))


def prompts(run: Run, role: str) -> list[str]:
    """The user messages sent to `role`, in order."""
    return [next(m["content"] for m in call.messages if m["role"] == "user")
            for call in run.llm_calls.filter(role=role, error="").order_by("id")]
