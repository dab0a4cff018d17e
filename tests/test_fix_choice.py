"""Which fix in a confirmed thread the daemon tests (triagebot.reproduce.fix_choice), and where
the tests are kept (the store's fix_tests)."""
from __future__ import annotations

from pathlib import Path

import pytest

from triagebot.fix_test.choice import FixAction, fix_to_test
from triagebot.parse.patches import patch_subject
from triagebot.store.protocol import StoreError
from triagebot.store.sqlite import SqliteStore


def mails(*subjects: str) -> list:
    """Patch mails from (Message-ID: subject) lines; subjects of no patch mail are dropped."""
    found = [patch_subject(*line.split(": ", 1)) for line in subjects]
    return [item for item in found if item is not None]


V1 = ("v1-1@x: [PATCH 1/2] sched: prepare", "v1-2@x: [PATCH 2/2] sched: restore")
V2 = ("cover@x: [PATCH v2 0/2] sched: restore the granularity", "v2-1@x: [PATCH v2 1/2] sched: prepare",
      "v2-2@x: [PATCH v2 2/2] sched: restore")


@pytest.mark.parametrize("subjects, tested, action, key, cause", [
    # no patch in the thread, only talk about one
    (("a@x: Re: [PATCH 1/2] sched: prepare", "b@x: Re: [REGRESSION] slower"), (), FixAction.NONE, "", ""),
    # v1 alone, complete: tested, b4 given its first patch (there is no cover letter)
    (V1, (), FixAction.TEST, "v1:v1-1@x", "v1-1@x"),
    # v1 and v2 posted: v2 counts, b4 given its cover letter
    (V1 + V2, (), FixAction.TEST, "v2:v2-1@x", "cover@x"),
    # v2 tested already: nothing more, even though v1 never was
    (V1 + V2, ("v2:v2-1@x",), FixAction.NONE, "v2:v2-1@x", ""),
    # v1 tested, then v2 arrives: v2 is tested
    (V1 + V2, ("v1:v1-1@x",), FixAction.TEST, "v2:v2-1@x", "cover@x"),
    # v2's cover letter and part 1 are here, part 2 is not yet: wait, do not test v1 meanwhile
    (V1 + V2[:2], (), FixAction.WAIT, "", ""),
    # the cover letter has not arrived but both patches have: the same key as with it
    (V2[1:], (), FixAction.TEST, "v2:v2-1@x", "v2-1@x"),
    # a single patch without a count
    (("one@x: [PATCH] sched: restore",), (), FixAction.TEST, "v1:one@x", "one@x"),
    # an RFC v3 counts as v3
    (V2 + ("r3@x: [RFC PATCH v3] sched: restore differently",), (), FixAction.TEST, "v3:r3@x", "r3@x"),
])
def test_the_fix_to_test(subjects, tested, action, key, cause) -> None:
    choice = fix_to_test(mails(*subjects), set(tested))
    assert choice.action is action, choice.reason
    if action is not FixAction.WAIT:
        assert choice.series_key == key
    assert choice.cause_id == cause


def test_a_fix_test_is_kept_once_per_series_and_moves_through_its_statuses(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "store.db") as store:
        first = store.queue_fix_test("<report@x>", "v2:v2-1@x", "<cover@x>")
        assert first is not None
        assert store.queue_fix_test("report@x", "v2:v2-1@x", "cover@x") is None  # the same series again
        again = store.queue_fix_test("report@x", "v2:v2-1@x@2", "cover@x")  # asked for again by hand
        assert again is not None and again != first
        store.set_fix_test(first, "running")
        store.set_fix_test(first, "done", {"version": 2})
        assert [(row.series_key, row.status, row.cause_id, row.result) for row in store.fix_tests("report@x")] == [
            ("v2:v2-1@x", "done", "cover@x", {"version": 2}), ("v2:v2-1@x@2", "queued", "cover@x", {})]
        assert [row.fix_test_id for row in store.fix_tests(status="queued")] == [again]
        with pytest.raises(StoreError, match="'finished' is not one of queued, running, done, refused, error"):
            store.set_fix_test(first, "finished")
        with pytest.raises(StoreError, match="no fix test 999"):
            store.set_fix_test(999, "done")
