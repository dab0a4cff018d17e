"""Golden records for chosen corpus reports: the parser's output, checked field by field.

`pytest --update-golden` rewrites fixtures/golden/*.expected.json from the parser; review the
diff before committing. Attached job files are third-party text: the golden keeps only their
length and SHA-256, not their contents.
"""
from __future__ import annotations

import hashlib
import json

import pytest

from tests.conftest import CORPUS, FIXTURES, require_corpus
from triagebot.parse.message import decode_message, fast_single_part
from triagebot.parse.report import parse_message
from triagebot.records.report import Source, report_to_json

GOLDEN = FIXTURES / "golden"

CASES = [
    # LKP 2023+ generation
    "lkp-perf_xfs-fsmark-5.7pct.eml",
    "lkp-perf_ext4-aim7-22.9pct.eml",
    "lkp-perf_jbd2-utime-42.3pct.eml",
    "lkp-perf_iomap-metamix-98.4pct.eml",
    "lkp-improve_xfs-chown-70.2pct.eml",
    "lkp-improve_jbd2-fxmark-10.9pct.eml",
    "lkp-func_ext4-xfstests-ext4.059.eml",
    # LKP 2019-22 generation
    "lkp-perf_xfs-aim7-6.3pct-2019.eml",
    "lkp-perf_xfs-vm-scalability-91.7pct.eml",
    "lkp-improve_iov_iter-fio-read_iops-126pct.eml",
    "lkp-perf_fsnotify-unixbench-3.3pct.eml",
    # human reports
    "human_ext4-fio-iops-drop-v5.10.eml",
    "human_blk-mq-REGRESSION-37f4a24c2469.eml",
    "human_xfs-fsync-heavy-regression-jack.eml",
    "human_6.15-rc1-bisected-circular-locking.eml",
    "human_xfs-nvme-seqread-fedora42-slower.eml",
    # syzbot and a reply
    "syzbot_ext4-task-hung-rmdir.eml",
    "reply_xfs-fsmark-5.7pct-reply.eml",
]


def golden_form(record: dict) -> dict:
    """The record as kept in a golden file: attached texts reduced to length and digest."""
    for reproducer in record["reproducers"]:
        if reproducer.get("content") is not None:
            content = reproducer["content"].encode()
            reproducer["content"] = f"{len(content)} bytes, sha256 {hashlib.sha256(content).hexdigest()}"
    return record


# Our own fixtures, one edge case each, with the golden record beside the message.
EDGE_CASES = sorted((FIXTURES / "edge").glob("*.eml"))


def check_golden(record: dict, path, name: str, update_golden: bool) -> None:
    if update_golden:
        path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    if not path.exists():
        pytest.fail(f"{path} missing: run pytest --update-golden and review it")
    expected = json.loads(path.read_text())
    for key in expected:
        assert record.get(key) == expected[key], f"{name}: field {key!r} differs"
    assert set(record) == set(expected)


@pytest.mark.parametrize("name", CASES)
def test_golden_record(name: str, update_golden: bool) -> None:
    require_corpus()
    record = golden_form(report_to_json(parse_message((CORPUS / name).read_bytes(), Source("eml"))))
    check_golden(record, GOLDEN / (name.rsplit(".", 1)[0] + ".expected.json"), name, update_golden)


@pytest.mark.parametrize("path", EDGE_CASES, ids=lambda path: path.name)
def test_edge_fixture_golden(path, update_golden: bool) -> None:
    record = golden_form(report_to_json(parse_message(path.read_bytes(), Source("eml"))))
    check_golden(record, path.with_suffix(".expected.json"), path.name, update_golden)


def test_edge_fixture_facts() -> None:
    """The facts each edge case exists for, spelled out (independent of the golden files)."""
    edge = FIXTURES / "edge"
    crlf = parse_message((edge / "crlf-ext4-fileio-regression.eml").read_bytes(), Source("eml"))
    qp = parse_message((edge / "qp-plusminus-lkp-regression.eml").read_bytes(), Source("eml"))
    for report in (crlf, qp):
        assert report.kind == "lkp-regression"
        assert len(report.metrics) == 6
        assert report.metrics[1].base_stddev_percent == 9.0  # the ± survived CRLF and QP
        assert [row.change_unit for row in report.metrics].count("absolute") == 2
        assert report.test_machine.tbox_group == "lkp-icl-2sp7"
        assert dict(report.parameters)["filenum"] == "1024f"
    human = parse_message((edge / "base64-human-wrapped-fio.eml").read_bytes(), Source("eml"))
    assert human.kind == "human-report"
    assert human.reproducers[0].command == (
        "fio --name=randwrite --ioengine=libaio --iodepth=64 --rw=randwrite --bs=4k --direct=1 "
        "--size=4G --numjobs=8 --runtime=60 --time_based --group_reporting")
    assert dict(human.kernel_config) == {"CONFIG_PREEMPT": "y", "CONFIG_XFS_DEBUG": "n"}
    assert [(c.sha, c.role) for c in human.commits] == [("9a8b7c6d5e4f", "culprit")]
    assert {number.text for number in human.prose_numbers} >= {"510 MB/s", "590 MB/s", "5-10%"}
    reply = parse_message((edge / "reply-no-message-id-nested-quotes.eml").read_bytes(), Source("eml"))
    assert reply.message_id is None and "no Message-ID header" in reply.defects
    assert reply.stance == "not-reproduced"  # own text; the quoted "we can reproduce" is ignored


def test_fast_path_matches_full_parser() -> None:
    """The single-part fast path reads every corpus message as the feed parser does."""
    require_corpus()
    checked = 0
    for path in sorted(CORPUS.iterdir()):
        raw = path.read_bytes()
        fast = fast_single_part(raw)
        if fast is None:
            continue
        import triagebot.parse.message as message_module

        full = message_module._PARSER.parsebytes(raw)
        payload = full.get_payload(decode=True) or b""
        text, _ = message_module.decode_text(payload, full.get_content_charset())
        assert fast.body == text.replace("\r\n", "\n").replace("\r", "\n"), path.name
        assert fast.message_id == message_module.strip_message_id(full.get("Message-ID"))
        assert fast.subject == message_module.decode_header_value(full.get("Subject"))
        checked += 1
    assert checked >= 20
    assert decode_message(b"Subject: x\n\nbody\n").body == "body\n"
