"""A plugin's history is a real git repository a team can read and take away: one commit per
published version (author = who asked, committer = the portal, message = the changelog), a tag
per version, browsable on the History page, downloadable as a bundle, and cloneable read-only
over git's dumb HTTP protocol with the index's access rule (a team plugin needs a token)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.urls import reverse

from marketplace.history import record_version, repo_path
from marketplace.models import PluginVersion
from marketplace.services.tokens import api_token_create
from tests.live import live_asgi_server
from tests.marketplace.conftest import client_for, plugin_tree

FASTER_IMPL = '''"""The word-count plugin, counting words on any whitespace."""

from __future__ import annotations

from typing import Any


class Plugin:
    def on_initialize(self, api: Any) -> None:
        """Nothing to set up."""

    def on_event(self, event: str, data: dict) -> None:
        """No events used."""

    def on_command(self, name: str, payload: dict) -> dict:
        if name != "count-words":
            raise ValueError(f"unknown command: {name!r}")
        words = str(payload.get("text", "")).split()
        return {"words": len(words)}
'''


class _Pyproject(str):
    """Equal to the pyproject.toml the portal writes for a source package (a build system
    first), whatever its version line."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and other.startswith("[build-system]")

    __hash__ = str.__hash__


ANY_PYPROJECT = _Pyproject("[build-system] ...")


