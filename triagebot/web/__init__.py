"""Web stage: the read-only pages and the daemon's /healthz and /metrics, as one ASGI app (app.py)."""
