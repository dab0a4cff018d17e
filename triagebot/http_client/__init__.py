"""The bounded HTTP client every stage that fetches shares (ingest's sources, reproduce's
materials): protocol.py, client.py, bounds.py.
"""
