"""A password inside a URL is redacted in every log line and error message, and `triage web` serves a
PostgreSQL store (issue 34, finding 10).

`triage web --db postgresql://…` looked for a file and said "no database there"; a password in a
configured source URL was written to the logs. One function (logs.redact) writes every password
`***`, applied by the log formatter to each whole line (so no field, message or traceback can
carry one past it) and by the command line to each error it prints. Each path is driven for real:
the daemon's start and a failed poll of a source with `user:password@`, `triage web` and `triage
worker` on a PostgreSQL URL with a password (the test server trusts its socket, so the password
is accepted and ignored: it reaches every line the programs write), and a store that cannot be
reached.
"""
from __future__ import annotations

import io
import json
import logging
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.support.daemon_run import daemon_env, free_port, wait_for
from tests.support.lab import write_lab_rules
from tests.support.slack_world import decided_report
from triagebot import logs
from triagebot.store.location import parse_location

SECRET = "pw-s3cr3t-9731"  # what must appear nowhere


def with_password(url: str) -> str:
    """The test server's URL with a user and password in it: postgresql://triage:SECRET@/triage?…"""
    return url.replace("postgresql:///", f"postgresql://triage:{SECRET}@/", 1)


def triage(home: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                          cwd=PROJECT, env=daemon_env(home, None), stdin=subprocess.DEVNULL, timeout=timeout)


def test_redact_writes_every_password_as_stars_and_nothing_else() -> None:
    assert logs.redact(f"postgresql://user:{SECRET}@db.example:5432/triage") == \
        "postgresql://user:***@db.example:5432/triage"
    assert logs.redact(f"https://reader:{SECRET}@lore.example/list/") == "https://reader:***@lore.example/list/"
    assert logs.redact(f"postgresql:///triage?host=/run&password={SECRET}&user=u") == \
        "postgresql:///triage?host=/run&password=***&user=u"
    assert logs.redact(f"host=db password='{SECRET} x' user=u") == "host=db password=*** user=u"
    for untouched in ("Reporter <rep@example.org>", "http://user@host/x", "git@host:repo", "no password here"):
        assert logs.redact(untouched) == untouched


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_the_formatter_redacts_fields_messages_and_tracebacks(log_format: str) -> None:
    stream = io.StringIO()
    everyone, ours = logging.getLogger(), logging.getLogger("triagebot")
    kept = (everyone.handlers[:], everyone.level, ours.handlers[:], ours.level, ours.propagate)
    logs.configure(stream=stream, log_format=log_format)
    log = logging.getLogger("triagebot.test")
    try:
        try:
            raise ConnectionError(f"cannot reach postgresql://u:{SECRET}@db/x")
        except ConnectionError:
            logs.event(log, logging.ERROR, f"message naming https://u:{SECRET}@h/", event="test.event",
                       source=f"https://reader:{SECRET}@lore.example/", error=f"password={SECRET}", exc_info=True)
        logging.getLogger("uvicorn.error").error("a library says postgresql://u:%s@db/x", SECRET)
    finally:  # the logging as pytest had it
        everyone.handlers[:], everyone.level, ours.handlers[:], ours.level, ours.propagate = kept
    text = stream.getvalue()
    assert SECRET not in text and text.count("***") >= 4
    if log_format == "json":  # still one JSON object a line
        assert [json.loads(line)["level"] for line in text.splitlines()] == ["error", "error"]


