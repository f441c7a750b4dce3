"""compose.yaml cannot run here (no Docker engine): its shape is checked by reading it."""

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


def test_compose_has_the_four_services_with_health_checks() -> None:
    services = compose()["services"]
    assert set(services) == {"postgres", "redis", "web", "worker"}
    for name, service in services.items():
        assert "healthcheck" in service, name
    assert services["postgres"]["image"].startswith("pgvector/pgvector:")


def test_app_services_take_settings_from_env_file_and_wait_for_their_stores() -> None:
    services = compose()["services"]
    for name in ("web", "worker"):
        service = services[name]
        assert service["env_file"] == ".env"
        assert set(service["depends_on"]) == {"postgres", "redis"}
        assert service["environment"]["REDIS_URL"] == "redis://redis:6379/0"
        assert "@postgres:5432/" in service["environment"]["DATABASE_URL"]


def test_worker_can_be_scaled() -> None:
    worker = compose()["services"]["worker"]
    assert "container_name" not in worker and "ports" not in worker
    assert "rundramatiq" in worker["command"]


def test_data_lives_in_named_volumes() -> None:
    document = compose()
    assert {"pgdata", "redisdata", "artifacts"} <= set(document["volumes"])
    assert "pgdata:/var/lib/postgresql/data" in document["services"]["postgres"]["volumes"]


def test_every_variable_the_settings_and_compose_read_is_documented() -> None:
    sources = [ROOT / "autocoder" / "settings.py", ROOT / "autocoder" / "config.py"]
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
    assert {name: service.get("restart") for name, service in services.items()} == {
        name: "unless-stopped" for name in services}
    assert "manage.py serve --host 0.0.0.0 --port 8000" in services["web"]["command"]
    assert "daphne" not in services["web"]["command"]
    worker = services["worker"]["command"]
    assert worker[worker.index("--processes") + 1] == "1"  # one dead worker, one container
