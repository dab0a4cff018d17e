"""Ingest edge for the CLI: read files, stdin, mbox and mbox.gz into (name, bytes) messages.

Reading streams: a file is read (and gunzipped) a block at a time and an mbox is split as it
arrives, so memory holds about one message, whatever the size of the file. A message larger
than MAX_MESSAGE_BYTES is not kept: inside an mbox it becomes an error entry for that message
and the rest are read; a gzip stream that inflates past its cap stops with an InputError.
"""
from __future__ import annotations

import gzip
import logging
import os
import re
import sys
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, NamedTuple

from triagebot.errors import InputError
from triagebot.parse.lore_paste import as_mail, split_thread_paste

MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # one message larger than this is refused, not parsed
MAX_DECOMPRESSED_BYTES = 4 * 1024 ** 3  # a .gz input inflating past this stops there
# ... and past this many times its compressed size, once over GZIP_RATIO_FROM (a gzip bomb:
# mail archives inflate about 4 times).
MAX_GZIP_RATIO = 100
GZIP_RATIO_FROM = 64 * 1024 * 1024
READ_BLOCK = 1024 * 1024  # bytes read (or inflated) at a time
MAX_PASTE_LINES = 200_000  # lines of a text input read as a pasted lore thread page; longer is read as one message
_SEPARATOR_WINDOW = 200  # bytes of a "From " line looked at to decide whether it separates

# The separator line proper: "From <sender> <asctime date>"; a body line that merely starts
# with "From " (which mboxo writers leave unescaped) does not split a message.
_MBOX_SEPARATOR = re.compile(rb"^From \S+ +\w{3} \w{3} [ \d]\d \d{2}:\d{2}:\d{2}(?: [+-]\d{4})? \d{4}")
_UNQUOTE_FROM = re.compile(rb"^>(>*From )", re.MULTILINE)

_log = logging.getLogger(__name__)


class Entry(NamedTuple):
    """One message of an input: its bytes, or (raw None) why it was not read."""
    name: str
    kind: str
    raw: bytes | None
    error: str | None


class OversizedPiece(int):
    """A message's size, in place of its bytes, when it is over MAX_MESSAGE_BYTES."""


def _inflated(handle: BinaryIO, name: str, compressed_size: int) -> Iterator[bytes]:
    """The gunzipped blocks of a .gz file, stopping with InputError at the caps."""
    cap = min(MAX_DECOMPRESSED_BYTES, max(GZIP_RATIO_FROM, MAX_GZIP_RATIO * compressed_size))
    total = 0
    stream = gzip.GzipFile(fileobj=handle)
    while True:
        try:
            block = stream.read(READ_BLOCK)
        except (OSError, EOFError, zlib.error) as error:
            raise InputError(name, f"damaged gzip data ({error})") from error
        if not block:
            return
        total += len(block)
        if total > cap:
            raise InputError(name, f"gzip data inflates past {cap} bytes ({compressed_size} compressed): "
                                   f"the rest not read")
        yield block


def _blocks(path: str) -> Iterator[bytes]:
    if path == "-":
        while block := sys.stdin.buffer.read(READ_BLOCK):
            yield block
        return
    target = Path(path)
    if not target.exists():
        raise InputError(path, "no such file")
    if target.is_dir():
        raise InputError(path, "is a directory, not a message file")
    try:
        with open(target, "rb") as handle:
            if path.endswith(".gz"):
                yield from _inflated(handle, path, os.fstat(handle.fileno()).st_size)
                return
            while block := handle.read(READ_BLOCK):
                yield block
    except PermissionError as error:
        raise InputError(path, "permission denied") from error


def message_chunks(blocks: Iterable[bytes]) -> Iterator[bytes | OversizedPiece]:
    """The stream cut before each mbox separator line: each piece a message with its "From "
    line (or, first, any text before the first separator); an OversizedPiece size for a piece over
    MAX_MESSAGE_BYTES, whose bytes are dropped as they arrive."""
    buffer = bytearray()
    scan = 0  # no separator starts before this offset of the buffer
    dropped = 0  # bytes of the current piece thrown away: it is over the limit
    blocks = iter(blocks)
    ended = False
    while not ended:
        block = next(blocks, None)
        if block is None:
            ended = True
        else:
            buffer += block
        while True:
            position = buffer.find(b"\nFrom ", scan)
            if position == -1:
                scan = max(scan, len(buffer) - 5)
                break
            start = position + 1
            if not ended and len(buffer) - start < _SEPARATOR_WINDOW:
                scan = position  # the line may not be all here yet: decide with the next block
                break
            if not _MBOX_SEPARATOR.match(bytes(buffer[start:start + _SEPARATOR_WINDOW])):
                scan = start
                continue
            yield OversizedPiece(dropped + start) if dropped else _copy(buffer, start)
            del buffer[:start]  # cheap: a bytearray advances its start
            scan = dropped = 0
        limit = MAX_MESSAGE_BYTES + _SEPARATOR_WINDOW
        if len(buffer) > limit and scan > _SEPARATOR_WINDOW:
            # Over the limit: keep only what a separator search still needs.
            cut = scan - _SEPARATOR_WINDOW
            dropped += cut
            del buffer[:cut]
            scan -= cut
    if dropped:
        yield OversizedPiece(dropped + len(buffer))
    elif buffer:
        yield bytes(buffer)