def test_the_daemon_start_and_a_failed_poll_name_no_password(tmp_path: Path, postgres_server) -> None:
    url = with_password(postgres_server.url(postgres_server.new_schema()))
    rules, _state = write_lab_rules(tmp_path, PROJECT)  # a lab host, for `triage status` below
    source = f"http://reader:{SECRET}@127.0.0.1:{free_port()}/nowhere/"  # nobody listens: the poll fails
    (rules / "sources.toml").write_text(f'[http]\nattempts = 1\ntimeout_seconds = 2\n\n[[lore]]\nurl = "{source}"\n')
    done = triage(tmp_path, "daemon", "--once", "--db", url, "--rules", str(rules), "--log-format", "json")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    started = next(line for line in lines if line.get("event") == "daemon.started")
    assert started["db"].startswith("postgresql://triage:***@/triage?")
    failed = next(line for line in lines if line.get("event") == "poll.failed")
    assert failed["source"].startswith("http://reader:***@127.0.0.1:")
    assert SECRET not in done.stderr and SECRET not in done.stdout
    # the stored outcome of that poll, as `triage status` shows it, names no password either
    status = triage(tmp_path, "status", "--db", url, "--rules", str(rules))
    assert status.returncode == 0, status.stderr
    assert "FAILED" in status.stdout and SECRET not in status.stdout + status.stderr
    as_json = triage(tmp_path, "status", "--db", url, "--rules", str(rules), "--json")
    assert as_json.returncode == 0 and SECRET not in as_json.stdout + as_json.stderr


def test_an_unreachable_database_is_an_error_naming_no_password(tmp_path: Path) -> None:
    url = f"postgresql://triage:{SECRET}@/triage?host={tmp_path}/no-server-here"
    for command in (["list"], ["web", "--port", "0"], ["status"]):
        done = triage(tmp_path, *command, "--db", url)
        assert done.returncode == 1 and "triage:***@" in done.stderr, done.stderr
        assert SECRET not in done.stderr + done.stdout


def test_triage_web_serves_a_postgresql_store(tmp_path: Path, postgres_server) -> None:
    url = with_password(postgres_server.url(postgres_server.new_schema()))
    empty = with_password(postgres_server.url(postgres_server.new_schema()))
    with parse_location(url).open() as store:
        decided_report(store)
    refused = triage(tmp_path, "web", "--db", empty, "--port", "0")
    assert refused.returncode == 1 and "no triagebot store in this database" in refused.stderr
    assert SECRET not in refused.stderr
    port = free_port()
    log = tmp_path / "web.log"
    with open(log, "wb") as output:
        server = subprocess.Popen([sys.executable, "-m", "triagebot.cli", "web", "--db", url, "--port", str(port)],
                                  cwd=PROJECT, env=daemon_env(tmp_path, None), stdin=subprocess.DEVNULL,
                                  stdout=output, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: b"triage web: serving" in log.read_bytes(), 120, "triage web to listen", server, log)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/r/20240415071244.lab1@tberg-ws", timeout=60) as page:
            html = page.read().decode()
        assert "sysbench cpu events/s" in html and "confirmed" in html
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=60) as page:
            assert "20240415071244.lab1@tberg-ws" in page.read().decode()
    finally:
        server.send_signal(signal.SIGINT)
        assert server.wait(timeout=60) == 0
    text = log.read_text()
    assert "from postgresql://triage:***@/triage?" in text and SECRET not in text


def test_triage_worker_names_its_store_without_the_password(tmp_path: Path, postgres_server) -> None:
    url = with_password(postgres_server.url(postgres_server.new_schema()))
    rules, _ = write_lab_rules(tmp_path, PROJECT)
    log = tmp_path / "worker.log"
    with open(log, "wb") as output:
        worker = subprocess.Popen([sys.executable, "-m", "triagebot.cli", "worker", "--db", url, "--rules", str(rules),
                                   "--log-format", "json"], cwd=PROJECT, env=daemon_env(tmp_path, None),
                                  stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: b'"worker.started"' in log.read_bytes(), 120, "the worker to start", worker, log)
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=120) == 0
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    started = next(line for line in lines if line.get("event") == "worker.started")
    assert started["db"].startswith("postgresql://triage:***@/triage?") and SECRET not in log.read_text()


def test_a_store_error_page_names_no_password(tmp_path: Path) -> None:
    url = f"postgresql://triage:{SECRET}@/triage?host={tmp_path}/gone"
    from triagebot.store.protocol import StoreError

    with pytest.raises(StoreError) as raised:
        parse_location(url).open()
    assert SECRET not in str(raised.value) and "triage:***@" in str(raised.value)
