"""Teams, memberships, invitations, the audit log and notifications moved from the projects app to the teams app (teams 0001): this foreign key now points there. State only: the table and its constraint are unchanged; no SQL runs.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('teams', '0001_initial'),
        ('tools', '0002_schedule_paused_reason'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name='activation',
                    name='team',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='teams.team'),
                ),
                migrations.AlterField(
                    model_name='invocation',
                    name='team',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='teams.team'),
                ),
                migrations.AlterField(
                    model_name='schedule',
                    name='team',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='teams.team'),
                ),
                migrations.AlterField(
                    model_name='toolsetting',
                    name='team',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='teams.team'),
                ),
                migrations.AlterField(
                    model_name='toolstorage',
                    name='team',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='teams.team'),
                ),
                migrations.AlterField(
                    model_name='tooltoken',
                    name='team',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='teams.team'),
                ),
            ],
        ),
    ]
