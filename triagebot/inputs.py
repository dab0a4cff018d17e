"""Ingest edge for the CLI: read files, stdin, mbox and mbox.gz into (name, bytes) messages."""
from __future__ import annotations

import gzip
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from triagebot.errors import InputError

MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # one message larger than this is refused, not parsed
# The separator line proper: "From <sender> <asctime date>"; a body line that merely starts
# with "From " (which mboxo writers leave unescaped) does not split a message.
_MBOX_SEPARATOR = re.compile(rb"^From \S+ +\w{3} \w{3} [ \d]\d \d{2}:\d{2}:\d{2}(?: [+-]\d{4})? \d{4}")
_UNQUOTE_FROM = re.compile(rb"^>(>*From )", re.MULTILINE)


def _read_path(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read(MAX_MESSAGE_BYTES * 4 + 1)
    target = Path(path)
    if not target.exists():
        raise InputError(path, "no such file")
    if target.is_dir():
        raise InputError(path, "is a directory, not a message file")
    try:
        with open(target, "rb") as handle:
            if path.endswith(".gz"):
                try:
                    return gzip.GzipFile(fileobj=handle).read()
                except (OSError, EOFError) as error:
                    raise InputError(path, f"damaged gzip data ({error})") from error
            return handle.read()
    except PermissionError as error:
        raise InputError(path, "permission denied") from error


def split_mbox(data: bytes) -> list[bytes]:
    """Messages of an mboxrd/mboxo file; `>From ` lines unquoted one level."""
    starts = [0] if data.startswith(b"From ") else []
    position = data.find(b"\nFrom ")
    while position != -1:
        starts.append(position + 1)
        position = data.find(b"\nFrom ", position + 1)
    boundaries = [start for start in starts if _MBOX_SEPARATOR.match(data[start:start + 200])]
    messages: list[bytes] = []
    if not boundaries or boundaries[0] != 0:
        boundaries.insert(0, -1)  # text before the first separator is a message of its own
    for index, start in enumerate(boundaries):
        end = boundaries[index + 1] if index + 1 < len(boundaries) else len(data)
        if start == -1:
            body = data[:end]
        else:
            line_end = data.find(b"\n", start)
            body = data[line_end + 1 if line_end != -1 else end:end]
        if body.strip():
            messages.append(_UNQUOTE_FROM.sub(rb"\1", body) if b">From " in body else body)
    return messages


def is_mbox(data: bytes) -> bool:
    first = data.lstrip(b"\r\n")[:200].split(b"\n", 1)[0]
    return first.startswith(b"From ") and bool(_MBOX_SEPARATOR.match(first))


def read_messages(path: str) -> Iterator[tuple[str, str, bytes]]:
    """(display name, source kind, raw bytes) for each message in one input path."""
    if path != "-" and os.path.isfile(path) and os.path.getsize(path) > MAX_MESSAGE_BYTES \
            and not (path.endswith(".gz") or _looks_like_mbox_file(path)):
        raise InputError(path, f"file is {os.path.getsize(path) // (1024 * 1024)} MiB, larger than "
                               f"the {MAX_MESSAGE_BYTES // (1024 * 1024)} MiB a single message may be")
    data = _read_path(path)
    name = "<stdin>" if path == "-" else path
    if is_mbox(data):
        for index, message in enumerate(split_mbox(data), start=1):
            yield f"{name}#{index}", "mbox", message
        return
    if len(data) > MAX_MESSAGE_BYTES:
        raise InputError(name, "input larger than a single message may be")
    kind = "eml" if path.endswith((".eml", ".mbox")) else "text"
    yield name, kind, data


def _looks_like_mbox_file(path: str) -> bool:
    with open(path, "rb") as handle:
        return is_mbox(handle.read(200))
