"""The real journey: `pip install` into a fresh venv against the portal served by daphne.

pip runs isolated from this machine's configuration (--isolated, PIP_CONFIG_FILE=/dev/null, no
PIP_* variables, no cache, no dependencies), so it can only find what our /simple/ serves.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from marketplace.services.tokens import api_token_create
from marketplace.services.yanking import plugin_version_yank
from tests.live import live_asgi_server, logged_in_browser, post_form, shown_command
from tests.marketplace.conftest import WORD_COUNT_SPEC, plugin_tree
from tests.marketplace.test_build import PROBE_BACKEND, PROBE_PYPROJECT

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
SHARED_VAR_DIR = True  # the server subprocess reads the artifacts from the session's store


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pip-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=180)
    return root


def pip_env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def pip(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(venv / "bin" / "python"), "-m", "pip", *args], env=pip_env(),
                          capture_output=True, text=True, timeout=300)


def install(venv: Path, index_url: str, requirement: str) -> subprocess.CompletedProcess[str]:
    return pip(venv, "install", "--isolated", "--no-deps", "--no-cache-dir", "--no-input",
               "--index-url", index_url, requirement)


def run_in(venv: Path, code: str) -> str:
    done = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True,
                          text=True, timeout=60, env=pip_env(), cwd=venv)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:  # noqa: S310
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_pip_installs_from_the_portal_skips_yanked_and_needs_a_token_for_private(
        market: dict, publish: Any, venv: Path) -> None:
    publish(plugin_tree(version="0.1.0"), visibility="public")
    newer = publish(plugin_tree(version="0.2.0"), visibility="public")
    plugin_version_yank(version=newer, user=market["reviewer"], reason="broken build")
    publish(plugin_tree(name="secret-words", summary="Counts secret words."),
            visibility="private")
    _, token = api_token_create(user=market["admin"], name="pip test")

    with live_asgi_server() as server:
        index = f"{server.url}simple/"
        done = install(venv, index, "word-count")
        assert done.returncode == 0, done.stdout + done.stderr
        assert run_in(venv, "import importlib.metadata as m; print(m.version('word-count'))") \
            == "0.1.0"  # 0.2.0 is yanked, so not picked
        example = WORD_COUNT_SPEC["commands"][0]["examples"][0]
        output = run_in(venv, "import json; from word_count.plugin import Plugin; print(json.dumps("
                        f"Plugin().on_command('count-words', {example['input']!r})))")
        assert json.loads(output) == example["output"]
        manifest = run_in(venv, "import importlib.resources as r; print(r.files('word_count')"
                          ".joinpath('plugin.toml').read_text())")
        assert 'name = "word-count"' in manifest

        pinned = install(venv, index, "word-count==0.2.0")  # an exact pin still gets it
        assert pinned.returncode == 0, pinned.stderr
        assert "broken build" in pinned.stdout + pinned.stderr

        assert status_of(f"{index}secret-words/") == 404  # not 403: existence is not leaked
        refused = install(venv, index, "secret-words")
        assert refused.returncode != 0
        assert "No matching distribution found for secret-words" in refused.stderr

        host = server.url.removeprefix("http://")
        allowed = install(venv, f"http://__token__:{token}@{host}simple/", "secret-words")
        assert allowed.returncode == 0, allowed.stdout + allowed.stderr
        output = run_in(venv, "import json; from secret_words.plugin import Plugin; print("
                        "json.dumps(Plugin().on_command('count-words', {'text': 'a b'})))")
        assert json.loads(output) == {"words": 2}


def test_an_upload_with_its_own_build_backend_installs_only_the_reviewed_plugin(
        publish: Any, venv: Path) -> None:
    """The probe from the issue: its backend would add zz_probe.pth, which every Python start
    in the environment would run. The portal's own wheel installs the plugin and nothing else."""
    files = {**plugin_tree(name="probe-words", summary="Counts words, with a build backend."),
             "pyproject.toml": PROBE_PYPROJECT.replace("word-count", "probe-words"),
             "tests/probe_backend.py": PROBE_BACKEND}
    publish(files, visibility="public")

    with live_asgi_server() as server:
        done = install(venv, f"{server.url}simple/", "probe-words")
    assert done.returncode == 0, done.stdout + done.stderr
    installed = json.loads(run_in(venv, "import json, importlib.metadata as m; print(json.dumps("
                                  "[str(f) for f in m.files('probe-words')]))"))
    assert {path.split("/")[0] for path in installed} == {"probe_words",
                                                          "probe_words-0.1.0.dist-info"}
    assert not [path for path in installed if path.endswith(".pth")]
    started = subprocess.run([str(venv / "bin" / "python"), "-c", "pass"], capture_output=True,
                             text=True, timeout=60, env=pip_env(), cwd=venv)
    assert "probe ran" not in started.stderr + started.stdout
    output = run_in(venv, "import json; from probe_words.plugin import Plugin; print(json.dumps("
                    "Plugin().on_command('count-words', {'text': 'a b c'})))")
    assert json.loads(output) == {"words": 3}



def _shown_words(page: str, element_id: str) -> list[str]:
    """The command in the page's <pre id=...>, as the words a shell would pass."""
    import shlex

    return shlex.split(shown_command(page, element_id).replace("\\\n", " "))


def test_the_pip_commands_the_pages_show_install_as_copied(market: dict, publish: Any,
                                                           venv: Path) -> None:
    """The probe's pip command for a team plugin said https:// on an http:// portal (pip
    retried SSL for 90 s, then failed). Copied from the plugin page and the tokens page of
    the live portal, with only the plugin's name and the token put in their places, each
    command installs."""
    publish(plugin_tree(name="team-words", summary="Counts team words."), visibility="team")
    with live_asgi_server() as server:
        browser = logged_in_browser(market["admin"], server.url)
        page = browser.open(f"{server.url}marketplace/p/team-words/", timeout=30).read().decode()
        words = _shown_words(page, "pip-command")
        assert words[:3] == ["pip", "install", "team-words"], words
        index = words[words.index("--index-url") + 1]
        assert index.startswith("http://__token__:YOUR-TOKEN@"), index
        _, token = api_token_create(user=market["admin"], name="copied")
        words[words.index("--index-url") + 1] = index.replace("YOUR-TOKEN", token)
        done = pip(venv, *words[1:], "--isolated", "--no-deps", "--no-cache-dir", "--no-input")
        assert done.returncode == 0, done.stdout + done.stderr
        assert run_in(venv, "import importlib.metadata as m; print(m.version('team-words'))") \
            == "0.1.0"

        tokens_url = f"{server.url}marketplace/tokens/"
        shown = post_form(browser, tokens_url, {"name": "from the page"})
        words = _shown_words(shown, "token-pip-command")
        words[2] = "team-words"  # the page says PLUGIN: the one thing a person fills in
        pip(venv, "uninstall", "-y", "team-words")
        done = pip(venv, *words[1:], "--isolated", "--no-deps", "--no-cache-dir", "--no-input")
        assert done.returncode == 0, done.stdout + done.stderr
