"""The site's top layers: settings, URLs, the ASGI/WSGI entry points, websockets' routing, the
site-wide pages (/healthz, /metrics), the start-up checks, the cross-app management commands,
the benchmarks and the test helpers. Nothing in autocoder/ or the apps imports this package
(docs/development.md, "Layers")."""
