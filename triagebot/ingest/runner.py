"""Ingest stage: poll a source, parse what it found, store messages, records and cursor together.

One poll's messages and the cursor that follows them are written in one transaction: an
import killed midway resumes from the last stored cursor and ends with the same store as one
clean run. Messages already stored are ignored by Message-ID. A message without one (an
archive page) is known by its date + subject + sender key: if the lore copy of it is stored
already the page is dropped, and a lore copy arriving after the page replaces it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from triagebot.batch import default_jobs, parse_messages
from triagebot.parse.identity import fallback_key_of_record
from triagebot.ingest.protocol import Batch, FetchedMessage, Source
from triagebot.records import report_to_json
from triagebot.store.protocol import IncomingMessage, Store, synthetic_message_id

# Written with every record; `triage reparse` re-parses records written by another version.
PARSER_VERSION = "parse-2026-12-03"


@dataclass
class IngestResult:
    new_ids: list[str] = field(default_factory=list)
    seen: int = 0  # messages the source gave, new or not
    events: list[str] = field(default_factory=list)  # one line per problem met (retries, skipped input)


Progress = Callable[[int, int | None], None]  # (messages handled so far, total if known)


def _incoming(fetched: FetchedMessage, record: dict, received_at: datetime) -> IncomingMessage:
    message_id = record.get("message_id") or synthetic_message_id(fetched.raw)
    return IncomingMessage(message_id=message_id, raw=fetched.raw, source_name=fetched.source_kind,
                           received_at=received_at, list_name=fetched.list_name, source_url=fetched.source_url,
                           in_reply_to=record.get("in_reply_to"), references=tuple(record.get("references") or ()),
                           record=record, parser_version=PARSER_VERSION)


def store_batch(store: Store, source_key: str, batch: Batch, *, jobs: int, clock: Callable[[], datetime],
                result: IngestResult) -> None:
    """Parse one batch and store it with its cursor in one transaction."""
    result.events.extend(batch.events)
    named = [(fetched.source_url or f"{source_key}#{index}", fetched.source_kind, fetched.raw, fetched.source_url)
             for index, fetched in enumerate(batch.messages)]
    received_at = clock()
    incoming: list[IncomingMessage] = []
    aliases: list[tuple[str, str, bool]] = []  # (key, message id, message has a real Message-ID)
    for fetched, outcome in zip(batch.messages, parse_messages(named, report_to_json, jobs, warm_readers=True)):
        if outcome.error is not None:
            result.events.append(f"{outcome.name}: skipped: {outcome.error}")
            continue
        record = outcome.output
        item = _incoming(fetched, record, received_at)
        incoming.append(item)
        aliases.append((fallback_key_of_record(record), item.message_id, record.get("message_id") is not None))
    result.seen += len(incoming)
    with store.transaction():
        kept = []
        for item, (key, message_id, has_id) in zip(incoming, aliases):
            known = store.resolve_alias(key)
            if not has_id and known is not None:
                continue  # an archive page of a message stored already
            kept.append(item)
        new_ids = store.ingest_batch(kept, cursor=(source_key, batch.cursor) if batch.cursor else None)
        for key, message_id, has_id in aliases:
            known = store.resolve_alias(key)
            if known is None:
                if store.has_message(message_id):
                    store.add_alias(key, message_id)
            elif has_id and known != message_id and not (store.get_record(known) or {}).get("message_id"):
                # The lore copy of a page stored before: one record, the one with full headers.
                store.repoint_alias(key, message_id)
                store.delete_message(known)
        result.new_ids.extend(new_ids)


def ingest_once(source: Source, store: Store, *, jobs: int | None = None,
                clock: Callable[[], datetime] = lambda: datetime.now(timezone.utc),
                progress: Progress | None = None) -> IngestResult:
    """Poll `source` until it has nothing more right now; store everything it gave."""
    result = IngestResult()
    jobs = default_jobs() if jobs is None else jobs
    while True:
        batch = source.poll(store.get_cursor(source.key))
        store_batch(store, source.key, batch, jobs=jobs, clock=clock, result=result)
        if progress is not None:
            progress(result.seen, batch.total)
        if not batch.more:
            return result

