"""Teams, memberships, invitations, the audit log and notifications moved from the projects app to the teams app (teams 0001): this foreign key now points there. State only: the table and its constraint are unchanged; no SQL runs.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('llm', '0004_model_price'),
        ('teams', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name='teammodeloverride',
                    name='team',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='model_overrides', to='teams.team'),
                ),
            ],
        ),
    ]
