"""The user-install stage's recurring automation (issue 45), as a team sets one up.

A requester asked: "every Monday, post last week's volunteer hours from our booking system to
the team chat". The interview recorded two systems: the booking system, whose address the
requester did not know (an address setting the admin enters), and the team chat, whose webhook
she gave. Here both are loopback HTTP servers of this script (TOOLS_INTERNAL_HOSTS lets the
portal's api.http reach 127.0.0.1, as an install lists an internal service). Through the
commands an admin or a script uses:
- `generate` writes the plugin (scripted replies: no model that writes code is reachable here);
- `plugin_publish` publishes it through the marketplace's checks;
- `tool_activate` activates it with the booking system's address and its token (the token from
  an environment variable, never the command line);
- `tool_schedule` runs it Mondays at 08:00 in Europe/Berlin with last week as the period;
- `schedules_run_due --now 2027-03-29T08:00:00+02:00`, the Monday after the spring clock
  change, runs what is due: the booking system must be asked for 2027-03-22 to 2027-03-28
  with the token, the chat must get the summary, and the token must be nowhere else (no
  command's output, not the chat's message, not the portal's log).
Standard library only, like the rest of the user-install stage.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

NAME = "volunteer-hours"
COMMAND = "post-weekly-hours"
HOOK_PATH = "/hooks/volunteers"
HOURS = [{"name": "Ann", "hours": 5}, {"name": "Bo", "hours": 3}, {"name": "Ann", "hours": 2}]
TOKEN = "bk-7f3a9c1e5d2b8a64"  # noqa: S105 (a made-up token this script hands the portal)


class Recorder:
    """A loopback HTTP service that answers like the real one and keeps what it was sent."""

    def __init__(self, answer: Callable[[str, str, dict[str, str], bytes], tuple[int, bytes]]):
        self.received: list[dict[str, Any]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {key.lower(): value for key, value in self.headers.items()}
                recorder.received.append({"method": self.command, "path": self.path,
                                          "headers": headers, "body": body.decode()})
                status, reply = answer(self.command, self.path, headers, body)
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            do_GET = do_POST = _handle  # noqa: N815 (http.server's names)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _booking(method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
    if headers.get("authorization") != f"Bearer {TOKEN}":
        return 401, b'{"error": "token"}'
    return 200, json.dumps({"hours": HOURS}).encode()


def _chat(method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, bytes]:
    return (200, b'{"ok": true}') if path == HOOK_PATH else (404, b"{}")


def spec(chat: str) -> dict[str, Any]:
    """What the interview records for the request (docs/engine.md, "Spec format")."""
    example_base = "https://bookings.example.org"
    return {
        "name": NAME,
        "summary": "Every week, posts the volunteer hours of the week before from the club's "
                   "booking system to the team chat.",
        "commands": [{
            "name": COMMAND,
            "description": "Input {start, end} (ISO dates): reads the hours booked in that "
                           "period from the booking system and posts the total per person to "
                           "the team chat. Output {period, total_hours, by_person, posted}.",
            "examples": [{
                "input": {"start": "2027-03-22", "end": "2027-03-28"},
                "output": {"period": "2027-03-22 to 2027-03-28", "total_hours": 10,
                           "by_person": {"Ann": 7, "Bo": 3}, "posted": True},
                "settings": {"booking_address": example_base},
                "http": [{"method": "GET", "url": f"{example_base}/api/hours", "status": 200,
                          "json": {"hours": HOURS}},
                         {"method": "POST", "url": chat + HOOK_PATH, "status": 200,
                          "json": {"ok": True}}],
            }],
        }],
        "services": {
            "hosts": [chat],
            "settings": [
                {"name": "booking_address", "kind": "address",
                 "description": "The web address of our booking system"},
                {"name": "booking_token", "secret": True,
                 "description": "The booking system's API token"},
            ],
            "systems": [
                {"name": "our booking system", "does": "reads", "host": None,
                 "address_setting": "booking_address", "needs": ["booking_token"]},
                {"name": "the team chat", "does": "sends", "host": chat,
                 "address_setting": None, "needs": []},
            ],
        },
        "schedule": {"words": "every Monday morning", "when": "weekly mon 08:00",
                     "command": COMMAND, "period": "last_week"},
        "constraints": ["standard library only"],
        "autonomy": "full",  # the plan goes on without a reviewer; the publish is approved
        "quality_threshold": 0.85,
        "max_iterations": 3,
    }


PLUGIN_PY = '''"""The volunteer-hours plugin: booked hours of a period, posted to the chat."""

from __future__ import annotations

from typing import Any

CHAT_WEBHOOK = "@CHAT@/hooks/volunteers"


class Plugin:
    """Posts the volunteer hours of a period from the booking system to the team chat."""

    def on_initialize(self, api: Any) -> None:
        """Keeps the host's api: its settings and its http client."""
        self.api = api

    def on_event(self, event: str, data: dict) -> None:
        """Events are not used."""

    def on_command(self, name: str, payload: dict) -> dict:
        if name != "post-weekly-hours":
            raise ValueError(f"unknown command: {name!r}")
        return self.post_weekly_hours(payload)

    def post_weekly_hours(self, payload: dict) -> dict:
        """Adds up the hours per person in the period and posts them to the chat."""
        start, end = payload.get("start"), payload.get("end")
        if not isinstance(start, str) or not isinstance(end, str) or not start or not end:
            raise ValueError("start and end must be ISO dates, like 2027-03-22")
        base = self.api.settings["booking_address"].rstrip("/")
        answer = self.api.http.get(base + "/api/hours", params={"start": start, "end": end},
                                   auth=self.api.secret("booking_token"))
        if answer.status != 200:
            raise ValueError(f"the booking system answered {answer.status}")
        by_person: dict[str, int] = {}
        for row in answer.json()["hours"]:
            by_person[row["name"]] = by_person.get(row["name"], 0) + row["hours"]
        total = sum(by_person.values())
        lines = ", ".join(f"{person} {hours}" for person, hours in sorted(by_person.items()))
        text = f"Volunteer hours {start} to {end}: {lines} (total {total})"
        posted = self.api.http.post(CHAT_WEBHOOK, json={"text": text})
        return {"period": f"{start} to {end}", "total_hours": total, "by_person": by_person,
                "posted": posted.status == 200}
