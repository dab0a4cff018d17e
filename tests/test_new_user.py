"""What a new user hits at the command line and the database's edge: one line naming the place
and what is wrong, a non-zero exit, nothing half-written (issue 22 points 3-5, issue 21 point 7).

Read-only and full filesystems are real: a tmpfs mounted in a mount namespace of the test's own
(`unshare --mount`, root only; elsewhere those tests skip and say so), with triagebot run inside it.
"""
from __future__ import annotations

import os
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, PROJECT

LAB_REPORT = FIXTURES / "lab" / "sysbench-cpu-regression.eml"
LKP_MAIL = sorted((FIXTURES / "mail" / "lkp").glob("*.eml"))
TRIAGE = [sys.executable, "-m", "triagebot.cli"]

needs_namespaces = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("unshare"),
    reason="a read-only or full filesystem is a tmpfs mounted in a mount namespace: needs root and unshare")


def triage(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*TRIAGE, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          timeout=600, env=env, cwd=PROJECT)


def in_namespace(script: str) -> subprocess.CompletedProcess:
    """`script` (sh) in a mount namespace of its own: its mounts vanish with it."""
    return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600, cwd=PROJECT,
                          env={**os.environ, "PYTHONPATH": str(PROJECT)})


def command(*args: str | Path) -> str:
    return shlex.join([*TRIAGE, *(str(arg) for arg in args)])


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip() and not line.startswith("{")]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


# --- 22.3: where the database is -------------------------------------------------------------

def test_a_database_path_that_is_a_directory_says_so(tmp_path: Path) -> None:
    for name in ("list", "status", "ingest"):
        args = [name] + ([str(LAB_REPORT)] if name == "ingest" else [])
        result = triage(*args, env={**os.environ, "TRIAGE_DB": str(tmp_path)})
        assert result.returncode == 1
        assert one_line(result.stderr) == (f"triage {name}: database {tmp_path}: is a directory; give a file path, "
                                           f"such as {tmp_path / 'triage.db'}")


