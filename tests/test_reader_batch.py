"""The batch parse with one spaCy reader process: same records as an in-process parse, in order."""
from __future__ import annotations

import json
import pickle
import subprocess
import sys

import pytest

from triagebot.ingest import batch
from triagebot.parse import language
from triagebot.parse.draft import complete, read_language
from triagebot.parse.report import parse_message, read_message
from triagebot.records.report import Source, report_to_json

REPLIES = [
    "I can reproduce this on my machine: 41 s against 29 s.",
    "I could not reproduce it here, the numbers are the same on my box.",
    "Could you please share the kernel config? This looks like lockdep enabled.",
    "Thanks, I will look at it next week.",
    "The bisection is wrong, the commit only touches comments. Patch below.\n\ndiff --git a/x b/x\n",
    "I'll see if I can reproduce it. Can you reproduce it with CONFIG_KASAN off?",
]


def _message(index: int) -> bytes:
    reply = index % 7 != 6  # every seventh message is a new report, not read by spaCy
    subject = ("Re: " if reply else "") + f"[ext4] fio regression number {index}"
    body = REPLIES[index % len(REPLIES)] if reply else "fio randwrite dropped 20% after commit 1234567abcdef."
    return (f"From: Someone {index} <someone{index}@example.org>\n"
            f"Date: Mon, 2 Dec 2024 10:{index % 60:02d}:00 +0000\n"
            f"Message-ID: <m{index}@example.org>\n"
            f"Subject: {subject}\n\n{body}\n\nThanks,\nSomeone\n").encode()


def _messages(count: int) -> list[tuple[str, str, bytes, str | None]]:
    return [(f"batch#{index}", "mbox", _message(index), None) for index in range(count)]


def _render(report) -> str:
    return json.dumps(report_to_json(report), ensure_ascii=False)


def _python(script: str, *arguments: str) -> subprocess.CompletedProcess:
    """SCRIPT run by a fresh interpreter (spaCy not loaded yet), its output captured."""
    return subprocess.run([sys.executable, "-c", script, *arguments], capture_output=True, text=True, check=False,
                          timeout=300)


def _parse_in_process(messages):
    return [(outcome.name, outcome.output, outcome.error) for outcome in batch.parse_messages(messages, _render, 1)]


@pytest.mark.skipif(sys.platform != "linux", reason="the batch forks workers on Linux")
def test_workers_and_one_reader_give_the_in_process_records_in_order() -> None:
    messages = _messages(batch.PARALLEL_FROM + 57)
    expected = _parse_in_process(messages)
    assert any('"stance": "reproduced"' in output for _, output, _ in expected)
    assert any('"more-data"' in output for _, output, _ in expected)
    got = [(outcome.name, outcome.output, outcome.error, outcome.pending)
           for outcome in batch.parse_messages(messages, _render, 2)]
    assert [item[:3] for item in got] == expected
    assert all(item[3] is None for item in got)  # nothing left unread


def test_the_parallel_parse_runs_in_a_fresh_process_without_spacy_in_the_workers() -> None:
    # In a fresh interpreter (spaCy not loaded yet): workers defer, one reader reads.
    script = (
        "import json, sys\n"
        "from tests.test_reader_batch import _messages, _render\n"
        "from triagebot.ingest import batch\n"
        "chunk = batch._parse_chunk\n"
        "def spy(bounds):\n"
        "    outcomes = chunk(bounds)\n"
        "    assert 'spacy' not in sys.modules, 'a worker loaded spaCy'\n"
        "    return outcomes\n"
        "batch._parse_chunk = spy\n"
        "outputs = [o.output for o in batch.parse_messages(_messages(batch.PARALLEL_FROM + 10), _render, 2)]\n"
        "assert 'spacy' not in sys.modules, 'the parent loaded spaCy'\n"
        "print(json.dumps(outputs))\n"
    )
    child = _python(script)
    assert child.returncode == 0, child.stderr[-2000:]
    assert json.loads(child.stdout) == [output for _, output, _ in
                                        _parse_in_process(_messages(batch.PARALLEL_FROM + 10))]


