from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("projects", "0006_run_updated_at")]

    operations = [
        migrations.AddField(
            model_name="run",
            name="held_by",
            field=models.CharField(blank=True, max_length=16),
        ),
        migrations.AlterField(
            model_name="run",
            name="status",
            field=models.CharField(
                choices=[("queued", "Queued"), ("running", "Running"), ("paused", "Paused"),
                         ("awaiting_approval", "Awaiting approval"), ("escalated", "Escalated"),
                         ("succeeded", "Succeeded"), ("failed", "Failed"),
                         ("aborted", "Aborted"), ("cancelled", "Cancelled"),
                         ("held", "Waiting for the installation")],
                default="queued", max_length=24),
        ),
        migrations.AlterField(
            model_name="notification",
            name="kind",
            field=models.CharField(
                choices=[("review_requested", "Review requested"), ("decided", "Decision made"),
                         ("installation", "Installation problem")],
                max_length=20),
        ),
    ]
