from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('llm', '0007_model_reply_form_system_messages'),
    ]

    operations = [
        migrations.CreateModel(
            name='ModelSpeed',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('provider', models.CharField(max_length=16)),
                ('base_url', models.CharField(blank=True, max_length=500)),
                ('model', models.CharField(max_length=200)),
                ('tokens_per_s', models.FloatField()),
                ('replies', models.PositiveIntegerField(default=0)),
                ('updated_at', models.DateTimeField(auto_now=True)),
            ],
            options={
                'verbose_name': 'model speed',
                'constraints': [models.UniqueConstraint(fields=('provider', 'base_url', 'model'), name='unique_model_speed')],
            },
        ),
    ]
