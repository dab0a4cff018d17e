"""Store stage: everything triagebot keeps, behind the one `Store` protocol.

`protocol.py` holds the contract — `Store`, made of one small protocol per kind of thing kept
(messages, records, threads, aliases, cursors, materials, quarantine, triage, outbox, runs) —
with its row types and the backend-neutral Message-ID and timestamp helpers. `sqlite.py` is the
default backend: `SqliteStore`, composed of one part per protocol part (`sqlite_*.py`) over one
shared connection (`sqlite_database.py`); `migrations.py` is its versioned schema. `threads.py`
holds the pure threading rules, `quarantine.py` the rules for messages the parser could not
read. Import from those modules; this file has no logic.
"""
