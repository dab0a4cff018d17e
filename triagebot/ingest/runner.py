"""Ingest stage: poll a source, parse what it found, store messages, records and cursor together.

One poll's messages and the cursor that follows them are written in one transaction: an
import killed midway resumes from the last stored cursor and ends with the same store as one
clean run. Messages already stored are ignored by Message-ID. A message without one (an
archive page) is known by its date + subject + sender key: if the lore copy of it is stored
already the page is dropped, and a lore copy arriving after the page replaces it.

Nothing one message holds stops a batch: a message the parser cannot read, whatever it raises,
or whose record cannot be stored, is quarantined (kept raw with the reason, store/quarantine.py)
in the same transaction, and the others are stored. A source whose poll raises anything fails
that poll with one line (SourceError), the cursor where it was. A stop asked for while a batch
is parsed abandons that batch (nothing of it is stored, so nothing is lost: the next poll reads
it again).
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from triagebot.batch import Outcome, default_jobs, parse_messages
from triagebot.errors import TriageError
from triagebot.ingest.protocol import Batch, FetchedMessage, Source, SourceError
from triagebot.parse import report as parse_report
from triagebot.parse.identity import fallback_key_of_record
from triagebot.records import Source as RecordSource
from triagebot.records import report_to_json
from triagebot.store.protocol import IncomingMessage, Store, StoreError, normalize_message_id, synthetic_message_id
from triagebot.store.quarantine import one_line

# + source URL, in the cursors table: the daemon's last poll of each source (`triage status`).
LAST_POLL_KEY = "daemon:last-poll:"
# Written with every record; `triage reparse` re-parses records written by another version.
PARSER_VERSION = "parse-2026-12-03"


@dataclass
class IngestResult:
    new_ids: list[str] = field(default_factory=list)
    seen: int = 0  # messages the source gave, new or not, readable or not
    quarantined: list[str] = field(default_factory=list)  # keys of messages quarantined by this ingest
    events: list[str] = field(default_factory=list)  # one line per problem met (retries, skipped input)
    stopped: bool = False  # a stop was asked for: the batch in hand was left for the next poll


class PollFailed(SourceError):
    """A source's poll raised something unexpected (a bug, not a server's answer): `__cause__` holds it."""


Progress = Callable[[int, int | None], None]  # (messages handled so far, total if known)
StopAsked = Callable[[], bool]


def describe_error(error: BaseException) -> str:
    """An exception as one line: triagebot's own errors as they read, others with their type."""
    if isinstance(error, TriageError):
        return one_line(str(error))
    return one_line(f"{type(error).__name__}: {error}")


def _incoming(fetched: FetchedMessage, record: dict, received_at: datetime | str) -> IncomingMessage:
    message_id = normalize_message_id(record.get("message_id") or synthetic_message_id(fetched.raw))
    return IncomingMessage(message_id=message_id, raw=fetched.raw, source_name=fetched.source_kind,
                           received_at=received_at, list_name=fetched.list_name, source_url=fetched.source_url,
                           in_reply_to=record.get("in_reply_to"), references=tuple(record.get("references") or ()),
                           record=record, parser_version=PARSER_VERSION)


def parse_alone(fetched: FetchedMessage) -> tuple[dict | None, str | None]:
    """(record, None) or (None, why not) for one message, parsed in this process; never raises."""
    try:
        return report_to_json(parse_report.parse_message(fetched.raw, RecordSource(fetched.source_kind,
                                                                                   fetched.source_url))), None
    except Exception as error:  # noqa: BLE001 - whatever the parser raises is this message's error
        return None, describe_error(error)


def _outcomes(named: list[tuple[str, str, bytes, str | None]], messages: Sequence[FetchedMessage],
              jobs: int, events: list[str]) -> Generator[Outcome, None, None]:
    """The batch parse's outcomes, in order. Should the batch parse itself raise (an exception
    the parser let through), the messages it had not answered for are parsed here one by one,
    each failure becoming that message's error, so one message cannot sink the batch."""
    done = 0
    inner = parse_messages(named, report_to_json, jobs, warm_readers=True)
    try:
        for outcome in inner:
            done += 1
            yield outcome
        return
    except Exception as error:  # noqa: BLE001 - the rest is parsed alone below, each error kept with its message
        events.append(f"the batch parse stopped at message {done + 1} of {len(named)} "
                      f"({describe_error(error)}); the rest parsed one by one")
    finally:
        inner.close()  # a batch abandoned midway (a stop): its worker pools close here
    for (name, _, _, _), fetched in zip(named[done:], messages[done:], strict=True):
        record, problem = parse_alone(fetched)
        yield Outcome(name, record, problem)


