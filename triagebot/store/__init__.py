"""Store stage: raw messages, records, threads and source cursors behind the `Store` protocol.

`protocol.py` holds the contract (and the backend-neutral Message-ID helpers), `sqlite.py` the
default SQLite backend, `migrations.py` its versioned schema, `threads.py` the pure threading
rules, `quarantine.py` the messages the parser could not read. Import from those modules; this
file has no logic.
"""
