"""Teams, memberships, site settings for teams, invitations, the audit log and notifications now
belong to the teams app (teams 0001): they leave the projects app's state only, once every
foreign key points there. Their tables, rows, constraints and the audit log's trigger stay as
they are; no SQL runs.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('lessons', '0004_team_in_teams_app'),
        ('llm', '0005_team_in_teams_app'),
        ('marketplace', '0008_team_in_teams_app'),
        ('projects', '0016_invitations_site_team_settings'),
        ('runs', '0005_team_in_teams_app'),
        ('teams', '0001_initial'),
        ('tools', '0003_team_in_teams_app'),
    ]
    # The teams app moves the content types once this app has let go of the models.
    run_before = [('teams', '0002_content_types')]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.RemoveField(
                    model_name='auditentry',
                    name='actor',
                ),
                migrations.RemoveField(
                    model_name='auditentry',
                    name='team',
                ),
                migrations.RemoveField(
                    model_name='invitation',
                    name='invited_by',
                ),
                migrations.RemoveField(
                    model_name='invitation',
                    name='team',
                ),
                migrations.RemoveField(
                    model_name='invitation',
                    name='user',
                ),
                migrations.RemoveField(
                    model_name='membership',
                    name='team',
                ),
                migrations.RemoveField(
                    model_name='membership',
                    name='user',
                ),
                migrations.RemoveField(
                    model_name='notification',
                    name='approval',
                ),
                migrations.RemoveField(
                    model_name='notification',
                    name='team',
                ),
                migrations.RemoveField(
                    model_name='notification',
                    name='user',
                ),
                migrations.RemoveField(
                    model_name='siteteamsettings',
                    name='updated_by',
                ),
                migrations.AlterField(
                    model_name='project',
                    name='team',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='projects', to='teams.team'),
                ),
                migrations.AlterField(
                    model_name='comment',
                    name='team',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='teams.team'),
                ),
                migrations.AlterField(
                    model_name='interview',
                    name='team',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='interviews', to='teams.team'),
                ),
                migrations.DeleteModel(
                    name='AuditEntry',
                ),
                migrations.DeleteModel(
                    name='Invitation',
                ),
                migrations.DeleteModel(
                    name='Membership',
                ),
                migrations.DeleteModel(
                    name='Notification',
                ),
                migrations.DeleteModel(
                    name='SiteTeamSettings',
                ),
                migrations.DeleteModel(
                    name='Team',
                ),
            ],
        ),
    ]
