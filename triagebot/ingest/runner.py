"""Ingest stage: poll a source, parse what it found, store messages, records and cursor together.

One poll's messages and the cursor that follows them are written in one transaction: an
import killed midway resumes from the last stored cursor and ends with the same store as one
clean run. Messages already stored are ignored by Message-ID. A message without one (an
archive page) is known by its date + subject + sender key, but the key alone never merges two
messages and nothing is ever deleted: a page whose lore copy is stored already is dropped only
when their texts agree (parse/twins.py), and a lore copy arriving after its page adds its
Message-ID to the page's record (an alias) when their texts agree; a different text under the
same key is a different message, stored beside the first.

Nothing one message holds stops a batch: a message the parser cannot read, whatever it raises,
or whose record cannot be stored, is quarantined (kept raw with the reason, store/quarantine.py)
in the same transaction, and the others are stored. A source whose poll raises anything fails
that poll with one line (SourceError), the cursor where it was (after the last part stored, for
a source that streams). A list entry the source skipped (its server would not give it) is kept
in the quarantine with its reason (source `lore-entry`), its row updated at each retry, and
leaves it when fetched. A poll is bounded (http_client/bounds.py): messages, bytes and seconds per
poll, bytes per source per UTC day. A stop asked for while a batch
is parsed abandons that batch (nothing of it is stored, so nothing is lost: the next poll reads
it again).
"""
from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from triagebot.errors import TriageError
from triagebot.http_client.bounds import PollBounds
from triagebot.http_client.protocol import SourceError
from triagebot.ingest.batch import Outcome, default_jobs, parse_messages
from triagebot.ingest.protocol import SKIPPED_ENTRY_SOURCE, Batch, FetchedMessage, Sink, SkippedEntry, Source
from triagebot.logs import redact
from triagebot.parse import report as parse_report
from triagebot.parse.identity import fallback_key_of_record
from triagebot.parse.twins import same_text
from triagebot.records.report import Source as RecordSource
from triagebot.records.report import report_to_json
from triagebot.records.threads import normalize_message_id
from triagebot.store.protocol import IncomingMessage, Store, StoreError, synthetic_message_id
from triagebot.store.quarantine import one_line

# + source URL, in the cursors table: the daemon's last poll of each source (`triage status`).
LAST_POLL_KEY = "daemon:last-poll:"
# + source key, in the cursors table: {"day": "YYYY-MM-DD", "bytes": N}, what it stored that UTC day
DAY_BYTES_KEY = "ingest:day-bytes:"
# how `IngestResult.bounded` ends when the source is over its bytes for the day (polled again tomorrow)
DAY_BOUND_MARK = "not polled until the next UTC day"
# Written with every record; `triage reparse` re-parses records written by another version.
PARSER_VERSION = "parse-2026-12-03"


@dataclass
class IngestResult:
    new_ids: list[str] = field(default_factory=list)
    seen: int = 0  # messages the source gave, new or not, readable or not
    quarantined: list[str] = field(default_factory=list)  # keys of messages quarantined by this ingest
    events: list[str] = field(default_factory=list)  # one line per problem met (retries, skipped input)
    stopped: bool = False  # a stop was asked for: the batch in hand was left for the next poll
    bytes: int = 0  # raw bytes of the messages the source gave
    bounded: str | None = None  # the poll bound that ended the poll (PollBounds), the rest left for later
    skipped: list[str] = field(default_factory=list)  # keys of list entries skipped (quarantined) this poll


class PollFailed(SourceError):
    """A source's poll raised something unexpected (a bug, not a server's answer): `__cause__` holds it."""


Progress = Callable[[int, int | None], None]  # (messages handled so far, total if known)
StopAsked = Callable[[], bool]


