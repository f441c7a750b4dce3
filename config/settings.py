"""Settings read from the environment (see .env.example); embedded services are the fallback."""

from __future__ import annotations

import os
from pathlib import Path

import environ

from autocoder import config, secret_key
from autocoder.llm import env as llm_env

BASE_DIR: Path = config.BASE_DIR
env = environ.Env()
if (BASE_DIR / ".env").exists():
    environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

DEBUG = env.bool("DJANGO_DEBUG", default=False)
VAR_DIR = config.var_dir()
# DJANGO_SECRET_KEY, else a random key made on first start and kept in var/secret_key (mode
# 0600), which every process of this installation reads (autocoder/secret_key.py). `doctor` and
# `check --deploy` refuse a published default, an empty or a short key.
SECRET_KEY = secret_key.secret_key()
SECRET_KEY_FALLBACKS = env.list("DJANGO_SECRET_KEY_FALLBACKS", default=[])
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])
# Web origins (besides the portal's own) whose pages may call the MCP addresses (docs/tools.md).
MCP_ALLOWED_ORIGINS = env.list("MCP_ALLOWED_ORIGINS", default=[])

# HTTPS (docs/operating.md, "Security"): all off for `make run` on plain http; compose.yaml turns
# them on for a portal behind a TLS-terminating proxy, so `check --deploy` reports nothing.
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=False)
# The container health check asks over plain http from inside: it is not redirected.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SESSION_COOKIE_SECURE = env.bool("DJANGO_SESSION_COOKIE_SECURE", default=False)
# Database sessions, read with a prepared statement (autocoder/sessions.py).
SESSION_ENGINE = "autocoder.sessions"
CSRF_COOKIE_SECURE = env.bool("DJANGO_CSRF_COOKIE_SECURE", default=False)
SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("DJANGO_SECURE_HSTS_PRELOAD", default=False)
# The header the proxy sets to say the browser used https (e.g. X-Forwarded-Proto); trust it only
# behind a proxy that overwrites it, or anyone could claim https.
_PROXY_SSL_HEADER = env.str("DJANGO_SECURE_PROXY_SSL_HEADER", default="")
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_" + _PROXY_SSL_HEADER.upper().replace("-", "_"), "https") if _PROXY_SSL_HEADER else None)

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "channels",
    "django_dramatiq",
    "django_htmx",
    "template_partials",
    "axes",
    "autocoder.apps.AutocoderConfig",
    "autocoder.llm.apps.LLMConfig",
    "autocoder.lessons.apps.LessonsConfig",
    "autocoder.reference.apps.ReferenceConfig",
    "teams.apps.TeamsConfig",
    "projects.apps.ProjectsConfig",
    "runs.apps.RunsConfig",
    "marketplace.apps.MarketplaceConfig",
    "tools.apps.ToolsConfig",
    # The site: its commands and checks (config/).
    "config.apps.SiteConfig",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "autocoder.security.ContentSecurityPolicyMiddleware",
    "autocoder.middleware.RefuseNulBytesMiddleware",  # 400, not a 500 from PostgreSQL
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "projects.middleware.CurrentTeamMiddleware",
    # Axes must be last so it sees the outcome of authentication.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "projects.context_processors.teams",
                "autocoder.llm.context_processors.model_banner",
            ],
        },
    },
]

DATABASES = {"default": config.django_database(config.database_url())}
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# A database that does not answer must not hang the site (docs/operating.md, "When the database
# is down"): Django's PostgreSQL backend with a circuit that refuses at once while the server
# is known down (autocoder/database/); libpq waits for a connect for ever unless told.
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"]["ENGINE"] = "autocoder.database"
DATABASES["default"].setdefault("OPTIONS", {}).setdefault(
    "connect_timeout", env.int("DATABASE_CONNECT_TIMEOUT_S", default=5))
