"""One regression, one report, on real LKP re-reports of the shared corpus (lkp-stream): the
daemon's join step, through the store, on the pairs bench/joins.py found and bench/README.md lists."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import SHARED
from triagebot.lifecycle import follow
from triagebot.parse.report import parse_message
from triagebot.records.report import Source, report_to_json
from triagebot.store.protocol import IncomingMessage
from triagebot.store.sqlite import SqliteStore

STREAM = SHARED / "corpus" / "lkp-stream"
pytestmark = pytest.mark.skipif(not STREAM.is_dir(), reason=f"the shared corpus is not at {STREAM}")


def stored(store: SqliteStore, *message_ids: str) -> list[str]:
    incoming = []
    for message_id in message_ids:
        raw = (STREAM / f"{message_id}.eml").read_bytes()
        record = report_to_json(parse_message(raw, Source("eml")))
        incoming.append(IncomingMessage(record["message_id"], raw, "eml", "2026-01-01T00:00:00+00:00",
                                        record=record, parser_version="test"))
    return store.ingest_batch(incoming)


@pytest.mark.parametrize(("first", "later", "relation", "rule"), [
    # linux-next then mainline: the sha changed, the subject ("btrfs: switch to the new mount API") did not
    ("202312022313.a9606b59-oliver.sang@intel.com", "202401292150.40c83338-oliver.sang@intel.com",
     "also-seen", "same culprit (subject)"),
    # the same sha, another metric of another fsmark run, months later on mainline
    ("202410072214.11d18a3c-oliver.sang@intel.com", "202504241314.fe89a536-lkp@intel.com",
     "also-seen", "same culprit (sha)"),
    # linux-next -5.2% then mainline, the same sysbench-fileio metric
    ("202410281550.86216b8b-oliver.sang@intel.com", "202501311641.4c5b6a89-lkp@intel.com",
     "also-seen", "same culprit (subject)"),
    # an improvement, then a regression of the same commit on another test: linked, not merged
    ("20201110060012.GA3197@xsang-OptiPlex-9020", "20201230023057.GA22037@xsang-OptiPlex-9020",
     "linked", "same culprit (subject), other direction"),
])
def test_a_real_re_report_joins_or_links_its_first(tmp_path: Path, first: str, later: str, relation: str,
                                                   rule: str) -> None:
    with SqliteStore(tmp_path / "t.db") as store:
        # stored in one batch, later first: the join goes by date, not by arrival
        new = stored(store, later, first)
        assert follow.join_reports(store, new) == [(later, first, relation)]
        link = store.joined_to(later)
        assert link is not None and link.rule == rule


def test_reports_of_other_culprits_do_not_join(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "t.db") as store:
        # two btrfs fio.write_iops reports, different commits
        new = stored(store, "202312022313.a9606b59-oliver.sang@intel.com", "20201104061657.GB15746@xsang-OptiPlex-9020")
        assert follow.join_reports(store, new) == []
