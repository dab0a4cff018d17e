"""Store stage: the whole `Store` over any SQL database — the parts composed over one `Database`.

`SqlStore` is composed, not inherited: one `Database` (the connection, its settings and
transactions: `SqliteDatabase` or `PostgresDatabase`) shared by one small part per `Store` part —
`Messages`, `Aliases`, `Records` (part_messages.py), `Threads` (part_threads.py), `Cursors`,
`Materials` (part_sources.py), `Quarantine` (part_quarantine.py), `Triage`, `Outbox`
(part_triage.py), `Runs` (part_runs.py), `Lifecycle` and `MailOutbox` (part_lifecycle.py),
`Actions` (part_actions.py) and `Decisions` (part_decisions.py). Each part's methods are exposed
on the store under their own names; only `ingest_batch`, which spans parts in one transaction, is written here.
A backend (`SqliteStore`, `PostgresStore`) only opens its `Database` and hands it here.

`store.connection` is the backend's own connection (sqlite3 or psycopg) and `store.database` the
`Database` over it: inside `with store.transaction():` both are in that transaction, so other
work on the same connection (a job engine's insert of a job row, on PostgreSQL) commits or
rolls back with the state change and the outbox rows written in the block.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, overload

from triagebot.records.threads import normalize_message_id
from triagebot.store.database import Database
from triagebot.store.part_actions import Actions
from triagebot.store.part_decisions import Decisions
from triagebot.store.part_lifecycle import Lifecycle, MailOutbox
from triagebot.store.part_messages import Aliases, Messages, Records, message_row, record_row
from triagebot.store.part_quarantine import Quarantine
from triagebot.store.part_runs import Runs
from triagebot.store.part_sources import Cursors, Materials
from triagebot.store.part_threads import Threads
from triagebot.store.part_triage import Outbox, Triage
from triagebot.store.protocol import IncomingMessage

Part = TypeVar("Part")
Arguments = ParamSpec("Arguments")
Result = TypeVar("Result")


class _Exposed(Generic[Part, Arguments, Result]):
    """One part's method, reached on the store under the same name: `store.enqueue(...)` is
    `store._outbox.enqueue(...)`. Typed from the part's method, so mypy checks callers (and
    that `SqlStore` is a whole `Store`) against the part's own signature."""

    def __init__(self, part: str, method: Callable[Concatenate[Part, Arguments], Result]) -> None:
        self._part = part
        self._name = method.__name__
        self.__doc__ = method.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        if name != self._name:
            raise TypeError(f"{owner.__name__}.{name} exposes {self._part}.{self._name}:"
                            " the names differ")

    @overload
    def __get__(self, store: None, owner: type) -> _Exposed[Part, Arguments, Result]: ...

    @overload
    def __get__(self, store: object, owner: type | None = None) -> Callable[Arguments, Result]: ...

    def __get__(self, store: object, owner: type | None = None) -> Any:
        if store is None:
            return self
        return getattr(getattr(store, self._part), self._name)


