"""Store stage: the `Store` protocol every backend implements, its value types and errors.

`Store` is the whole store as one protocol made of small ones, one per kind of thing kept:
`MessageStore`, `RecordStore`, `ThreadStore`, `AliasStore`, `CursorStore`, `MaterialStore`,
`QuarantineStore`, `TriageStore`, `OutboxStore`, `RunStore`. A stage that needs only one part
may ask for that part; a backend implements them all (`sql.py` composes one class per part over a
SQLite or PostgreSQL connection).
This module names no implementation.

Message-IDs are kept as record.md writes them: without angle brackets. Every method accepts an
id with or without `<>` (see `normalize_message_id`). A message that has no Message-ID (some
archive pages, pasted text) is stored under the id `synthetic_message_id(raw)` gives:
`sha256-<hex of the raw bytes>@triagebot.invalid` (`.invalid` is reserved by RFC 2606, so it
can never collide with a real id, and the same bytes always get the same id).
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from triagebot.errors import TriageError
from triagebot.records.report import Report
from triagebot.records.states import TriageState
from triagebot.records.threads import normalize_message_id
from triagebot.store.lifecycle_protocol import LifecycleStore, MailOutboxStore

SYNTHETIC_ID_DOMAIN = "triagebot.invalid"


class StoreError(TriageError):
    """The store cannot do what was asked; the message names the database (file or URL)."""


class UnreadableRecord(TriageError):
    """A stored record cannot be read back (another program wrote it, or a newer schema).

    Not a StoreError: the store works, one record does not, so the daemon ends that report in
    `error` and goes on with the others. The message names the database and the message."""


class SchemaTooNewError(StoreError):
    """The database was written by a newer triagebot than this one (its schema is unknown)."""


class StoreBusyError(StoreError):
    """Another writer held the database longer than the busy timeout."""


class StoreUnavailable(StoreError):
    """The database server cannot be reached: the connection was lost (a restart, a failover, the
    network) or a new one cannot be opened yet. Not the data's fault: the daemon and the workers
    wait and reconnect (`Store.reconnect`), nothing is given up."""


def synthetic_message_id(raw: bytes) -> str:
    """The id under which a message without a Message-ID is stored: hash of its raw bytes."""
    return f"sha256-{hashlib.sha256(raw).hexdigest()}@{SYNTHETIC_ID_DOMAIN}"


def is_synthetic_message_id(message_id: str) -> bool:
    return normalize_message_id(message_id).endswith("@" + SYNTHETIC_ID_DOMAIN)


def utc_text(value: str | datetime) -> str:
    """A timestamp as `YYYY-MM-DDTHH:MM:SS+00:00`: one fixed form, so text order is time order.

    Every time the store keeps or answers is in this form. Accepts an ISO 8601 string or a
    datetime; a naive value is taken as UTC.
    """
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class IncomingMessage:
    """One message handed to `Store.ingest_batch`: raw bytes plus what the caller knows of it.

    `source_name` is the record's `source.kind` (mbox / eml / lore / openwall / text) so that a
    reparse can rebuild the `Source`; `source_url` its URL where there is one. `received_at` is
    when triagebot got the message (ISO 8601 with offset, or an aware datetime; naive means UTC).
    `record` and `parser_version` are stored with the message when given; `record` comes
    already in its schema-1 JSON form (`records.report_to_json`), as the parsing workers send
    it, because ingest moves thousands of records at a time and a Report would be built only to
    be serialized again. `in_reply_to` and `references` link it into its thread.
    """

    message_id: str
    raw: bytes
    source_name: str
    received_at: str | datetime
    list_name: str | None = None
    source_url: str | None = None
    in_reply_to: str | None = None
    references: tuple[str, ...] = ()
    record: dict[str, Any] | None = None
    parser_version: str | None = None


@dataclass(frozen=True)
class StoredMessage:
    """One kept message as `get_message` and `iter_raw` give it back (`received_at` in UTC)."""

    message_id: str
    raw: bytes
    source_name: str
    source_url: str | None
    list_name: str | None
    received_at: str


@dataclass(frozen=True)
class QuarantineRow:
    """One quarantined message (quarantine.py); `raw` is None where only metadata was asked for."""

    key: str
    source_name: str
    source_url: str | None
    list_name: str | None
    received_at: str
    failed_at: str
    parser_version: str
    attempts: int
    error: str
    size: int
    raw: bytes | None = None


@dataclass(frozen=True)
class TriageRow:
    """Where the daemon is with one report: its state, channel, host, plan and last note."""

    message_id: str
    state: TriageState
    channel: str
    host: str | None
    plan: dict[str, Any] | None
    note: str | None
    created_at: str
    updated_at: str


OUTBOX_STATUSES = ("pending", "sending", "sent", "held")


@dataclass(frozen=True)
class OutboxRow:
    """One notification waiting for, or done with, delivery (see notify/outbox.py)."""

    outbox_id: int
    message_id: str
    kind: str
    channel: str
    status: str  # one of OUTBOX_STATUSES
    attempts: int
    next_attempt_at: str | None
    last_error: str | None
    posted_channel: str | None
    posted_ts: str | None
    created_at: str
    sent_at: str | None
    payload: dict[str, Any]

    @property
    def key(self) -> str:
        """The name this notification carries on Slack, to be found again after a crash."""
        return f"{self.message_id}#{self.kind}"


# -- the parts --------------------------------------------------------------------------------
# Writes are idempotent by Message-ID. Each method is its own transaction unless called inside
# `Store.transaction()`, in which case it joins it (and a failure inside rolls back only to where
# that method began, through a savepoint).

@runtime_checkable
class MessageStore(Protocol):
    """Raw messages, byte for byte, by Message-ID."""

    def put_message(self, message_id: str, raw_bytes: bytes, source_name: str,
                    list_name: str | None, received_at: str | datetime,
                    source_url: str | None = None) -> bool:
        """Keep one raw message; True if it was new. A known id changes nothing (first wins)."""
        ...

    def has_message(self, message_id: str) -> bool: ...

    def existing_ids(self, message_ids: Iterable[str]) -> set[str]:
        """Which of these ids are stored already (normalized, without `<>`)."""
        ...

    def get_raw(self, message_id: str) -> bytes | None: ...

    def get_message(self, message_id: str) -> StoredMessage | None: ...

    def iter_raw(self) -> Iterator[StoredMessage]:
        """Every kept message in insertion order, read in pages (safe to write while iterating)."""
        ...

    def count_messages(self) -> int: ...

    def delete_message(self, message_id: str) -> bool:
        """Remove a message, its record and aliases; True if it was there."""
        ...


@dataclass(frozen=True)
class ListedRecord:
    """One record as `list_records` gives it: the key it is stored under and the record.

    The key is its Message-ID, or for a message that has none the synthetic
    `sha256-<hex>@triagebot.invalid` id that `triage show` opens it by."""

    key: str
    report: Report


@runtime_checkable
class RecordStore(Protocol):
    """The parsed record (a `Report`) of each stored message, with the parser version.

    Records go in and come out as `records.Report`; their schema-1 JSON form is this
    protocol's business (a backend stores it), never its callers'."""

    def put_record(self, message_id: str, report: Report, parser_version: str) -> bool:
        """Insert or replace the record of a stored message (the reparse path).

        True if the stored record changed (new, or different content or parser_version)."""
        ...

    def get_record(self, message_id: str) -> Report | None: ...

    def get_record_version(self, message_id: str) -> str | None:
        """The parser_version that wrote the stored record, None without a record."""
        ...

    def list_records(self, kind: str | Sequence[str] | None = None,
                     list_name: str | None = None, since: str | datetime | None = None,
                     testcase: str | None = None,
                     limit: int | None = None) -> list[ListedRecord]:
        """Records matching every given filter, newest first by message date; undated records
        (by receipt, newest first) after every dated one."""
        ...

    def record_keys_starting(self, prefix: str, limit: int) -> list[str]:
        """Up to `limit` keys of stored records that begin with `prefix` (a short key's lookup)."""
        ...


@runtime_checkable
class ThreadStore(Protocol):
    """Threads by In-Reply-To / References, the rules of threads.py."""

    def link_thread(self, message_id: str, in_reply_to: str | None,
                    references: Sequence[str] = ()) -> None:
        """Attach a message to its thread; parents not (yet) stored are kept as placeholders."""
        ...

    def thread_of(self, message_id: str) -> list[str]:
        """Ids of the stored messages in this message's thread, oldest first; [] if unknown."""
        ...

    def thread_root(self, message_id: str) -> str | None:
        """The id the thread hangs from (possibly a message never seen); None if unknown."""
        ...


@runtime_checkable
class AliasStore(Protocol):
    """Other names of stored messages (an archive page's date + subject + sender key)."""

    def add_alias(self, alias: str, message_id: str) -> None:
        """Record another name of a stored message; an alias already taken keeps its message."""
        ...

    def resolve_alias(self, alias: str) -> str | None: ...

    def repoint_alias(self, alias: str, message_id: str) -> None:
        """Point an alias at another message (the lore copy replacing an archive page's)."""
        ...


@runtime_checkable
class CursorStore(Protocol):
    """Where each source left off (and other small named values the daemon keeps)."""

    def get_cursor(self, source_key: str) -> str | None: ...

    def set_cursor(self, source_key: str, value: str) -> None: ...


@runtime_checkable
class MaterialStore(Protocol):
    """Files fetched from a report's materials directory, kept so a rerun fetches them once."""

    def get_material(self, url: str, name: str) -> bytes | None:
        """A cached file of a materials directory (`url` ends in "/"), None when not kept."""
        ...

    def put_material(self, url: str, name: str, body: bytes) -> None:
        """Cache a fetched file of a materials directory under (url, name)."""
        ...


@runtime_checkable
class QuarantineStore(Protocol):
    """Messages the parser could not read, kept raw with their error (see quarantine.py)."""

    def quarantine_message(self, raw: bytes, *, source_name: str, error: str, parser_version: str,
                           received_at: str | datetime | None = None, list_name: str | None = None,
                           source_url: str | None = None, key: str | None = None) -> str | None:
        """Keep unreadable bytes raw with their error; the key when new, None when known."""
        ...

    def quarantined(self, limit: int | None = None) -> list[QuarantineRow]:
        """Quarantined messages (metadata only), the last to fail first."""
        ...

    def count_quarantined(self) -> int: ...

    def get_quarantined(self, key: str) -> QuarantineRow | None:
        """One quarantined message with its raw bytes, None when not held."""
        ...

    def iter_quarantined(self) -> Iterator[QuarantineRow]:
        """Every quarantined message with its raw bytes, in pages."""
        ...

    def still_quarantined(self, key: str, error: str, parser_version: str) -> None:
        """A retry failed again: keep it with this error and parser version."""
        ...

    def release_quarantined(self, key: str) -> bool:
        """Drop a quarantined message (it is stored as a normal message now)."""
        ...


@runtime_checkable
class TriageStore(Protocol):
    """A triage row per report the daemon took on; moves follow `TriageState.can_move_to`."""

    def start_triage(self, message_id: str, channel: str,
                     state: str = TriageState.NEW) -> bool:
        """Take a report on; False when it already has a triage row (nothing changes then)."""
        ...

    def set_triage(self, message_id: str, state: str, *, plan: dict[str, Any] | None = None,
                   host: str | None = None, note: str | None = None, asked: bool = False) -> None:
        """Move a report to `state`; `plan`, `host` and `note` replace the stored ones when given.

        A move the states do not allow (see triagebot/records/states.py) raises ValueError."""
        ...

    def get_triage(self, message_id: str) -> TriageRow | None: ...

    def triage_in(self, *states: str) -> list[TriageRow]:
        """Reports in any of `states`, oldest first (the order they are worked on)."""
        ...

    def triage_counts(self) -> dict[str, int]: ...

    def reports_to_admit(self, kinds: tuple[str, ...], dated_since: str) -> list[str]:
        """Reports of `kinds` dated at or after `dated_since` (undated: received), not taken on."""
        ...

    def received_between(self, kinds: tuple[str, ...], start: str, end: str) -> list[str]:
        """Records of `kinds` whose message was received in [start, end) (UTC text), oldest first:
        a day's messages for its digest."""
        ...


@dataclass(frozen=True)
class ActionRow:
    """One action a team member took from Slack (triagebot/actions/act.py)."""

    action_id: int
    request_key: str
    message_id: str
    action: str  # "rerun", "mark-invalid", … (actions.ACTIONS); an asked one's result: "test-fix:done"
    user_id: str  # the Slack user who acted
    detail: str
    budget: int | None  # a rerun's runs a side
    created_at: str


@runtime_checkable
class ActionStore(Protocol):
    """Actions taken from Slack, kept with the state change they make; one per signed request."""

    def record_action(self, request_key: str, message_id: str, action: str, user_id: str, detail: str,
                      budget: int | None = None) -> int | None:
        """Keep one action; its id, or None when `request_key` was kept before (nothing is written)."""
        ...

    def has_request(self, request_key: str) -> bool: ...

    def actions_of(self, message_id: str) -> list[ActionRow]: ...

    def waiting_actions(self, *names: str) -> list[ActionRow]:
        """Actions named `names` without a result row yet (`result:<action_id>`), oldest first."""
        ...


DECISIONS = ("take-on", "dismiss")


@dataclass(frozen=True)
class DecisionRow:
    """A person's decision on a reading the daemon was unsure of (a digest line, the "to look at" list)."""

    decision_id: int
    request_key: str
    message_id: str
    decision: str  # one of DECISIONS
    decided_by: str  # a Slack user id, or the command line's user
    via: str  # slack / cli
    kind_read: str  # the record's kind when it was decided
    reasons: str  # why the daemon was unsure then, "; "-joined
    note: str
    decided_at: str


@runtime_checkable
class DecisionStore(Protocol):
    """Decisions on unsure readings, kept as labels to measure the parser against later."""

    def record_decision(self, request_key: str, message_id: str, decision: str, decided_by: str, via: str,
                        kind_read: str, reasons: str, note: str = "") -> int | None:
        """Keep one decision; its id, or None when `request_key` was kept before (nothing is written)."""
        ...

    def decision_of(self, message_id: str) -> DecisionRow | None:
        """The last decision on a message, None when nobody decided."""
        ...

    def decisions(self, since: str | None = None) -> list[DecisionRow]:
        """Every decision (each message's every one), oldest first; `since` a UTC text lower bound."""
        ...


@runtime_checkable
class OutboxStore(Protocol):
    """Notifications, written with the state change they announce, sent in order (outbox.py)."""

    def enqueue(self, message_id: str, kind: str, channel: str, payload: dict[str, Any]) -> bool:
        """Add a notification; False when this report already has one of this kind."""
        ...

    def edit_notification(self, message_id: str, target_kind: str, channel: str, payload: dict[str, Any]) -> str:
        """An edit of the posted notification `target_kind`: a pending edit row gets the new
        payload, else a new row `edit-TARGET-N`; its kind (part_triage.Outbox)."""
        ...

    def outbox(self, *statuses: str, message_id: str | None = None) -> list[OutboxRow]:
        """Outbox rows in sending order, of the given statuses (all when none given)."""
        ...

    def outbox_counts(self) -> dict[str, int]: ...

    def posted(self, message_id: str, kind: str) -> OutboxRow | None:
        """The sent notification of this kind for a report (the parent's ts, for replies)."""
        ...

    def mark_sending(self, outbox_id: int) -> None:
        """Committed before the Slack call: after a crash the row says "maybe sent"."""
        ...

    def mark_sent(self, outbox_id: int, posted_channel: str | None,
                  posted_ts: str | None) -> None: ...

    def mark_retry(self, outbox_id: int, error: str, wait_seconds: float) -> None:
        """After a failure a later try can clear: tried again in `wait_seconds` at the soonest."""
        ...

    def mark_held(self, outbox_id: int, error: str) -> None:
        """Kept for an operator: Slack refused it for a reason a retry will not clear."""
        ...

    def release_held(self) -> int:
        """Held rows back to pending (an operator fixed the token or channel); returns how many."""
        ...

    def due(self, row: OutboxRow, now: datetime | None = None) -> bool:
        """Whether a pending row's wait after a failure is over."""
        ...


# waiting: a series the daemon may not build by itself (rules/trust.py), kept until a person asks
FIX_TEST_STATUSES = ("queued", "running", "done", "refused", "error", "waiting")


@dataclass(frozen=True)
class FixTestRow:
    """One fix series tested (or to test) on the lab for a report (table `fix_tests`)."""

    fix_test_id: int
    message_id: str  # the report
    series_key: str  # `v2:<first patch's Message-ID>` (`@2`, `@3`: tested again on request)
    cause_id: str  # the patch mail that proposed it
    status: str  # one of FIX_TEST_STATUSES
    created_at: str
    updated_at: str
    result: dict[str, Any]  # the measured result, or {"reason": ...} for refused and error


@runtime_checkable
class RunStore(Protocol):
    """Finished reruns: the plan, the run with every sample, and its verdict."""

    def save_run(self, message_id: str, plan_json: dict[str, Any], run_json: dict[str, Any]) -> int:
        """Store a finished rerun: its plan, the run and its verdict, together; the run's id."""
        ...

    def latest_run(self, message_id: str) -> dict[str, Any] | None:
        """The last stored rerun of a report that ran to its end (run JSON with its samples and
        verdict, or its error), or None; a run cut short is not one (`cut_short_run`)."""
        ...

    def cut_short_run(self, message_id: str) -> dict[str, Any] | None:
        """The report's newest run when it was cut short (its samples kept, no verdict), else None."""
        ...

    def recent_runs(self, limit: int) -> list[dict[str, Any]]:
        """The last `limit` stored reruns of any report, newest first (run JSONs)."""
        ...

    def save_bisect(self, message_id: str, bisect_json: dict[str, Any], bisect_id: int | None = None) -> int:
        """Store a bisection as it stands (a new one, or `bisect_id` replaced); its id."""
        ...

    def bisects(self, message_id: str) -> list[dict[str, Any]]:
        """A report's bisections, oldest first, each its JSON with `bisect_id`."""
        ...

    def queue_fix_test(self, message_id: str, series_key: str, cause_id: str) -> int | None:
        """A new fix test, `queued`; its id, or None when this series of the report has one."""
        ...

    def set_fix_test(self, fix_test_id: int, status: str, result: dict[str, Any] | None = None) -> None:
        """Move a fix test to `status` (one of FIX_TEST_STATUSES), with its result when given."""
        ...

    def fix_tests(self, message_id: str | None = None, status: str | None = None) -> list[FixTestRow]:
        """Fix tests of one report and/or in one status (None: any), oldest first."""
        ...


@runtime_checkable
class Store(MessageStore, RecordStore, ThreadStore, AliasStore, CursorStore, MaterialStore,
            QuarantineStore, TriageStore, OutboxStore, RunStore, LifecycleStore, MailOutboxStore,
            ActionStore, DecisionStore, Protocol):
    """The whole store: every part above, plus what spans them (one database, one transaction)."""

    path: str

    @property
    def connection(self) -> Any:
        """The backend's own connection (sqlite3 or psycopg). Inside `transaction()` it is in
        that transaction: other work on it (a job engine's job row, on PostgreSQL) commits or
        rolls back with what the store wrote in the block."""
        ...

    def close(self) -> None: ...

    def connection_lost(self) -> bool:
        """Whether the connection to the database server was lost (PostgreSQL; never on SQLite):
        every use fails with StoreUnavailable until `reconnect`."""
        ...

    def reconnect(self) -> None:
        """A new connection in place of a lost one (outside any transaction); StoreUnavailable
        while the server cannot be reached."""
        ...

    def transaction(self) -> AbstractContextManager[Store]:
        """One write transaction: everything inside commits together or not at all."""
        ...

    def now_text(self) -> str:
        """The store's clock now, in `utc_text` form (what it stamps rows with)."""
        ...

    def ingest_batch(self, messages: Iterable[IncomingMessage],
                     cursor: tuple[str, str] | None = None) -> list[str]:
        """Messages (+ their records and thread links) and the cursor in one transaction.

        Returns the ids that were new, in input order. Records of already-known messages are
        left alone (re-ingesting changes nothing; `put_record` is the reparse path). A new id that
        was quarantined leaves the quarantine: it is a normal message now."""
        ...
