"""Team API keys move from plain text to sealed storage (autocoder.sealing)."""

from django.db import migrations, models

from autocoder.sealing import seal, unseal


def seal_existing(apps, schema_editor):  # type: ignore[no-untyped-def]
    override_model = apps.get_model("llm", "TeamModelOverride")
    for override in override_model.objects.exclude(api_key=""):
        override.api_key_sealed = seal(override.api_key)
        override.save(update_fields=["api_key_sealed"])


def unseal_existing(apps, schema_editor):  # type: ignore[no-untyped-def]
    override_model = apps.get_model("llm", "TeamModelOverride")
    for override in override_model.objects.exclude(api_key_sealed=""):
        override.api_key = unseal(override.api_key_sealed)
        override.save(update_fields=["api_key"])


class Migration(migrations.Migration):

    dependencies = [
        ("llm", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="teammodeloverride",
            name="api_key_sealed",
            field=models.TextField(blank=True, verbose_name="API key (sealed)"),
        ),
        migrations.RunPython(seal_existing, unseal_existing),
        migrations.RemoveField(model_name="teammodeloverride", name="api_key"),
    ]
