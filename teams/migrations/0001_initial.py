"""The teams app takes over the projects app's teams, memberships, site settings for teams,
invitations, audit log and notifications, tables and rows untouched.

Their tables keep their names (Meta.db_table, "projects_team", ...), so this migration only tells
Django's state that the teams app owns them: no SQL runs. Every foreign key to them is pointed
here next (lessons 0004, llm 0005, runs 0005, marketplace 0008, tools 0003), then projects 0017
removes them from its own state; 0002 moves their content types. The audit log's trigger
(projects 0003, 0010) stays on its table.

A notification's link to a run's gate (the column `approval_id`, a foreign key to
runs.ApprovalRequest) is left out of this app's state: 0005 gives notifications a generic
target instead, and runs 0013 moves the links there and drops the column.
"""

import django.db.models.deletion
import django.db.models.functions.text
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

import teams.models.invitations


class Migration(migrations.Migration):

    initial = True

    # The tables exist already on a database that ran the projects app's migrations, which
    # made them; a fresh database makes them there too: projects 0016 says it runs before this
    # one (`run_before`), so this app names nothing above it (docs/development.md, "Layers").
    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='Team',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=120)),
                        ('slug', models.SlugField(max_length=60, unique=True)),
                        ('requester_may_approve', models.BooleanField(default=False, help_text='Requesters may decide approval requests on their own projects.')),
                        ('required_approvals', models.PositiveSmallIntegerField(default=1, help_text='How many approvals a gate needs before the run continues.')),
                        ('monthly_budget', models.DecimalField(blank=True, decimal_places=2, help_text='What all runs together may cost per calendar month.', max_digits=12, null=True)),
                        ('run_budget', models.DecimalField(blank=True, decimal_places=2, help_text='What one run may cost before a team admin is asked to allow more.', max_digits=12, null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        'db_table': 'projects_team',
                        'ordering': ['name'],
                    },
                ),
                migrations.CreateModel(
                    name='SiteTeamSettings',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('team_creation', models.CharField(choices=[('site_admins', 'Only site administrators'), ('anyone', 'Anyone who can sign in')], default='site_admins', max_length=16)),
                        ('default_monthly_budget', models.DecimalField(blank=True, decimal_places=2, help_text='The monthly budget a new team starts with; empty: no limit.', max_digits=12, null=True)),
                        ('default_run_budget', models.DecimalField(blank=True, decimal_places=2, help_text='The budget per run a new team starts with; empty: no limit.', max_digits=12, null=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('updated_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'verbose_name': 'site settings for teams',
                        'verbose_name_plural': 'site settings for teams',
                        'db_table': 'projects_siteteamsettings',
                    },
                ),
                migrations.CreateModel(
                    name='Notification',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('kind', models.CharField(choices=[('review_requested', 'Review requested'), ('decided', 'Decision made'), ('installation', 'Installation problem'), ('comment', 'Comment'), ('budget', 'Budget'), ('invitation', 'Invitation')], max_length=20)),
                        ('message', models.CharField(max_length=300)),
                        ('url', models.CharField(blank=True, max_length=300)),
                        ('read_at', models.DateTimeField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='notifications', to=settings.AUTH_USER_MODEL)),
                        ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='teams.team')),
                    ],
                    options={
                        'db_table': 'projects_notification',
                        'ordering': ['-created_at', '-id'],
                        'indexes': [models.Index(fields=['user', 'read_at'], name='notification_user_unread')],
                    },
                ),
                migrations.CreateModel(
                    name='Membership',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('role', models.CharField(choices=[('requester', 'Requester'), ('reviewer', 'Reviewer'), ('admin', 'Admin')], default='requester', max_length=16)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to=settings.AUTH_USER_MODEL)),
                        ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='teams.team')),
                    ],
                    options={
                        'db_table': 'projects_membership',
                        'ordering': ['team', 'user'],
                        'constraints': [models.UniqueConstraint(fields=('team', 'user'), name='unique_membership')],
                    },
                ),
                migrations.CreateModel(
                    name='Invitation',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('invited_as', models.CharField(max_length=254)),
                        ('role', models.CharField(choices=[('requester', 'Requester'), ('reviewer', 'Reviewer'), ('admin', 'Admin')], default='requester', max_length=16)),
                        ('status', models.CharField(choices=[('pending', 'Waiting for an answer'), ('accepted', 'Accepted'), ('declined', 'Declined'), ('withdrawn', 'Withdrawn')], default='pending', max_length=16)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('expires_at', models.DateTimeField(default=teams.models.invitations.invitation_expiry)),
                        ('answered_at', models.DateTimeField(blank=True, null=True)),
                        ('invited_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('user', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='team_invitations', to=settings.AUTH_USER_MODEL)),
                        ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='invitations', to='teams.team')),
                    ],
                    options={
                        'db_table': 'projects_invitation',
                        'ordering': ['-created_at', '-id'],
                        'indexes': [models.Index(fields=['user', 'status'], name='invitation_user_status')],
                        'constraints': [models.UniqueConstraint(django.db.models.functions.text.Lower('invited_as'), models.F('team'), condition=models.Q(('status', 'pending')), name='unique_pending_invitation')],
                    },
                ),
                migrations.CreateModel(
                    name='AuditEntry',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('actor_name', models.CharField(help_text="The actor's username at the time.", max_length=150)),
                        ('action', models.CharField(max_length=60)),
                        ('target_type', models.CharField(max_length=60)),
                        ('target_id', models.CharField(blank=True, max_length=64)),
                        ('target_repr', models.CharField(blank=True, max_length=200)),
                        ('before', models.JSONField(blank=True, null=True)),
                        ('after', models.JSONField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now, editable=False)),
                        ('actor', models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('team', models.ForeignKey(blank=True, db_constraint=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='teams.team')),
                    ],
                    options={
                        'verbose_name_plural': 'audit entries',
                        'db_table': 'projects_auditentry',
                        'ordering': ['-created_at', '-id'],
                        'indexes': [models.Index(fields=['team', '-created_at'], name='audit_team_time'), models.Index(fields=['action'], name='audit_action')],
                    },
                ),
            ],
        ),
    ]
