import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('marketplace', '0001_initial'),
        ('projects', '0001_initial'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='Schedule',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=80)),
                ('command', models.CharField(max_length=64)),
                ('payload', models.JSONField(default=dict)),
                ('every', models.CharField(choices=[('minutes', 'Every few minutes'), ('hours', 'Every few hours'), ('day', 'Every day at a set time')], max_length=8)),
                ('interval', models.PositiveSmallIntegerField(default=1)),
                ('at_time', models.TimeField(blank=True, null=True)),
                ('enabled', models.BooleanField(default=True)),
                ('next_run_at', models.DateTimeField()),
                ('last_run_at', models.DateTimeField(blank=True, null=True)),
                ('failing', models.BooleanField(default=False)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('owner', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('plugin', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='marketplace.plugin')),
                ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='projects.team')),
            ],
            options={
                'ordering': ['name'],
            },
        ),
        migrations.CreateModel(
            name='ToolSetting',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=64)),
                ('value', models.TextField(blank=True)),
                ('secret', models.BooleanField(default=False)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('plugin', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='marketplace.plugin')),
                ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='projects.team')),
                ('updated_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'ordering': ['name'],
            },
        ),
        migrations.CreateModel(
            name='ToolStorage',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('data', models.JSONField(default=dict)),
                ('size', models.PositiveIntegerField(default=0, help_text='Bytes of JSON.')),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('plugin', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='marketplace.plugin')),
                ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='projects.team')),
            ],
        ),
        migrations.CreateModel(
            name='ToolToken',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=80)),
                ('prefix', models.CharField(max_length=12)),
                ('token_hash', models.CharField(max_length=64, unique=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('last_used_at', models.DateTimeField(blank=True, null=True)),
                ('revoked_at', models.DateTimeField(blank=True, null=True)),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('plugin', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='marketplace.plugin')),
                ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='projects.team')),
            ],
            options={
                'ordering': ['-created_at'],
            },
        ),
        migrations.CreateModel(
            name='Invocation',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('command', models.CharField(max_length=64)),
                ('caller', models.CharField(choices=[('user', 'A person (the form)'), ('token', 'An API token'), ('schedule', 'A schedule'), ('event', 'The portal (an event)')], max_length=8)),
                ('status', models.CharField(choices=[('pending', 'Waiting for a worker'), ('running', 'Running'), ('ok', 'Succeeded'), ('failed', 'Failed'), ('refused', 'Refused')], default='pending', max_length=8)),
                ('payload', models.JSONField(blank=True, default=dict)),
                ('output', models.JSONField(blank=True, null=True)),
                ('output_cut', models.BooleanField(default=False)),
                ('error', models.TextField(blank=True)),
                ('error_kind', models.CharField(blank=True, max_length=24)),
                ('input_bytes', models.PositiveIntegerField(default=0)),
                ('output_bytes', models.PositiveIntegerField(default=0)),
                ('duration_ms', models.PositiveIntegerField(default=0)),
                ('plugin_ms', models.PositiveIntegerField(default=0)),
                ('log_lines', models.JSONField(blank=True, default=list)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('plugin', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='marketplace.plugin')),
                ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='projects.team')),
                ('user', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('version', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='marketplace.pluginversion')),
                ('schedule', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='tools.schedule')),
                ('token', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='tools.tooltoken')),
            ],
            options={
                'ordering': ['-created_at', '-id'],
            },
        ),
        migrations.CreateModel(
            name='VersionBlock',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('reason', models.TextField()),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('blocked_by', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('version', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='marketplace.pluginversion')),
            ],
        ),
        migrations.CreateModel(
            name='Activation',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('status', models.CharField(choices=[('pending', 'Waiting for a team admin'), ('active', 'Active'), ('refused', 'Refused'), ('retired', 'No longer in use')], default='pending', max_length=8)),
                ('rollback', models.BooleanField(default=False, help_text='A return to an earlier version.')),
                ('comment', models.TextField(blank=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('decided_at', models.DateTimeField(blank=True, null=True)),
                ('retired_at', models.DateTimeField(blank=True, null=True)),
                ('decided_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('plugin', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='marketplace.plugin')),
                ('previous', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to='tools.activation')),
                ('requested_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='projects.team')),
                ('version', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='marketplace.pluginversion')),
            ],
            options={
                'ordering': ['-created_at', '-id'],
                'indexes': [models.Index(fields=['version', 'status'], name='activation_version_status')],
                'constraints': [models.UniqueConstraint(condition=models.Q(('status', 'active')), fields=('team', 'plugin'), name='one_active_tool_per_team'), models.UniqueConstraint(condition=models.Q(('status', 'pending')), fields=('team', 'version'), name='one_pending_activation_per_version')],
            },
        ),
        migrations.AddIndex(
            model_name='schedule',
            index=models.Index(fields=['enabled', 'next_run_at'], name='schedule_due'),
        ),
        migrations.AddConstraint(
            model_name='toolsetting',
            constraint=models.UniqueConstraint(fields=('team', 'plugin', 'name'), name='one_tool_setting_per_name'),
        ),
        migrations.AddConstraint(
            model_name='toolstorage',
            constraint=models.UniqueConstraint(fields=('team', 'plugin'), name='one_tool_storage_per_team'),
        ),
        migrations.AddIndex(
            model_name='invocation',
            index=models.Index(fields=['team', 'plugin', '-created_at'], name='invocation_tool_log'),
        ),
        migrations.AddIndex(
            model_name='invocation',
            index=models.Index(fields=['version', 'status'], name='invocation_version_status'),
        ),
        migrations.AddIndex(
            model_name='invocation',
            index=models.Index(fields=['created_at'], name='invocation_created'),
        ),
    ]
