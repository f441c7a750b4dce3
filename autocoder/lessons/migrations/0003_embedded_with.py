"""Each lesson records the model its embedding came from (see embedder.embedder_identity)."""

from django.db import migrations, models

from autocoder.lessons.embedder import embedder_identity


def label_existing(apps, schema_editor):  # type: ignore[no-untyped-def]
    # Lessons so far were embedded by whatever the settings name now.
    apps.get_model("lessons", "Lesson").objects.update(embedded_with=embedder_identity())


class Migration(migrations.Migration):

    dependencies = [
        ("lessons", "0002_hnsw_ef_construction_128"),
    ]

    operations = [
        migrations.AddField(
            model_name="lesson",
            name="embedded_with",
            field=models.CharField(db_index=True, default="minilm:all-MiniLM-L6-v2",
                                   max_length=200),
        ),
        migrations.RunPython(label_existing, migrations.RunPython.noop),
    ]
