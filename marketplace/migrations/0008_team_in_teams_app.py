"""Teams, memberships, invitations, the audit log and notifications moved from the projects app to the teams app (teams 0001): this foreign key now points there. State only: the table and its constraint are unchanged; no SQL runs.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('marketplace', '0007_try_claims'),
        ('teams', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name='plugin',
                    name='team',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='plugins', to='teams.team'),
                ),
            ],
        ),
    ]