def test_warm_readers_parse_the_same_records() -> None:
    messages = _messages(batch.PARALLEL_FROM + 3)
    got = [(o.name, o.output, o.error) for o in batch.parse_messages(messages, _render, 2, warm_readers=True)]
    assert got == _parse_in_process(messages)


def test_a_draft_completed_by_a_reader_in_another_process_is_the_parsed_record() -> None:
    # What a worker hands back crosses a pipe (pickled) and is read by another process's spaCy.
    drafts = [read_message(_message(index), Source("mbox")) for index in range(len(REPLIES) + 1)]
    needing = [draft for draft in drafts if draft.request is not None]
    assert len(needing) == len(REPLIES) - 1  # the new report and the thanks have nothing for spaCy
    assert all(draft.report.stance == "none" for draft in needing)  # not read yet
    script = (
        "import pickle, sys\n"
        "from triagebot.parse.draft import read_language\n"
        "requests = pickle.load(sys.stdin.buffer)\n"
        "sys.stdout.buffer.write(pickle.dumps([read_language(request) for request in requests]))\n"
    )
    child = subprocess.run([sys.executable, "-c", script], input=pickle.dumps([d.request for d in needing]),
                           capture_output=True, check=False, timeout=300)
    assert child.returncode == 0, child.stderr[-2000:]
    answers = iter(pickle.loads(child.stdout))
    for index, draft in enumerate(drafts):
        record = parse_message(_message(index), Source("mbox"))
        if draft.request is None:
            assert draft.report == record
            continue
        answer = next(answers)
        assert complete(draft, lambda request, answer=answer: answer) == record == complete(draft, read_language)
    assert {record.stance for record in (parse_message(_message(i), Source("mbox")) for i in range(6))} == {
        "reproduced", "not-reproduced", "none"}


def test_spacy_imported_for_reading_is_the_whole_of_spacy_afterwards() -> None:
    script = (
        "import sys\n"
        "from triagebot.ingest import batch\n"
        "from triagebot.parse import stance\n"
        "batch.import_spacy_for_reading()\n"
        "assert 'spacy' in sys.modules and 'spacy.cli' not in sys.modules\n"
        "print(stance.read_stance('I can reproduce this on my machine.').stance)\n"
        "import spacy.cli\n"
        "assert hasattr(spacy.cli, 'download')\n"
    )
    child = _python(script)
    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stdout.strip() == "reproduced"


def test_one_sentence_shortcut_agrees_with_the_sentencizer() -> None:
    nlp = language.pipeline()
    texts = ['He said "hello."', "Is it?!", "ok...", "See https://x.org/a.b.", "a. b", "Done!)", "...",
             "I can reproduce (on my box).", "x ?", "foo .bar.", "v6.8 is slower.", "e.g. this one.",
             "I can't reproduce it. Can you?", "No regression here", "Please send the config \u0964 thanks."]
    for text in texts:
        if language.one_sentence(text):
            assert len(list(nlp(text).sents)) == 1, text
    assert language.one_sentence("I can reproduce this on my machine.")
    assert not language.one_sentence("I can reproduce it. Can you?")


def test_likely_parallel_guesses_from_the_file_size(tmp_path) -> None:
    small = tmp_path / "small.mbox"
    small.write_bytes(b"x" * (batch.PARALLEL_FILE_BYTES - 1))
    big = tmp_path / "big.mbox"
    big.write_bytes(b"x" * batch.PARALLEL_FILE_BYTES)
    packed = tmp_path / "year.mbox.gz"
    packed.write_bytes(b"x" * batch.PARALLEL_GZIP_BYTES)
    assert [batch.likely_parallel(str(path)) for path in (small, big, packed)] == [False, True, True]
    assert not batch.likely_parallel("-")  # standard input: its size is unknown
    assert not batch.likely_parallel(str(tmp_path / "missing.mbox"))  # the reading will name it


