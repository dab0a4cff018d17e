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


def test_a_database_path_that_cannot_be_looked_at_is_one_line(tmp_path: Path) -> None:
    """A folder name over the filesystem's limit (as EACCES on a folder not ours): stat itself fails."""
    database = tmp_path / ("x" * 300) / "t.db"
    for args in (("list",), ("ingest", str(LAB_REPORT)), ("status",)):
        result = triage(*args, "--db", str(database))
        assert result.returncode == 1
        assert one_line(result.stderr).endswith(f"{database}: File name too long"), result.stderr


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
        echo '== daemon-ro'; {command('daemon', '--once', '--log-format', 'text', '--db', database)} 2>&1 \
            | grep -v 'SLACK_BOT_TOKEN'
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
    assert parts["daemon-ro"].splitlines() == [
        f"triage daemon: {database}: the database is read-only here (on a read-only filesystem); this writes to it"]
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
    # SIGINT as a terminal leaves it (a test run started in the background inherits it ignored)
    process = subprocess.Popen([*TRIAGE, "ingest", "--db", str(database), str(fifo)], start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=PROJECT)
    with open(fifo, "w") as feed:  # opens once ingest has opened the FIFO: it is past start-up
        feed.write("From t@example.org Mon Jan  1 00:00:00 2024\n" + LAB_REPORT.read_text())
        feed.flush()
        os.killpg(process.pid, signal.SIGINT)  # as Ctrl-C does: to the terminal's whole process group
    # the writer closed: a read the signal came just before (Python's handler only notes it) returns
    out, err = process.communicate(timeout=300)
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


# --- 22.6: readable operations ----------------------------------------------------------------------

def test_verdict_of_an_unknown_id_says_no_such_message(listed: Path) -> None:
    result = triage("verdict", "--db", str(listed), "nobody@example.org")
    assert result.returncode == 1
    assert one_line(result.stderr) == f"triage verdict: nobody@example.org: no such message in {listed}"
    stored = triage("verdict", "--db", str(listed), "202407081422.9d3e6b57-oliver.sang@intel.com")
    assert one_line(stored.stderr).endswith("no stored rerun (run `triage rerun "
                                            "202407081422.9d3e6b57-oliver.sang@intel.com` first)")


def test_a_rules_directory_that_is_not_there_says_so(tmp_path: Path) -> None:
    result = triage("hosts", "--rules", str(tmp_path / "nowhere"))
    assert result.returncode == 1
    assert one_line(result.stderr) == f"triage hosts: --rules {tmp_path / 'nowhere'}: no such directory"


def test_a_short_key_prefix_opens_a_message_without_an_id_in_every_command(listed: Path) -> None:
    line = next(line for line in triage("list", "--db", str(listed)).stdout.splitlines() if "<sha256-" in line)
    prefix = line[line.index("<sha256-") + 1:][:len("sha256-") + 6]
    assert triage("show", "--db", str(listed), prefix).stdout.startswith("other  (no Message-ID; key sha256-")
    verdict = triage("verdict", "--db", str(listed), prefix)
    assert "no stored rerun" in verdict.stderr and "@triagebot.invalid" in verdict.stderr
    planned = triage("plan", "--db", str(listed), prefix)
    # found (the host the daemon would choose is named), and refused by the planner itself
    assert planned.returncode == 1 and planned.stderr.startswith("triage plan: for host ")
    assert planned.stdout.startswith("refused: the report names no testcase")


def test_a_text_file_given_to_ingest_is_warned_about(tmp_path: Path) -> None:
    plain = tmp_path / "notes.txt"
    plain.write_text("just some notes, no headers at all\n")
    result = triage("ingest", "--db", str(tmp_path / "t.db"), str(plain))
    assert result.returncode == 0
    assert one_line(result.stderr).endswith("no mail headers (no Date, From or Message-ID): stored undated, as "
                                            "`other`; is it a mail file?")
    quiet = triage("ingest", "--db", str(tmp_path / "t.db"), str(LAB_REPORT))
    assert quiet.stderr == ""


