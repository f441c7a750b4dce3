# Warm sandboxes per team and version, which a team admin can turn off (docs/sandbox.md).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tools', '0012_triggers'),
    ]

    operations = [
        migrations.AddField(
            model_name='activation',
            name='warm_sandbox',
            field=models.BooleanField(default=True, help_text="Calls start in a sandbox kept ready for this team's version."),
        ),
    ]
