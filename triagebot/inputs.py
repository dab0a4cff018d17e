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
_MBOX_SEPARATOR = re.compile(rb"^From \S+ +\w{3} \w{3} [ \d]\d \d{2}:\d{2}:\d{2} \d{4}|^From \S+@\S+|^From [\w.-]+ ")
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
    messages: list[bytes] = []
    current: list[bytes] = []
    for line in data.splitlines(keepends=True):
        if line.startswith(b"From ") and _MBOX_SEPARATOR.match(line):
            if current:
                messages.append(b"".join(current))
            current = []
            continue
        current.append(line)
    if current:
        messages.append(b"".join(current))
    return [_UNQUOTE_FROM.sub(rb"\1", message) for message in messages if message.strip()]


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
