"""Table-driven unit tests of the pure parsers; each table runs again with CRLF endings."""
from __future__ import annotations

import pytest

from triagebot.parse.commits import find_commits
from triagebot.parse.message import decode_message
from triagebot.parse.metrics import parse_metric_row, parse_tables
from triagebot.parse.prose import kernel_config
from triagebot.parse.quoting import split_quotes
from triagebot.parse.reproducers import find_commands
from triagebot.parse.stance import read_stance

METRIC_ROWS = [
    # ± on the base only, positive percent change
    ("     37.99 ±  9%     +92.5%      73.13        fileio.latency_95th_ms",
     ("fileio.latency_95th_ms", 37.99, 9.0, 92.5, "percent", 73.13, None)),
    # perf-profile rows carry an absolute change
    ("      0.95 ± 15%      +0.3        1.26 ± 11%  perf-profile.calltrace.cycles-pp.x",
     ("perf-profile.calltrace.cycles-pp.x", 0.95, 15.0, 0.3, "absolute", 1.26, 11.0)),
    # exponent notation and a negative change
    (" 8.916e+08           -21.2%   1.08e+09        perf-stat.i.branch-instructions",
     ("perf-stat.i.branch-instructions", 8.916e8, None, -21.2, "percent", 1.08e9, None)),
    # stddev over 100%
    ("     16359 ± 24%     -78.0%       3597 ±167%  numa-numastat.node0.other_node",
     ("numa-numastat.node0.other_node", 16359.0, 24.0, -78.0, "percent", 3597.0, 167.0)),
]


@pytest.mark.parametrize("line,expected", METRIC_ROWS)
@pytest.mark.parametrize("ending", ["", "\r"])
def test_metric_row(line: str, expected: tuple, ending: str) -> None:
    row = parse_metric_row(line + ending)
    assert row is not None
    assert (row.name, row.base, row.base_stddev_percent, row.change, row.change_unit, row.head,
            row.head_stddev_percent) == expected


def test_table_stops_at_prose() -> None:
    lines = ["         %stddev     %change         %stddev", "             \\          |                \\  ",
             "     14349            -5.7%      13527        fsmark.files_per_sec",
             "", "Disclaimer: results are for reference 1 2 3 a"]
    metrics, failures = parse_tables(lines)
    assert [row.name for row in metrics] == ["fsmark.files_per_sec"] and not failures


def test_nested_quotes_and_attribution() -> None:
    text = ("On Tue, May 9, 2023 at 10:13AM, Someone wrote:\n> > we can reproduce it\n"
            "> I doubt it\n\nI could not reproduce this on my box.\n")
    split = split_quotes(text)
    assert split.max_depth == 2
    assert "we can reproduce it" in split.quoted
    assert "could not reproduce" in split.own and "wrote:" not in split.own


STANCES = [
    ("I could not reproduce this on my Xeon.", "not-reproduced"),
    ("I'm not seeing this on my i7-13700K: 954MB/s vs 932MB/s.", "not-reproduced"),
    ("I can reproduce this at will.", "reproduced"),
    ("we double confirmed the data is stable.", "reproduced"),
    ("Can you check whether you can reproduce it?", "none"),
    ("Thanks for the report.", "none"),
]


@pytest.mark.parametrize("text,stance", STANCES)
def test_stance(text: str, stance: str) -> None:
    assert read_stance(text).stance == stance


def test_commits_roles_and_noise() -> None:
    text = ("I bisected it to 37f4a24c2469 (\"blk-mq: centralise related handling\").\n"
            "Fixes: 244adf6426ee (\"ext4: make dioread_nolock the default\")\n"
            "index a0af833f7da7..6b34298cdc3b 100644\n"
            "RAX: ffffffffffffffda RBX: 00007fd618526090\n")
    commits = {commit.sha: commit.role for commit in find_commits(text)}
    assert commits == {"244adf6426ee": "fix", "37f4a24c2469": "culprit"}


def test_fio_continuations_joined() -> None:
    text = "fio --name=randwrite \\\n  --rw=randwrite --bs=4k \\\n  --size=1G\nthen we saw\n"
    commands = find_commands(text)
    assert [(c.kind, c.command) for c in commands] == [
        ("fio", "fio --name=randwrite --rw=randwrite --bs=4k --size=1G")]


