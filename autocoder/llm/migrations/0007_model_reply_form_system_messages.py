from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('llm', '0006_model_reply_form'),
    ]

    operations = [
        migrations.AddField(
            model_name='modelreplyform',
            name='system_messages',
            field=models.CharField(blank=True, default='', max_length=8),
        ),
    ]