def store_parsed(store: Store, parsed: list[tuple[FetchedMessage, str, dict]], received_at: datetime | str,
                 result: IngestResult) -> list[tuple[FetchedMessage, str, str]]:
    """Store parsed messages with their records, threads and aliases; call inside a transaction.

    Returns the (message, name, error) of those whose record could not be stored: the caller
    quarantines them. A database failure (StoreError, sqlite3.OperationalError) is raised."""
    failures: list[tuple[FetchedMessage, str, str]] = []
    incoming: list[tuple[IncomingMessage, FetchedMessage, str]] = []
    aliases: list[tuple[str, str, bool]] = []  # (key, message id, message has a real Message-ID)
    for fetched, name, record in parsed:
        try:
            item = _incoming(fetched, record, received_at)
            alias = (fallback_key_of_record(record, fetched.raw), item.message_id, record.get("message_id") is not None)
        except Exception as error:  # noqa: BLE001 - a record this message alone cannot be stored with
            failures.append((fetched, name, f"its record cannot be stored: {describe_error(error)}"))
            continue
        incoming.append((item, fetched, name))
        aliases.append(alias)
    kept = []
    for (item, fetched, name), (key, _, has_id) in zip(incoming, aliases, strict=True):
        if not has_id and store.resolve_alias(key) is not None:
            continue  # an archive page of a message stored already
        kept.append((item, fetched, name))
    try:
        with store.transaction():
            new_ids = store.ingest_batch([item for item, _, _ in kept])
    except (StoreError, sqlite3.OperationalError):
        raise
    except Exception:  # noqa: BLE001 - one message's data: store them one by one to find which
        new_ids = []
        for item, fetched, name in kept:
            try:
                with store.transaction():
                    new_ids.extend(store.ingest_batch([item]))
            except (StoreError, sqlite3.OperationalError):
                raise
            except Exception as error:  # noqa: BLE001
                failures.append((fetched, name, f"it cannot be stored: {describe_error(error)}"))
    for key, message_id, has_id in aliases:
        known = store.resolve_alias(key)
        if known is None:
            if store.has_message(message_id):
                store.add_alias(key, message_id)
        elif has_id and known != message_id and store.has_message(message_id) \
                and not getattr(store.get_record(known), "message_id", None):
            # The lore copy of a page stored before: one record, the one with full headers.
            store.repoint_alias(key, message_id)
            store.delete_message(known)
    result.new_ids.extend(new_ids)
    return failures


def quarantine(store: Store, fetched: FetchedMessage, name: str, error: str, received_at: datetime | str,
               result: IngestResult) -> None:
    """Keep a message the parser could not read, with its error (once: a known one changes nothing)."""
    key = store.quarantine_message(fetched.raw, source_name=fetched.source_kind, error=error,
                                   parser_version=PARSER_VERSION, received_at=received_at,
                                   list_name=fetched.list_name, source_url=fetched.source_url)
    if key is not None:
        result.quarantined.append(key)
        result.events.append(f"{name}: quarantined as <{key}>: {one_line(error)}")


def store_batch(store: Store, source_key: str, batch: Batch, *, jobs: int, clock: Callable[[], datetime],
                result: IngestResult, should_stop: StopAsked | None = None) -> bool:
    """Parse one batch and store it, its quarantined messages and its cursor in one transaction.

    False, with nothing stored and `result.stopped` set, when `should_stop` said yes while the
    batch was parsed (checked between messages)."""
    result.events.extend(batch.events)
    named = [(fetched.source_url or f"{source_key}#{index}", fetched.source_kind, fetched.raw, fetched.source_url)
             for index, fetched in enumerate(batch.messages)]
    received_at = clock()
    parsed: list[tuple[FetchedMessage, str, dict]] = []
    failed: list[tuple[FetchedMessage, str, str]] = []
    outcomes = _outcomes(named, batch.messages, jobs, result.events)
    try:
        for fetched, outcome in zip(batch.messages, outcomes, strict=True):
            if should_stop is not None and should_stop():
                result.stopped = True
                return False
            if outcome.error is not None or not isinstance(outcome.output, dict):
                failed.append((fetched, outcome.name, outcome.error or "the parser gave no record"))
            else:
                parsed.append((fetched, outcome.name, outcome.output))
    finally:
        outcomes.close()
    result.seen += len(batch.messages)
    headerless = [(name, record.get("kind")) for _, name, record in parsed
                  if not (record.get("date") or record.get("from") or record.get("message_id"))]
    if headerless:  # a text file given by mistake reads as a message with no headers at all
        more = f" and {len(headerless) - 1} more" if len(headerless) > 1 else ""
        result.events.append(f"{headerless[0][0]}{more}: no mail headers (no Date, From or Message-ID): stored "
                             f"undated, as `{headerless[0][1]}`; is it a mail file?")
    with store.transaction():
        failed.extend(store_parsed(store, parsed, received_at, result))
        for fetched, name, error in failed:
            quarantine(store, fetched, name, error, received_at, result)
        if batch.cursor:
            store.set_cursor(source_key, batch.cursor)
    return True


def poll_source(source: Source, cursor: str | None) -> Batch:
    """`source.poll`, any exception it raises turned into a one-line SourceError naming the source."""
    try:
        return source.poll(cursor)
    except TriageError:
        raise
    except Exception as error:  # noqa: BLE001 - a source's bug fails its poll, not the process
        raise PollFailed(f"{source.key}: the poll failed: {describe_error(error)}") from error


def ingest_once(source: Source, store: Store, *, jobs: int | None = None,
                clock: Callable[[], datetime] = lambda: datetime.now(UTC),
                progress: Progress | None = None, should_stop: StopAsked | None = None) -> IngestResult:
    """Poll `source` until it has nothing more right now; store everything it gave.

    `should_stop` is asked between batches and between the messages of a batch; when it says
    yes the batch in hand is dropped (the cursor stays before it) and `result.stopped` is set."""
    result = IngestResult()
    jobs = default_jobs() if jobs is None else jobs
    while True:
        if should_stop is not None and should_stop():
            result.stopped = True
            return result
        batch = poll_source(source, store.get_cursor(source.key))
        if not store_batch(store, source.key, batch, jobs=jobs, clock=clock, result=result,
                           should_stop=should_stop):
            return result
        if progress is not None:
            progress(result.seen, batch.total)
        if not batch.more:
            return result