def test_kernel_config_lines() -> None:
    assert kernel_config("CONFIG_XFS_DEBUG=y\n# CONFIG_KASAN is not set\n") == {
        "CONFIG_KASAN": "n", "CONFIG_XFS_DEBUG": "y"}


def test_quoted_printable_plus_minus_and_crlf() -> None:
    raw = (b"From: a@b.c\r\nSubject: x\r\nMessage-ID: <m@x>\r\nMIME-Version: 1.0\r\n"
           b"Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n"
           b"     37.99 =C2=B1  9%     +92.5%      73.13        fileio.latency=\r\n_95th_ms\r\n")
    message = decode_message(raw)
    assert "37.99 ±  9%" in message.body and "fileio.latency_95th_ms" in message.body
    assert "\r" not in message.body


def test_wrapped_attribution_and_false_attribution() -> None:
    text = ("Hi,\nOn Sun, Oct 30, 2016 at 01:25:50PM -0700, Linus Torvalds\nwrote:\n> a\n> > b\n"
            "mine\nJohn wrote:\n>c\nnot an attribution wrote:\nx\n")
    split = split_quotes(text)
    assert split.own == "Hi,\nmine\nnot an attribution wrote:\nx\n"
    assert split.attributions == ("On Sun, Oct 30, 2016 at 01:25:50PM -0700, Linus Torvalds wrote:",
                                  "John wrote:")
    assert split.quoted == "a\nb\nc"


def test_split_mbox_unquotes_from_lines() -> None:
    from triagebot.ingest.inputs import split_mbox

    data = (b"From a@b Thu Jan  1 00:00:00 1970\nSubject: 1\n\n>From here on\n>>From x\n\n"
            b"From b@c Thu Jan  1 00:00:00 1970\nSubject: 2\n\nFrom the text, not a separator\n")
    assert split_mbox(data) == [b"Subject: 1\n\nFrom here on\n>From x\n\n",
                                b"Subject: 2\n\nFrom the text, not a separator\n"]


def test_plain_patch_is_decided_cheaply() -> None:
    from triagebot.parse.classify import is_plain_patch

    assert is_plain_patch("[PATCH v2 3/7] ext4: tidy up")
    assert not is_plain_patch("Re: [PATCH v2 3/7] ext4: tidy up")
    # a patch is `other` even when it answers a regression (design/record.md): decided cheaply too
    assert is_plain_patch("[PATCH 0/1] iomap regression for aio dio 4k writes")


def test_command_wrapped_by_a_mail_client_without_backslash() -> None:
    text = ("[root@box ~]# fio --name=t --rw=read --bs=256k\n"
            "--filename=/mnt/f --direct=1 --iodepth=64\n"
            "test: (g=0): rw=read, bs=(R) 256KiB\n")
    [command] = find_commands(text)
    assert command.command == "fio --name=t --rw=read --bs=256k --filename=/mnt/f --direct=1 --iodepth=64"


def test_tracked_down_to_a_commit_is_a_culprit() -> None:
    [commit] = find_commits('Eventually I have tracked down the problem to commit bad77c375e8d ("xfs: x").')
    assert (commit.sha, commit.role) == ("bad77c375e8d", "culprit")


@pytest.mark.parametrize("encoding, body", [("7bit", b"fio read: 412 MiB/s on 6.6, 298 MiB/s on 6.8\n"),
                                            ("quoted-printable", b"fio read: 412 MiB/s on 6.6, 298 MiB/=\n"
                                                                 b"s on 6.8\n")])
@pytest.mark.parametrize("named", ['; name="numbers.txt"', ""])
def test_a_one_part_text_mail_with_a_file_name_is_its_body_whatever_its_encoding(encoding: str, body: bytes,
                                                                                 named: str) -> None:
    """7bit mail is read by the fast path, quoted-printable by the stdlib's parser: both give the
    text as the body (the stdlib path made it an attachment, leaving the body empty)."""
    raw = (b"From: a@b.c\nSubject: slower reads\nMessage-ID: <one-part@x>\nMIME-Version: 1.0\n"
           b"Content-Type: text/plain; charset=utf-8" + named.encode() + b"\n"
           b"Content-Disposition: inline; filename=\"numbers.txt\"\n"
           b"Content-Transfer-Encoding: " + encoding.encode() + b"\n\n" + body)
    message = decode_message(raw)
    assert message.body == "fio read: 412 MiB/s on 6.6, 298 MiB/s on 6.8\n"
    assert message.attachments == ()