def describe_error(error: BaseException) -> str:
    """An exception as one line: triagebot's own errors as they read, others with their type; a
    password in a URL it names written `***` (the line is stored with the poll's outcome)."""
    if isinstance(error, TriageError):
        return redact(one_line(str(error)))
    return redact(one_line(f"{type(error).__name__}: {error}"))


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
        if has_id and store.resolve_alias(item.message_id) is not None:
            continue  # the lore copy of a page, taken as another name of the page's record before
        known = store.resolve_alias(key)
        if known is not None and known != item.message_id and _twin_of(store, known, fetched.raw, has_id):
            if has_id:  # the same text under a Message-ID: one more name of the stored record
                store.add_alias(item.message_id, known)
            continue  # an archive page of a message stored already, or its lore copy
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
    for key, message_id, _ in aliases:
        # the first message of a key names it; a later one of another text is stored beside it
        # and never replaces it (a forged mail can copy a date, a subject and a name)
        if store.resolve_alias(key) is None and store.has_message(message_id):
            store.add_alias(key, message_id)
    result.new_ids.extend(new_ids)
    return failures


def _twin_of(store: Store, known: str, raw: bytes, has_id: bool) -> bool:
    """Whether `raw` is another copy of the stored message `known` (the same key): a page and
    its lore copy, one of them without Message-ID, whose texts agree (parse/twins.py)."""
    stored = store.get_raw(known)
    if stored is None:
        return False
    if has_id and getattr(store.get_record(known), "message_id", None):
        return False  # two mails with Message-IDs of their own are two messages
    return same_text(raw, stored)


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
    named = [(fetched.source_url or fetched.origin or f"{source_key}#{index}", fetched.source_kind, fetched.raw,
              fetched.source_url)
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
    size = sum(len(fetched.raw) for fetched in batch.messages)
    result.bytes += size
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
        for skipped in batch.skipped:
            _keep_skipped(store, skipped, source_key, received_at, result)
        for key in batch.recovered:
            held = store.get_quarantined(key)
            if held is not None and held.source_name == SKIPPED_ENTRY_SOURCE:
                store.release_quarantined(key)
        if batch.cursor:
            store.set_cursor(source_key, batch.cursor)
        if size:
            _count_day_bytes(store, source_key, received_at, size)
    return True


def _keep_skipped(store: Store, skipped: SkippedEntry, source_key: str, received_at: datetime | str,
                  result: IngestResult) -> None:
    """Keep a list entry the source could not fetch in the quarantine, with its reason (the
    attempts column counts the polls that tried it); a message stored or quarantined under
    that key by the parser is left as it is."""
    held = store.get_quarantined(skipped.key)
    if store.has_message(skipped.key) or (held is not None and held.source_name != SKIPPED_ENTRY_SOURCE):
        return
    if held is None:
        store.quarantine_message(skipped.entry or (skipped.url or skipped.key).encode(),
                                 source_name=SKIPPED_ENTRY_SOURCE, error=skipped.reason,
                                 parser_version=PARSER_VERSION, received_at=received_at,
                                 source_url=skipped.url, key=skipped.key,
                                 list_name=source_key)
    else:
        store.still_quarantined(skipped.key, skipped.reason, PARSER_VERSION)
    result.skipped.append(skipped.key)


def _day(received_at: datetime | str) -> str:
    return (received_at if isinstance(received_at, str) else received_at.astimezone(UTC).isoformat())[:10]


def bytes_stored_today(store: Store, source_key: str, now: datetime | str) -> int:
    """Raw bytes `source_key` has given the store this UTC day (PollBounds.bytes_per_day)."""
    text = store.get_cursor(DAY_BYTES_KEY + source_key)
    try:
        data = json.loads(text) if text else {}
        return int(data["bytes"]) if data.get("day") == _day(now) else 0
    except (ValueError, TypeError, KeyError, AttributeError):
        return 0


def _count_day_bytes(store: Store, source_key: str, now: datetime | str, size: int) -> None:
    total = bytes_stored_today(store, source_key, now) + size
    store.set_cursor(DAY_BYTES_KEY + source_key, json.dumps({"day": _day(now), "bytes": total}))


def poll_source(source: Source, cursor: str | None, sink: Sink | None = None) -> Batch:
    """`source.poll`, any exception it raises turned into a one-line SourceError naming the source.

    With `sink`, a source that streams (`streams_parts`) hands its poll over part by part."""
    try:
        if sink is not None and getattr(source, "streams_parts", False):
            return source.poll(cursor, sink=sink)  # type: ignore[call-arg]
        return source.poll(cursor)
    except TriageError:
        raise
    except Exception as error:  # noqa: BLE001 - a source's bug fails its poll, not the process
        raise PollFailed(f"{source.key}: the poll failed: {describe_error(error)}") from error


def ingest_once(source: Source, store: Store, *, jobs: int | None = None,
                clock: Callable[[], datetime] = lambda: datetime.now(UTC),
                progress: Progress | None = None, should_stop: StopAsked | None = None,
                bounds: PollBounds | None = None,
                monotonic: Callable[[], float] = time.monotonic) -> IngestResult:
    """Poll `source` until it has nothing more right now, or a bound of `bounds` is reached;
    store everything it gave, each part as it arrives (a source that streams: thread by thread).

    `should_stop` is asked between batches and between the messages of a batch; when it says
    yes the batch in hand is dropped (the cursor stays before it) and `result.stopped` is set.
    A bound reached ends the poll after the batch in hand is stored, with `result.bounded` and
    an event line saying which; a source over its bytes for the day is not polled at all. A
    local source (`local`: files the user chose to import) is not bounded."""
    result = IngestResult()
    jobs = default_jobs() if jobs is None else jobs
    bounds = bounds or PollBounds()
    started = monotonic()
    today = bytes_stored_today(store, source.key, clock())

    local = bool(getattr(source, "local", False))

    def bound_reached() -> str | None:
        if local:
            return None
        if result.seen >= bounds.messages:
            return f"{result.seen} messages (bound: {bounds.messages} a poll)"
        if result.bytes >= bounds.bytes:
            return f"{result.bytes} bytes (bound: {bounds.bytes} a poll)"
        if today + result.bytes >= bounds.bytes_per_day:
            return f"{today + result.bytes} bytes today (bound: {bounds.bytes_per_day} a day)"
        if monotonic() - started >= bounds.seconds:
            return f"{monotonic() - started:.0f} s (bound: {bounds.seconds:g} s a poll)"
        return None

    def end(reason: str) -> IngestResult:
        result.bounded = reason
        result.events.append(f"{source.key}: poll ended at {reason}; the rest is read at the next poll")
        return result

    def end_of_day(reason: str) -> IngestResult:
        result.bounded = reason
        result.events.append(f"{source.key}: {reason}")
        return result

    if not local and today >= bounds.bytes_per_day:
        return end_of_day(f"{today} bytes stored today (bound: {bounds.bytes_per_day} a day); {DAY_BOUND_MARK}")

    def store_part(part: Batch) -> bool:
        """A part of a streaming poll, stored as it arrives; False ends the poll there."""
        if should_stop is not None and should_stop():
            result.stopped = True
            return False
        if not store_batch(store, source.key, part, jobs=jobs, clock=clock, result=result,
                           should_stop=should_stop):
            return False
        if progress is not None:
            progress(result.seen, part.total)
        return bound_reached() is None

    while True:
        if should_stop is not None and should_stop():
            result.stopped = True
            return result
        batch = poll_source(source, store.get_cursor(source.key), sink=store_part)
        if result.stopped:
            return result
        if not store_batch(store, source.key, batch, jobs=jobs, clock=clock, result=result,
                           should_stop=should_stop):
            return result
        if progress is not None:
            progress(result.seen, batch.total)
        if not batch.more:
            return result
        if (reason := bound_reached()) is not None:
            return end(reason)
