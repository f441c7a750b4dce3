"""The run models move from the projects app to the runs app, tables and rows untouched.

Their tables keep their names (Meta.db_table, "projects_run", ...), so this migration only
tells Django's state that the runs app owns them: no SQL runs. projects' 0013 removes them
from its own state once every foreign key points here (marketplace 0006, projects 0013);
0002 moves their content types (permissions, admin history) to the new app label.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('projects', '0012_step_outbox_any_actor'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='Iteration',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('number', models.PositiveIntegerField()),
                        ('files', models.JSONField(default=dict)),
                        ('diff', models.TextField(blank=True)),
                        ('diff_stats', models.JSONField(blank=True, default=dict)),
                        ('rejected_paths', models.JSONField(blank=True, default=list)),
                        ('test_report', models.JSONField(blank=True, default=dict)),
                        ('pass_rate', models.FloatField(default=0.0)),
                        ('acceptance_passed', models.BooleanField(default=False)),
                        ('tests_ran', models.BooleanField(default=False)),
                        ('succeeded', models.BooleanField(default=False)),
                        ('safety_report', models.JSONField(blank=True, default=dict)),
                        ('safety_verdict', models.CharField(blank=True, max_length=8)),
                        ('failures', models.JSONField(blank=True, default=list, help_text='What went wrong, for prompts.')),
                        ('plan', models.TextField(blank=True)),
                        ('reflection', models.TextField(blank=True)),
                        ('reply_prose', models.TextField(blank=True)),
                        ('lessons_used', models.JSONField(blank=True, default=list)),
                        ('tokens', models.PositiveIntegerField(default=0)),
                        ('timings', models.JSONField(blank=True, default=dict)),
                        ('error_signature', models.CharField(blank=True, max_length=300)),
                        ('code_hash', models.CharField(blank=True, max_length=64)),
                        ('reply_hash', models.CharField(blank=True, max_length=64)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        'db_table': 'projects_iteration',
                        'ordering': ['run', 'number'],
                    },
                ),
                migrations.CreateModel(
                    name='Run',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('paused', 'Paused'), ('awaiting_approval', 'Awaiting approval'), ('escalated', 'Escalated'), ('succeeded', 'Succeeded'), ('failed', 'Failed'), ('aborted', 'Aborted'), ('cancelled', 'Cancelled'), ('held', 'Waiting for the installation')], default='queued', max_length=24)),
                        ('provider', models.CharField(default='scripted', max_length=40)),
                        ('script', models.JSONField(blank=True, null=True)),
                        ('script_position', models.JSONField(blank=True, default=dict)),
                        ('autonomy', models.CharField(choices=[('guided', 'Guided'), ('semi', 'Semi-automatic'), ('full', 'Fully automatic')], default='semi', max_length=8)),
                        ('use_lessons', models.BooleanField(default=True)),
                        ('max_iterations', models.PositiveIntegerField(default=10)),
                        ('max_tokens', models.PositiveIntegerField(default=200000)),
                        ('max_wall_s', models.PositiveIntegerField(default=3600)),
                        ('iteration', models.PositiveIntegerField(default=0, help_text='Last completed iteration.')),
                        ('tokens_prompt', models.PositiveIntegerField(default=0)),
                        ('tokens_completion', models.PositiveIntegerField(default=0)),
                        ('phase', models.CharField(choices=[('plan', 'Plan'), ('implement', 'Implement'), ('test_write', 'Write tests'), ('gate', 'Safety gate'), ('sandbox', 'Run tests'), ('verify', 'Verify'), ('reflect', 'Reflect'), ('learn', 'Learn'), ('done', 'Done')], default='plan', max_length=16)),
                        ('step_token', models.CharField(blank=True, max_length=40)),
                        ('step_attempts', models.PositiveSmallIntegerField(default=0)),
                        ('pending', models.JSONField(blank=True, default=dict)),
                        ('plan', models.TextField(blank=True)),
                        ('approaches', models.JSONField(blank=True, default=list, help_text='Earlier plans, in order.')),
                        ('guidance', models.TextField(blank=True, help_text='What humans told the loop.')),
                        ('cancel_requested', models.BooleanField(default=False)),
                        ('pause_requested', models.BooleanField(default=False)),
                        ('escapes_tried', models.JSONField(blank=True, default=list)),
                        ('escape_in_force', models.CharField(blank=True, max_length=24)),
                        ('escalations_answered', models.PositiveSmallIntegerField(default=0)),
                        ('since_iteration', models.PositiveIntegerField(default=0, help_text='Detector window start.')),
                        ('lessons_written', models.PositiveIntegerField(default=0)),
                        ('waiting_since', models.DateTimeField(blank=True, null=True)),
                        ('waited_s', models.FloatField(default=0.0)),
                        ('error', models.TextField(blank=True)),
                        ('held_by', models.CharField(blank=True, max_length=16)),
                        ('claimed_by', models.CharField(blank=True, max_length=120)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True, db_index=True)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('best_iteration', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='runs.iteration')),
                        ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='runs', to='projects.project')),
                        ('started_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'projects_run',
                        'ordering': ['-created_at'],
                    },
                ),
                migrations.CreateModel(
                    name='LoopEvent',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('iteration', models.PositiveIntegerField()),
                        ('type', models.CharField(max_length=40)),
                        ('signature', models.TextField(blank=True)),
                        ('confidence', models.FloatField(default=0.0)),
                        ('occurrences', models.PositiveIntegerField(default=0)),
                        ('action', models.CharField(max_length=24)),
                        ('reason', models.TextField(blank=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='loop_events', to='runs.run')),
                    ],
                    options={
                        'db_table': 'projects_loopevent',
                        'ordering': ['run', 'id'],
                    },
                ),
                migrations.CreateModel(
                    name='LLMCall',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('iteration', models.PositiveIntegerField(blank=True, null=True)),
                        ('role', models.CharField(max_length=16)),
                        ('provider', models.CharField(max_length=40)),
                        ('model', models.CharField(blank=True, max_length=120)),
                        ('prompt_tokens', models.PositiveIntegerField(default=0)),
                        ('completion_tokens', models.PositiveIntegerField(default=0)),
                        ('latency_ms', models.PositiveIntegerField(default=0)),
                        ('attempts', models.PositiveSmallIntegerField(default=1)),
                        ('error', models.TextField(blank=True)),
                        ('messages', models.JSONField(blank=True, default=list)),
                        ('reply', models.TextField(blank=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('run', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='llm_calls', to='runs.run')),
                    ],
                    options={
                        'db_table': 'projects_llmcall',
                        'ordering': ['id'],
                    },
                ),
                migrations.AddField(
                    model_name='iteration',
                    name='run',
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='iterations', to='runs.run'),
                ),
                migrations.CreateModel(
                    name='ApprovalRequest',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('kind', models.CharField(choices=[('plan', 'Plan'), ('change', 'Change'), ('escalation', 'Escalation'), ('publish', 'Publish')], max_length=12)),
                        ('status', models.CharField(choices=[('pending', 'Pending'), ('approved', 'Approved'), ('rejected', 'Rejected'), ('changes_requested', 'Changes requested'), ('answered', 'Answered'), ('stale', 'Stale')], default='pending', max_length=20)),
                        ('iteration', models.PositiveIntegerField(default=0)),
                        ('payload', models.JSONField(blank=True, default=dict)),
                        ('decided_at', models.DateTimeField(blank=True, null=True)),
                        ('comment', models.TextField(blank=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('decided_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='approval_decisions', to=settings.AUTH_USER_MODEL)),
                        ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='approvals', to='projects.project')),
                        ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='approvals', to='runs.run')),
                    ],
                    options={
                        'db_table': 'projects_approvalrequest',
                        'ordering': ['-created_at'],
                    },
                ),
                migrations.CreateModel(
                    name='StepOutbox',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('token', models.CharField(blank=True, max_length=40)),
                        ('actor', models.CharField(blank=True, max_length=100)),
                        ('args', models.JSONField(blank=True, default=list)),
                        ('delay_ms', models.PositiveIntegerField(default=0)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('run', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='+', to='runs.run')),
                    ],
                    options={
                        'db_table': 'projects_stepoutbox',
                        'ordering': ['id'],
                    },
                ),
                migrations.CreateModel(
                    name='ApprovalVote',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('decision', models.CharField(choices=[('approve', 'Approve'), ('reject', 'Reject'), ('request_changes', 'Request changes'), ('answer', 'Answer with guidance')], max_length=16)),
                        ('comment', models.TextField(blank=True)),
                        ('candidate', models.CharField(max_length=64)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('request', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='votes', to='runs.approvalrequest')),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='approval_votes', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'projects_approvalvote',
                        'ordering': ['created_at'],
                        'constraints': [models.UniqueConstraint(fields=('request', 'user'), name='unique_vote_per_user')],
                    },
                ),
                migrations.AddConstraint(
                    model_name='iteration',
                    constraint=models.UniqueConstraint(fields=('run', 'number'), name='unique_iteration_number'),
                ),
                migrations.AddIndex(
                    model_name='approvalrequest',
                    index=models.Index(fields=['project', 'status'], name='approval_project_status'),
                ),
            ],
        ),
    ]
