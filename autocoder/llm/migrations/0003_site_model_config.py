"""The site's model set-up, edited on the Model page (/settings/model/)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import autocoder.llm.models


class Migration(migrations.Migration):

    dependencies = [
        ('llm', '0002_seal_api_keys'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='SiteModelConfig',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('provider', models.CharField(blank=True, choices=[('openai', 'OpenAI-compatible server (OpenAI, Ollama, vLLM, llama.cpp server, LM Studio)'), ('anthropic', 'Anthropic'), ('llamacpp', 'Local model (a GGUF file run inside the workers)')], help_text='Blank: no model is set up.', max_length=16)),
                ('base_url', models.CharField(blank=True, max_length=500, validators=[autocoder.llm.models.validate_base_url], verbose_name='base URL')),
                ('api_key_sealed', models.TextField(blank=True, verbose_name='API key (sealed)')),
                ('model', models.CharField(blank=True, help_text='Model name, or the .gguf path of a local model.', max_length=500)),
                ('role_models', models.JSONField(blank=True, default=dict)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('updated_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'verbose_name': 'site model set-up',
            },
        ),
    ]
