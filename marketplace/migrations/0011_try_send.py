from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('marketplace', '0010_version_quality'),
    ]

    operations = [
        migrations.AddField(
            model_name='tryrequest',
            name='send',
            field=models.BooleanField(default=False),
        ),
    ]
