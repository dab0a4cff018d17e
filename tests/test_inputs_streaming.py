"""Reading inputs as streams (issue 13, finding 7): a gzip bomb stops at its cap, an oversized
message inside an mbox is that message's error line, and memory holds about one message."""
from __future__ import annotations

import gzip
import itertools
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from triagebot.errors import InputError
from triagebot.ingest import inputs

SEPARATOR = b"From someone@example.org Mon Dec  2 10:00:00 2024\n"


def _message(index: int, body: bytes = b"fio randwrite dropped 20% here.") -> bytes:
    return (b"From: Someone <s%d@example.org>\nMessage-ID: <m%d@example.org>\nSubject: note %d\n\n"
            % (index, index, index)) + body + b"\n"


def _mbox(*messages: bytes) -> bytes:
    return b"".join(SEPARATOR + message + b"\n" for message in messages)


# `triage parse` that ends by writing its own peak RSS (KiB) as the last line of its stderr.
# The peak is VmHWM, this process's own high-water mark: getrusage's ru_maxrss carries over
# the forking parent's size across exec (a pytest that loaded spaCy and matplotlib is 400 MB).
_MEASURED_PARSE = (
    "import re, sys\n"
    "from triagebot.cli.main import main\n"
    "code = main(['parse', *sys.argv[1:]])\n"
    "status = open('/proc/self/status').read()\n"
    "print(re.search(r'VmHWM:\\s*(\\d+) kB', status).group(1), file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _triage_parse(*arguments: str) -> tuple[subprocess.CompletedProcess, int]:
    """`triage parse ARGUMENTS` in a child process: the result (its own stderr lines) and its peak RSS in KiB."""
    result = subprocess.run([sys.executable, "-c", _MEASURED_PARSE, *arguments], cwd=PROJECT, capture_output=True,
                            env={**os.environ, "PYTHONPATH": str(PROJECT)}, timeout=300)  # a hang guard only
    *errors, peak = result.stderr.decode().splitlines()
    result.stderr = "".join(line + "\n" for line in errors).encode()
    return result, int(peak)


def test_the_stream_split_equals_the_whole_split_at_any_block_size() -> None:
    data = (b"preamble text\n\n" + _mbox(_message(1), _message(2, b">From quoted\nFrom the text\n"),
                                       _message(3)) + b"From not a separator\n" + SEPARATOR + b"\n\n" + SEPARATOR)
    whole = inputs.split_mbox(data)
    assert len(whole) == 4  # the preamble, three messages; blank ones are none
    for size in (1, 5, 6, 7, 64, 199, 200, 201, len(data)):
        blocks = [data[start:start + size] for start in range(0, len(data), size)]
        pieces = [inputs.message_of(piece) for piece in inputs.message_chunks(blocks)]
        assert [piece for piece in pieces if piece is not None] == whole, size


def test_the_split_gives_the_first_message_before_the_stream_ends() -> None:
    endless = itertools.chain([SEPARATOR + _message(1), SEPARATOR + _message(2)],
                              itertools.repeat(SEPARATOR + _message(3)))
    pieces = inputs.message_chunks(endless)
    assert inputs.message_of(next(pieces)) == _message(1)
    assert inputs.message_of(next(pieces)) == _message(2)


def test_an_oversized_message_in_an_mbox_is_its_own_error_and_the_rest_are_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inputs, "MAX_MESSAGE_BYTES", 10_000)
    monkeypatch.setattr(inputs, "READ_BLOCK", 1000)
    path = tmp_path / "list.mbox"
    path.write_bytes(_mbox(_message(1), _message(2, b"x" * 50_000), _message(3)))
    entries = list(inputs.iter_inputs(str(path)))
    assert [(entry.name, entry.raw is None) for entry in entries] == [
        (f"{path}#1", False), (f"{path}#2", True), (f"{path}#3", False)]
    assert entries[1].error == "message of 0 MiB, larger than the 0 MiB a single message may be"
    assert entries[2].raw == _message(3) + b"\n"


def test_a_gzip_bomb_stops_at_the_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inputs, "GZIP_RATIO_FROM", 100_000)
    monkeypatch.setattr(inputs, "READ_BLOCK", 1000)
    path = tmp_path / "t.mbox.gz"
    path.write_bytes(gzip.compress(_mbox(_message(1), _message(2, b"\0" * 10_000_000), _message(3))))
    compressed = path.stat().st_size
    names = []
    with pytest.raises(InputError, match=rf"gzip data inflates past {100 * compressed} bytes "
                                         rf"\({compressed} compressed\): the rest not read"):
        for entry in inputs.iter_inputs(str(path)):
            names.append(entry.name)
    assert names == [f"{path}#1"]


def test_damaged_gzip_is_one_line_after_the_messages_before_it(tmp_path: Path) -> None:
    path = tmp_path / "t.mbox.gz"
    # 3 MB inflated, cut in half: more than the first block of inflated data is whole.
    whole = gzip.compress(_mbox(*(_message(index, os.urandom(3000).hex().encode()) for index in range(500))))
    path.write_bytes(whole[:len(whole) // 2])
    result, _ = _triage_parse("--json", "--jobs", "1", str(path))
    assert result.returncode == 1
    assert result.stdout.count(b"\n") > 100
    assert result.stderr.decode().splitlines() == [
        f"triage parse: {path}: damaged gzip data (Compressed file ended before the end-of-stream marker was reached)"]


def _gzip_bomb(path: Path, inflated: int) -> None:
    """An mbox.gz: two messages, one of `inflated` bytes of "x" lines, one more; written as a stream."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: gzip framing
    block = b"x" * 1023 + b"\n"
    with path.open("wb") as out:
        out.write(compressor.compress(_mbox(_message(1)) + SEPARATOR + _message(2)))
        chunk = block * 1024
        for _ in range(inflated // len(chunk)):
            out.write(compressor.compress(chunk))
        out.write(compressor.compress(b"\n" + _mbox(_message(3))))
        out.write(compressor.flush())


def test_triage_parse_of_a_1_gib_gzip_bomb_stays_small(tmp_path: Path) -> None:
    path = tmp_path / "bomb.mbox.gz"
    _gzip_bomb(path, 1024 ** 3)
    assert path.stat().st_size < 3 * 1024 * 1024
    result, peak_kib = _triage_parse("--json", "--jobs", "1", str(path))
    assert result.returncode == 1
    assert result.stdout.count(b"\n") == 1  # the message before the bomb
    errors = result.stderr.decode().splitlines()
    assert len(errors) == 1 and "gzip data inflates past" in errors[0], errors
    assert peak_kib < 300 * 1024  # was 5.3 GB: the whole inflated file in memory


def test_triage_parse_of_an_mbox_with_an_oversized_message_prints_the_others(tmp_path: Path) -> None:
    path = tmp_path / "list.mbox"
    with path.open("wb") as out:
        out.write(_mbox(_message(1)) + SEPARATOR + _message(2))
        line = b"y" * 1023 + b"\n"
        for _ in range(inputs.MAX_MESSAGE_BYTES // (len(line) * 1024) + 8):
            out.write(line * 1024)
        out.write(b"\n" + _mbox(_message(3)))
    result, peak_kib = _triage_parse("--json", "--jobs", "1", str(path))
    assert result.returncode == 1
    assert result.stdout.count(b"\n") == 2
    assert result.stderr.decode().splitlines() == [
        f"triage parse: {path}#2: message of 72 MiB, larger than the 64 MiB a single message may be"]
    assert peak_kib < 300 * 1024
