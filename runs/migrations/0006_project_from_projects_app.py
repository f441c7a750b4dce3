"""The Project model moves from the projects app to the runs app, table and rows untouched: a
project's status follows its runs, and the runs services are its one writer. The table keeps
its name (Meta.db_table, "projects_project") and its index; this tells Django's state only,
no SQL runs. projects 0018 removes it from the projects app's state once the interview's and
comments' foreign keys point here; 0007 moves its content type.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0005_team_in_teams_app'),
        ('teams', '0002_content_types'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='Project',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=120)),
                        ('spec', models.JSONField(blank=True, default=dict, help_text="The interview's result (spec).")),
                        ('status', models.CharField(choices=[('interviewing', 'Interviewing'), ('queued', 'Queued'), ('generating', 'Generating'), ('awaiting_approval', 'Awaiting approval'), ('succeeded', 'Succeeded'), ('published', 'Published'), ('escalated', 'Escalated'), ('failed', 'Failed')], default='interviewing', max_length=24)),
                        ('queue_position', models.PositiveIntegerField(default=0)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('status_changed_at', models.DateTimeField(auto_now_add=True)),
                        ('requester', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='requested_projects', to=settings.AUTH_USER_MODEL)),
                        ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='projects', to='teams.team')),
                    ],
                    options={
                        'db_table': 'projects_project',
                        'ordering': ['-created_at'],
                    },
                ),
                migrations.AlterField(
                    model_name='approvalrequest',
                    name='project',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='approvals', to='runs.project'),
                ),
                migrations.AlterField(
                    model_name='run',
                    name='project',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='runs', to='runs.project'),
                ),
                migrations.AddIndex(
                    model_name='project',
                    index=models.Index(fields=['team', 'status'], name='project_team_status'),
                ),
            ],
        ),
    ]
