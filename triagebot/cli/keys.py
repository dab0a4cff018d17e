"""Short keys for records without a Message-ID.

Such a message is stored under `sha256-<hex of its raw bytes>@triagebot.invalid`; `triage list`
prints it as `sha256-<first SHORT_KEY_HEX hex>` and `triage show` opens it by that short key (or
any unique prefix of the stored key), as well as by the full one.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from triagebot.errors import TriageError
from triagebot.records.threads import normalize_message_id
from triagebot.store.protocol import SYNTHETIC_ID_DOMAIN, AliasStore, ListedRecord, RecordStore

if TYPE_CHECKING:
    from triagebot.store.location import StoreLocation

# hex digits of the raw bytes' SHA-256 a short key keeps: 48 bits, unique among millions of
# messages, short enough to type
SHORT_KEY_HEX = 12
SYNTHETIC_PREFIX = "sha256-"
# candidates fetched when resolving a prefix: two are enough to tell unique from ambiguous
_PREFIX_PROBE = 2


def short_key(stored_key: str) -> str:
    """`sha256-<hex>@triagebot.invalid` -> `sha256-<first 12 hex>`; other keys unchanged."""
    if stored_key.startswith(SYNTHETIC_PREFIX) and stored_key.endswith("@" + SYNTHETIC_ID_DOMAIN):
        return stored_key[:len(SYNTHETIC_PREFIX) + SHORT_KEY_HEX]
    return stored_key


def record_key(listed: ListedRecord) -> str:
    """What `triage show` opens a listed record by: its Message-ID, else its short key."""
    if listed.report.message_id:
        return listed.report.message_id
    return short_key(listed.key) if listed.key else "(no Message-ID)"


class _Keys(RecordStore, AliasStore, Protocol):
    pass


def resolve_key(store: _Keys, key: str) -> str:
    """A full stored key for `key`: itself when stored, else the record it is another name of
    (the lore copy of an archive page: its Message-ID), else the one stored key a short
    `sha256-…` key begins (TriageError when none or several do)."""
    if store.get_record(key) is not None:
        return key
    if (named := store.resolve_alias(key)) is not None and store.get_record(named) is not None:
        return named
    if not key.startswith(SYNTHETIC_PREFIX) or "@" in key:
        return key
    matches = store.record_keys_starting(key, _PREFIX_PROBE)
    if len(matches) > 1:
        raise TriageError(f"{key}: more than one stored message starts with it (give more hex digits)")
    return matches[0] if matches else key


class KeyRefused(Exception):
    """A command's MESSAGE-ID that cannot be opened: the line to print and the exit status."""

    def __init__(self, line: str, status: int) -> None:
        super().__init__(line)
        self.status = status


def asked_key(command: str, text: str, database: StoreLocation) -> str:
    """The Message-ID or key `triage COMMAND` was given, normalised, in a database that exists
    (KeyRefused: exit 2 for a value that is no Message-ID, 1 for a database not there yet)."""
    try:
        message_id = normalize_message_id(text)
    except ValueError:
        raise KeyRefused(f"triage {command}: {text!r}: not a Message-ID", 2) from None
    if not database.exists():
        raise KeyRefused(f"triage {command}: {message_id}: no such message ({database} does not exist yet)", 1)
    return message_id
