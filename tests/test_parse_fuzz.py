"""Mutated corpus messages never make an exception escape the parser (hypothesis).

Byte-level mutations (flip, cut, insert, duplicate, CRLF) are drawn here; the structural ones
(hostile charsets, 8-bit Content-Disposition, deep nesting, runs of spaces, `±` and digits,
table rows, huge headers, encoded-word floods, ...) are bench/fuzz.py's MUTATIONS, driven by a
seed hypothesis draws, so that the suite and the large benchmark try the same kinds. No
deadline: a per-example time limit would depend on the machine's load; hangs are what
tests/test_parse_linear.py guards against. Bounded for CI time by the number of examples.
"""
from __future__ import annotations

import importlib.util
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import CORPUS, PROJECT
from triagebot.errors import MessageError
from triagebot.parse.report import parse_message
from triagebot.records.report import KINDS as REPORT_KINDS
from triagebot.records.report import Source, report_to_json

SAMPLES = sorted(CORPUS.glob("*")) if CORPUS.is_dir() else []
_SPEC = importlib.util.spec_from_file_location("bench_fuzz", PROJECT / "bench" / "fuzz.py")
bench_fuzz = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench_fuzz)
KINDS = REPORT_KINDS  # the record contract's kinds (records/report.py): a mutation may give any of them


@st.composite
def mutated_message(draw: st.DrawFn) -> bytes:
    raw = SAMPLES[draw(st.integers(0, len(SAMPLES) - 1))].read_bytes()
    for _ in range(draw(st.integers(1, 4))):
        choice = draw(st.sampled_from(["flip", "cut", "insert", "duplicate", "crlf", "structural"]))
        position = draw(st.integers(0, max(0, len(raw) - 1)))
        if choice == "flip" and raw:
            raw = raw[:position] + bytes([raw[position] ^ draw(st.integers(1, 255))]) + raw[position + 1:]
        elif choice == "cut":
            raw = raw[:position]
        elif choice == "insert":
            raw = raw[:position] + draw(st.binary(min_size=1, max_size=64)) + raw[position:]
        elif choice == "duplicate":
            raw = raw[:position] + raw[position:position + 4096] * 2 + raw[position + 4096:]
        elif choice == "crlf":
            raw = raw.replace(b"\n", b"\r\n")
        else:
            name = draw(st.sampled_from(sorted(bench_fuzz.MUTATIONS)))
            raw = bench_fuzz.MUTATIONS[name](raw, random.Random(draw(st.integers(0, 2 ** 32))))
    return raw


def test_the_benchmark_names_at_least_twenty_kinds_of_mutation() -> None:
    assert len(bench_fuzz.MUTATIONS) >= 20


@pytest.mark.skipif(not SAMPLES, reason=f"the shared corpus is absent: {CORPUS} not found")
@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated_message())
def test_mutated_messages_parse_or_refuse_cleanly(raw: bytes) -> None:
    try:
        report = parse_message(raw, Source("eml"))
    except MessageError as error:
        assert str(error)  # refused with a reason, e.g. "empty input"
        return
    assert report_to_json(report)["kind"] in KINDS


@pytest.mark.skipif(not SAMPLES, reason=f"the shared corpus is absent: {CORPUS} not found")
@pytest.mark.parametrize("name", sorted(set(bench_fuzz.MUTATIONS) - set(bench_fuzz.ROUND_TWO)))
def test_each_structural_mutation_of_an_lkp_report_parses(name: str) -> None:
    raw = (CORPUS / "lkp-perf_xfs-fsmark-5.7pct.eml").read_bytes()
    for seed in range(2):
        mutated = bench_fuzz.MUTATIONS[name](raw, random.Random(seed))
        try:
            report = parse_message(mutated, Source("eml"))
        except MessageError:
            continue
        assert report_to_json(report)["kind"] in KINDS


# issue 21's shapes, three seeds each on an LKP report (a few seconds in all; bench/fuzz.py runs
# 10,000): the record is written as strict JSON (no Infinity) and planned or refused without an
# exception (no OverflowError)


@pytest.fixture(scope="module")
def templates():
    return bench_fuzz.packaged_templates()


@pytest.mark.skipif(not SAMPLES, reason=f"the shared corpus is absent: {CORPUS} not found")
@pytest.mark.parametrize("name", bench_fuzz.ROUND_TWO)
def test_round_two_shapes_are_read_written_and_planned(name: str, templates) -> None:
    raw = (CORPUS / "lkp-perf_xfs-fsmark-5.7pct.eml").read_bytes()
    outcomes = [bench_fuzz.read_and_plan(bench_fuzz.MUTATIONS[name](raw, random.Random(seed)), templates)
                for seed in range(3)]
    assert set(outcomes) <= {"ok", "clean error"} and "ok" in outcomes