def test_a_database_folder_under_a_file_says_so(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    result = triage("ingest", "--db", str(tmp_path / "file" / "sub" / "t.db"), str(LAB_REPORT))
    assert result.returncode == 1
    assert one_line(result.stderr) == (f"triage ingest: database {tmp_path / 'file' / 'sub' / 't.db'}: "
                                       f"{tmp_path / 'file'} is a file, not a folder")


@needs_namespaces
def test_a_read_only_filesystem_serves_reads_and_refuses_writes_in_one_line(tmp_path: Path) -> None:
    place = tmp_path / "ro"
    place.mkdir()
    database = place / "t.db"
    result = in_namespace(f"""
        mount -t tmpfs -o size=8m tmpfs {place} || exit 99
        {command('ingest', '--db', database, *LKP_MAIL)} >/dev/null 2>&1 || exit 98
        mount -o remount,ro {place} || exit 97
        echo '== list'; {command('list', '--db', database, '--limit', '0')}; echo "rc=$?"
        echo '== show'; {command('show', '--db', database, '202407081422.9d3e6b57-oliver.sang@intel.com')} | head -1
        echo '== status'; {command('status', '--db', database)} | head -1
        echo '== ingest'; {command('ingest', '--db', database, LAB_REPORT)} 2>&1; echo "rc=$?"
        echo '== new'; {command('ingest', '--db', place / 'new' / 't.db', LAB_REPORT)} 2>&1; echo "rc=$?"
        echo '== daemon'; {command('daemon', '--once', '--log-format', 'text', '--db', place / 'new' / 't.db')} 2>&1 \
            | grep -v 'SLACK_BOT_TOKEN'; echo "rc=$?"
    """)
    assert result.returncode == 0, result.stdout + result.stderr
    parts = dict(part.split("\n", 1) for part in result.stdout.split("== ")[1:])
    assert parts["list"].count("<") == len(LKP_MAIL) and "rc=0" in parts["list"]
    assert parts["show"].startswith("lkp-improvement  202407081422.9d3e6b57-oliver.sang@intel.com")
    assert parts["status"].startswith(f"database: {database}")
    assert parts["ingest"].splitlines() == [
        f"triage ingest: {database}: the database is read-only here (on a read-only filesystem); this writes to it",
        "rc=1"]
    assert parts["new"].splitlines() == [
        f"triage ingest: database {place / 'new' / 't.db'}: cannot make its folder {place / 'new'}: "
        f"Read-only file system", "rc=1"]
    assert parts["daemon"].splitlines()[-2].endswith(f"cannot make its folder {place / 'new'}: Read-only file system")
    assert "Traceback" not in result.stdout + result.stderr


# --- 21.7: a damaged database, a full disk, Ctrl-C ----------------------------------------------

def test_a_damaged_database_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    database = tmp_path / "t.db"
    assert triage("ingest", "--db", str(database), *map(str, LKP_MAIL)).returncode == 0
    size = database.stat().st_size
    with open(database, "r+b") as damaged:  # pages overwritten, the header left alone
        for offset in range(2 * 4096, size, 3 * 4096):
            damaged.seek(offset)
            damaged.write(bytes(range(256)) * 8)
    for name in ("list", "status"):
        result = triage(name, "--db", str(database))
        assert result.returncode == 1
        assert one_line(result.stderr) == (f"triage {name}: database {database}: database disk image is malformed: "
                                           f"the file is damaged; restore it from a backup (or try "
                                           f"`sqlite3 FILE .recover`)")


def many_messages(path: Path, count: int) -> Path:
    """An mbox of `count` plain messages, ~9 KB each, of our own words."""
    words = ("fio", "ext4", "write", "latency", "page", "cache", "lock", "queue")
    with open(path, "w") as out:
        for index in range(count):
            body = "\n".join(" ".join(words[(index + line + word) % 8] for word in range(12)) for line in range(120))
            out.write(f"From t@example.org Mon Jan  1 00:00:00 2024\nFrom: Tester <t@example.org>\n"
                      f"Subject: note {index}\nDate: Mon, 1 Jan 2024 00:{index % 60:02d}:00 +0000\n"
                      f"Message-ID: <note-{index}@example.org>\n\n{body}\n\n")
    return path


@needs_namespaces
def test_a_full_disk_is_one_line_and_stores_no_half_batch(tmp_path: Path) -> None:
    place = tmp_path / "small"
    place.mkdir()
    mbox = many_messages(tmp_path / "big.mbox", 400)
    database = place / "t.db"
    result = in_namespace(f"""
        mount -t tmpfs -o size=1m tmpfs {place} || exit 99
        {command('ingest', '--db', database, mbox)}; echo "rc=$?"
        {sys.executable} -c 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); \
print(c.execute("PRAGMA integrity_check").fetchone()[0], c.execute("SELECT count(*) FROM messages").fetchone()[0], \
c.execute("SELECT count(*) FROM records").fetchone()[0])' {database}
    """)
    assert "rc=1" in result.stdout, result.stdout + result.stderr
    line = one_line(result.stderr)
    assert line == (f"triage ingest: database {database}: database or disk is full: nothing of the step under way "
                    f"was stored; free some space and run it again")
    assert "savepoint" not in result.stderr
    check, messages, records = result.stdout.split("\n")[-2].split()
    assert check == "ok" and messages == records  # whole batches only: each message with its record


def test_ctrl_c_on_ingest_is_one_line_and_keeps_what_was_stored(tmp_path: Path) -> None:
    fifo = tmp_path / "in.mbox"
    os.mkfifo(fifo)
    database = tmp_path / "t.db"
    process = subprocess.Popen([*TRIAGE, "ingest", "--db", str(database), "--jobs", "1", str(fifo)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=PROJECT)
    with open(fifo, "w") as feed:  # opens once ingest has opened the FIFO: it is past start-up
        feed.write("From t@example.org Mon Jan  1 00:00:00 2024\n" + LAB_REPORT.read_text())
        feed.flush()
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    assert process.returncode == 130
    assert one_line(err) == ("triage ingest: interrupted; what was stored before is kept, the step under way "
                             "was not stored")
    with sqlite3.connect(database) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


# --- 22.5: rerun's options first ------------------------------------------------------------------

def test_rerun_checks_its_budget_before_any_work(tmp_path: Path) -> None:
    database = tmp_path / "never.db"
    result = triage("rerun", "no-such@example.org", "--db", str(database), "--budget", "4")
    assert result.returncode == 1
    assert one_line(result.stderr) == ("triage rerun: --budget 4: at least 6 runs a side are needed "
                                       "(the first look takes 6)")
    assert not database.exists()  # nothing read, fetched or made
    assert "at least 6" in " ".join(triage("rerun", "--help").stdout.split())


# --- 22.4: triage list --------------------------------------------------------------------------

@pytest.fixture
def listed(tmp_path: Path) -> Path:
    database = tmp_path / "t.db"
    plain = tmp_path / "notes.txt"
    plain.write_text("just some notes, no headers at all\n")
    result = triage("ingest", "--db", str(database), *map(str, LKP_MAIL), str(plain))
    assert result.returncode == 0, result.stderr
    return database


def test_list_refuses_a_negative_limit(listed: Path) -> None:
    result = triage("list", "--db", str(listed), "--limit", "-1")
    assert result.returncode == 2
    assert "argument --limit: -1 is negative; give a count, or 0 for all" in result.stderr


def test_list_says_when_nothing_matches(listed: Path) -> None:
    # (an undated record counts as dated when it was received: --since yesterday lists the notes)
    for args, said in ((("--since", "yesterday", "--kind", "reports"), "--kind reports --since yesterday"),
                       (("--testcase", "no-such-test"), "--testcase no-such-test"),
                       (("--kind", "syzbot", "--since", "2024-01-01"), "--kind syzbot --since 2024-01-01"),
                       (("--verdict", "confirmed", "--limit", "1"), "--verdict confirmed")):
        result = triage("list", "--db", str(listed), *args)
        assert result.returncode == 0
        assert result.stdout.splitlines() == [f"(no records match {said})"], result.stdout  # no "(N more" footer
        assert triage("list", "--db", str(listed), *args, "--json").stdout == ""


def test_list_puts_undated_records_last(listed: Path) -> None:
    lines = triage("list", "--db", str(listed), "--limit", "0").stdout.splitlines()
    assert lines[-1].startswith("undated     other")
    assert all(line[:4].isdigit() for line in lines[:-1])
    limited = triage("list", "--db", str(listed), "--limit", "2").stdout.splitlines()
    assert limited[-1] == f"({len(lines) - 2} more, use --limit {len(lines)} or --limit 0 for all)"
    none = triage("list", "--db", str(listed), "--verdict", "none", "--limit", "2").stdout.splitlines()
    assert none[:2] == lines[:2] and none[-1] == limited[-1]
