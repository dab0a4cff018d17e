"""Ingest stage: local files as a source: an mbox or mbox.gz, a maildir, a directory, one message.

For backfills and replays. A file is read once per source object and handed out in chunks;
the cursor (the file's identity and how many messages were stored) is written with each
chunk, so an import killed midway resumes where it stopped, and a file imported before gives
nothing on the next run. A file that changed (other size or mtime) is read from the start;
the store ignores the messages it already has.

A maildir (a folder with cur/ and new/) is read through the standard library's
`mailbox.Maildir`: one message per file of cur/ and new/ (tmp/ holds deliveries not finished,
and is left alone), in the order of their unique names (which begin with the delivery time).
Its identity is its message count and the newer mtime of cur/ and new/: delivering, removing or
renaming a message changes a folder's mtime, and maildir never rewrites a message in place.
"""
from __future__ import annotations

import gzip
import json
import mailbox
import os
import zlib
from collections.abc import Iterator
from pathlib import Path

from triagebot.errors import InputError
from triagebot.ingest.inputs import MAX_MESSAGE_BYTES, is_mbox, read_messages
from triagebot.ingest.protocol import Batch, FetchedMessage

MAILDIR_FOLDERS = ("cur", "new")  # where a maildir keeps delivered messages

CHUNK_MESSAGES = 1000  # messages stored (with the cursor) per transaction
CHUNK_BYTES = 32 * 1024 * 1024  # ... or fewer, once they hold this many bytes (at least one message)
SNIFF_BYTES = 8192  # the start of a folder's file read to tell mail, pages and pastes from data
# a folder's files named like data (an index, a table, a dump) are skipped unless they hold mail
DATA_SUFFIXES = (".tsv", ".csv", ".json", ".jsonl", ".ndjson", ".yaml", ".yml", ".toml",
                 ".sqlite", ".sqlite3", ".db", ".pdf", ".png", ".jpg", ".jpeg", ".gif", ".svg",
                 ".zip", ".tar", ".tgz", ".xz", ".bz2", ".zst", ".7z", ".o", ".so", ".pyc")
_MAIL_STARTS = (b"from:", b"received:", b"return-path:", b"message-id:", b"date:", b"subject:",
                b"delivered-to:", b"x-", b"to:", b"mime-version:", b"<!doctype html", b"<html")


class FileSource:
    """An mbox, mbox.gz, maildir (cur/ and new/), a directory of messages, or one message file."""

    local = True  # what the user chose to import: the poll bounds (http_client/bounds.py) are for servers

    def __init__(self, path: str | os.PathLike[str], *, list_name: str | None = None,
                 chunk_messages: int = CHUNK_MESSAGES, chunk_bytes: int = CHUNK_BYTES) -> None:
        self.path = Path(path)
        self.list_name = list_name
        self.chunk_messages = chunk_messages
        self.chunk_bytes = chunk_bytes
        self._messages: Iterator[FetchedMessage] | None = None  # the open stream
        self._pending: FetchedMessage | None = None  # read ahead of the stream, not handed out yet
        self._position = 0  # messages taken from the stream (handed out or passed over)
        self._identity: dict[str, int] | None = None  # of the input the stream reads
        self._skipped: list[str] = []  # one event line per file of the folder not read, until told
        self._tell_skips = True

    @property
    def key(self) -> str:
        return f"file:{self.path.resolve()}"

    def identity(self) -> dict[str, int]:
        """What tells this input apart from a changed one: size and mtime (of a folder: its
        messages; see the module text for a maildir's)."""
        maildir = self._maildir()
        if maildir is not None:
            folders = [self.path / name for name in MAILDIR_FOLDERS]
            return {"size": len(_maildir_keys(maildir)),
                    "mtime_ns": max(folder.stat().st_mtime_ns for folder in folders)}
        if self.path.is_dir():
            files = self._files()
            return {"size": len(files),
                    "mtime_ns": max((item.stat().st_mtime_ns for item in files), default=0)}
        status = self.path.stat()
        return {"size": status.st_size, "mtime_ns": status.st_mtime_ns}

    def _maildir(self) -> mailbox.Maildir | None:
        """The maildir at this path; None when the path is no maildir (a file, a plain folder)."""
        if not self.path.is_dir():
            return None
        present = [name for name in MAILDIR_FOLDERS if (self.path / name).is_dir()]
        if not present:
            return None
        if len(present) < len(MAILDIR_FOLDERS):
            missing = next(name for name in MAILDIR_FOLDERS if name not in present)
            raise InputError(str(self.path),
                             f"a maildir needs both cur/ and new/, and {missing}/ is missing")
        return mailbox.Maildir(self.path, factory=None, create=False)

    def _files(self) -> list[Path]:
        """The message files of a file or a plain folder (not a maildir)."""
        if not self.path.is_dir():
            return [self.path]
        return sorted(item for item in self.path.iterdir()
                      if item.is_file() and not item.name.startswith("."))

    def _stream(self) -> Iterator[FetchedMessage]:
        """The messages in order, read as they are asked for (a 2 GB mbox is never held whole)."""
        if not self.path.exists():
            raise InputError(str(self.path), "no such file or directory")
        maildir = self._maildir()
        if maildir is not None:
            for key, kind, raw in _maildir_messages(self.path, maildir):
                yield FetchedMessage(raw, kind, source_url=None, list_name=self.list_name,
                                     origin=f"{self.path} message {key}")
            return
        for file in self._files():
            reason = _not_mail(file) if self.path.is_dir() else None
            if reason is not None:  # a file named on its own is read as given
                self._skipped.append(f"{file}: skipped, not mail, a page or a paste: {reason}")
                continue
            for name, kind, raw in read_messages(str(file)):
                yield FetchedMessage(raw, kind, source_url=None, list_name=self.list_name,
                                     origin=origin_of(name, str(file)))

    def _next(self) -> FetchedMessage | None:
        """The next message of the open stream, None at its end."""
        if self._pending is not None:
            message, self._pending = self._pending, None
        else:
            assert self._messages is not None
            message = next(self._messages, None)
        if message is not None:
            self._position += 1
        return message

    def poll(self, cursor: str | None) -> Batch:
        if not self.path.exists():
            raise InputError(str(self.path), "no such file or directory")
        identity = self.identity()
        done = _done(cursor, identity)
        if self._messages is None or self._position != done or identity != self._identity:
            # first poll, or a cursor this stream is not at (another run stored more): read
            # again from the start and pass over what is stored
            self._messages, self._pending, self._position, self._identity = self._stream(), None, 0, identity
            self._skipped.clear()
            self._tell_skips = done == 0  # a run that resumes said them the first time
            while self._position < done and self._next() is not None:
                pass
        chunk: list[FetchedMessage] = []
        size = 0
        while len(chunk) < self.chunk_messages and (not chunk or size < self.chunk_bytes):
            message = self._next()
            if message is None:
                break
            chunk.append(message)
            size += len(message.raw)
        # one message read ahead says whether there is more; it is handed out next poll
        self._pending = self._next() if chunk else None
        if self._pending is not None:
            self._position -= 1
        more = self._pending is not None
        events = tuple(self._skipped) if self._tell_skips else ()
        self._skipped.clear()
        return Batch(messages=tuple(chunk), cursor=json.dumps({**identity, "done": self._position}),
                     events=events, more=more, total=None if more else self._position)


