"""Structured logs: one JSON object a line on stderr, for the daemon (journald, docker logs).

A record's `extra={"fields": {...}}` becomes keys of its line beside time, level, logger and
message, so an operator can filter on `event`, `channel`, `code`, `message_id`.
"""
from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {"time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
                "level": record.levelname.lower(), "logger": record.name, "pid": record.process,
                "message": record.getMessage()}
        line.update(getattr(record, "fields", None) or {})
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False, default=str)


def configure(stream=None, level: int = logging.INFO) -> None:
    """Send triagebot's loggers to `stream` (stderr) as JSON lines."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonLines())
    root = logging.getLogger("triagebot")
    root.handlers[:] = [handler]
    root.setLevel(level)
    root.propagate = False


def event(logger: logging.Logger, level: int, message: str, *, exc_info: bool = False, **fields) -> None:
    """Log one event line; `exc_info=True` (inside an `except`) adds the traceback as its
    `exception` key (escaped by JSON: the event stays one line)."""
    logger.log(level, message, exc_info=exc_info, extra={"fields": fields})
