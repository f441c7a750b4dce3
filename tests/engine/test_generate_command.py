"""`manage.py generate` and `manage.py approve` (docs/engine.md, "manage.py generate"), run as a
user runs them."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from runs.models import LLMCall, Project, Run
from teams.models import Team
from tests.engine.conftest import SCRIPTS

pytestmark = pytest.mark.django_db
EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


def generate(*args: str) -> tuple[dict[str, Any], str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("generate", *args, "--json", stdout=out, stderr=err)
    return json.loads(out.getvalue()), err.getvalue()


@pytest.mark.slow
def test_generate_the_demo_spec_prints_one_json_object(engine_settings: Any,
                                                       tmp_path: Path) -> None:
    out_dir = tmp_path / "plugin"
    result, _ = generate(str(EXAMPLES / "weekly-scheduler.spec.json"), "--provider", "scripted",
                         "--script", str(EXAMPLES / "weekly-scheduler.script.json"),
                         "--out", str(out_dir))

    assert set(result) >= {"run_id", "status", "iterations", "pass_rate", "loop_events",
                           "safety_blocks", "tokens", "lessons_written", "plugin_dir"}
    assert result["status"] == "succeeded"
    assert result["iterations"] == 2 and result["pass_rate"] == 1.0
    assert result["loop_events"] == [] and result["safety_blocks"] == 0
    run = Run.objects.get(id=result["run_id"])
    assert result["tokens"] == {"prompt": run.tokens_prompt, "completion": run.tokens_completion}
    assert result["tokens"]["prompt"] == sum(
        LLMCall.objects.filter(run=run).values_list("prompt_tokens", flat=True))
    # One reflection led to a fix: the run wrote lessons for later runs.
    assert result["lessons_written"] >= 1
    assert run.project.team.slug == "demo"
    assert result["plugin_dir"] == str(out_dir.resolve())
    assert "<= capacity" in (out_dir / "weekly_scheduler" / "plugin.py").read_text()
    assert (out_dir / "plugin.toml").exists() and (out_dir / "tests/test_acceptance.py").exists()


@pytest.mark.slow
def test_generate_reports_an_escalation_with_its_loop_events(engine_settings: Any,
                                                             tmp_path: Path) -> None:
    result, _ = generate(str(SCRIPTS / "greeter.spec.json"), "--provider", "scripted",
                         "--script", str(SCRIPTS / "same_wrong_forever.json"),
                         "--out", str(tmp_path / "p"), "--no-lessons")

    assert result["status"] == "escalated"
    assert "escalate" in [event["action"] for event in result["loop_events"]]
    assert {"type", "signature", "confidence", "action", "iteration"} == set(
        result["loop_events"][0])
    assert result["iterations"] <= 5


def test_a_malformed_spec_exits_non_zero_and_creates_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"name": "no spaces allowed", "summary": "",
                               "commands": [{"name": "x", "examples": []}]}))
    err = io.StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command("generate", str(bad), "--script", str(SCRIPTS / "success.json"),
                     stdout=io.StringIO(), stderr=err)

    assert exit_info.value.code != 0
    assert "name: must be 1-64 characters" in err.getvalue()
    assert "summary: must not be empty" in err.getvalue()
    assert "at least one command needs an example" in err.getvalue()
    assert not Project.objects.exists() and not Team.objects.exists()


def test_the_scripted_provider_needs_a_script(tmp_path: Path, settings: Any) -> None:
    settings.LLM_SCRIPT = ""
    with pytest.raises(CommandError, match="needs --script"):
        call_command("generate", str(SCRIPTS / "greeter.spec.json"), "--provider", "scripted")
    assert not Project.objects.exists()


@pytest.mark.slow
def test_approve_command_lets_a_waiting_run_go_on(engine_settings: Any, tmp_path: Path) -> None:
    result, _ = generate(str(SCRIPTS / "greeter.spec.json"), "--script",
                         str(SCRIPTS / "success.json"), "--autonomy", "semi", "--no-lessons",
                         "--out", str(tmp_path / "p"))
    assert result["status"] == "awaiting_approval" and result["pending_approval"] == "plan"

    with pytest.raises(CommandError, match="another reviewer has to"):
        call_command("approve", str(result["run_id"]), "--as", "requester")
    out = io.StringIO()
    call_command("approve", str(result["run_id"]), "--as", "reviewer", "--json", stdout=out)
    assert json.loads(out.getvalue())["status"] == "succeeded"


@pytest.mark.slow
def test_approve_command_follows_the_teams_rules_and_audits(engine_settings: Any,
                                                            tmp_path: Path) -> None:
    from teams.models import AuditEntry

    result, _ = generate(str(SCRIPTS / "greeter.spec.json"), "--script",
                         str(SCRIPTS / "success.json"), "--autonomy", "semi", "--no-lessons",
                         "--out", str(tmp_path / "p"))
    Team.objects.filter(slug="demo").update(required_approvals=2)

    out = io.StringIO()
    call_command("approve", str(result["run_id"]), "--as", "reviewer", stdout=out)
    assert "vote recorded: 1 of 2 approvals" in out.getvalue()
    assert Run.objects.get(id=result["run_id"]).status == "awaiting_approval"

    out = io.StringIO()
    call_command("approve", str(result["run_id"]), "--as", "admin", "--json", stdout=out)
    assert json.loads(out.getvalue())["status"] == "succeeded"
    actions = list(AuditEntry.objects.filter(team__slug="demo").values_list("action", flat=True))
    assert actions.count("approval.approve") == 2


@pytest.mark.slow
def test_generate_on_a_broken_runtime_says_which_part_and_exits_3(
        engine_settings: Any, tmp_path: Path) -> None:
    """The failure users met: the sandbox's interpreter lacked pytest. Now the run is held
    (nothing charged to the model) and the command names the broken part and its fix."""
    import venv

    from autocoder.runtime import STAMP_NAME, requirements_digest
    from tests.runtime.conftest import forget_probe

    broken = tmp_path / "runtime-without-pytest"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(broken)
    (broken / STAMP_NAME).write_text(json.dumps({"digest": requirements_digest()}))
    engine_settings.PLUGIN_RUNTIME_DIR = str(broken)
    forget_probe()
    out, err = io.StringIO(), io.StringIO()
    try:
        with pytest.raises(SystemExit) as exited:
            call_command("generate", str(EXAMPLES / "weekly-scheduler.spec.json"), "--provider",
                         "scripted", "--script", str(EXAMPLES / "weekly-scheduler.script.json"),
                         "--out", str(tmp_path / "p"), "--json", stdout=out, stderr=err)
    finally:
        forget_probe()
    assert exited.value.code == 3
    result = json.loads(out.getvalue())
    assert (result["status"], result["iterations"], result["lessons_written"]) == ("held", 0, 0)
    assert result["loop_events"] == []
    assert "the plugin runtime is broken" in err.getvalue()
    assert "No module named pytest" in err.getvalue() and "make run" in err.getvalue()


@pytest.mark.slow
def test_every_step_of_a_run_is_timed_for_the_metrics(engine_settings: Any) -> None:
    from tests.foundation.test_metrics import sample, scraped

    def steps(phase: str) -> float:
        text = scraped()
        return sample(text, "autocoder_run_step_seconds_count", phase=phase,
                      outcome="committed") or 0.0

    before = {phase: steps(phase) for phase in ("plan", "implement", "sandbox")}
    result, _ = generate(str(SCRIPTS / "greeter.spec.json"), "--provider", "scripted",
                         "--script", str(SCRIPTS / "success.json"))
    assert result["status"] == "succeeded"
    assert all(steps(phase) > before[phase] for phase in before)


def test_a_negative_reference_wait_is_refused_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="--reference-wait must be 0 or more seconds"):
        call_command("generate", str(EXAMPLES / "weekly-scheduler.spec.json"), "--script",
                     str(EXAMPLES / "weekly-scheduler.script.json"), "--reference-wait", "-1")
    assert not Project.objects.exists()