# A pool per process: without one, every page opens a new connection, which costs PostgreSQL a
# new backend process (measured: about half of the CPU a busy board used). Under ASGI each
# request runs in a thread of its own, so Django's persistent connections (CONN_MAX_AGE) would
# pile up instead: the pool is the way Django documents for ASGI.
if env.bool("DATABASE_POOL", default=True):
    _options = DATABASES["default"].setdefault("OPTIONS", {})
    _options["pool"] = {
        "min_size": 1, "max_size": env.int("DATABASE_POOL_MAX", default=10),
        # How long a page waits for a connection before it answers 503 (was psycopg's 30 s).
        "timeout": env.float("DATABASE_POOL_TIMEOUT_S", default=2.0),
        # A failed connect is retried with a doubling delay; give up after this long and
        # start afresh on the next demand, so no retry is ever more than a second away
        # when the server is back (psycopg's default, 5 minutes, let delays reach a minute).
        "reconnect_timeout": 2.0,
    }
    # Pooled connections keep the prepared statements of autocoder/compiled_queries.py (the
    # queries every page runs). None would disable preparing altogether; Django's own
    # client-side binding cursors never prepare, whatever this says. Prepared statements are
    # planned once with a generic plan: their SQL is the same for every user.
    _options["prepare_threshold"] = 5
    # libpq ignores PGOPTIONS once "options" is given: keep what the environment asks for too.
    _options["options"] = " ".join(filter(None, [
        os.environ.get("PGOPTIONS", ""), _options.get("options", ""),
        "-c plan_cache_mode=force_generic_plan"]))
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = config.redis_url()

# Every websocket's receive is a BZPOPMIN that Redis answers after up to 5 s of silence
# (channels_redis' brpop_timeout). redis-py 8 gives sockets a 5 s read timeout by default, so an
# idle page's read timed out first ("Timeout reading from ...redis.sock"), the consumer died and
# its websocket closed: updates sent before the browser reconnected were lost. The read timeout
# stays finite (a dead Redis is still noticed) but well above the blocking pop.
CHANNEL_LAYER_SOCKET_TIMEOUT_S = 30
# Websockets check their user's team membership again this often (seconds) before relaying an
# event: a member removed from a team stops receiving its events within this time.
WEBSOCKET_MEMBERSHIP_RECHECK_S = env.float("WEBSOCKET_MEMBERSHIP_RECHECK_S", default=2.0)
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            "hosts": [{"address": REDIS_URL, "socket_timeout": CHANNEL_LAYER_SOCKET_TIMEOUT_S,
                       "socket_connect_timeout": 5}],
            "prefix": env.str("CHANNELS_PREFIX", default="autocoder:asgi"),
        },
    }
}