def _maildir_keys(maildir: mailbox.Maildir) -> list[str]:
    """The maildir's messages by unique name; a dot file is no message (as for a plain folder)."""
    return sorted(key for key in maildir.keys() if not key.startswith("."))


def origin_of(name: str, file: str) -> str:
    """A message's place as a warning names it: the file, then its number in an mbox or a pasted
    thread (`read_messages` names it `FILE#N`) as a detail of its own."""
    if name != file and name.startswith(file + "#") and name[len(file) + 1:].isdigit():
        return f"{file}, message {name[len(file) + 1:]}"
    return name


def _maildir_messages(path: Path, maildir: mailbox.Maildir) -> Iterator[tuple[str, str, bytes]]:
    """(key, source kind, raw bytes) of each message, read as asked for; InputError naming one
    too large to be a message."""
    for key in _maildir_keys(maildir):
        try:
            with maildir.get_file(key) as handle:
                raw = handle.read(MAX_MESSAGE_BYTES + 1)
        except (KeyError, OSError) as error:  # removed meanwhile: the next poll reads again
            raise InputError(f"{path} message {key}", f"cannot be read ({error})") from None
        if len(raw) > MAX_MESSAGE_BYTES:
            raise InputError(f"{path} message {key}", f"larger than the"
                             f" {MAX_MESSAGE_BYTES // (1024 * 1024)} MiB a single message may be")
        yield key, ("eml" if key.endswith((".eml", ".mbox")) else "text"), raw


def _not_mail(path: Path) -> str | None:
    """Why a file found in a folder is not a message, an mbox, a web page or a pasted report
    (None: it may be one): binary data, a gzip of something else, a table or index by name."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError as error:
        return f"unreadable ({error.strerror or error})"
    if head.startswith(b"\x1f\x8b"):
        if not path.name.lower().endswith(".gz"):
            return "gzip data in a file not named .gz"
        try:
            with gzip.open(path, "rb") as unpacked:
                head = unpacked.read(SNIFF_BYTES)
        except (OSError, EOFError, zlib.error) as error:
            return f"damaged gzip ({error})"
        if not (is_mbox(head) or _starts_like_mail(head)):
            return "a gzip file that holds no mbox or message"
        return None
    if b"\0" in head:
        return "binary data"
    if path.name.lower().endswith(DATA_SUFFIXES) and not (is_mbox(head) or _starts_like_mail(head)):
        return f"a {path.suffix.lower()} file that does not start like mail or a page"
    return None


def _starts_like_mail(head: bytes) -> bool:
    return head.lstrip().lower().startswith(_MAIL_STARTS)


def _done(cursor: str | None, identity: dict[str, int]) -> int:
    """Messages of this file stored already, by the cursor; 0 for another file's cursor or one that
    cannot be read (the file is then read from the start: the store ignores what it has)."""
    if not cursor:
        return 0
    try:
        state = json.loads(cursor)
        if {key: state.get(key) for key in identity} != identity:
            return 0
        done = int(state.get("done", 0))
    except (ValueError, TypeError, AttributeError):
        return 0
    return max(done, 0)
