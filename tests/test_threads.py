"""Thread assembly and summaries: corpus threads and our own fixture threads."""
from __future__ import annotations

import dataclasses

from tests.conftest import CORPUS, FIXTURES, require_corpus
from triagebot.parse.report import parse_message
from triagebot.parse.thread import build_threads, message_key, render_thread, reports_by_key
from triagebot.records.report import Source

MAIL = FIXTURES / "mail"


def parse(path):
    return parse_message(path.read_bytes(), Source("eml"))


def own_thread_records():
    names = ["edge/crlf-lkp-regression.eml", "edge/missing-message-id.eml", "edge/nested-quotes-reply.eml",
             "edge/qp-plusminus.eml", "reply/hedge.eml", "human/bisected-fsmark.eml", "reply/can-reproduce.eml",
             "reply/quoted-stance-only.eml", "edge/base64-body.eml", "reply/cannot-reproduce.eml"]
    return [parse(MAIL / name) for name in names]


def thread_with(threads, key):
    return next(thread for thread in threads if key in [item for item, _ in thread.order])


def test_own_fixture_threads_tree_root_and_summary() -> None:
    records = own_thread_records()
    threads = build_threads(records)
    assert len(threads) == 4
    fsmark = thread_with(threads, "8f3e2c1a-5b7d-4e2f-9a61-0c4d2e7b9f10@example.com")
    # report <- can-reproduce <- quoted-stance-only: a chain, depth by depth
    assert fsmark.order == (("8f3e2c1a-5b7d-4e2f-9a61-0c4d2e7b9f10@example.com", 0),
                            ("20240215083344.u7kq2xw3rfd5@marek-tp", 1),
                            ("c41d9e27-8a3b-4f1c-b5d6-2e7f8a9b0c1d@example.com", 2))
    assert fsmark.report == "8f3e2c1a-5b7d-4e2f-9a61-0c4d2e7b9f10@example.com"
    assert [(voice.message_id, voice.evidence[:28]) for voice in fsmark.reproduced] == [
        ("20240215083344.u7kq2xw3rfd5@marek-tp", "I can reproduce this at will")]
    assert fsmark.not_reproduced == ()  # the quoted "I can reproduce" of the third message does not count
    crlf = thread_with(threads, "202403151042.7c1e5f3a-oliver.sang@intel.com")
    # the reply without a Message-ID and the reply whose parent is missing both attach to the report
    assert crlf.root == "202403151042.7c1e5f3a-oliver.sang@intel.com"
    assert len(crlf.order) == 3 and all(depth == 1 for _, depth in crlf.order[1:])
    assert [voice.sender for voice in crlf.not_reproduced] == ["Kai Lindqvist <kai.lindqvist@example.se>"]
    assert "could not reproduce" in crlf.not_reproduced[0].evidence
    base64 = thread_with(threads, "b64a1d2e-3c4f-4a5b-8c6d-7e8f9a0b1c2d@example.net")
    assert [voice.evidence[:35] for voice in base64.not_reproduced] == ["I'm not seeing this on my i7-12700K"]
    hedge = thread_with(threads, "202405201537.4f8a2b61-lkp@intel.com")
    assert hedge.reproduced == hedge.not_reproduced == ()


def test_order_of_arrival_and_duplicates_change_nothing() -> None:
    records = own_thread_records()
    forward = build_threads(records)
    backward = build_threads(list(reversed(records)) + records[:3])
    assert sorted(thread.order for thread in forward) == sorted(thread.order for thread in backward)


def test_missing_parent_makes_the_nearest_present_ancestor_root() -> None:
    records = own_thread_records()
    report_id = "8f3e2c1a-5b7d-4e2f-9a61-0c4d2e7b9f10@example.com"
    without_report = [record for record in records if record.message_id != report_id]
    thread = thread_with(build_threads(without_report), "20240215083344.u7kq2xw3rfd5@marek-tp")
    assert thread.root == "20240215083344.u7kq2xw3rfd5@marek-tp"
    assert thread.report is None  # no report in what is left: the replies are not reports


def test_loop_in_headers_is_cut() -> None:
    report, reply = parse(MAIL / "human/bisected-fsmark.eml"), parse(MAIL / "reply/can-reproduce.eml")
    looped = dataclasses.replace(report, in_reply_to=reply.message_id)
    [thread] = build_threads([looped, reply])
    assert len(thread.order) == 2


def test_message_without_id_is_keyed_by_date_subject_sender() -> None:
    [record] = [parse(MAIL / "edge/missing-message-id.eml")]
    assert message_key(record).startswith("no-id:2024-03-15T08:58Z|")


def test_openwall_pages_thread_by_their_nav_links() -> None:
    report = parse_message((MAIL / "openwall/with-message-id.html").read_bytes(),
                           Source("openwall", "https://lists.openwall.net/linux-ext4/2022/03/04/2"))
    earlier = dataclasses.replace(report, message_id=None, subject="earlier", thread_links=(),
                                  source=Source("openwall", "https://lists.openwall.net/linux-ext4/2022/03/01/5"))
    [thread] = build_threads([earlier, report])
    assert [depth for _, depth in thread.order] == [0, 1]


def test_corpus_threads() -> None:
    require_corpus()
    pairs = [("lkp-perf_xfs-fsmark-5.7pct.eml", "reply_xfs-fsmark-5.7pct-reply.eml"),
             ("lkp-perf_iomap-metamix-98.4pct.eml", "reply_iomap-metamix-98.4pct-reply.eml"),
             ("human_ext4-dioread_nolock-buffered-randwrite.eml", "reply_ext4-dioread_nolock-reply.eml")]
    records = [parse(CORPUS / name) for pair in pairs for name in pair]
    threads = build_threads(records)
    assert len(threads) == 3
    by_key = reports_by_key(records)
    for report_name, reply_name in pairs:
        report, reply = parse(CORPUS / report_name), parse(CORPUS / reply_name)
        thread = thread_with(threads, report.message_id)
        assert thread.root == report.message_id and thread.report == report.message_id
        assert [key for key, _ in thread.order] == [report.message_id, reply.message_id]
        # labeled by hand: none of these replies reproduces or refutes the report
        assert thread.reproduced == thread.not_reproduced == ()
        text = render_thread(thread, by_key)
        assert report.subject in text and reply.from_[:20] in text


def test_display_and_store_hang_a_message_from_the_same_parent() -> None:
    """parse/thread.py and the store follow one rule (triagebot/records/threads.py): In-Reply-To, else the
    last References entry, and up the References chain when a message in between is absent."""
    from triagebot.records.threads import parent_edges
    report, reply = parse(MAIL / "human/bisected-fsmark.eml"), parse(MAIL / "reply/can-reproduce.eml")
    middle = dataclasses.replace(reply, message_id="middle@example.com", in_reply_to=report.message_id,
                                 references=(report.message_id,))
    # In-Reply-To names the middle message; References lists the report then the middle one.
    last = dataclasses.replace(reply, message_id="last@example.com", in_reply_to=None,
                               references=(report.message_id, "middle@example.com"))
    for present, expected_parent in (([report, middle, last], "middle@example.com"),
                                     ([report, last], report.message_id)):
        [thread] = build_threads(present)
        depths = dict(thread.order)
        assert depths["last@example.com"] == (2 if expected_parent == "middle@example.com" else 1)
    store_parent = dict(parent_edges("last@example.com", None, last.references))["last@example.com"]
    assert store_parent == "middle@example.com"