def test_show_json_is_indented_on_a_terminal_and_one_line_in_a_pipe(listed: Path) -> None:
    import pty

    message_id = "202407081422.9d3e6b57-oliver.sang@intel.com"
    piped = triage("show", "--db", str(listed), message_id, "--json").stdout
    assert piped.count("\n") == 1
    leader, follower = pty.openpty()
    process = subprocess.Popen([*TRIAGE, "show", "--db", str(listed), message_id, "--json"], stdout=follower,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=PROJECT)
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the terminal's other side closed
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert process.wait(timeout=60) == 0
    lines = shown.decode().splitlines()
    assert lines[0] == "{" and lines[1].startswith('  "')
    import json

    assert json.loads(shown.decode()) == json.loads(piped)


def test_a_name_that_does_not_resolve_is_one_short_line_and_not_retried() -> None:
    from triagebot.http_client.client import NameUnresolved, RequestsClient, fetch
    from triagebot.http_client.protocol import HttpPolicy

    waits: list[float] = []
    with pytest.raises(NameUnresolved) as raised:
        fetch(RequestsClient(HttpPolicy()), "https://lore.example.invalid/oe-lkp/new.atom", HttpPolicy(),
              limit=1 << 20, sleep=waits.append)
    assert str(raised.value) == "lore.example.invalid: name does not resolve (offline?)"
    assert waits == []


def test_metrics_export_zeros_before_anything_happens() -> None:
    from prometheus_client import generate_latest

    from triagebot.daemon.health import DaemonMetrics

    text = generate_latest(DaemonMetrics(sources=["https://lore.kernel.org/oe-lkp/"]).registry).decode()
    for line in ('triage_poll_lag_seconds{source="https://lore.kernel.org/oe-lkp/"} ',
                 'triage_reports{state="new"} 0.0', 'triage_reports{state="a-a-only"} 0.0',
                 'triage_outbox{status="pending"} 0.0', 'triage_outbox{status="held"} 0.0',
                 'triage_polls_total{outcome="error",source="https://lore.kernel.org/oe-lkp/"} 0.0',
                 'triage_messages_stored_total{source="https://lore.kernel.org/oe-lkp/"} 0.0'):
        assert line in text, line


def test_text_logs_name_the_report() -> None:
    import io
    import logging

    from triagebot.logs import TextLines

    handler = logging.StreamHandler(stream := io.StringIO())
    handler.setFormatter(TextLines())
    logger = logging.getLogger("triagebot.test-new-user")
    logger.addHandler(handler)
    logger.propagate = False
    from triagebot.logs import event

    event(logger, logging.WARNING, "report refused", event="triage.refused", message_id="r@example.org",
          reason="no culprit")
    assert stream.getvalue().rstrip().endswith("WARNING report refused: r@example.org; no culprit")


def test_the_slack_parent_orders_metric_rows_as_show_does() -> None:
    from triagebot.notify.render import parent_message
    from triagebot.notify.terminal import payload_to_text
    from triagebot.parse.report import parse_message
    from triagebot.present.summary import render_report
    from triagebot.records.report import Source

    for mail in LKP_MAIL:
        report = parse_message(mail.read_bytes(), Source("eml"))
        if len(report.metrics) < 3:
            continue
        shown = [line.split()[-1] for line in render_report(report).splitlines()
                 if line.startswith("    ") and "%" in line]
        parent = payload_to_text(parent_message(report, "new")).splitlines()
        header = next(index for index, line in enumerate(parent) if line.split()[:2] == ["metric", "base"])
        rows = [line for line in parent[header + 1:header + 6] if len(line.split()) >= 4]  # the table's rows
        in_parent = [line.split()[0] for line in rows]
        assert in_parent == [name[:len(posted)] for name, posted in zip(shown, in_parent, strict=False)], mail.name