def _write_mbox(path, messages: list[bytes]) -> None:
    with path.open("wb") as out:
        for raw in messages:
            out.write(b"From someone@example.org Mon Dec  2 10:00:00 2024\n" + raw + b"\n")


def _triage_parse(*arguments: str) -> subprocess.CompletedProcess:
    # The spy records, in order, when the reader process starts and when the input is read.
    script = (
        "import json, sys\n"
        "import triagebot.cli.parse as cli\n"
        "from triagebot.cli.main import main\n"
        "events = []\n"
        "start, read = cli.Reader.start, cli.iter_inputs\n"
        "def spy_start(self):\n"
        "    events.append('reader started'); return start(self)\n"
        "def spy_read(path):\n"
        "    events.append('input read'); return read(path)\n"
        "cli.Reader.start, cli.iter_inputs = spy_start, spy_read\n"
        "code = main(sys.argv[1:])\n"
        "print('EVENTS', json.dumps(events), file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    return _python(script, *arguments)


def _events(child: subprocess.CompletedProcess) -> list[str]:
    line = next(line for line in child.stderr.splitlines() if line.startswith("EVENTS "))
    return json.loads(line[len("EVENTS "):])


def test_a_big_file_starts_the_reader_before_it_is_read_and_gives_the_same_records(tmp_path) -> None:
    count = batch.PARALLEL_FROM + 30
    padding = b"\n" + b"ok " * (batch.PARALLEL_FILE_BYTES // (3 * count))  # a big file, as a year is
    mbox = tmp_path / "year.mbox"
    _write_mbox(mbox, [_message(index).replace(b"\n\nThanks,", padding + b"\n\nThanks,") for index in range(count)])
    assert batch.likely_parallel(str(mbox))
    parallel = _triage_parse("parse", "--json", "--jobs", "2", str(mbox))
    assert parallel.returncode == 0, parallel.stderr[-2000:]
    assert _events(parallel)[:2] == ["reader started", "input read"]
    in_process = _triage_parse("parse", "--json", "--jobs", "1", str(mbox))
    assert _events(in_process) == ["input read"]  # one process: nothing to start a reader for
    assert parallel.stdout == in_process.stdout
    assert parallel.stdout.count('"stance": "reproduced"') == in_process.stdout.count("I can reproduce this") > 0


def test_a_reader_started_for_a_big_file_of_few_messages_is_stopped_unused(tmp_path) -> None:
    mbox = tmp_path / "few.mbox"
    log = b"log line\n" * (batch.PARALLEL_FILE_BYTES // 9)
    long_reply = _message(0).replace(b"\n\nThanks,", b"\n" + log + b"\nThanks,")
    _write_mbox(mbox, [long_reply, _message(1)])
    child = _triage_parse("parse", "--json", "--jobs", "2", str(mbox))
    assert child.returncode == 0, child.stderr[-2000:]
    assert _events(child) == ["reader started", "input read"]
    records = [json.loads(line) for line in child.stdout.splitlines()]
    assert [record["stance"] for record in records] == ["reproduced", "not-reproduced"]


def test_a_reader_that_cannot_load_spacy_fails_the_parse_instead_of_hanging() -> None:
    script = (
        "from tests.test_reader_batch import _messages, _render\n"
        "from triagebot.ingest import batch\n"
        "def broken():\n"
        "    raise ImportError('spaCy is broken here')\n"
        "batch.import_spacy_for_reading = broken\n"
        "list(batch.parse_messages(_messages(batch.PARALLEL_FROM + 10), _render, 2))\n"
    )
    child = _python(script)  # the timeout fails the test should the parse hang
    assert child.returncode == 1
    assert "ImportError: spaCy is broken here" in child.stderr
