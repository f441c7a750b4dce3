from __future__ import annotations

from django.apps import AppConfig


class SiteConfig(AppConfig):
    """The site's own app: its management commands (`up`, `doctor`, `generate`, the benchmarks),
    the system checks of config/checks.py and the installation checks of the parts no app owns
    (the plugin runtime and the sandbox; the llm app registers the model's)."""

    name = "config"
    label = "config"
    verbose_name = "The site"

    def ready(self) -> None:
        from autocoder import installation
        from autocoder.sandbox.probe import runtime_fault
        from config import checks  # noqa: F401  (registers the secret key's system check)

        # The plugin runtime's probe also starts a sandbox, so it answers for both parts.
        installation.check_register("runtime", runtime_fault)
        installation.check_register("sandbox", runtime_fault)