def git(*args: str, cwd: Path | None = None,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    """The git client a person runs: no configuration of this machine, never a prompt."""
    home = Path(os.environ.get("TMPDIR", "/tmp")) / "history-test-home"
    home.mkdir(exist_ok=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def publish_two(publish: Any, *, visibility: str = "public",
                name: str = "word-count") -> tuple[PluginVersion, PluginVersion]:
    first = publish(plugin_tree(name=name, version="0.1.0"), visibility=visibility)
    second = publish(plugin_tree(name=name, version="0.2.0", body=FASTER_IMPL),
                     visibility=visibility, changelog="Count words on any whitespace.")
    return first, second


def files_of(directory: Path) -> dict[str, str]:
    return {str(p.relative_to(directory)): p.read_text() for p in sorted(directory.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(directory).parts}


@pytest.mark.django_db
def test_each_published_version_is_a_commit_by_the_requester_with_its_tag(
        market: dict, publish: Any, django_capture_on_commit_callbacks: Any) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        first, second = publish_two(publish)
    repo = str(repo_path(first.plugin_id))
    log = git("--git-dir", repo, "log", "--format=%an <%ae>|%cn|%B%x00", "main").stdout
    commits = [c.strip() for c in log.split("\0") if c.strip()]
    # A subject line, a blank line, the body (issue 48): not one paragraph.
    assert commits == [
        "acme-requester <acme-requester@example.com>|Autocoder portal|"
        "0.2.0: Count words on any whitespace\n\nCount words on any whitespace.",
        "acme-requester <acme-requester@example.com>|Autocoder portal|Version 0.1.0",
    ]
    assert git("--git-dir", repo, "tag", "--list").stdout.split() == ["v0.1.0", "v0.2.0"]
    assert git("--git-dir", repo, "rev-parse", "v0.2.0^{commit}").stdout == git(
        "--git-dir", repo, "rev-parse", "main").stdout
    tree = git("--git-dir", repo, "ls-tree", "-r", "--name-only", "v0.1.0").stdout.split()
    # Exactly the published files, and the pyproject.toml their source package has.
    assert tree == sorted({*first.files, "pyproject.toml"})
    sdist_pyproject = git("--git-dir", repo, "show", "v0.1.0:pyproject.toml").stdout
    assert 'name = "word-count"' in sdist_pyproject and 'version = "0.1.0"' in sdist_pyproject
    assert "[build-system]" in sdist_pyproject
    shown = git("--git-dir", repo, "show", "v0.2.0:word_count/plugin.py").stdout
    assert shown == second.files["word_count/plugin.py"]

    # Recording again changes nothing.
    assert record_version(second) is None
    assert git("--git-dir", repo, "rev-list", "--count", "main").stdout.strip() == "2"


@pytest.mark.django_db
def test_the_history_page_lists_versions_and_shows_what_changed(
        market: dict, publish: Any, django_capture_on_commit_callbacks: Any) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        publish_two(publish, visibility="team")
    member = client_for(market["requester"])
    detail = member.get(reverse("marketplace:plugin", args=["word-count"])).content.decode()
    assert reverse("marketplace:history", args=["word-count"]) in detail

    html = member.get(reverse("marketplace:history", args=["word-count"])).content.decode()
    assert html.index("v0.2.0") < html.index("v0.1.0")  # newest first
    for expected in ("Count words on any whitespace.", "Version 0.1.0",
                     "asked for by acme-requester", "committed by Autocoder portal",
                     "What changed in 0.2.0", "Download as a git bundle",
                     "/marketplace/p/word-count/git/ word-count", "__token__:YOUR-TOKEN@"):
        assert expected in html, expected
    # who published each at the gate, and the tests the first version brought
    assert html.count("Uploaded · published by acme-reviewer at the gate") == 2
    assert ("tests added or changed: <code>tests/conftest.py</code>, <code>tests/test_acceptance"
            ".py</code>") in html

    diff = member.get(reverse("marketplace:history_diff", args=["word-count", "0.2.0"]))
    page = diff.content.decode()
    assert "what changed since 0.1.0" in page and "word_count/plugin.py" in page
    assert "words = str(payload.get(&quot;text&quot;, &quot;&quot;)).split()" in page
    assert "1 line" in page or "lines added" in page

    # Someone outside the team sees neither the page nor the diff.
    outsider = client_for(market["outsider"])
    assert outsider.get(reverse("marketplace:history", args=["word-count"])).status_code == 404
    assert outsider.get(reverse("marketplace:history_diff",
                                args=["word-count", "0.2.0"])).status_code == 404


@pytest.mark.django_db
def test_the_bundle_clones_into_the_latest_version(
        market: dict, publish: Any, django_capture_on_commit_callbacks: Any,
        tmp_path: Path) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        _, second = publish_two(publish, visibility="team")
    response = client_for(market["requester"]).get(
        reverse("marketplace:history_bundle", args=["word-count"]))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/octet-stream"
    assert "word-count.bundle" in response["Content-Disposition"]
    bundle = tmp_path / "word-count.bundle"
    bundle.write_bytes(b"".join(response.streaming_content))
    git("clone", "--quiet", str(bundle), str(tmp_path / "taken"))
    taken = files_of(tmp_path / "taken")
    assert taken.pop("pyproject.toml").startswith("[build-system]")
    assert taken == second.files
    assert git("tag", "--list", cwd=tmp_path / "taken").stdout.split() == ["v0.1.0", "v0.2.0"]
    # Without a session or token: 401 asking for the token, not the code.
    anonymous = client_for(market["outsider"])
    anonymous.logout()
    refused = anonymous.get(reverse("marketplace:history_bundle", args=["word-count"]))
    assert refused.status_code == 401 and "Basic" in refused["WWW-Authenticate"]


@pytest.mark.django_db
def test_the_git_urls_serve_only_the_repository_files_git_reads(
        market: dict, publish: Any, django_capture_on_commit_callbacks: Any) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        publish_two(publish)
    client = client_for(market["loner"])
    base = "/marketplace/p/word-count/git/"
    refs = client.get(f"{base}info/refs?service=git-upload-pack")
    assert refs.status_code == 200 and refs["Content-Type"].startswith("text/plain")
    assert "refs/tags/v0.2.0" in b"".join(refs.streaming_content).decode()
    assert client.get(f"{base}HEAD").status_code == 200
    for attempt in ("config", "description", "autocoder-plugin", "../../../settings.py",
                    "objects/../config", "..%2F..%2Fconfig", "%2e%2e/%2e%2e/1.git/config",
                    "info/../config", "objects/info/../../config", "hooks/pre-receive"):
        assert client.get(f"{base}{attempt}").status_code == 404, attempt
    assert client.post(f"{base}info/refs").status_code == 405  # read-only


@pytest.mark.django_db
def test_the_backfill_records_versions_published_before_in_version_order(
        market: dict, publish: Any) -> None:
    first, second = publish_two(publish)  # no commit callbacks: as before the history existed
    repo = repo_path(first.plugin_id)
    assert not repo.exists()
    call_command("plugin_history_backfill")
    tags = git("--git-dir", str(repo), "log", "--format=%D", "main").stdout.split("\n")
    assert "tag: v0.2.0" in tags[0] and "tag: v0.1.0" in tags[1]
    call_command("plugin_history_backfill")  # again: nothing more
    assert git("--git-dir", str(repo), "rev-list", "--count", "--all").stdout.strip() == "2"


@pytest.mark.django_db
def test_a_version_recorded_late_still_gets_its_tag_and_main_stays_newest(
        market: dict, publish: Any) -> None:
    first, second = publish_two(publish)
    assert record_version(second) and record_version(first)
    repo = str(repo_path(first.plugin_id))
    assert git("--git-dir", repo, "tag", "--list").stdout.split() == ["v0.1.0", "v0.2.0"]
    assert git("--git-dir", repo, "rev-parse", "main").stdout == git(
        "--git-dir", repo, "rev-parse", "v0.2.0^{commit}").stdout


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_git_clone_over_http_public_and_with_the_teams_token(
        market: dict, publish: Any, settings: Any, tmp_path: Path) -> None:
    # The server subprocess reads the session's var directory: write the history there.
    settings.VAR_DIR = Path(os.environ["AUTOCODER_VAR_DIR"]).resolve()
    _, public_latest = publish_two(publish)  # publishing records the history on commit
    _, team_latest = publish_two(publish, name="secret-words", visibility="team")
    _, token = api_token_create(user=market["requester"], name="git")
    _, other_token = api_token_create(user=market["outsider"], name="git")

    with live_asgi_server() as server:
        host = server.url.removeprefix("http://")
        git("clone", "--quiet", f"{server.url}marketplace/p/word-count/git/",
            str(tmp_path / "public"))
        assert files_of(tmp_path / "public") == {**public_latest.files,
                                                 "pyproject.toml": ANY_PYPROJECT}
        log = git("log", "--format=%an|%cn|%s", cwd=tmp_path / "public").stdout.splitlines()
        assert log == ["acme-requester|Autocoder portal|0.2.0: Count words on any whitespace",
                       "acme-requester|Autocoder portal|Version 0.1.0"]

        url = "marketplace/p/secret-words/git/"
        refused = git("clone", "--quiet", f"{server.url}{url}", str(tmp_path / "no"),
                      check=False)
        assert refused.returncode != 0 and not (tmp_path / "no" / "plugin.toml").exists()
        assert "Authentication failed" in refused.stderr or "could not read" in refused.stderr
        wrong = git("clone", "--quiet", f"http://__token__:{other_token}@{host}{url}",
                    str(tmp_path / "wrong"), check=False)
        assert wrong.returncode != 0 and not (tmp_path / "wrong" / "plugin.toml").exists()

        git("clone", "--quiet", f"http://__token__:{token}@{host}{url}", str(tmp_path / "team"))
        assert files_of(tmp_path / "team") == {**team_latest.files,
                                               "pyproject.toml": ANY_PYPROJECT}
        assert git("tag", "--list", cwd=tmp_path / "team").stdout.split() == ["v0.1.0", "v0.2.0"]
