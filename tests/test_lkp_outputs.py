"""The lkp-json parser on stats.json as lkp-tests writes it (its own spec fixtures), and on the
empty stats.json `lkp run` leaves when its benchmark produced nothing."""
from __future__ import annotations

import json
import tarfile

import pytest

from tests.conftest import SHARED
from triagebot.reproduce.outputs import OutputError, parse_output

SNAPSHOT = SHARED / "tools" / "lkp-tests.tar.gz"
FIXTURE = "lkp-tests/spec/fixtures/stats_part/result_root/stats_0.json"


def test_lkp_tests_own_stats_json_is_read_by_its_metric_names() -> None:
    if not SNAPSHOT.exists():
        pytest.skip(f"{SNAPSHOT} is absent (the shared lkp-tests snapshot)")
    with tarfile.open(SNAPSHOT) as archive:
        member = archive.extractfile(FIXTURE)
        assert member is not None
        data = member.read()
    expected = {name: float(value) for name, value in json.loads(data).items()}
    metrics = parse_output("lkp-json", b"lkp's own log, not JSON\n", {"/run/result/stats.json": data})
    assert metrics == expected and "mpstat.cpu.all.usr%" in metrics


def test_a_list_is_averaged_and_text_skipped() -> None:
    data = b'{"fio.write_iops": [10, 20], "fio.write_bw_MBps": 3.5, "stats_source": "/lkp/result/x/stats.json"}'
    assert parse_output("lkp-json", b"", {"stats.json": data}) == {"fio.write_iops": 15.0, "fio.write_bw_MBps": 3.5}


def test_an_empty_stats_json_says_the_benchmark_gave_nothing() -> None:
    with pytest.raises(OutputError, match="the benchmark under lkp gave no results"):
        parse_output("lkp-json", b"", {"/run/result/stats.json": b"{}\n"})
