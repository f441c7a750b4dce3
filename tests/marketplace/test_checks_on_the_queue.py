"""Upload checks and "Try it" on the queue: the request stores and answers at once, a Dramatiq
worker runs the sandbox, the page shows progress and then the outcome; a worker killed
mid-check loses nothing (the watchdog sends the check again), a check never runs twice at once,
and an upload made while Redis is down is sent later from the outbox."""

from __future__ import annotations

import time
from typing import Any

import dramatiq
import pytest
import redis
from django.urls import reverse

from autocoder import durable, heartbeat
from marketplace.models import PluginVersion, TryRequest
from marketplace.services.checking import (
    CHECK_MAX_ATTEMPTS,
    _check_claim,
    _check_progress,
    plugin_checks_orphaned_kick,
    plugin_checks_stalled_kick,
    plugin_version_check,
)
from marketplace.services.trying import (
    TRY_INTERRUPTED,
    TRY_KEEP_S,
    TRY_MAX_ATTEMPTS,
    plugin_tries_orphaned_kick,
    plugin_tries_stalled_end,
    plugin_try_perform,
    plugin_try_request,
)
from marketplace.services.uploads import plugin_upload_store
from runs.models import StepOutbox
from tests.marketplace.conftest import client_for, plugin_tree, zip_bytes

WRONG = '''class Plugin:
    def on_command(self, name, payload):
        return {"words": 0}
'''


