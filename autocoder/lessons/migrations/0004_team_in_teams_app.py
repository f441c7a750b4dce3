"""Teams, memberships, invitations, the audit log and notifications moved from the projects app to the teams app (teams 0001): this foreign key now points there. State only: the table and its constraint are unchanged; no SQL runs.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('lessons', '0003_embedded_with'),
        ('teams', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name='lesson',
                    name='team',
                    field=models.ForeignKey(blank=True, help_text='Empty for a global lesson, which every team retrieves.', null=True, on_delete=django.db.models.deletion.CASCADE, related_name='lessons', to='teams.team'),
                ),
                migrations.AlterField(
                    model_name='lessonsource',
                    name='team',
                    field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='teams.team'),
                ),
            ],
        ),
    ]
