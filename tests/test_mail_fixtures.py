"""Our own real-shaped messages under fixtures/mail/: the facts FACTS.md lists, and a golden each.

FACTS.md was written with the messages, before the parser was run on them; the table below
asserts its key facts directly, and the golden record beside each message pins the rest
(`pytest --update-golden` rewrites the goldens; review the diff against FACTS.md).
Every case runs again with CRLF line endings, which must not change the record.
"""
from __future__ import annotations

import json

import pytest

from tests.conftest import FIXTURES
from tests.test_golden import check_golden, golden_form
from triagebot.parse.report import parse_message
from triagebot.records.report import Source, report_to_json

MAIL = FIXTURES / "mail"
SOURCE_KIND = {".eml": "eml", ".html": "openwall", ".txt": "text"}
MESSAGES = sorted(path for path in MAIL.rglob("*") if path.suffix in SOURCE_KIND)


def record_of(path, raw: bytes | None = None) -> dict:
    raw = path.read_bytes() if raw is None else raw
    return report_to_json(parse_message(raw, Source(SOURCE_KIND[path.suffix])))


def culprit(record: dict) -> tuple[str, str | None] | None:
    found = [(commit["sha"], commit["subject"]) for commit in record["commits"] if commit["role"] == "culprit"]
    return found[0] if found else None


def machine(record: dict) -> tuple:
    found = record["test_machine"] or {}
    return found.get("threads"), found.get("sockets"), found.get("memory_gb")


def commands(record: dict) -> list[tuple[str, str | None, bool]]:
    return [(item["kind"], item["command"], item["quoted"]) for item in record["reproducers"]
            if item["kind"] not in ("lkp-materials",)]


