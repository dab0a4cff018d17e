"""The daemon's logs on stderr: JSON lines for machines, or lines a person reads on a terminal.

JSON (stderr not a TTY, or `--log-format json`): one object a line (journald, docker logs); a
record's `extra={"fields": {...}}` becomes keys of its line beside time, level, logger and
message, so an operator can filter on `event`, `channel`, `code`, `message_id`.
Text (a TTY, or `--log-format text`): `HH:MM:SS LEVEL what happened: details`, then, where the
event names one, `-> next step` on the same line.

Every line, whoever logged it (triagebot's loggers and, at warning and above, the libraries':
uvicorn, procrastinate, psycopg), passes `redact` last: a password in a URL (a database URL, a
source URL with `user:password@`) or a `password=` setting is written `***`, whatever field,
message or traceback carried it. Error messages printed by the command line pass it too
(cli/main.py): one function, so nothing says a password.
"""
from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime

# scheme://user:password@host: the password, up to the `@` (RFC 3986: no `/`, `?`, `#` or `@` unescaped in it)
_URL_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^:/?#@\s\"']*:)(?P<secret>[^@/?#\s]*)@")
# password=… in a URL's query or a libpq key=value string (quoted or not)
_SETTING_PASSWORD = re.compile(r"(?P<head>\bpassword\s*=\s*)(?P<secret>'(?:[^'\\]|\\.)*'|[^\s&;#,\"]+)",
                               re.IGNORECASE)
HIDDEN = "***"


def redact(text: str) -> str:
    """`text` with every password in it written `***`: `postgresql://user:***@host/db`,
    `?password=***`, `password=***`."""
    if "@" not in text and "password" not in text.lower():
        return text
    text = _URL_PASSWORD.sub(lambda found: f"{found['head']}{HIDDEN}@", text)
    return _SETTING_PASSWORD.sub(lambda found: f"{found['head']}{HIDDEN}", text)


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {"time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
                "level": record.levelname.lower(), "logger": record.name, "pid": record.process,
                "message": record.getMessage()}
        line.update(getattr(record, "fields", None) or {})
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return redact(json.dumps(line, ensure_ascii=False, default=str))


# the fields a text line shows after the message, in this order (the others stay in JSON only)
TEXT_FIELDS = ("message_id", "host", "outcome", "reason",
               "source", "error", "detail", "new", "quarantined", "rules", "db", "url", "rows", "signal", "step")
LABELLED_FIELDS = ("new", "quarantined", "rows", "rules", "db")  # shown as name=value (a bare number or path
# says nothing)
LOG_FORMATS = ("auto", "text", "json")


class TextLines(logging.Formatter):
    """One line a person reads: local time, level, what happened, its details, the next step."""

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "fields", None) or {}
        moment = datetime.fromtimestamp(record.created).strftime("%H:%M:%S")
        details: list[str] = []
        for name in TEXT_FIELDS:
            value = fields.get(name)
            if value in (None, "", []) or any(str(value) in shown for shown in details):
                continue  # nothing to say, or said already (a retry's detail names its URL)
            details.append(f"{name}={value}" if name in LABELLED_FIELDS else str(value))
        line = f"{moment} {record.levelname:7} {record.getMessage()}"
        if details:
            line += ": " + "; ".join(details)
        if fields.get("next"):
            line += f" -> {fields['next']}"
        if record.exc_info:
            line += " | " + self.formatException(record.exc_info).splitlines()[-1]
        return redact(line)


def choose_format(requested: str, stream) -> str:
    """`text` or `json` for --log-format `requested` (`auto`: text on a terminal)."""
    if requested != "auto":
        return requested
    isatty = getattr(stream, "isatty", None)
    return "text" if isatty is not None and isatty() else "json"


def configure(stream=None, level: int = logging.INFO, log_format: str = "json") -> None:
    """Send triagebot's loggers to `stream` (stderr) as JSON lines, or as text lines
    (`log_format` text; auto: text when `stream` is a terminal); the libraries' warnings and
    errors (the root logger's) go the same way, redacted alike, instead of Python's bare default."""
    stream = stream or sys.stderr
    handler = logging.StreamHandler(stream)
    handler.setFormatter(TextLines() if choose_format(log_format, stream) == "text" else JsonLines())
    ours = logging.getLogger("triagebot")
    ours.handlers[:] = [handler]
    ours.setLevel(level)
    ours.propagate = False
    everyone = logging.getLogger()
    everyone.handlers[:] = [handler]
    everyone.setLevel(logging.WARNING)


def event(logger: logging.Logger, level: int, message: str, *, exc_info: bool = False, **fields) -> None:
    """Log one event line; `exc_info=True` (inside an `except`) adds the traceback as its
    `exception` key (escaped by JSON: the event stays one line)."""
    logger.log(level, message, exc_info=exc_info, extra={"fields": fields})
