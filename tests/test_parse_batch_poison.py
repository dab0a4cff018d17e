"""One message whose parse raises anything at all is that message's error: the batch goes on.

The parser is meant never to raise, but the batch must not depend on it (issue 13, finding 1:
one bad message stopped `triage parse` of a whole mbox). A parse is made to raise here for the
messages holding a marker, in process and in forked workers, and through `triage parse`.
"""
from __future__ import annotations

import json
import sys

import pytest

from triagebot.cli import parse as parse_command
from triagebot.cli.main import main
from triagebot.ingest import batch
from triagebot.parse.draft import LanguageAnswer, LanguageRequest
from triagebot.parse.stance import Stance
from triagebot.records.report import report_to_json

MARKER = b"POISON-PILL"


def _message(index: int, poison: bool = False) -> bytes:
    body = "fio randwrite dropped 20% here." + (MARKER.decode() if poison else "")
    return (f"From: Someone <s{index}@example.org>\nDate: Mon, 2 Dec 2024 10:00:00 +0000\n"
            f"Message-ID: <m{index}@example.org>\nSubject: [ext4] note {index}\n\n{body}\n").encode()


def _raising_parse(real):
    def parse(raw: bytes, source):
        if MARKER in raw:
            raise RecursionError("maximum recursion depth exceeded\nwhile decoding")
        return real(raw, source)
    return parse


@pytest.fixture
def poisoned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch, "parse_message", _raising_parse(batch.parse_message))  # in this process
    monkeypatch.setattr(batch, "read_message", _raising_parse(batch.read_message))  # workers' first pass


def _render(report) -> str:
    return json.dumps(report_to_json(report))


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_exception_in_one_parse_is_that_messages_error(poisoned: None, jobs: int) -> None:
    count = batch.PARALLEL_FROM + 20  # enough for forked workers when jobs > 1
    poison = {3, batch.CHUNK + 5, count - 1}
    messages = [(f"in#{index}", "mbox", _message(index, index in poison), None) for index in range(count)]
    outcomes = list(batch.parse_messages(messages, _render, jobs))
    assert [outcome.name for outcome in outcomes] == [name for name, *_ in messages]
    failed = {index for index, outcome in enumerate(outcomes) if outcome.error is not None}
    assert failed == poison
    error = outcomes[3].error
    assert error == "parser failed: RecursionError: maximum recursion depth exceeded while decoding"
    assert all(outcome.output for index, outcome in enumerate(outcomes) if index not in poison)


def test_a_render_that_raises_is_that_messages_error() -> None:
    def render(report):
        if report.message_id == "m1@example.org":
            raise ValueError("cannot render")
        return report.message_id
    messages = [(f"in#{index}", "eml", _message(index), None) for index in range(3)]
    outcomes = list(batch.parse_messages(messages, render, 1))
    assert [(outcome.output, outcome.error) for outcome in outcomes] == [
        ("m0@example.org", None), (None, "parser failed: ValueError: cannot render"), ("m2@example.org", None)]


def test_a_reader_answer_that_raised_is_that_messages_error(monkeypatch: pytest.MonkeyPatch) -> None:
    fine, boom = LanguageRequest(("fine.",)), LanguageRequest(("boom.",))
    said = LanguageAnswer(Stance("reproduced", "fine."), ())

    def read_language(request):
        if request == boom:
            raise KeyError("boom")
        return said
    monkeypatch.setattr(batch, "read_language", read_language)
    answers = batch.read_chunk([fine, boom])
    assert answers == [said, "parser failed: KeyError: 'boom'"]
    draft = batch.read_message(_message(1), batch.Source("eml"))
    pending = [batch.Outcome("a", None, None, batch.Draft(draft.report, fine)),
               batch.Outcome("b", None, None, batch.Draft(draft.report, boom))]
    completed = list(batch.completed_outcomes(pending, answers, lambda report: report.stance_evidence))
    assert [(item.name, item.output, item.error) for item in completed] == [
        ("a", "fine.", None), ("b", None, "parser failed: KeyError: 'boom'")]


def test_an_over_long_error_text_is_cut_to_one_short_line() -> None:
    text = batch.failure_text(ValueError("x\n" * 5000))
    assert "\n" not in text and len(text) < batch.MAX_ERROR_CHARS + 50


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_triage_parse_prints_every_other_record_and_exits_1(poisoned: None, jobs: str, tmp_path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    count = batch.PARALLEL_FROM + 50
    mbox = tmp_path / "list.mbox"
    with mbox.open("wb") as out:
        for index in range(count):
            out.write(b"From someone@example.org Mon Dec  2 10:00:00 2024\n" + _message(index, index == 7) + b"\n")
    code = main(["parse", "--json", "--jobs", jobs, str(mbox)])
    captured = capsys.readouterr()
    assert code == 1
    ids = [json.loads(line)["message_id"] for line in captured.out.splitlines()]
    assert ids == [f"m{index}@example.org" for index in range(count) if index != 7]
    assert captured.err.splitlines() == [
        f"triage parse: {mbox}#8: parser failed: RecursionError: maximum recursion depth exceeded while decoding"]


@pytest.mark.skipif(sys.platform != "linux", reason="chunks are parsed by forked workers on Linux")
def test_an_input_parsed_in_chunks_gives_the_same_records_in_order(tmp_path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    mbox = tmp_path / "list.mbox"
    with mbox.open("wb") as out:
        for index in range(25):
            out.write(b"From someone@example.org Mon Dec  2 10:00:00 2024\n" + _message(index) + b"\n")
    assert main(["parse", "--json", "--jobs", "1", str(mbox)]) == 0
    whole = capsys.readouterr().out
    monkeypatch.setattr(parse_command, "CHUNK_MESSAGES", 4)
    assert main(["parse", "--json", "--jobs", "1", str(mbox)]) == 0
    assert capsys.readouterr().out == whole
    monkeypatch.setattr(parse_command, "CHUNK_BYTES", 1)
    assert main(["parse", "--json", "--jobs", "1", str(mbox)]) == 0
    assert capsys.readouterr().out == whole
