"""Store stage: the quarantine — raw messages the parser could not read, kept with the reason.

A message whose parse failed is never dropped and never stops a batch: it is kept byte for byte
in the `quarantine` table (migration 5) with its error, source, list, URL, when it came and the
parser version that failed on it, in the same transaction as the batch and cursor it came with.
Its key is its Message-ID when its header block names one, else the id a message without one
is stored under (`sha256-<hex of the raw bytes>@triagebot.invalid`), so the same message is kept
once however often a source serves it. `triage reparse` tries quarantined messages again: one
that parses now moves into `messages` as a normal message and leaves the quarantine; one that
still fails stays, with the new error.

This module holds the backend-neutral rules (the key, the error line); `part_quarantine.py`
keeps the table, `protocol.QuarantineStore` is the contract.
"""
from __future__ import annotations

import re

from triagebot.store.protocol import synthetic_message_id

# Bytes of a message searched for its header block: a Message-ID further in is not looked for.
HEAD_BYTES = 64 * 1024
# Longest error text kept per message (a parser's message can quote the input at length).
MAX_ERROR_CHARS = 2000

# `Message-ID: <id>` at the start of a header line, the value possibly folded onto the next
# line. The id is printable ASCII without `<`, `>` or spaces, at most 998 bytes (the RFC 5322
# line limit): no nested repetition, so the scan is linear in the head's size.
_MESSAGE_ID = re.compile(rb"(?im)^message-id:[ \t]*(?:\r?\n[ \t]+)?<([!-;=?-~]{1,998})>")
_HEAD_END = re.compile(rb"\r?\n\r?\n")


def quarantine_key(raw: bytes) -> str:
    """The key a message is quarantined under: its Message-ID when its headers can be read
    (without `<>`), else the synthetic id of its raw bytes. Never raises on any bytes."""
    window = raw[:HEAD_BYTES]
    end = _HEAD_END.search(window)
    head = window[:end.start() + 1] if end else window
    found = _MESSAGE_ID.search(head)
    if found:
        return found.group(1).decode("ascii")
    return synthetic_message_id(bytes(raw))


def one_line(error: str) -> str:
    """An error as one bounded line (what `triage list --failed` and the logs show)."""
    text = " ".join(str(error).split()) or "unknown error"
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS - 1] + "…"