# (fixture, kind, message_id, culprit sha prefix, testcase, rows, (threads, sockets, memory), stance, quoted)
FACTS = [
    # CRLF line endings throughout, new LKP generation
    ("edge/crlf-lkp-regression.eml", "lkp-regression", "202403151042.7c1e5f3a-oliver.sang@intel.com",
     "ef0b4a2fa72f690fdbb00c414ea6f830f2820b33", "fio-basic", 9, (128, 2, 128), "none", False),
    # quoted-printable with =C2=B1 and soft breaks inside the commit and machine lines
    ("edge/qp-plusminus.eml", "lkp-regression", "202405201537.4f8a2b61-lkp@intel.com",
     "f25c029a7d9fef3e9db8f11915fed5de69ab9aaf", "stress-ng", 9, (64, 2, 256), "none", False),
    # base64 body; "16 cores / 32 threads" counts threads
    ("edge/base64-body.eml", "human-report", "b64a1d2e-3c4f-4a5b-8c6d-7e8f9a0b1c2d@example.net",
     None, "fio", 0, (32, None, 64), "none", False),
    # multipart with job.yaml, reproduce, job-script and a kernel config attached (2019-22 layout)
    ("edge/attachments-lkp-2021.eml", "lkp-regression", "20210106083015.GB31337@xsang-OptiPlex-9020",
     "abcdef012345e4757dced820fd82d9e32c1926b3", "will-it-scale", 7, (144, 4, 128), "none", False),
    # no Message-ID header: facts come from the quoted report
    ("edge/missing-message-id.eml", "reply", None,
     "ef0b4a2fa72f690fdbb00c414ea6f830f2820b33", "fio", 0, (None, None, None), "none", True),
    # "> >" holds someone else's "we can reproduce it"; the writer could not
    ("edge/nested-quotes-reply.eml", "reply", "CAJ5kq3Ld9wTtV2pX8rZ0bQ4yNm7hE1uF6sG3aK9cD2eH5iO0jP@mail.gmail.com",
     None, "fio", 0, (16, None, 64), "not-reproduced", False),
    # fio over four `\` lines; "The regression comes from <sha>" blames it
    ("edge/wrapped-fio-command.eml", "human-report", "5e0b7a1c-2d3f-4e6a-9b8c-1f2e3d4c5b6a@example.ro",
     "c0a379424eca", "fio", 0, (48, 1, 128), "none", False),
    # declares utf-8, is latin-1
    ("edge/latin1-declared-utf8.eml", "human-report", "87frh3kq2l.fsf@example.fr",
     "f91858a3afde", "stress-ng", 0, (64, 2, 192), "none", False),
    # no charset declared, utf-8 bytes
    ("edge/no-charset.eml", "human-report", "ZlN4b2xYz5Qm8Kp1@workstation.example.com",
     None, "perf", 0, (32, None, 64), "none", False),
    # three-line folded subject and an encoded-word sender
    ("edge/folded-subject.eml", "human-report", "20240412094417.GA7781@jschroeder-nb",
     "d991bfea03ec", None, 0, (28, None, 32), "none", False),
    ("lkp/improvement-2024.eml", "lkp-improvement", "202407081422.9d3e6b57-oliver.sang@intel.com",
     "bc34f8f758eedb58bcf751be8b8e2b3b2b6a6f2d", "fsmark", 8, (96, 2, 128), "none", False),
    # the robot's report posted as a reply to the patch it blames ("Re: [PATCH v2 1/2] …")
    # the robot's report on a patch under review: a regression of the series (issue 38)
    ("lkp/patch-reply-stress-ng-regression.eml", "patch-regression", "202506121525.5f1c0a7e-lkp@intel.com",
     "3c5e8a91d07f2b64e1a9c0d5f7b3a2e4c6d8f012", "stress-ng", 4, (192, 2, 256), "none", False),
    ("lkp/functional-warning.eml", "lkp-functional", "202404091133.e71c4a20-lkp@intel.com",
     "0c284d2e211c1da268cf315d6621c982025183e5", "xfstests", 0, (4, None, 8), "none", False),
    # "Xeon Silver 4314" is a model number, not a thread count
    ("human/bisected-fsmark.eml", "human-report", "8f3e2c1a-5b7d-4e2f-9a61-0c4d2e7b9f10@example.com",
     "6e1983a3eb3cc196a203ad2782a5a971d4f16dd3", "fs_mark", 0, (64, 2, 256), "none", False),
    ("reply/can-reproduce.eml", "reply", "20240215083344.u7kq2xw3rfd5@marek-tp",
     "6e1983a3eb3c", "fs_mark", 0, (24, None, 64), "reproduced", False),
    ("reply/cannot-reproduce.eml", "reply", "Zgx7Qk2v9Lr0sT3a@dv-desk",
     None, "fio", 0, (None, None, 64), "not-reproduced", False),
    # "this might be noise ... I will retest" is a hedge, not a stance
    ("reply/hedge.eml", "reply", "20240520101533.GA118230@ydemir-ws",
     "f25c029a7d9fef3e9db8f11915fed5de69ab9aaf", "stress-ng", 0, (None, None, None), "none", True),
    # the only stance sentence is quoted
    ("reply/quoted-stance-only.eml", "reply", "c41d9e27-8a3b-4f1c-b5d6-2e7f8a9b0c1d@example.com",
     "6e1983a3eb3c", "fs_mark", 0, (None, None, None), "none", True),
    ("openwall/with-message-id.html", "lkp-regression", "20220304062215.GA29117@xsang-OptiPlex-9020",
     "a257e3440db08f984b635b43cf9485525838202f", "aim7", 7, (88, 2, 128), "none", False),
    ("openwall/without-message-id.html", "lkp-improvement", None,
     "bab932425954649fb817b4e0f462e189bbf511b5", "reaim", 6, (96, None, 192), "none", False),
    # browser copy of an openwall page: banner and nav text before the header block
    ("paste/openwall-copied.txt", "human-report", "20231011120455.GA4490@henrik-ws",
     "291158cd88ae", "hackbench", 0, (256, 2, 512), "none", False),
]


def test_every_fixture_has_facts() -> None:
    assert sorted(str(path.relative_to(MAIL)) for path in MESSAGES) == sorted(case[0] for case in FACTS)


