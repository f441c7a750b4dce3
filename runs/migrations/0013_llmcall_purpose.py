from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0012_llm_call_reply_form'),
    ]

    operations = [
        migrations.AddField(
            model_name='llmcall',
            name='purpose',
            field=models.CharField(blank=True, max_length=12),
        ),
    ]
