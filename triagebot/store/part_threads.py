"""Store stage: the part for threads — ids unioned into thread_ids, edges kept for the root.

The rules (which edges the headers give, which id is the root) are triagebot/records/threads.py's; this part only
keeps them: `thread_nodes` maps every id seen, placeholders included, to its thread, and
`thread_edges` keeps the (child, parent) pairs the root is chosen from.
"""
from __future__ import annotations

from collections.abc import Sequence

from triagebot.records.threads import choose_root, normalize_message_id, parent_edges
from triagebot.store.database import Database, chunks, marks


class Threads:
    """`ThreadStore` on the `threads`, `thread_nodes` and `thread_edges` tables."""

    def __init__(self, database: Database) -> None:
        self._database = database

    def link_thread(self, message_id: str, in_reply_to: str | None,
                    references: Sequence[str] = ()) -> None:
        with self._database.transaction():
            self.link(normalize_message_id(message_id), in_reply_to, references)

    def link(self, message_id: str, in_reply_to: str | None, references: Sequence[str]) -> None:
        """Union the message, its parents and their threads into one thread_id (the lowest).

        Call inside a transaction; `message_id` is normalized already."""
        database = self._database
        edges = parent_edges(message_id, in_reply_to, references)
        ids = list(dict.fromkeys([message_id, *(node for edge in edges for node in edge)]))
        labelled: dict[str, int] = {}
        for chunk in chunks(ids):
            labelled.update(database.execute(
                f"SELECT message_id, thread_id FROM thread_nodes"
                f" WHERE message_id IN ({marks(len(chunk))})", tuple(chunk)))
        labels = sorted(set(labelled.values()))
        if labels:
            target = labels[0]
            others = labels[1:]
            for chunk in chunks(others):
                database.execute(f"UPDATE thread_nodes SET thread_id = ?"
                                   f" WHERE thread_id IN ({marks(len(chunk))})",
                                   (target, *chunk))
                database.execute(f"DELETE FROM threads WHERE thread_id IN ({marks(len(chunk))})",
                                   tuple(chunk))
        else:
            target = int(database.execute(
                "INSERT INTO threads DEFAULT VALUES RETURNING thread_id").fetchone()[0])
        database.executemany("INSERT INTO thread_nodes (message_id, thread_id) VALUES (?, ?)",
                               [(node, target) for node in ids if node not in labelled])
        database.executemany("INSERT INTO thread_edges (child, parent) VALUES (?, ?)"
                             " ON CONFLICT DO NOTHING",
                               edges)

    def _thread_id(self, message_id: str) -> int | None:
        row = self._database.execute(
            "SELECT thread_id FROM thread_nodes WHERE message_id = ?", (message_id,)).fetchone()
        return None if row is None else int(row[0])

    def _stored(self, message_id: str) -> bool:
        return self._database.execute(
            "SELECT 1 FROM messages WHERE message_id = ?", (message_id,)).fetchone() is not None

    def thread_of(self, message_id: str) -> list[str]:
        message_id = normalize_message_id(message_id)
        thread_id = self._thread_id(message_id)
        if thread_id is None:
            return [message_id] if self._stored(message_id) else []
        return [row[0] for row in self._database.execute(
            "SELECT m.message_id FROM thread_nodes n JOIN messages m USING (message_id)"
            " LEFT JOIN records r USING (message_id) WHERE n.thread_id = ?"
            " ORDER BY COALESCE(r.date_utc, m.received_at), m.message_id", (thread_id,))]

    def thread_root(self, message_id: str) -> str | None:
        message_id = normalize_message_id(message_id)
        thread_id = self._thread_id(message_id)
        if thread_id is None:
            return message_id if self._stored(message_id) else None
        database = self._database
        members = [row[0] for row in database.execute(
            "SELECT message_id FROM thread_nodes WHERE thread_id = ?", (thread_id,))]
        edges = database.execute(
            "SELECT e.child, e.parent FROM thread_edges e JOIN thread_nodes n"
            " ON n.message_id = e.child WHERE n.thread_id = ?", (thread_id,)).fetchall()
        return choose_root(members, edges)
