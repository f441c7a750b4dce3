from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('tools', '0001_initial'),
    ]

    operations = [
        migrations.AddField(
            model_name='schedule',
            name='paused_reason',
            field=models.CharField(blank=True, max_length=200),
        ),
    ]