DRAMATIQ_BROKER = {
    "BROKER": "dramatiq.brokers.redis.RedisBroker",
    "OPTIONS": {
        "url": REDIS_URL,
        "namespace": env.str("DRAMATIQ_NAMESPACE", default="autocoder-tasks"),
    },
    "MIDDLEWARE": [
        "autocoder.start_gate.AwaitStartGate",  # first: nothing before `up` has migrated
        "dramatiq.middleware.AgeLimit",
        "dramatiq.middleware.TimeLimit",
        "dramatiq.middleware.Callbacks",
        "dramatiq.middleware.Retries",
        "django_dramatiq.middleware.DbConnectionsMiddleware",
        "autocoder.heartbeat.WorkerHeartbeat",
        "autocoder.sandbox.standby.ReleaseOnShutdown",
        "autocoder.sandbox.docker_standby.ReleaseOnShutdown",
    ],
}
DRAMATIQ_AUTODISCOVER_MODULES = ["tasks"]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "autocoder.authentication.PreparedUserBackend",  # Django's ModelBackend, a faster read
]
AXES_FAILURE_LIMIT = env.int("LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = env.float("LOGIN_COOLOFF_HOURS", default=0.25)
# Failures of one user name at one address (brute force), then of one address across every user
# name (password spraying), which locks at its own, higher limit (autocoder.security).
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"], "ip_address"]
LOGIN_IP_FAILURE_LIMIT = env.int("LOGIN_IP_FAILURE_LIMIT", default=20)
AXES_HANDLER = "autocoder.security.LoginThrottle"
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_RESET_ON_SUCCESS = True
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env.str("TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
# Serve straight from static/ too, so a checkout works before `collectstatic` has run.
WHITENOISE_USE_FINDERS = True

MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"

# Workers write a heartbeat key this often; a key older than the TTL counts as a dead worker.
WORKER_HEARTBEAT_INTERVAL_S = env.float("WORKER_HEARTBEAT_INTERVAL_S", default=5.0)
WORKER_HEARTBEAT_TTL_S = env.float("WORKER_HEARTBEAT_TTL_S", default=20.0)

# Demo data created on first start (`manage.py up`); the password is printed there.
DEMO_PASSWORD = env.str("AUTOCODER_DEMO_PASSWORD", default="autocoder-demo")
# ASGI server processes behind the one port (`up`, `serve`); 0: one per core plus one.
WEB_PROCESSES = env.int("WEB_PROCESSES", default=0)
# A line per HTTP request on the console (autocoder.http_bridge, logger "autocoder.access").
WEB_ACCESS_LOG = env.bool("WEB_ACCESS_LOG", default=True)
# Each web process loads the catalogue's search model at start, not on its first search.
SEARCH_MODEL_PRELOAD = env.bool("SEARCH_MODEL_PRELOAD", default=True)
# The runtime's API reference is loaded into the database in the background on first need
# (docs/engine.md, "Reference docs"); off, only `manage.py reference_load` loads it.
REFERENCE_AUTOLOAD = env.bool("REFERENCE_AUTOLOAD", default=True)

# Generation engine, sandbox and LLM (documented in docs/configuration.md).
SANDBOX_BACKEND = env.str("SANDBOX_BACKEND", default="bwrap")
# How the whole job's memory is bounded: a memory cgroup, a watchdog over its processes, or
# auto (a cgroup where the host delegates one); docs/sandbox.md, "Memory".
SANDBOX_MEMORY_BOUND = env.str("SANDBOX_MEMORY_BOUND", default="auto")
# The plugin runtime (autocoder/runtime): the interpreter plugin code runs on in the sandbox.
PLUGIN_RUNTIME_DIR = env.str("PLUGIN_RUNTIME_DIR", default=str(BASE_DIR / ".plugin-runtime"))
SANDBOX_DOCKER_IMAGE = env.str("SANDBOX_DOCKER_IMAGE", default="autocoder-sandbox:latest")
# The Docker engine's runtime for jobs: "" (runc) or "runsc" (gVisor); docs/sandbox.md.
SANDBOX_DOCKER_RUNTIME = env.str("SANDBOX_DOCKER_RUNTIME", default="")
# Empty: no model until one is set up on the Model page (/settings/model/) or here; a script
# of recorded replies alone (LLM_SCRIPT, tests and demos) selects the scripted provider.
LLM_PROVIDER = env.str("LLM_PROVIDER", default="") or (
    "scripted" if env.str("LLM_SCRIPT", default="") else "")
LLM_BASE_URL = env.str("LLM_BASE_URL", default="")
LLM_API_KEY = env.str("LLM_API_KEY", default="")
LLM_MODEL = env.str("LLM_MODEL", default="")
# The idle timeout: the longest silence from a model (no first token, no next chunk), not a
# limit on a reply that keeps streaming. Read from LLM_IDLE_TIMEOUT_S, or its older name.
LLM_TIMEOUT_S = env.float("LLM_IDLE_TIMEOUT_S", default=env.float("LLM_TIMEOUT_S", default=120.0))
# A reply cap for every role; 0 keeps each role's own (autocoder.llm.config.ROLE_MAX_TOKENS).
LLM_MAX_TOKENS = env.int("LLM_MAX_TOKENS", default=0)
LLM_MAX_RETRIES = env.int("LLM_MAX_RETRIES", default=2)
LLM_SCRIPT = env.str("LLM_SCRIPT", default="")
LLM_N_CTX = env.int("LLM_N_CTX", default=4096)
# The model's context window in tokens, when a server's is known (0: unknown; the model run in
# the worker has LLM_N_CTX): reply caps and prompts are fitted to it (docs/llm.md, "Reply caps").
LLM_CONTEXT_TOKENS = env.int("LLM_CONTEXT_TOKENS", default=0)
# Whether a model reads system messages: "measure" it on a self-run server's first call (the
# default), "keep" them, or "fold" them into the first user message (docs/llm.md).
LLM_SYSTEM_MESSAGES = env.str("LLM_SYSTEM_MESSAGES", default="measure").strip().lower()
# Where local model files (GGUF) are downloaded to (docs/llm.md, "Local model").
MODELS_DIR = Path(env.str("MODELS_DIR", default="") or VAR_DIR / "models")
# The currency of the Prices page (/settings/model/prices/) and of every cost and budget shown:
# one code for the whole site (docs/llm.md, "Prices").
COST_CURRENCY = env.str("COST_CURRENCY", default="USD").strip().upper() or "USD"
# LLM_<FIELD>_<ROLE> (LLM_MODEL_IMPLEMENTER, LLM_PROVIDER_REFLECTOR, ...): see docs/llm.md.
LLM_ROLE_OVERRIDES = llm_env.role_env_overrides()
# The wizard's analyst gets one try within this many seconds, then the usual questions go on.
INTERVIEW_ANALYST_TIMEOUT_S = env.float("INTERVIEW_ANALYST_TIMEOUT_S", default=15.0)
EMBEDDER = env.str("EMBEDDER", default="minilm")
# CPU threads torch uses per process for the local embedder (docs/lessons.md).
EMBEDDER_THREADS = env.int("EMBEDDER_THREADS", default=1)
# "onnx" (ONNX Runtime, falling back to PyTorch when it cannot be used) or "torch".
EMBEDDER_RUNTIME = env.str("EMBEDDER_RUNTIME", default="onnx")

# Prometheus metrics (docs/operating.md, "Metrics"). Every process of the stack writes its values
# under METRICS_DIR (autocoder/metrics.py). /metrics answers a request with METRICS_TOKEN as its
# bearer token, and nobody else unless METRICS_ALLOW_LOOPBACK is switched on: then also a request
# from this machine without a token (behind a proxy on the same host that is anyone). The former
# METRICS_FROM_LOOPBACK, on by default and in every .env made from .env.example, is not read.
METRICS_DIR = Path(env.str("METRICS_DIR", default="") or VAR_DIR / "metrics")
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
METRICS_ALLOW_LOOPBACK = env.bool("METRICS_ALLOW_LOOPBACK", default=False)

# Activated plugins (docs/tools.md): how long the invocation log keeps a call.
TOOLS_LOG_RETENTION_DAYS = env.int("TOOLS_LOG_RETENTION_DAYS", default=30)
# Host names (or IP addresses) that a plugin's api.http may reach although they are in this
# network (loopback, private, link-local addresses): a team's intranet service. Empty: none.
# Each one opens that service to every plugin that declares it (docs/safety.md, "Plugins that
# reach other services"); cloud metadata addresses stay closed.
TOOLS_INTERNAL_HOSTS = frozenset(
    host.strip() for host in env.list("TOOLS_INTERNAL_HOSTS", default=[]) if host.strip())

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {"axes": {"level": "WARNING"}, "daphne": {"level": "WARNING"}},
}

# Lessons learned: EMBEDDER=openai uses an OpenAI-compatible /embeddings endpoint (384 dims).
EMBEDDINGS_BASE_URL = env.str("EMBEDDINGS_BASE_URL", default="")
EMBEDDINGS_MODEL = env.str("EMBEDDINGS_MODEL", default="")
EMBEDDINGS_API_KEY = env.str("EMBEDDINGS_API_KEY", default="")

# Generation engine (docs/engine.md): run budgets, the sandbox limits of one test run, when a
# change counts as major (semi autonomy), and how often a step may fail before the run does.
ENGINE_MAX_TOKENS = env.int("ENGINE_MAX_TOKENS", default=200_000)
ENGINE_MAX_WALL_S = env.int("ENGINE_MAX_WALL_S", default=3600)
ENGINE_SANDBOX_TIMEOUT_S = env.float("ENGINE_SANDBOX_TIMEOUT_S", default=60.0)
ENGINE_SANDBOX_MEMORY_MB = env.int("ENGINE_SANDBOX_MEMORY_MB", default=512)
ENGINE_MAJOR_DIFF_LINES = env.int("ENGINE_MAJOR_DIFF_LINES", default=400)
ENGINE_STEP_MAX_ATTEMPTS = env.int("ENGINE_STEP_MAX_ATTEMPTS", default=3)
ENGINE_RETRY_DELAY_MS = env.int("ENGINE_RETRY_DELAY_MS", default=2000)
ENGINE_PROMPT_BUDGET_CHARS = env.int("ENGINE_PROMPT_BUDGET_CHARS", default=24000)
# A queued or running run whose steps have not moved for this long gets its step re-sent.
ENGINE_STALL_S = env.int("ENGINE_STALL_S", default=900)
