"""Reply stage: what else the lab has on record for a report, for the reply upstream — its fix
tests that ended with a result and its bisections that ended (found, or inconclusive with a
range left, or no regression between the ends), oldest first. Read from the store; the text is
draft.py's."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from triagebot.store.protocol import Store

Json = dict[str, Any]
ENDED_BISECTIONS = ("found", "inconclusive", "not-reproduced")  # a result a maintainer can use


@dataclass(frozen=True)
class OnRecord:
    """The fix tests (each its result JSON, with `series` and `version`) and bisections (each its
    stored JSON) a reply tells of."""

    fix_tests: tuple[Json, ...] = ()
    bisections: tuple[Json, ...] = ()


def on_record(store: Store, message_id: str) -> OnRecord:
    """The report's fix tests done and bisections ended, oldest first."""
    fixes = tuple(row.result for row in store.fix_tests(message_id) if row.status == "done" and row.result)
    bisections = tuple(item for item in store.bisects(message_id) if item.get("status") in ENDED_BISECTIONS)
    return OnRecord(fixes, bisections)
