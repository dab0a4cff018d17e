"""Mutated corpus messages never make an exception escape the parser (hypothesis)."""
from __future__ import annotations

import datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import CORPUS
from triagebot.errors import MessageError
from triagebot.parse.report import parse_message
from triagebot.records import Source, report_to_json

SAMPLES = sorted(CORPUS.glob("*")) if CORPUS.is_dir() else []


@st.composite
def mutated_message(draw: st.DrawFn) -> bytes:
    raw = SAMPLES[draw(st.integers(0, len(SAMPLES) - 1))].read_bytes()
    for _ in range(draw(st.integers(1, 6))):
        choice = draw(st.sampled_from(["flip", "cut", "insert", "duplicate", "crlf"]))
        position = draw(st.integers(0, max(0, len(raw) - 1)))
        if choice == "flip" and raw:
            raw = raw[:position] + bytes([raw[position] ^ draw(st.integers(1, 255))]) + raw[position + 1:]
        elif choice == "cut":
            raw = raw[:position]
        elif choice == "insert":
            raw = raw[:position] + draw(st.binary(min_size=1, max_size=64)) + raw[position:]
        elif choice == "duplicate":
            raw = raw[:position] + raw[position:position + 4096] * 2 + raw[position + 4096:]
        else:
            raw = raw.replace(b"\n", b"\r\n")
    return raw


@pytest.mark.skipif(not SAMPLES, reason=f"the shared corpus is absent: {CORPUS} not found")
@settings(max_examples=150, deadline=datetime.timedelta(seconds=1),
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated_message())
def test_mutated_messages_parse_or_refuse_cleanly(raw: bytes) -> None:
    try:
        report = parse_message(raw, Source("eml"))
    except MessageError as error:
        assert str(error)  # refused with a reason, e.g. "empty input"
        return
    record = report_to_json(report)
    assert record["kind"] in ("lkp-regression", "lkp-improvement", "lkp-functional", "syzbot",
                              "human-report", "reply", "other")
