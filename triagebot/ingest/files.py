"""Ingest stage: local files as a source: an mbox or mbox.gz, a maildir, a directory, one message.

For backfills and replays. A file is read once per source object and handed out in chunks;
the cursor (the file's identity and how many messages were stored) is written with each
chunk, so an import killed midway resumes where it stopped, and a file imported before gives
nothing on the next run. A file that changed (other size or mtime) is read from the start;
the store ignores the messages it already has.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from triagebot.errors import InputError
from triagebot.ingest.protocol import Batch, FetchedMessage
from triagebot.inputs import read_messages

CHUNK_MESSAGES = 1000  # messages stored (with the cursor) per transaction


class FileSource:
    """An mbox, mbox.gz, maildir (cur/ and new/), a directory of messages, or one message file."""

    def __init__(self, path: str | os.PathLike[str], *, list_name: str | None = None,
                 chunk_messages: int = CHUNK_MESSAGES) -> None:
        self.path = Path(path)
        self.list_name = list_name
        self.chunk_messages = chunk_messages
        self._messages: list[FetchedMessage] | None = None

    @property
    def key(self) -> str:
        return f"file:{self.path.resolve()}"

    def _identity(self) -> dict[str, int]:
        """What tells this input apart from a changed one: size and mtime (of a folder: its files)."""
        if self.path.is_dir():
            files = self._files()
            return {"size": len(files), "mtime_ns": max((item.stat().st_mtime_ns for item in files), default=0)}
        status = self.path.stat()
        return {"size": status.st_size, "mtime_ns": status.st_mtime_ns}

    def _files(self) -> list[Path]:
        if not self.path.is_dir():
            return [self.path]
        maildir = [self.path / "cur", self.path / "new"]
        folders = [folder for folder in maildir if folder.is_dir()] or [self.path]
        return sorted(item for folder in folders for item in folder.iterdir()
                      if item.is_file() and not item.name.startswith("."))

    def _read(self) -> list[FetchedMessage]:
        if self._messages is None:
            if not self.path.exists():
                raise InputError(str(self.path), "no such file or directory")
            messages = []
            for file in self._files():
                for _, kind, raw in read_messages(str(file)):
                    messages.append(FetchedMessage(raw, kind, source_url=None, list_name=self.list_name))
            self._messages = messages
        return self._messages

    def poll(self, cursor: str | None) -> Batch:
        if not self.path.exists():
            raise InputError(str(self.path), "no such file or directory")
        identity = self._identity()
        done = _done(cursor, identity)
        messages = self._read()
        chunk = messages[done:done + self.chunk_messages]
        done += len(chunk)
        return Batch(messages=tuple(chunk), cursor=json.dumps({**identity, "done": done}),
                     more=done < len(messages), total=len(messages))


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
