"""WSGI entry point (the portal normally runs under ASGI; this serves plain HTTP only)."""

from __future__ import annotations

import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
application = get_wsgi_application()
# Keep what is loaded at startup out of the collector's full passes (see config/asgi.py).
gc.freeze()