def test_list_verdict_finds_a_stored_verdict(listed: Path) -> None:
    """A rerun's stored verdict is what --verdict filters on (it listed nothing before)."""
    from triagebot.store.sqlite import SqliteStore

    message_id = "202407081422.9d3e6b57-oliver.sang@intel.com"
    run = {"host": "lab", "status": "done", "base_commit": "a", "suspect_commit": "b", "samples": [],
           "verdict": {"outcome": "not-reproduced", "reason": "ruled out", "host_can_switch_kernel": True}}
    with SqliteStore(listed) as store:
        store.save_run(message_id, {"kind": "plan"}, run)
    found = triage("list", "--db", str(listed), "--verdict", "not-reproduced").stdout.splitlines()
    assert len(found) == 1 and found[0].endswith(f"<{message_id}>")
    assert message_id not in triage("list", "--db", str(listed), "--verdict", "none", "--limit", "0").stdout
    assert message_id not in triage("list", "--db", str(listed), "--verdict", "a-a-only").stdout


# --- issue 36, finding 13: the wrong command names what is wrong ------------------------------

def test_an_option_the_command_does_not_know_shows_that_commands_usage() -> None:
    result = triage("show", "--jsn", "20240415071244.lab1@tberg-ws")
    assert result.returncode == 2
    assert result.stderr.splitlines()[0].startswith("usage: triage show ")  # show's, not the top level's
    assert result.stderr.splitlines()[-1] == "triage show: error: unrecognized arguments: --jsn"
    before = triage("--jsn", "show", "x")  # before the command's name: the top level's own option
    assert before.stderr.splitlines()[-1] == "triage: error: unrecognized arguments: --jsn"


def test_an_address_that_is_no_address_is_named_not_the_port(tmp_path: Path) -> None:
    database = tmp_path / "t.db"
    assert triage("ingest", "--db", str(database), str(LAB_REPORT)).returncode == 0
    result = triage("web", "--db", str(database), "--address", "0.0.0.0.0", "--port", "0")
    assert result.returncode == 1
    line = one_line(result.stderr)
    assert line.startswith("triage web: --address 0.0.0.0.0: not an address this machine can listen on (")
    assert "--port" not in line


def test_a_database_in_a_folder_that_takes_no_files_names_the_folder() -> None:
    """/proc answers a new file with ENOENT, as if the folder were missing: say what is wrong."""
    result = triage("ingest", str(LAB_REPORT), env={**os.environ, "TRIAGE_DB": "/proc/triage.db"})
    assert result.returncode == 1
    line = one_line(result.stderr)
    assert line.startswith("triage ingest: /proc/triage.db: cannot make the database: its folder /proc "), line
    assert "No such file or directory" not in line


def test_an_ingest_warning_names_the_file_and_the_message_number(tmp_path: Path) -> None:
    folder = tmp_path / "messages"
    folder.mkdir()
    shutil.copy(LAB_REPORT, folder / "a-report.eml")
    (folder / "b-notes.txt").write_text("just some notes, no headers at all\n")
    result = triage("ingest", "--db", str(tmp_path / "t.db"), str(folder))
    assert result.returncode == 0
    assert one_line(result.stderr) == (f"triage ingest: {folder}: {folder / 'b-notes.txt'}: no mail headers (no Date, "
                                       f"From or Message-ID): stored undated, as `other`; is it a mail file?")
    mbox = tmp_path / "list.mbox"
    mbox.write_bytes(b"From x Mon Jan  1 00:00:00 2024\n" + LAB_REPORT.read_bytes()
                     + b"\nFrom x Mon Jan  1 00:00:00 2024\nno headers in this one\n")
    result = triage("ingest", "--db", str(tmp_path / "t.db"), str(mbox))
    assert one_line(result.stderr).startswith(f"triage ingest: {mbox}: {mbox}, message 2: no mail headers")
