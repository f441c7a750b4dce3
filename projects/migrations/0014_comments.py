# Comment threads on a project, a run and an approval request (issue 18), and the
# notification kind that tells people about them.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('projects', '0013_run_models_to_runs_app'),
        ('runs', '0002_content_types'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name='notification',
            name='kind',
            field=models.CharField(choices=[('review_requested', 'Review requested'), ('decided', 'Decision made'), ('installation', 'Installation problem'), ('comment', 'Comment')], max_length=20),
        ),
        migrations.CreateModel(
            name='Comment',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('author_name', models.CharField(help_text="The author's username at the time.", max_length=150)),
                ('body', models.TextField(blank=True, help_text='Markdown; empty once deleted.')),
                ('is_question', models.BooleanField(default=False)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('edited_at', models.DateTimeField(blank=True, null=True)),
                ('deleted_at', models.DateTimeField(blank=True, null=True)),
                ('deleted_by_name', models.CharField(blank=True, max_length=150)),
                ('approval', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='comments', to='runs.approvalrequest')),
                ('author', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='comments', to='projects.project')),
                ('run', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='comments', to='runs.run')),
                ('team', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='+', to='projects.team')),
            ],
            options={
                'ordering': ['created_at', 'id'],
                'indexes': [models.Index(fields=['project', 'run', 'approval', 'created_at'], name='comment_thread_time')],
                'constraints': [models.CheckConstraint(condition=models.Q(('approval__isnull', True), ('run__isnull', False), _connector='OR'), name='comment_approval_has_run')],
            },
        ),
    ]
