"""A notification's subject is a generic target (a content type and an id) instead of a foreign
key to a run's gate, so this app's schema points at nothing above it (docs/development.md,
"Layers"). runs 0013 then copies the old links (the column `approval_id`) here and drops that
column; a notice about a gate stays unique per user and kind.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('contenttypes', '0002_remove_content_type_name'),
        ('teams', '0004_tool_failing_notification'),
    ]

    operations = [
        migrations.AddField(
            model_name='notification',
            name='target_id',
            field=models.PositiveBigIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='notification',
            name='target_type',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='contenttypes.contenttype'),
        ),
        migrations.AddConstraint(
            model_name='notification',
            constraint=models.UniqueConstraint(fields=('user', 'target_type', 'target_id', 'kind'), name='unique_notification_per_target'),
        ),
    ]
