"""Our output parsers against lkp-tests' own: the benchmark outputs of lkp-tests' spec/fixtures
(../shared/tools/lkp-tests.tar.gz, read in place, never copied) parsed by our parsers give the
values lkp-tests' programs/*/parse gives (the fixture's .yaml), under the names LKP reports use
(the report's metric is `<testcase>.<name>`), so a rerun compares the report's headline metric.
"""
from __future__ import annotations

import tarfile

import pytest

from tests.conftest import SHARED
from triagebot.reproduce.outputs import parse_output
from triagebot.reproduce.yaml_text import load_documents

SNAPSHOT = SHARED / "tools" / "lkp-tests.tar.gz"
FIXTURES = "lkp-tests/spec/fixtures/stats/"

# (fixture, our parser, our metric name, LKP's name in the fixture's .yaml)
CASES = [
    ("fsmark/1", "fs_mark-text", "fs_mark.files_per_sec", "files_per_sec"),
    ("fsmark/2", "fs_mark-text", "fs_mark.app_overhead_us", "app_overhead"),
    ("dbench/01", "dbench-text", "dbench.throughput_MB/s", "throughput_MB/s"),
    ("dbench/01", "dbench-text", "dbench.max_latency", "max_latency"),
    ("hackbench/hackbench", "hackbench-text", "hackbench.throughput", "throughput"),
    ("stress-ng/03", "stress-ng-yaml", "stress-ng.signest.ops_per_sec", "signest.ops_per_sec"),
    ("stress-ng/08", "stress-ng-yaml", "stress-ng.flock.ops_per_sec", "flock.ops_per_sec"),
    ("stress-ng/08", "stress-ng-yaml", "stress-ng.flock.ops", "flock.ops"),
]


@pytest.fixture(scope="module")
def fixtures() -> dict[str, bytes]:
    if not SNAPSHOT.is_file():
        pytest.skip(f"the lkp-tests snapshot is absent: {SNAPSHOT} not found (tests read it from ../shared)")
    wanted = {FIXTURES + name for name, *_ in CASES} | {FIXTURES + name + ".yaml" for name, *_ in CASES}
    found: dict[str, bytes] = {}
    with tarfile.open(SNAPSHOT) as archive:
        for member in archive:
            if member.name in wanted and member.isfile():
                handle = archive.extractfile(member)
                if handle is not None:
                    found[member.name[len(FIXTURES):]] = handle.read()
    return found


@pytest.mark.parametrize(("name", "parser", "ours", "theirs"), CASES, ids=[f"{c[0]}:{c[3]}" for c in CASES])
def test_our_parser_gives_lkp_tests_value(fixtures: dict[str, bytes], name: str, parser: str, ours: str,
                                          theirs: str) -> None:
    [expected] = load_documents(fixtures[name + ".yaml"].decode())
    value = float(expected[theirs])
    got = parse_output(parser, fixtures[name])[ours]
    assert got == pytest.approx(value, rel=1e-3), (name, got, value)