class Sent:
    """Records the messages the outbox hands to the broker (instead of Redis)."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, list[Any]]] = []
        self.down = False

    def __call__(self, actor: str, args: list[Any], delay_ms: int) -> None:
        if self.down:
            raise redis.ConnectionError("Error 111 connecting to localhost:6379")
        self.messages.append((actor, list(args)))


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> Sent:
    recorder = Sent()
    monkeypatch.setattr(durable, "_actor_send", recorder)
    return recorder


@pytest.fixture
def no_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any use of the sandbox fails the test: the request path must not run it."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the sandbox ran inside the web request")

    monkeypatch.setattr("marketplace.checks.tests_run", refuse)
    monkeypatch.setattr("marketplace.checks.safety_scan", refuse)
    monkeypatch.setattr("marketplace.services.trying.call_as_team", refuse)


def upload(client: Any, market: dict, files: dict[str, str] | None = None) -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    package = SimpleUploadedFile("plugin.zip", zip_bytes(files or plugin_tree()),
                                 content_type="application/zip")
    return client.post(reverse("marketplace:upload"), {
        "team": market["acme"].pk, "package": package, "visibility": "team", "tags": ""})


def store(market: dict, files: dict[str, str] | None = None) -> PluginVersion:
    return plugin_upload_store(team=market["acme"], user=market["requester"],
                               filename="plugin.zip",
                               data=zip_bytes(files or plugin_tree()),
                               visibility="team", queue=False)


def check_part(client: Any, version: PluginVersion) -> Any:
    url = reverse("marketplace:version", args=[version.plugin.normalized_name, version.version])
    return client.get(f"{url}?part=check", HTTP_HX_REQUEST="true")


# -- the request path ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_upload_answers_at_once_and_queues_the_check_without_running_the_sandbox(
        market: dict, sent: Sent, no_sandbox: None,
        django_capture_on_commit_callbacks: Any) -> None:
    client = client_for(market["requester"])
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(client, market)
    version = PluginVersion.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("marketplace:version",
                                           args=["word-count", "0.1.0"])
    assert (version.status, version.check_step) == ("checking", "queued")
    assert not version.artifacts.exists() and version.test_report == {}
    assert sent.messages == [("plugin_version_check", [version.pk])]
    assert not StepOutbox.objects.exists()  # sent, so the outbox is empty again

    page = client.get(response["Location"]).content.decode()
    assert "Checking your plugin: waiting for a worker…" in page
    assert 'hx-trigger="live-update, every 3s"' in page  # the poll, if the websocket is down
    assert f'ws-connect="/ws/teams/{market["acme"].slug}/"' in page
    assert "Run in the sandbox" not in page  # an unchecked version cannot be tried


@pytest.mark.django_db
def test_a_malformed_upload_is_still_refused_at_once(market: dict, sent: Sent) -> None:
    files = {**plugin_tree(), "plugin.toml": '[plugin]\nname = "word-count"\nversion = 0.1.0\n'}
    response = upload(client_for(market["requester"]), market, files)
    assert response.status_code == 400
    assert "not valid TOML" in response.content.decode()
    assert not PluginVersion.objects.exists() and sent.messages == []


@pytest.mark.django_db
def test_processing_the_message_performs_the_checks_and_the_page_shows_the_outcome(
        market: dict) -> None:
    version = store(market)
    client = client_for(market["requester"])
    assert "waiting for a worker" in check_part(client, version).content.decode()

    checked = plugin_version_check(version_id=version.pk)

    assert checked is not None and checked.status == PluginVersion.Status.PENDING
    assert checked.test_report["passed"] == 1 and checked.safety_verdict == "pass"
    assert checked.artifacts.count() == 2 and checked.check_step == "done"
    assert checked.check_attempts == 1 and checked.check_token == ""
    done = check_part(client, version)
    assert done["HX-Refresh"] == "true"  # the outcome: the page loads again, whole
    page = client.get(reverse("marketplace:version", args=["word-count", "0.1.0"]))
    assert "Awaiting approval" in page.content.decode()
    assert f"Quality: {checked.quality['score']} of 100" in page.content.decode()
    assert "README matches the plugin" in page.content.decode()
    assert plugin_version_check(version_id=version.pk) is None  # a duplicate


@pytest.mark.django_db
def test_a_failed_check_shows_the_reasons_on_the_page(market: dict) -> None:
    version = store(market, plugin_tree(body=WRONG))
    plugin_version_check(version_id=version.pk)
    version.refresh_from_db()
    assert version.status == PluginVersion.Status.FAILED
    assert version.check_errors[0] == "tests: 1 of 1 failed; every test must pass"
    page = client_for(market["requester"]).get(
        reverse("marketplace:version", args=["word-count", "0.1.0"])).content.decode()
    assert "Failed the checks" in page and "every test must pass" in page


@pytest.mark.django_db
def test_the_page_says_so_when_the_workers_are_busy(market: dict) -> None:
    from datetime import timedelta

    from django.utils import timezone

    version = store(market)
    client = client_for(market["requester"])
    assert "The workers are busy" not in check_part(client, version).content.decode()
    PluginVersion.objects.filter(pk=version.pk).update(
        check_started_at=timezone.now() - timedelta(seconds=60))
    assert "The workers are busy" in check_part(client, version).content.decode()


# -- durability ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_check_never_runs_twice_at_once(market: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    version = store(market)
    monkeypatch.setattr(heartbeat, "current_worker_id", lambda: "worker-a:1")
    assert _check_claim(version.pk)  # worker a is checking it now
    assert plugin_version_check(version_id=version.pk) is None
    assert PluginVersion.objects.get(pk=version.pk).claimed_by == "worker-a:1"
    # While worker a is alive the watchdog leaves its check alone.
    assert plugin_checks_orphaned_kick(live={"worker-a:1"}) == []


@pytest.mark.django_db
def test_a_worker_dying_mid_check_leads_to_the_check_being_completed_later(
        market: dict, sent: Sent, monkeypatch: pytest.MonkeyPatch,
        django_capture_on_commit_callbacks: Any) -> None:
    """Worker a claims the check and dies before it finishes (nothing after the claim runs:
    SIGKILL). Its heartbeat expires; the watchdog's quick sweep sends the check again, once,
    and the next worker checks the version to the end."""
    version = store(market)
    with monkeypatch.context() as patched:
        patched.setattr(heartbeat, "current_worker_id", lambda: "worker-a:1")
        assert _check_claim(version.pk)
        _check_progress(version, PluginVersion.objects.get().check_token, "tests")

    with django_capture_on_commit_callbacks(execute=True):
        assert plugin_checks_orphaned_kick(live={"worker-b:2"}) == [version.pk]
    assert sent.messages == [("plugin_version_check", [version.pk])]
    assert plugin_checks_orphaned_kick(live={"worker-b:2"}) == []  # sent once
    requeued = PluginVersion.objects.get(pk=version.pk)
    assert (requeued.claimed_by, requeued.check_token, requeued.check_step) == ("", "", "queued")

    checked = plugin_version_check(version_id=version.pk)  # worker b
    assert checked is not None and checked.status == PluginVersion.Status.PENDING
    assert checked.check_attempts == 2 and checked.artifacts.count() == 2


@pytest.mark.django_db
def test_a_check_that_keeps_killing_its_worker_fails_with_a_clear_reason(
        market: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    version = store(market)
    PluginVersion.objects.filter(pk=version.pk).update(check_attempts=CHECK_MAX_ATTEMPTS)
    failed = plugin_version_check(version_id=version.pk)
    assert failed is not None and failed.status == PluginVersion.Status.FAILED
    assert "interrupted 3 times" in failed.check_errors[0]


@pytest.mark.django_db
def test_a_stalled_check_is_sent_again(market: dict, sent: Sent,
                                       django_capture_on_commit_callbacks: Any) -> None:
    """A lost message, or a process checking in-line that died: after CHECK_STALL_S."""
    version = store(market)
    assert plugin_checks_stalled_kick() == []
    with django_capture_on_commit_callbacks(execute=True):
        assert plugin_checks_stalled_kick(stalled_for_s=-1) == [version.pk]
    assert sent.messages == [("plugin_version_check", [version.pk])]


@pytest.mark.django_db
def test_an_upload_while_redis_is_down_is_stored_and_its_check_sent_later(
        market: dict, sent: Sent, no_sandbox: None,
        django_capture_on_commit_callbacks: Any) -> None:
    sent.down = True
    with django_capture_on_commit_callbacks(execute=True):
        response = upload(client_for(market["requester"]), market)
    assert response.status_code == 302
    version = PluginVersion.objects.get()
    assert version.status == PluginVersion.Status.CHECKING
    assert list(StepOutbox.objects.values_list("actor", "args")) == [
        ("plugin_version_check", [version.pk])]

    sent.down = False
    durable.outbox_send()  # what the workers' watchdog does every few seconds
    assert sent.messages == [("plugin_version_check", [version.pk])]
    assert not StepOutbox.objects.exists()


def test_the_watchdog_knows_the_marketplace_sweeps() -> None:
    assert plugin_checks_orphaned_kick in heartbeat.QUICK_SWEEPS
    assert plugin_checks_stalled_kick in heartbeat.SLOW_SWEEPS


# -- "Try it" ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_try_it_answers_at_once_and_fills_in_when_the_worker_is_done(
        market: dict, publish: Any, sent: Sent, clean_redis: Any,
        django_capture_on_commit_callbacks: Any) -> None:
    version = publish(plugin_tree())
    client = client_for(market["loner"] if version.plugin.visibility == "public"
                        else market["requester"])
    url = reverse("marketplace:try", args=["word-count", "0.1.0"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"command": "count-words",
                                     "payload": '{"text": "one two three"}'},
                               HTTP_HX_REQUEST="true")
    asked = TryRequest.objects.get()
    assert sent.messages == [("plugin_try_run", [asked.pk])]
    page = response.content.decode()
    assert "Waiting for a worker to run" in page and 'hx-trigger="every 1s"' in page
    result_url = reverse("marketplace:try_result", args=["word-count", "0.1.0", asked.pk])

    plugin_try_perform(try_id=asked.pk)
    assert plugin_try_perform(try_id=asked.pk) is None  # a duplicate does nothing

    done = client.get(result_url, HTTP_HX_REQUEST="true").content.decode()
    assert "&quot;words&quot;: 3" in done and "every 1s" not in done
    # Only the user who asked sees it.
    other = client_for(market["admin"])
    assert other.get(result_url, HTTP_HX_REQUEST="true").status_code == 404
    # Without JavaScript the link leads to the page, which shows the result.
    plain = client.get(result_url, follow=True).content.decode()
    assert "&quot;words&quot;: 3" in plain


@pytest.mark.django_db
def test_old_tries_are_deleted(market: dict, publish: Any, sent: Sent, clean_redis: Any) -> None:
    from datetime import timedelta

    from django.utils import timezone

    version = publish(plugin_tree())
    old = TryRequest.objects.create(version=version, user=market["requester"],
                                    command="count-words", payload={})
    TryRequest.objects.filter(pk=old.pk).update(
        created_at=timezone.now() - timedelta(seconds=TRY_KEEP_S + 1))
    plugin_try_request(version=version, user=market["requester"],
                       command="count-words", payload={"text": "a"})
    assert list(TryRequest.objects.values_list("command", flat=True)) == ["count-words"]
    assert not TryRequest.objects.filter(pk=old.pk).exists()


def running_try(market: dict, publish: Any, *, worker: str, attempts: int = 1) -> TryRequest:
    """A try as a worker leaves it when it is killed while running the plugin."""
    version = publish(plugin_tree())
    asked = TryRequest.objects.create(version=version, user=market["requester"],
                                      command="count-words", payload={"text": "a b"})
    TryRequest.objects.filter(pk=asked.pk).update(status=TryRequest.Status.RUNNING,
                                                  claimed_by=worker, attempts=attempts)
    return asked


@pytest.mark.django_db
def test_a_try_whose_worker_died_is_sent_again_once_and_then_run(
        market: dict, publish: Any, sent: Sent, clean_redis: Any,
        django_capture_on_commit_callbacks: Any) -> None:
    asked = running_try(market, publish, worker="worker-a:1")
    assert plugin_tries_orphaned_kick(live={"worker-a:1"}) == []  # alive: left alone
    with django_capture_on_commit_callbacks(execute=True):
        assert plugin_tries_orphaned_kick(live={"worker-b:2"}) == [asked.pk]
    assert sent.messages == [("plugin_try_run", [asked.pk])]
    assert plugin_tries_orphaned_kick(live={"worker-b:2"}) == []  # sent once
    requeued = TryRequest.objects.get(pk=asked.pk)
    assert (requeued.status, requeued.claimed_by) == (TryRequest.Status.PENDING, "")
    url = reverse("marketplace:try_result", args=["word-count", "0.1.0", asked.pk])
    page = client_for(market["requester"]).get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "stopped before it finished; waiting for another worker to run it again" in page

    done = plugin_try_perform(try_id=asked.pk)  # worker b
    assert done is not None and done.result["output"] == {"words": 2}
    assert done.attempts == 2 and done.status == TryRequest.Status.DONE


@pytest.mark.django_db
def test_a_try_that_keeps_losing_its_worker_ends_with_a_plain_reason_on_the_page(
        market: dict, publish: Any, sent: Sent, clean_redis: Any) -> None:
    asked = running_try(market, publish, worker="worker-a:1", attempts=TRY_MAX_ATTEMPTS)
    assert plugin_tries_orphaned_kick(live=set()) == [asked.pk]
    ended = TryRequest.objects.get(pk=asked.pk)
    assert ended.status == TryRequest.Status.DONE and sent.messages == []
    assert ended.result == {"ok": False, "output": None, "error": TRY_INTERRUPTED,
                            "log": "", "detail": "", "duration_ms": 0}
    assert plugin_try_perform(try_id=asked.pk) is None  # a late message changes nothing
    url = reverse("marketplace:try_result", args=["word-count", "0.1.0", asked.pk])
    page = client_for(market["requester"]).get(url, HTTP_HX_REQUEST="true").content.decode()
    assert "The worker running your try stopped before it finished" in page
    assert "every 1s" not in page  # the page stops asking


@pytest.mark.django_db
def test_a_try_nobody_finishes_ends_after_the_stall_limit(
        market: dict, publish: Any, sent: Sent, clean_redis: Any) -> None:
    """A lost message or an in-process caller that died: no heartbeat tells, the clock does."""
    waiting = running_try(market, publish, worker="")
    TryRequest.objects.filter(pk=waiting.pk).update(status=TryRequest.Status.PENDING)
    assert plugin_tries_stalled_end() == []
    assert plugin_tries_stalled_end(stalled_for_s=-1) == [waiting.pk]
    ended = TryRequest.objects.get(pk=waiting.pk)
    assert ended.status == TryRequest.Status.DONE
    assert ended.result["error"].startswith("Your try did not finish: no worker completed it")


def test_the_watchdog_knows_the_try_sweeps() -> None:
    assert plugin_tries_orphaned_kick in heartbeat.QUICK_SWEEPS
    assert plugin_tries_stalled_end in heartbeat.SLOW_SWEEPS


# -- a real worker on Redis ----------------------------------------------------------------------



def wait_for_status(version_id: int, status: str, timeout_s: float = 120) -> PluginVersion:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        version = PluginVersion.objects.get(pk=version_id)
        if version.status == status:
            return version
        time.sleep(0.2)
    raise AssertionError(f"version {version_id} is {PluginVersion.objects.get(pk=version_id)}"
                         f" {PluginVersion.objects.get(pk=version_id).status}, not {status}")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_worker_checks_an_upload_sent_through_redis(market: dict,
                                                      worker: dramatiq.Worker) -> None:
    client = client_for(market["requester"])
    assert upload(client, market).status_code == 302
    version = PluginVersion.objects.get()
    checked = wait_for_status(version.pk, PluginVersion.Status.PENDING)
    assert checked.artifacts.count() == 2 and checked.test_report["passed"] == 1

    url = reverse("marketplace:try", args=["word-count", "0.1.0"])
    response = client.post(url, {"command": "count-words", "payload": '{"text": "a b"}'},
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    asked = TryRequest.objects.get()
    deadline = time.monotonic() + 60
    while TryRequest.objects.get(pk=asked.pk).status != "done" and time.monotonic() < deadline:
        time.sleep(0.2)
    assert TryRequest.objects.get(pk=asked.pk).result["output"] == {"words": 2}