class SqlStore:
    """`Store` over one open `Database`. One instance per thread (connections are not shared).

    Use as a context manager, or call `close()`.
    """

    def __init__(self, database: Database) -> None:
        self.database = database
        self.path = database.path
        self._messages = Messages(database)
        self._aliases = Aliases(database)
        self._records = Records(database)
        self._threads = Threads(database)
        self._cursors = Cursors(database)
        self._materials = Materials(database)
        self._quarantine = Quarantine(database)
        self._triage = Triage(database)
        self._outbox = Outbox(database)
        self._runs = Runs(database)
        self._lifecycle = Lifecycle(database)
        self._mail = MailOutbox(database)
        self._actions = Actions(database)
        self._decisions = Decisions(database)

    @property
    def connection(self) -> Any:
        """The backend's own connection (sqlite3.Connection or psycopg.Connection)."""
        return self.database.connection

    @property
    def _connection(self) -> Any:
        return self.database.connection

    def close(self) -> None:
        self.database.close()

    def connection_lost(self) -> bool:
        return self.database.connection_lost()

    def reconnect(self) -> None:
        self.database.reconnect()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[Self]:
        """One write transaction holding the store's write lock; nested calls use savepoints.

        An exception inside rolls back everything the block wrote (cursor included) and
        propagates. Waiting for another writer is bounded by the busy timeout.
        """
        with self.database.transaction():
            yield self

    def now_text(self) -> str:
        return self.database.stamp()

    def ingest_batch(self, messages: Iterable[IncomingMessage],
                     cursor: tuple[str, str] | None = None) -> list[str]:
        items: dict[str, IncomingMessage] = {}
        for message in messages:
            items.setdefault(normalize_message_id(message.message_id), message)  # first wins
        rows = [message_row(message_id, item.raw, item.source_name, item.list_name,
                            item.received_at, item.source_url)
                for message_id, item in items.items()]
        now = self.database.stamp()
        with self.database.transaction():
            # Checked under the write lock, so nobody can insert between this and the insert.
            new_ids = self._messages.insert_new(rows)
            # A message quarantined before that now arrives parsed is a normal message now.
            self._quarantine.release_many(new_ids)
            self._records.insert_new([
                record_row(message_id, record, items[message_id].parser_version or "", now)
                for message_id in new_ids if (record := items[message_id].record) is not None])
            for message_id, item in items.items():
                self._threads.link(message_id, item.in_reply_to, item.references)
            if cursor is not None:
                self._cursors.set_cursor(*cursor)
        return new_ids

    # -- messages ---------------------------------------------------------------------------
    put_message = _Exposed("_messages", Messages.put_message)
    has_message = _Exposed("_messages", Messages.has_message)
    existing_ids = _Exposed("_messages", Messages.existing_ids)
    get_raw = _Exposed("_messages", Messages.get_raw)
    get_message = _Exposed("_messages", Messages.get_message)
    iter_raw = _Exposed("_messages", Messages.iter_raw)
    count_messages = _Exposed("_messages", Messages.count_messages)
    delete_message = _Exposed("_messages", Messages.delete_message)
    # -- aliases ----------------------------------------------------------------------------
    add_alias = _Exposed("_aliases", Aliases.add_alias)
    resolve_alias = _Exposed("_aliases", Aliases.resolve_alias)
    repoint_alias = _Exposed("_aliases", Aliases.repoint_alias)
    # -- records ----------------------------------------------------------------------------
    put_record = _Exposed("_records", Records.put_record)
    get_record = _Exposed("_records", Records.get_record)
    get_record_version = _Exposed("_records", Records.get_record_version)
    list_records = _Exposed("_records", Records.list_records)
    record_keys_starting = _Exposed("_records", Records.record_keys_starting)
    # -- threads ----------------------------------------------------------------------------
    link_thread = _Exposed("_threads", Threads.link_thread)
    thread_of = _Exposed("_threads", Threads.thread_of)
    thread_root = _Exposed("_threads", Threads.thread_root)
    # -- cursors and fetched materials ------------------------------------------------------
    get_cursor = _Exposed("_cursors", Cursors.get_cursor)
    set_cursor = _Exposed("_cursors", Cursors.set_cursor)
    get_material = _Exposed("_materials", Materials.get_material)
    put_material = _Exposed("_materials", Materials.put_material)
    # -- quarantine -------------------------------------------------------------------------
    quarantine_message = _Exposed("_quarantine", Quarantine.quarantine_message)
    quarantined = _Exposed("_quarantine", Quarantine.quarantined)
    count_quarantined = _Exposed("_quarantine", Quarantine.count_quarantined)
    get_quarantined = _Exposed("_quarantine", Quarantine.get_quarantined)
    iter_quarantined = _Exposed("_quarantine", Quarantine.iter_quarantined)
    still_quarantined = _Exposed("_quarantine", Quarantine.still_quarantined)
    release_quarantined = _Exposed("_quarantine", Quarantine.release_quarantined)
    # -- triage -----------------------------------------------------------------------------
    start_triage = _Exposed("_triage", Triage.start_triage)
    set_triage = _Exposed("_triage", Triage.set_triage)
    get_triage = _Exposed("_triage", Triage.get_triage)
    triage_in = _Exposed("_triage", Triage.triage_in)
    triage_counts = _Exposed("_triage", Triage.triage_counts)
    reports_to_admit = _Exposed("_triage", Triage.reports_to_admit)
    received_between = _Exposed("_triage", Triage.received_between)
    # -- outbox -----------------------------------------------------------------------------
    enqueue = _Exposed("_outbox", Outbox.enqueue)
    edit_notification = _Exposed("_outbox", Outbox.edit_notification)
    outbox = _Exposed("_outbox", Outbox.outbox)
    outbox_counts = _Exposed("_outbox", Outbox.outbox_counts)
    posted = _Exposed("_outbox", Outbox.posted)
    mark_sending = _Exposed("_outbox", Outbox.mark_sending)
    mark_sent = _Exposed("_outbox", Outbox.mark_sent)
    mark_retry = _Exposed("_outbox", Outbox.mark_retry)
    mark_held = _Exposed("_outbox", Outbox.mark_held)
    release_held = _Exposed("_outbox", Outbox.release_held)
    due = _Exposed("_outbox", Outbox.due)
    # -- finished reruns --------------------------------------------------------------------
    save_run = _Exposed("_runs", Runs.save_run)
    latest_run = _Exposed("_runs", Runs.latest_run)
    cut_short_run = _Exposed("_runs", Runs.cut_short_run)
    recent_runs = _Exposed("_runs", Runs.recent_runs)
    save_bisect = _Exposed("_runs", Runs.save_bisect)
    bisects = _Exposed("_runs", Runs.bisects)
    queue_fix_test = _Exposed("_runs", Runs.queue_fix_test)
    set_fix_test = _Exposed("_runs", Runs.set_fix_test)
    fix_tests = _Exposed("_runs", Runs.fix_tests)
    # -- after the verdict: moves, links, replies upstream -----------------------------------
    add_move = _Exposed("_lifecycle", Lifecycle.add_move)
    moves_of = _Exposed("_lifecycle", Lifecycle.moves_of)
    link_report = _Exposed("_lifecycle", Lifecycle.link_report)
    links_of = _Exposed("_lifecycle", Lifecycle.links_of)
    joined_to = _Exposed("_lifecycle", Lifecycle.joined_to)
    enqueue_mail = _Exposed("_mail", MailOutbox.enqueue_mail)
    mail_of = _Exposed("_mail", MailOutbox.mail_of)
    mark_mail_sending = _Exposed("_mail", MailOutbox.mark_mail_sending)
    mark_mail_sent = _Exposed("_mail", MailOutbox.mark_mail_sent)
    mark_mail_failed = _Exposed("_mail", MailOutbox.mark_mail_failed)

    # -- actions taken from Slack -----------------------------------------------------------
    record_action = _Exposed("_actions", Actions.record_action)
    has_request = _Exposed("_actions", Actions.has_request)
    actions_of = _Exposed("_actions", Actions.actions_of)
    waiting_actions = _Exposed("_actions", Actions.waiting_actions)

    # -- people's decisions on unsure readings (the digest, the "to look at" list) -----------
    record_decision = _Exposed("_decisions", Decisions.record_decision)
    decision_of = _Exposed("_decisions", Decisions.decision_of)
    decisions = _Exposed("_decisions", Decisions.decisions)
