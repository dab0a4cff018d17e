"""Store stage: everything triagebot keeps, behind the one `Store` protocol.

`protocol.py` holds the contract — `Store`, made of one small protocol per kind of thing kept
(messages, records, threads, aliases, cursors, materials, quarantine, triage, outbox, runs) —
with its row types and the backend-neutral Message-ID and timestamp helpers. The parts that
implement it are written once (`part_*.py`) over a `Database` (database.py) and composed by
`SqlStore` (sql.py). Two backends open that database: `SqliteStore` (sqlite.py, the embedded
default: one file, `sqlite_database.py`, schema in `migrations.py`) and `PostgresStore`
(postgres.py: a server, `postgres_database.py`, schema in `postgres_migrations.py`).
`location.py` tells which one a `--db` / `TRIAGE_DB` value names and opens it; `copy.py` moves a
store from one to the other. `threads.py` (triagebot/) holds the pure threading rules,
`quarantine.py` the rules for messages the parser could not read. Import from those modules;
this file has no logic.
"""