'''

EDGE_TESTS = '''import pytest

from volunteer_hours.plugin import Plugin

BASE = "https://bookings.example.org"


def _plugin(plugin_api):
    plugin_api.configure(settings={"booking_address": BASE})
    plugin = Plugin()
    plugin.on_initialize(plugin_api)
    return plugin


def test_the_period_and_the_token_go_to_the_booking_system(plugin_api):
    plugin_api.http.reply("GET", BASE + "/api/hours", json={"hours": []})
    plugin_api.http.reply("POST", "@CHAT@/hooks/volunteers", json={"ok": True})
    result = _plugin(plugin_api).on_command(
        "post-weekly-hours", {"start": "2027-01-04", "end": "2027-01-10"})
    asked, posted = plugin_api.http.requests
    assert asked.params == {"start": "2027-01-04", "end": "2027-01-10"}
    assert asked.auth == {"secret": "booking_token"}
    assert posted.json == {"text": "Volunteer hours 2027-01-04 to 2027-01-10:  (total 0)"}
    assert result["total_hours"] == 0 and result["posted"] is True


def test_a_booking_system_that_fails_is_said(plugin_api):
    plugin_api.http.reply("GET", BASE + "/api/hours", status=503, json={})
    with pytest.raises(ValueError):
        _plugin(plugin_api).on_command("post-weekly-hours",
                                       {"start": "2027-01-04", "end": "2027-01-10"})


def test_a_period_without_dates_is_refused(plugin_api):
    with pytest.raises(ValueError):
        _plugin(plugin_api).on_command("post-weekly-hours", {"start": ""})
