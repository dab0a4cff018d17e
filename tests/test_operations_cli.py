"""Issue 17, part 2: `triage --version`, `triage list` saying what it left out and refusing a bad
--since in one line, and records without a Message-ID opened by the short key `list` prints."""
from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

import pytest

from tests.conftest import PROJECT
from triagebot.cli.list import parse_since
from triagebot.cli.main import main, version
from triagebot.errors import TriageError


def _triage(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli.main", *argv], cwd=PROJECT,
                          capture_output=True, text=True, timeout=120)


def _lkp(index: int, message_id: bool = True) -> bytes:
    header = f"Message-ID: <r{index}@example.org>\n" if message_id else ""
    return (f"From: kernel test robot <lkp@intel.com>\n{header}"
            f"Subject: [linux-next:master] [mm] abc{index:04d}: will-it-scale.per_process_ops "
            f"-1{index}.5% regression\nDate: Mon, {index + 1} Jul 2024 10:00:00 +0000\n\n"
            f"Hello,\n\nkernel test robot noticed a -1{index}.5% regression of "
            f"will-it-scale.per_process_ops on:\n").encode()


@pytest.fixture()
def database(tmp_path):
    for index in range(5):
        (tmp_path / f"m{index}.eml").write_bytes(_lkp(index, message_id=index != 2))
    db = tmp_path / "t.db"
    assert main(["ingest", "--db", str(db), *(str(tmp_path / f"m{i}.eml") for i in range(5))]) == 0
    return db


def test_version_prints_the_package_version():
    result = _triage("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"triage {version()}"
    assert version()[0].isdigit()


def test_list_says_how_many_more_past_the_limit(database, capsys):
    capsys.readouterr()
    assert main(["list", "--db", str(database), "--limit", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3
    assert lines[-1].startswith("(3 more, use --limit 5")
    assert main(["list", "--db", str(database), "--limit", "5"]) == 0
    assert "more, use --limit" not in capsys.readouterr().out


def test_bad_since_is_one_line_naming_value_and_forms(database):
    result = _triage("list", "--db", str(database), "--since", "someday")
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert "'someday'" in result.stderr and "YYYY-MM-DD" in result.stderr


def test_since_forms():
    now = datetime(2024, 7, 10, 15, 30, tzinfo=UTC)
    assert parse_since("yesterday", now) == datetime(2024, 7, 9, tzinfo=UTC)
    assert parse_since("today", now) == datetime(2024, 7, 10, tzinfo=UTC)
    assert parse_since("3d", now) == datetime(2024, 7, 7, tzinfo=UTC)
    assert parse_since("2024-07-04", now) == datetime(2024, 7, 4, tzinfo=UTC)
    assert parse_since("2024-07-04T12:00:00+02:00", now) == datetime(2024, 7, 4, 10, tzinfo=UTC)
    with pytest.raises(TriageError, match="'soon'"):
        parse_since("soon", now)


def test_since_filters(database, capsys):
    capsys.readouterr()
    assert main(["list", "--db", str(database), "--since", "2024-07-04"]) == 0
    assert [line[:10] for line in capsys.readouterr().out.splitlines()] == ["2024-07-05", "2024-07-04"]


def test_record_without_message_id_listed_by_short_key_and_shown_by_it(database, capsys):
    capsys.readouterr()
    assert main(["list", "--db", str(database), "--json"]) == 0
    import json
    stored = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    nameless = [record for record in stored if not record["message_id"]]
    assert len(nameless) == 1 and nameless[0]["stored_as"].endswith("@triagebot.invalid")
    full = nameless[0]["stored_as"]
    short = full[:len("sha256-") + 12]
    assert main(["list", "--db", str(database)]) == 0
    listing = capsys.readouterr().out
    assert f"<{short}>" in listing and "(no Message-ID)" not in listing
    for key in (short, full, full[:len("sha256-") + 6]):
        assert main(["show", "--db", str(database), key]) == 0, key
        shown = capsys.readouterr().out
        assert "abc0002" in shown and f"key {short})" in shown.splitlines()[0]
    assert main(["show", "--db", str(database), "sha256-zzzz"]) == 1


# what `triage status` must not load: each costs from 0.2 s (numpy) to 2.4 s (scipy, spaCy)
HEAVY = ("scipy", "numpy", "spacy", "matplotlib", "slack_sdk", "prometheus_client", "importlib.metadata")


@pytest.mark.parametrize("command", [["status"], ["list"], ["show", "r1@example.org"]])
def test_read_only_commands_do_not_import_the_heavy_libraries(database, command):
    rules = PROJECT / "rules"
    probe = ("import sys\nfrom triagebot.cli.main import main\n"
             f"code = main({command + ['--db', str(database)]!r}"
             f" + ({['--rules', str(rules)]!r} if {command[0]!r} == 'status' else []))\n"
             f"print(sorted(name for name in {HEAVY!r} if name in sys.modules))\n")
    result = subprocess.run([sys.executable, "-c", probe], cwd=PROJECT, capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "[]"
