"""compose.yaml's shape, checked by reading it. Its images cannot be pulled here (no image
registry), so the stack is not started; a compose implementation renders the file in
tests/foundation/test_compose_database_role.py."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from django.conf import settings

ROOT = Path(settings.BASE_DIR)


def compose() -> dict:
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def documented_variables() -> set[str]:
    text = (ROOT / ".env.example").read_text()
    return set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", text, flags=re.MULTILINE))


LONG_RUNNING = {"postgres", "redis", "web", "worker"}
ONE_SHOT = {"worker-tmp"}  # runs once before the workers, then exits


def test_compose_has_the_four_services_with_health_checks() -> None:
    services = compose()["services"]
    assert set(services) == LONG_RUNNING | ONE_SHOT
    for name in LONG_RUNNING:
        assert "healthcheck" in services[name], name
    for name in ONE_SHOT:
        assert services[name]["restart"] == "no", name
    assert services["postgres"]["image"].startswith("pgvector/pgvector:")


def test_app_services_take_settings_from_env_file_and_wait_for_their_stores() -> None:
    services = compose()["services"]
    for name in ("web", "worker"):
        service = services[name]
        assert service["env_file"] == ".env"
        assert {"postgres", "redis"} <= set(service["depends_on"])
        for store in ("postgres", "redis"):
            assert service["depends_on"][store] == {"condition": "service_healthy"}, name
        assert service["environment"]["REDIS_URL"] == "redis://redis:6379/0"
        assert "@postgres:5432/" in service["environment"]["DATABASE_URL"]


def test_worker_can_be_scaled() -> None:
    worker = compose()["services"]["worker"]
    assert "container_name" not in worker and "ports" not in worker
    assert "rundramatiq" in worker["command"]


def test_data_lives_in_named_volumes() -> None:
    document = compose()
    assert {"pg18data", "redisdata", "artifacts"} <= set(document["volumes"])
    # PostgreSQL 18 with pgvector 0.8, as embedded; its image keeps data below /var/lib/postgresql.
    assert document["services"]["postgres"]["image"] == "pgvector/pgvector:pg18"
    assert "pg18data:/var/lib/postgresql" in document["services"]["postgres"]["volumes"]


def test_every_variable_the_settings_and_compose_read_is_documented() -> None:
    sources = [ROOT / "config" / "settings.py", ROOT / "autocoder" / "config.py"]
    read = set()
    for source in sources:
        read |= set(re.findall(r'env(?:\.\w+)?\(\s*"([A-Z][A-Z0-9_]+)"', source.read_text()))
        read |= set(re.findall(r'env\.get\("([A-Z][A-Z0-9_]+)"', source.read_text()))
    read |= set(re.findall(r"\$\{([A-Z][A-Z0-9_]+)", (ROOT / "compose.yaml").read_text()))
    assert read, "the pattern found no variables at all"
    missing = read - documented_variables()
    assert not missing, f"undocumented in .env.example: {sorted(missing)}"


def test_compose_restarts_what_dies_and_serves_with_several_processes() -> None:
    """A killed worker container comes back by itself (restart policy); the web service runs
    `manage.py serve`, the supervised ASGI processes on one port, not a lone daphne."""
    services = compose()["services"]
    assert {name: services[name].get("restart") for name in LONG_RUNNING} == {
        name: "unless-stopped" for name in LONG_RUNNING}
    assert "manage.py serve --host 0.0.0.0 --port 8000" in services["web"]["command"]
    assert "daphne" not in services["web"]["command"]
    worker = services["worker"]["command"]
    assert worker[worker.index("--processes") + 1] == "1"  # one dead worker, one container


def bind_mounts(service: dict) -> dict[str, str]:
    """{path in the container: host path} of a service's bind mounts (short or long syntax)."""
    mounts = {}
    for volume in service.get("volumes", []):
        if isinstance(volume, dict):
            if volume.get("type") == "bind":
                mounts[volume["target"]] = volume["source"]
        elif volume.startswith("/"):
            source, target = volume.split(":")[:2]
            mounts[target] = source
    return mounts


def test_the_worker_runs_jobs_on_the_hosts_docker_engine_from_the_sandbox_image() -> None:
    """Workers use the Docker backend through the host engine's socket (docs/operating.md,
    "Production"): the sandbox image is the one `make sandbox-image` builds on the host, the
    socket's group is the host's, and a run's channel directory is at the same path in the
    worker and on the host, because the engine reads the paths it binds on the host."""
    services = compose()["services"]
    worker, environment = services["worker"], services["worker"]["environment"]
    assert environment["SANDBOX_BACKEND"] == "docker"
    assert environment["SANDBOX_DOCKER_IMAGE"] == (
        "${SANDBOX_DOCKER_IMAGE:-autocoder-sandbox:latest}")  # what `make sandbox-image` tags
    assert "SANDBOX_DOCKER_IMAGE=autocoder-sandbox:latest" in (ROOT / ".env.example").read_text()
    mounts = bind_mounts(worker)
    assert mounts["/var/run/docker.sock"] == "/var/run/docker.sock"
    assert worker["group_add"] == [
        "${DOCKER_GID:?set DOCKER_GID in .env to the group of /var/run/docker.sock}"]
    tmp = environment["TMPDIR"]
    assert mounts[tmp] == tmp, "the engine must find the channel directory at the same path"
    # Docker makes a missing host directory root's; the one-shot hands it to the worker's
    # user (uid 1000, the portal image's `autocoder`) before any worker starts.
    assert worker["depends_on"]["worker-tmp"] == {"condition": "service_completed_successfully"}
    prepare = services["worker-tmp"]
    assert bind_mounts(prepare)[tmp] == tmp and prepare["user"] == "root"
    assert prepare["command"][:2] == ["install", "-d"] and prepare["command"][-1] == tmp
    assert "--uid 1000 autocoder" in (ROOT / "Dockerfile").read_text()
    # The web service runs no sandbox job and gets no socket.
    assert "/var/run/docker.sock" not in bind_mounts(services["web"])
    operating = (ROOT / "docs" / "operating.md").read_text()
    assert "make sandbox-image" in operating and "root-equivalent" in operating