@pytest.mark.parametrize("crlf", [False, True], ids=["lf", "crlf"])
@pytest.mark.parametrize("case", FACTS, ids=[case[0] for case in FACTS])
def test_fixture_facts(case, crlf: bool) -> None:
    name, kind, message_id, culprit_sha, testcase, rows, machine_facts, stance, quoted = case
    path = MAIL / name
    raw = path.read_bytes()
    if crlf:
        raw = raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    record = record_of(path, raw)
    assert record["kind"] == kind
    assert record["message_id"] == message_id
    assert (culprit(record) or (None,))[0] == culprit_sha
    assert record["testcase"] == testcase
    assert len(record["metrics"]) == rows
    assert machine(record) == machine_facts
    assert record["stance"] == stance
    assert record["quoted"] is quoted
    assert "\r" not in json.dumps(record)


def test_crlf_changes_nothing() -> None:
    for path in MESSAGES:
        raw = path.read_bytes().replace(b"\r\n", b"\n")
        assert record_of(path, raw) == record_of(path, raw.replace(b"\n", b"\r\n")), path.name


def test_attachments_feed_the_record() -> None:
    record = record_of(MAIL / "edge/attachments-lkp-2021.eml")
    assert [(item["name"], item["content_type"], item["size"]) for item in record["attachments"]] == [
        ("config-5.10.0-rc1-00012-gabcdef012345", "text/plain", 441),
        ("job-script", "text/plain", 1052), ("job.yaml", "text/plain", 1001), ("reproduce", "text/plain", 267)]
    [job] = [item for item in record["reproducers"] if item["kind"] == "lkp-job"]
    assert job["command"] == "bin/lkp run generated-yaml-file"
    assert len(job["content"].encode()) == 1001 and job["content"].startswith("---")
    # only enabled debug options of the attached config
    assert record["kernel_config"] == {"CONFIG_PREEMPT_VOLUNTARY": "y", "CONFIG_DEBUG_KERNEL": "y"}
    # the g<sha> in file names and the job's id: lines are not commits
    assert [commit["sha"][:12] for commit in record["commits"]] == ["abcdef012345", "05f9f9e12c"]


def test_quoted_printable_plus_minus() -> None:
    record = record_of(MAIL / "edge/qp-plusminus.eml")
    row = next(item for item in record["metrics"] if item["name"] == "stress-ng.rename.ops_per_sec")
    assert (row["base"], row["base_stddev_percent"], row["head"], row["head_stddev_percent"]) == (47243, 3, 41952, 4)
    assert record["commits"][0]["subject"] == "ext4: serialize cross-directory renames on a per-superblock mutex"


def test_wrapped_command_lines_are_joined() -> None:
    record = record_of(MAIL / "edge/wrapped-fio-command.eml")
    assert commands(record) == [
        ("fio", "fio --name=seqwrite --filename=/mnt/scratch/fio.dat --rw=write --bs=128k --size=32G "
                "--ioengine=io_uring --iodepth=32 --direct=1 --numjobs=1 --runtime=120 --time_based "
                "--group_reporting", False),
        ("sysbench", "sysbench fileio --file-total-size=32G --file-num=64 --file-test-mode=seqwr "
                     "--file-block-size=131072 --file-extra-flags=direct --threads=1 --time=120 run", False)]
    assert record["kernel_config"] == {"CONFIG_PREEMPT": "y", "CONFIG_HZ_1000": "y"}


def test_prose_mention_of_a_program_is_no_command() -> None:
    record = record_of(MAIL / "edge/no-charset.eml")
    assert commands(record) == [("perf-bench", "perf bench sched messaging -g 20 -l 5000", False)]


def test_commands_only_in_quotes_are_marked_quoted() -> None:
    fs_mark = "fs_mark -d /mnt/scratch/fsmark -D 16 -N 256 -n 4096 -s 8192 -L 4 -S 1 -t 32"
    assert commands(record_of(MAIL / "reply/can-reproduce.eml")) == [("fs_mark", fs_mark, True)]
    fio = ("fio --name=seqread --filename=/mnt/ext4/fio.dat --rw=read --bs=1M --size=16G --numjobs=4 "
           "--ioengine=psync --invalidate=1 --group_reporting")
    assert commands(record_of(MAIL / "reply/cannot-reproduce.eml")) == [("fio", fio, True)]
    assert commands(record_of(MAIL / "edge/base64-body.eml")) == [("fio", fio, False)]


