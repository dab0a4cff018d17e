"""Forms of people's mail issue 38 names, each read as the development messages it was written from
write it (bench/README.md lists which of the issue's forms were found in the development sets and
the corpus, and which were not and are therefore not read)."""
from __future__ import annotations

import pytest

from triagebot.parse.classify import _tied_to_change
from triagebot.parse.patch_reports import FIGURE
from triagebot.parse.prose import numbers
from triagebot.parse.report import parse_message
from triagebot.records.report import Source


@pytest.mark.parametrize(("text", "value", "unit"), [
    ("write 3.0M IOPS, read 2.9M IOPS", 3.0e6, "IOPS"),  # the issue
    ("fio rw=read @ ~120K IOPS", 120e3, "IOPS"),  # dev6 replies 107
    ("its capabilities of 3500MB/s & 840K IOPS", 3500.0, "MB/s"),  # dev6:7 (the first value of two)
    ("36 KiB written, 12.2 k iops, 47.6 MiB/s", 12.2e3, "iops"),  # dev6:9
    ("4.18: 288k IOPS 5.10: 234k IOPS", 288e3, "IOPS"),  # linux-ext4 2024
    ("rb-libbpf nr_prod 1 13.070 M/s", 13.07, "M/s"),  # dev7:13
    ("Disk: 960GB SSD (~500M/s)", 500.0, "M/s"),  # dev7:40
    ("it went from 60G/s down to 12G/s", 60.0, "G/s"),  # the issue
])
def test_a_count_with_its_scale_is_a_number_with_a_unit(text: str, value: float, unit: str) -> None:
    first = numbers(text)[0]
    assert (first.value, first.unit) == (value, unit)
    assert FIGURE.search(text)  # and a figure of a slowdown stated near it


@pytest.mark.parametrize("text", ["roughly 10 times slower", "about 20x slower", "~10 times longer",
                                  "nearly 3x slower performance", "a ~3x increase in the time needed"])
def test_a_multiplier_is_a_figure(text: str) -> None:  # dev7:30, dev:40, the issue, dev6:4, dev5:7
    assert FIGURE.search(text)


def test_a_stable_series_named_as_one_is_a_kernel_to_compare() -> None:
    # "isn't present in 5.2 series or 4.19 series kernels" (dev:59), "3.10 series / 4.18 series" (the issue)
    assert _tied_to_change("Slow fsync", "fsync: 4.18 series 40 ms, 3.10 series 4 ms.")
    assert not _tied_to_change("Slow fsync", "fsync takes 40 ms on our box.")


def _mail(attachment_name: str, content_type: str, payload: str) -> bytes:
    return f"""From: Lena Quist <lena@example.org>
To: linux-ext4@vger.kernel.org
Subject: Re: [PATCH v2 0/3] ext4: batch the journal commits
Date: Tue, 16 Apr 2024 09:12:00 +0000
Message-ID: <script@example.org>
In-Reply-To: <series@example.org>
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="b"

--b
Content-Type: text/plain; charset=utf-8

With this series my fsync test is 30% slower (410 ms against 315 ms); the script is attached.

--b
Content-Type: {content_type}; name="{attachment_name}"
Content-Disposition: attachment; filename="{attachment_name}"

{payload}
--b--
""".encode()


def test_an_attached_test_script_is_a_reproducer() -> None:
    # "dsync_test.sh" (dev2 replies 50), "test-tlb-range-perf.c" (dev7:60), "godown.c" (dev:26)
    script = "#!/bin/sh\nfor i in $(seq 100); do dd if=/dev/zero of=f bs=4k count=1 oflag=dsync; done\n"
    report = parse_message(_mail("dsync_test.sh", "text/x-sh", script), Source("eml"))
    assert report.kind == "patch-regression"
    [attached] = [item for item in report.reproducers if item.kind == "script"]
    assert attached.url == "attachment:dsync_test.sh"
    assert attached.content is not None and "oflag=dsync" in attached.content
    # a binary part keeps its name, without text; a patch or a log is no reproducer
    binary = parse_message(_mail("godown.c", "application/octet-stream", "aGVsbG8="), Source("eml"))
    assert [item.url for item in binary.reproducers if item.kind == "script"] == ["attachment:godown.c"]
    log = parse_message(_mail("dmesg.txt", "text/plain", "[    0.0] Linux version"), Source("eml"))
    assert not [item for item in log.reproducers if item.kind == "script"]
