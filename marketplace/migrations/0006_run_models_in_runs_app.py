"""A plugin version's run and approval request are the runs app's models now (same tables,
same columns: state only, no SQL)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('marketplace', '0005_checks_on_the_queue'),
        ('runs', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name='pluginversion',
                    name='approval',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='runs.approvalrequest'),
                ),
                migrations.AlterField(
                    model_name='pluginversion',
                    name='run',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='plugin_versions', to='runs.run'),
                ),
            ],
        ),
    ]