def _copy(buffer: bytearray, end: int) -> bytes:
    """buffer[:end] as bytes, copied once (a slice would copy it twice)."""
    with memoryview(buffer) as view:
        with view[:end] as head:
            return bytes(head)


def message_of(piece: bytes) -> bytes | None:
    """A piece's message: the separator line dropped, `>From ` lines unquoted; None if blank."""
    if piece.startswith(b"From ") and _MBOX_SEPARATOR.match(piece[:_SEPARATOR_WINDOW]):
        line_end = piece.find(b"\n")
        piece = piece[line_end + 1:] if line_end != -1 else b""
    if not piece.strip():
        return None
    return _UNQUOTE_FROM.sub(rb"\1", piece) if b">From " in piece else piece


def split_mbox(data: bytes) -> list[bytes]:
    """Messages of an mboxrd/mboxo file; `>From ` lines unquoted one level."""
    messages = []
    for piece in message_chunks([data]):
        message = message_of(piece) if not isinstance(piece, OversizedPiece) else None
        if message is not None:
            messages.append(message)
    return messages


def is_mbox(data: bytes) -> bool:
    first = data.lstrip(b"\r\n")[:200].split(b"\n", 1)[0]
    return first.startswith(b"From ") and bool(_MBOX_SEPARATOR.match(first))


def _head(blocks: Iterator[bytes], size: int) -> bytes:
    """At least `size` bytes from the start of the stream (fewer at its end)."""
    head = b""
    while len(head) < size:
        block = next(blocks, None)
        if block is None:
            break
        head += block
    return head


def iter_inputs(path: str) -> Iterator[Entry]:
    """Each message of one input path as an Entry, read as a stream; an oversized message of an
    mbox is an Entry with its error. InputError when the input itself cannot be read (raised
    where reading fails: the entries before it have been given)."""
    name = "<stdin>" if path == "-" else path
    blocks = _blocks(path)
    head = _head(blocks, 4096)
    stream = _prepend(head, blocks)
    if is_mbox(head):
        index = 0
        for piece in message_chunks(stream):
            if isinstance(piece, OversizedPiece):
                index += 1
                yield Entry(f"{name}#{index}", "mbox", None,
                            f"message of {piece // (1024 * 1024)} MiB, larger than the "
                            f"{MAX_MESSAGE_BYTES // (1024 * 1024)} MiB a single message may be")
                continue
            message = message_of(piece)
            if message is not None:
                index += 1
                yield Entry(f"{name}#{index}", "mbox", message, None)
        return
    if path != "-" and not path.endswith(".gz") and os.path.getsize(path) > MAX_MESSAGE_BYTES:
        raise InputError(path, f"file is {os.path.getsize(path) // (1024 * 1024)} MiB, larger than "
                               f"the {MAX_MESSAGE_BYTES // (1024 * 1024)} MiB a single message may be")
    data = bytearray()
    for block in stream:
        data += block
        if len(data) > MAX_MESSAGE_BYTES:
            raise InputError(name, f"input larger than the {MAX_MESSAGE_BYTES // (1024 * 1024)} MiB "
                                   f"a single message may be")
    kind = "eml" if path.endswith((".eml", ".mbox")) else "text"
    if kind == "text":
        pasted = _pasted_thread(bytes(data), name)
        if pasted is not None:
            yield from pasted
            return
    yield Entry(name, kind, bytes(data), None)


def _pasted_thread(data: bytes, name: str) -> list[Entry] | None:
    """A pasted lore thread page as one entry per message (each written as a mail with
    synthesized ids, see parse/lore_paste.py); None for any other text."""
    if data[:1] in (b"<", b"\x00"):
        return None  # a web page or binary data: the parser says what it is
    if data.count(b"\n") > MAX_PASTE_LINES:
        return None  # no page a person pastes; splitting it into lines took 1.6 GB for 21M of them
    messages = split_thread_paste(data.decode("utf-8", "replace"))
    if not messages:
        return None
    return [Entry(f"{name}#{item.position}", "text", as_mail(item, len(messages)), None) for item in messages]


def _prepend(head: bytes, blocks: Iterator[bytes]) -> Iterator[bytes]:
    if head:
        yield head
    yield from blocks


def read_messages(path: str) -> Iterator[tuple[str, str, bytes]]:
    """(display name, source kind, raw bytes) for each message in one input path.

    An oversized message inside an mbox is skipped with a warning; iter_inputs gives it as an
    entry with its error instead.
    """
    for entry in iter_inputs(path):
        if entry.raw is None:
            _log.warning("%s: %s; skipped", entry.name, entry.error)
            continue
        yield entry.name, entry.kind, entry.raw
