"""Project now belongs to the runs app (runs 0006): it leaves the projects app's state only, once
the interview's and comments' foreign keys point there. Its table, rows and index stay as they
are; no SQL runs.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('projects', '0017_team_models_to_teams_app'),
        ('runs', '0006_project_from_projects_app'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.RemoveField(
                    model_name='project',
                    name='requester',
                ),
                migrations.RemoveField(
                    model_name='project',
                    name='team',
                ),
                migrations.AlterField(
                    model_name='interview',
                    name='project',
                    field=models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='interview', to='runs.project'),
                ),
                migrations.AlterField(
                    model_name='comment',
                    name='project',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='comments', to='runs.project'),
                ),
                migrations.DeleteModel(
                    name='Project',
                ),
            ],
        ),
    ]
