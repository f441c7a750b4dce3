"""ASGI entry point: HTTP through Django, websockets through Channels with session auth."""

from __future__ import annotations

import gc
import logging
import os
import threading

import django
from django.core.handlers.wsgi import WSGIHandler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup(set_prefix=False)

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs the app registry)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402

from autocoder.connection_shares import ConnectionShares  # noqa: E402
from autocoder.http_bridge import BufferedWsgiBridge  # noqa: E402
from autocoder.start_gate import gate_wait  # noqa: E402
from config.routing import websocket_urlpatterns  # noqa: E402
from tools.mcp.asgi import mcp_or  # noqa: E402  (/mcp/<team>/: docs/tools.md)

shares = ConnectionShares.from_environment()
application = ProtocolTypeRouter(
    {
        "http": mcp_or(BufferedWsgiBridge(WSGIHandler(), log_access=settings.WEB_ACCESS_LOG,
                                          shares=shares)),
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)

# What is loaded by now lives as long as the process: keep it out of the collector's full
# passes, which otherwise walk every object of the imported libraries (~100 ms each, a latency
# spike on every tenth page or so).
gc.freeze()

# Started by `up` during its migrations: serve nothing before they are done (start_gate.py).
gate_wait()
if shares is not None:
    shares.serving()  # the other web processes count this one from now on


def _warm_search_model() -> None:
    """In the background, so the process answers pages meanwhile; then freeze again, the model
    being as long-lived as the libraries."""
    from marketplace.selectors.catalogue import search_model_warm

    try:
        search_model_warm()
    except Exception:  # the first search reports a broken embedder to its user; log it here
        logging.getLogger(__name__).warning("could not load the search model", exc_info=True)
    gc.freeze()


if settings.SEARCH_MODEL_PRELOAD:
    threading.Thread(target=_warm_search_model, name="search-model-warm", daemon=True).start()
