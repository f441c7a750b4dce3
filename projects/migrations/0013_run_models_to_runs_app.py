"""The run models (Run, Iteration, LoopEvent, LLMCall, ApprovalRequest, ApprovalVote,
StepOutbox) now belong to the runs app (runs 0001): they leave the projects app's state only.
Their tables, rows and constraints stay as they are; no SQL runs.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('projects', '0012_step_outbox_any_actor'),
        ('runs', '0001_initial'),
        # Every foreign key to these models points at the runs app before they leave this state.
        ('marketplace', '0006_run_models_in_runs_app'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name='notification',
                    name='approval',
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='notifications', to='runs.approvalrequest'),
                ),
                migrations.RemoveField(
                    model_name='approvalrequest',
                    name='decided_by',
                ),
                migrations.RemoveField(
                    model_name='approvalrequest',
                    name='project',
                ),
                migrations.RemoveField(
                    model_name='approvalrequest',
                    name='run',
                ),
                migrations.RemoveField(
                    model_name='approvalvote',
                    name='request',
                ),
                migrations.RemoveField(
                    model_name='approvalvote',
                    name='user',
                ),
                migrations.RemoveField(
                    model_name='iteration',
                    name='run',
                ),
                migrations.RemoveField(
                    model_name='run',
                    name='best_iteration',
                ),
                migrations.RemoveField(
                    model_name='llmcall',
                    name='run',
                ),
                migrations.RemoveField(
                    model_name='loopevent',
                    name='run',
                ),
                migrations.RemoveField(
                    model_name='run',
                    name='project',
                ),
                migrations.RemoveField(
                    model_name='run',
                    name='started_by',
                ),
                migrations.RemoveField(
                    model_name='stepoutbox',
                    name='run',
                ),
                migrations.DeleteModel(
                    name='ApprovalRequest',
                ),
                migrations.DeleteModel(
                    name='ApprovalVote',
                ),
                migrations.DeleteModel(
                    name='Iteration',
                ),
                migrations.DeleteModel(
                    name='LLMCall',
                ),
                migrations.DeleteModel(
                    name='LoopEvent',
                ),
                migrations.DeleteModel(
                    name='Run',
                ),
                migrations.DeleteModel(
                    name='StepOutbox',
                ),
            ],
        ),
    ]