'''


def script(chat: str) -> dict[str, list[str]]:
    """What the scripted model replies, role by role (docs/llm.md, "Scripted")."""
    return {
        "architect": ["Approach: post_weekly_hours in volunteer_hours/plugin.py reads "
                      "booking_address + /api/hours with start and end and "
                      "auth=api.secret('booking_token'), adds up the hours per person and "
                      "posts one line to the chat webhook."],
        "implementer": ["Here is the plugin.\n\n```python path=volunteer_hours/plugin.py\n"
                        + PLUGIN_PY.replace("@CHAT@", chat) + "```\n"],
        "tester": ["```python path=tests/test_generated_edge_cases.py\n"
                   + EDGE_TESTS.replace("@CHAT@", chat) + "```\n"],
    }


def automation_stages(stage: Callable[[str, Callable[[], str]], None],
                      manage: Callable[..., str], env: dict[str, str], scratch: Path,
                      log: Path) -> None:
    """The stages, run by .ci/user_install.py after the demo's (the stack is up)."""
    booking, chat = Recorder(_booking), Recorder(_chat)
    outputs: list[str] = []
    env = {**env, "BOOKING_TOKEN": TOKEN}
    plugin_dir = scratch / NAME

    def run(*args: str) -> str:
        out = manage(*args, env=env)
        outputs.append(out)
        return out

    def _generate() -> str:
        (scratch / "automation.spec.json").write_text(json.dumps(spec(chat.url)))
        (scratch / "automation.script.json").write_text(json.dumps(script(chat.url)))
        out = run("generate", str(scratch / "automation.spec.json"), "--provider", "scripted",
                  "--script", str(scratch / "automation.script.json"), "--out", str(plugin_dir),
                  "--reference-wait", "300", "--json")
        summary = json.loads(out.strip().splitlines()[-1])
        if summary["status"] != "succeeded":
            raise RuntimeError(f"the run ended {summary['status']}: {summary}")
        return f"run {summary['run_id']} succeeded in {summary['iterations']} attempt(s)"

    def _publish_and_activate() -> str:
        run("plugin_publish", str(plugin_dir), "--team", "demo", "--visibility", "team",
            "--approve-as", "admin", "--json")
        out = run("tool_activate", "demo", NAME, "0.1.0", "--as", "admin",
                  "--setting", f"booking_address={booking.url}",
                  "--secret", "booking_token=BOOKING_TOKEN", "--json")
        activated = json.loads(out.strip().splitlines()[-1])
        if activated.get("missing_settings"):
            raise RuntimeError(f"settings still missing after activation: {activated}")
        return f"activated with the booking system's address approved: {activated['addresses']}"

    def _schedule() -> str:
        period = json.dumps({"start": "{{last_week.start}}", "end": "{{last_week.end}}"})
        out = run("tool_schedule", "demo", NAME, COMMAND, "--when", "weekly mon 08:00",
                  "--tz", "Europe/Berlin", "--input", period, "--as", "admin", "--json")
        made = json.loads(out.strip().splitlines()[-1])
        return f"schedule {made['schedule']}, next runs {made['next_runs'][:2]}"

    def _run_due() -> str:
        out = run("schedules_run_due", "--now", "2027-03-29T08:00:00+02:00", "--json")
        ran = json.loads(out.strip().splitlines()[-1])
        asked = [r for r in booking.received if r["path"].startswith("/api/hours")]
        if len(asked) != 1:
            raise RuntimeError(f"the booking system was asked {len(asked)} times: {ran}")
        query = parse_qs(urlsplit(asked[0]["path"]).query)
        if query != {"start": ["2027-03-22"], "end": ["2027-03-28"]}:
            raise RuntimeError(f"the booking system was asked for {query}")
        if asked[0]["headers"].get("authorization") != f"Bearer {TOKEN}":
            raise RuntimeError("the booking system did not get the team's token")
        posts = [json.loads(r["body"]) for r in chat.received if r["path"] == HOOK_PATH]
        expected = "Volunteer hours 2027-03-22 to 2027-03-28: Ann 7, Bo 3 (total 10)"
        if posts != [{"text": expected}]:
            raise RuntimeError(f"the chat got {posts}")
        return f"the booking system was asked for {query}; the chat got {expected!r}"

    def _secret_stays() -> str:
        seen = {"a command's output": "\n".join(outputs),
                "the chat's messages": json.dumps(chat.received),
                "the portal's log": log.read_text(errors="replace")}
        leaked = [where for where, text in seen.items() if TOKEN in text]
        if leaked:
            raise RuntimeError(f"the token appears in {', '.join(leaked)}")
        return "the token is only in the request to the booking system"

    try:
        stage("a recurring automation is generated from the two-system request", _generate)
        stage("it is published and activated with the address and the token",
              _publish_and_activate)
        stage("it is scheduled Mondays 08:00 Europe/Berlin for last week", _schedule)
        stage("the Monday after the clock change runs with the right period", _run_due)
        stage("the token stays on the host", _secret_stays)
    finally:
        booking.stop()
        chat.stop()
