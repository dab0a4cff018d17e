"""Fix testing: which fix in a confirmed report's thread the daemon tests next. Pure: the
thread's patch mails (triagebot.parse.patches.patch_subject) and the series already tested in,
one choice out.

Only the newest version of a series counts (v1 then v2 posted: v2 is tested, v1 never is once
v2 is there); a version is tested once; a version whose parts have not all arrived is waited
for (its other parts are usually a poll away), never tested or refused half there.
"""
from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum

from triagebot.parse.patches import PatchMail, series_key


class FixAction(StrEnum):
    NONE = "none"  # nothing to test: no patch in the thread, or its newest version was tested
    WAIT = "wait"  # the newest version lacks a part: test it when the rest arrives
    TEST = "test"  # test this series now


@dataclass(frozen=True)
class FixChoice:
    action: FixAction
    reason: str
    version: int = 0
    series_key: str = ""  # what the test is stored under (fix.series_key)
    cause_id: str = ""  # the mail b4 is given and the test replies to: the cover letter, else patch 1


def fix_to_test(patches: Sequence[PatchMail], tested: Collection[str]) -> FixChoice:
    """The next fix to test among the thread's patch mails, given the series keys tested."""
    if not patches:
        return FixChoice(FixAction.NONE, "no [PATCH] mail in the thread")
    newest = max(item.version for item in patches)
    series = [item for item in patches if item.version == newest]
    total = max(item.total for item in series)
    missing = sorted(set(range(1, total + 1)) - {item.part for item in series})
    if missing:  # the rest of the version is usually on its way
        return FixChoice(FixAction.WAIT, f"v{newest} lacks part {', '.join(map(str, missing))} of {total}",
                         newest)
    key = series_key(list(patches), newest)
    if key in tested:  # each version once; a person may ask again (triage test-fix)
        return FixChoice(FixAction.NONE, f"v{newest} was tested", newest, key)
    first = min(series, key=lambda item: (item.part, item.message_id))  # the cover letter (part 0) first
    return FixChoice(FixAction.TEST, f"v{newest}, {total} part{'s' if total != 1 else ''}", newest, key,
                     first.message_id)