def test_charset_fallbacks() -> None:
    latin = record_of(MAIL / "edge/latin1-declared-utf8.eml")
    assert any("read as cp1252" in defect for defect in latin["defects"])
    assert "\ufffd" not in json.dumps(latin, ensure_ascii=False)
    assert latin["test_machine"]["description"].count("préprod") == 1
    plain = record_of(MAIL / "edge/no-charset.eml")
    assert plain["defects"] == [] and any(number["unit"] == "µs" for number in plain["prose_numbers"])


def test_folded_headers_and_encoded_words() -> None:
    record = record_of(MAIL / "edge/folded-subject.eml")
    assert record["subject"] == ("[REGRESSION] xfs: kernel tree untar about 44% slower on v6.9-rc3 than on "
                                 "v6.8, bisected to a change in inode timestamp logging")
    assert record["from"] == "Jörg Schröder <joerg.schroeder@example.de>"


def test_bisect_names_one_culprit_with_its_full_sha() -> None:
    record = record_of(MAIL / "human/bisected-fsmark.eml")
    roles = [(commit["sha"], commit["role"]) for commit in record["commits"]]
    assert roles == [("9f7338407ba9", "fix"), ("6e1983a3eb3cc196a203ad2782a5a971d4f16dd3", "culprit"),
                     ("e186e35a4076", "mentioned"), ("86f8a109f691ecaeb454604cdcf93be8b6bb93de", "mentioned"),
                     ("f9f48f211f722a03b59544ad3b1a4768cb2e81d3", "mentioned")]


def test_functional_report_failures_and_no_register_commits() -> None:
    record = record_of(MAIL / "lkp/functional-warning.eml")
    assert [(row["name"], row["base_fail"], row["base_runs"], row["head_fail"], row["head_runs"])
            for row in record["failures"]] == [
        ("dmesg.RIP:iomap_writepage_map_blocks", 0, 6, 6, 6),
        ("dmesg.WARNING:at_fs/iomap/buffered-io.c:#iomap_writepage_map_blocks", 0, 6, 6, 6),
        ("xfstests.generic.476.fail", 0, 6, 4, 6)]
    assert len(record["commits"]) == 2


def test_openwall_pages() -> None:
    with_id = record_of(MAIL / "openwall/with-message-id.html")
    assert with_id["from"] == "kernel test robot <oliver.sang@...el.com>"
    assert with_id["thread_links"]["thread-prev"] == "../01/5"
    assert [item["name"] for item in with_id["attachments"]] == [
        "config-5.17.0-rc4-00015-ga257e3440db0", "job-script", "job.yaml", "reproduce"]
    assert commands(with_id) == [("lkp-job", "sudo bin/lkp run generated-yaml-file", False)]
    without_id = record_of(MAIL / "openwall/without-message-id.html")
    assert without_id["message_id"] is None and without_id["date"] == "2020-09-22T10:47:03+08:00"
    assert any("deduplicated by date, subject and sender" in defect for defect in without_id["defects"])


def test_improvement_also_impacted_box() -> None:
    record = record_of(MAIL / "lkp/improvement-2024.eml")
    assert record["headline"] == {"metric": "fsmark.files_per_sec", "change_percent": 12.3, "direction": "improvement"}
    assert [(item["testcase"], item["change"], len(item["parameters"])) for item in record["also_impacted"]] == [
        ("fsmark", "fsmark.files_per_sec 9.1% improvement", 10),
        ("stress-ng", "stress-ng.fsync.ops_per_sec 21.4% improvement", 6)]


@pytest.mark.parametrize("path", MESSAGES, ids=lambda path: str(path.relative_to(MAIL)))
def test_mail_fixture_golden(path, update_golden: bool) -> None:
    record = golden_form(record_of(path))
    golden = path.with_suffix(".expected.json")
    check_golden(record, golden, path.name, update_golden)
