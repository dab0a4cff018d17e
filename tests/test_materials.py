"""LKP materials: a report's download.01.org directory fetched over real HTTP, kept, read, planned.

A ThreadingHTTPServer on 127.0.0.1 serves `archive/<date>/<id>/` with job.yaml, reproduce and
config-* either written here (runs without the corpus) or taken from the MIME attachments of
a corpus LKP report that carries them. The server counts requests, so "from the store" means
"no request", and can answer 500 a given number of times, or refuse to list directories.
"""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import threading
from collections import Counter
from datetime import datetime
from email.utils import format_datetime
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.conftest import PROJECT, require_corpus
from triagebot.http_client.client import RequestsClient
from triagebot.http_client.protocol import HttpPolicy, SourceError
from triagebot.parse.message import decode_message
from triagebot.parse.report import parse_message
from triagebot.records.report import Headline, Links, Report, Source
from triagebot.reproduce import materials as materials_module
from triagebot.reproduce.materials import (
    LISTING,
    MaterialsError,
    benchmark_commands,
    fetch_materials,
    reproduce_facts,
    with_materials,
)
from triagebot.reproduce.plan import HostShape, Plan, Refusal, plan_report
from triagebot.rules.templates import load_templates
from triagebot.store.sqlite import SqliteStore

TEMPLATES = load_templates(PROJECT / "rules")
POLICY = HttpPolicy(timeout_seconds=10, attempts=3, backoff_seconds=1.0, backoff_max_seconds=5.0)
DIRECTORY = "archive/20240101/202401011234.0badcafe-lkp@intel.com"
CONFIG = "config-6.8.0-rc1-00001-g0123456789ab"
# The corpus report whose attachments become the served directory: fio-basic, planned from job.yaml.
CORPUS_REPORT = "lkp-perf_ext4-fio-write_iops-2.5pct.eml"
CORPUS_DIRECTORY = "archive/20230719/202307190954.683c919b-oliver.sang@intel.com"

JOB_YAML = """\
---
suite: fio-basic
testcase: fio-basic
category: benchmark
runtime: 300s
disk: 1SSD
fs: xfs
nr_task: 8
test_size: 16G
fio-setup-basic:
  rw: randwrite
  bs: 4k
  ioengine: sync
fio:
cpufreq_governor: performance
"""

REPRODUCE = """\
dmsetup remove_all
wipefs -a --force /dev/nvme0n1p1
mkfs -t xfs -f -mreflink=0 /dev/nvme0n1p1
mkdir -p /fs/nvme0n1p1
modprobe xfs
mount -t xfs -o inode64,noatime /dev/nvme0n1p1 /fs/nvme0n1p1

for cpu_dir in /sys/devices/system/cpu/cpu[0-9]*
do
	file="$cpu_dir"/cpufreq/scaling_governor
	[ -f "$file" ] && echo "performance" > "$file"
done

echo 1 > /proc/sys/vm/drop_caches
echo '[global]
bs=4k
[task_0]
rw=randwrite
directory=/fs/nvme0n1p1
numjobs=8' | fio --output-format=json -
"""


# --- the server ---------------------------------------------------------------------------------

class _Server:
    """`root` over HTTP on 127.0.0.1; counts GETs by path, can fail or hide directory listings."""

    def __init__(self, root: Path, *, listing: bool = True) -> None:
        self.root = root
        self.listing = listing
        self.requests: Counter[str] = Counter()
        self.failures: dict[str, int] = {}  # path -> how many 500s to answer first
        self._lock = threading.Lock()
        server = self

        class Handler(SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs) -> None:
                super().__init__(*args, directory=str(server.root), **kwargs)

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                path = unquote(urlsplit(self.path).path)
                with server._lock:
                    server.requests[path] += 1
                    failing = server.failures.get(path, 0)
                    if failing:
                        server.failures[path] = failing - 1
                if failing:
                    self.send_error(500, "try again")
                    return
                if path.endswith("/") and not server.listing:
                    self.send_error(404, "no listings here")
                    return
                super().do_GET()

            def log_message(self, *args) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> _Server:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(10)

    def url(self, directory: str) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/0day-ci/{directory}"

    def total(self) -> int:
        return sum(self.requests.values())


def _directory(root: Path, directory: str, files: dict[str, str | bytes]) -> Path:
    folder = root / "0day-ci" / directory
    folder.mkdir(parents=True)
    for name, body in files.items():
        (folder / name).write_bytes(body if isinstance(body, bytes) else body.encode())
    return folder


def _client() -> RequestsClient:
    return RequestsClient(POLICY, trust_environment=False)


class _Sleeps(list):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def store(stores):
    """The store on each backend: fetched materials are kept alike on SQLite and PostgreSQL."""
    with stores.open() as opened:
        yield opened


# --- fetching: the store, caps, 404, retries -----------------------------------------------------

def test_fetch_keeps_every_file_and_a_second_fetch_asks_nothing(tmp_path, store):
    _directory(tmp_path / "www", DIRECTORY, {"job.yaml": JOB_YAML, "reproduce": REPRODUCE,
                                             CONFIG: "CONFIG_XFS_FS=y\n", "job-script": "#!/bin/sh\n"})
    with _Server(tmp_path / "www") as server:
        url = server.url(DIRECTORY)           # as reports write it: no trailing slash
        first = fetch_materials(url, _client(), POLICY, store, sleep=_Sleeps())
        assert first.url == url + "/"
        assert first.job_yaml == JOB_YAML and first.reproduce == REPRODUCE
        assert first.config_name == CONFIG and first.config == "CONFIG_XFS_FS=y\n"
        assert first.job_url == url + "/job.yaml"
        # the listing, then the three files; job-script is not fetched
        assert server.total() == 4, server.requests
        assert not any("job-script" in path for path in server.requests)
        assert store.get_material(url + "/", "job.yaml") == JOB_YAML.encode()
        assert store.get_material(url + "/", CONFIG) == b"CONFIG_XFS_FS=y\n"
        assert store.get_material(url + "/", LISTING) is not None
        second = fetch_materials(url, _client(), POLICY, store, sleep=_Sleeps())
        assert server.total() == 4, "the second fetch asked the server"
        assert (second.job_yaml, second.reproduce, second.config_name, second.config) == (
            first.job_yaml, first.reproduce, first.config_name, first.config)
        assert all("from the store" in event for event in second.events)


def test_the_cache_survives_reopening_the_database(tmp_path, stores):
    _directory(tmp_path / "www", DIRECTORY, {"job.yaml": JOB_YAML})
    with _Server(tmp_path / "www") as server:
        url = server.url(DIRECTORY)
        with stores.open("a") as store:
            fetch_materials(url, _client(), POLICY, store, sleep=_Sleeps())
        asked = server.total()
        with stores.open("a") as store:
            again = fetch_materials(url, _client(), POLICY, store, sleep=_Sleeps())
        assert server.total() == asked and again.job_yaml == JOB_YAML


def test_a_file_over_the_cap_is_refused_naming_url_and_size(tmp_path, store):
    big = b"x" * (4 * 1024 * 1024 + 1)
    _directory(tmp_path / "www", DIRECTORY, {"job.yaml": big})
    with _Server(tmp_path / "www") as server:
        url = server.url(DIRECTORY)
        with pytest.raises(MaterialsError) as refused:
            fetch_materials(url, _client(), POLICY, store, sleep=_Sleeps())
        message = str(refused.value)
        assert f"{url}/job.yaml" in message and str(len(big)) in message and "cap" in message
        assert store.get_material(url + "/", "job.yaml") is None
        # with_materials does not raise: the plan goes on from the mail, the note says why
        report = _hand_report(url)
        same, notes = with_materials(report, store, _client(), POLICY, sleep=_Sleeps())
        assert same is report and "over the" in notes[0]


def test_a_missing_reproduce_is_not_an_error(tmp_path, store):
    _directory(tmp_path / "www", DIRECTORY, {"job.yaml": JOB_YAML})
    with _Server(tmp_path / "www", listing=False) as server:
        url = server.url(DIRECTORY)
        found = fetch_materials(url, _client(), POLICY, store, sleep=_Sleeps())
        assert found.job_yaml == JOB_YAML and found.reproduce is None
        assert any("reproduce: not there (HTTP 404)" in event for event in found.events)
        # no listing and no config-* attachment named: the config is skipped, not guessed
        assert found.config_name is None and any("no kernel config name" in event for event in found.events)
        assert server.requests[urlsplit(url).path + "/reproduce"] == 1


def test_without_a_listing_the_config_name_comes_from_the_attachments(tmp_path, store):
    _directory(tmp_path / "www", DIRECTORY, {"job.yaml": JOB_YAML, CONFIG: "CONFIG_EXT4_FS=y\n"})
    with _Server(tmp_path / "www", listing=False) as server:
        found = fetch_materials(server.url(DIRECTORY), _client(), POLICY, store, sleep=_Sleeps(),
                                attachment_names=[None, "dmesg.xz", CONFIG])
        assert found.config_name == CONFIG and found.config == "CONFIG_EXT4_FS=y\n"


def test_a_listing_says_what_is_not_there_without_asking(tmp_path, store):
    _directory(tmp_path / "www", DIRECTORY, {"job.yaml": JOB_YAML})
    with _Server(tmp_path / "www") as server:
        found = fetch_materials(server.url(DIRECTORY), _client(), POLICY, store, sleep=_Sleeps())
        assert found.reproduce is None and found.config_name is None
        assert server.total() == 2  # the listing and job.yaml; reproduce is not in the listing


def test_500_twice_then_200_is_retried_with_backoff(tmp_path, store):
    _directory(tmp_path / "www", DIRECTORY, {"job.yaml": JOB_YAML, "reproduce": REPRODUCE})
    with _Server(tmp_path / "www") as server:
        url = server.url(DIRECTORY)
        job_path = urlsplit(url).path + "/job.yaml"
        server.failures[job_path] = 2
        sleeps = _Sleeps()
        found = fetch_materials(url, _client(), POLICY, store, sleep=sleeps)
        assert found.job_yaml == JOB_YAML
        assert server.requests[job_path] == 3 and len(sleeps) == 2
        assert 0.5 <= sleeps[0] <= 1.5 and 1.0 <= sleeps[1] <= 3.0
        assert sum("HTTP 500; retrying" in event for event in found.events) == 2


def test_a_server_that_keeps_failing_gives_up_after_the_policy_attempts(tmp_path, store):
    _directory(tmp_path / "www", DIRECTORY, {"job.yaml": JOB_YAML})
    with _Server(tmp_path / "www") as server:
        url = server.url(DIRECTORY)
        server.failures[urlsplit(url).path + "/job.yaml"] = 10
        with pytest.raises(SourceError, match="gave up after 3 attempts"):
            fetch_materials(url, _client(), POLICY, store, sleep=_Sleeps())


def test_only_http_links_are_fetched(store):
    with pytest.raises(MaterialsError):
        fetch_materials("file:///etc/", _client(), POLICY, store, sleep=_Sleeps())


# --- the reproduce script: read, never run ------------------------------------------------------

def test_reproduce_facts_of_a_written_script():
    facts = reproduce_facts(REPRODUCE)
    assert facts["fs"] == "xfs" and facts["mkfs_options"] == "-f -mreflink=0"
    assert facts["devices"] == "/dev/nvme0n1p1" and facts["wiped"] == "/dev/nvme0n1p1"
    assert facts["mount_fs"] == "xfs" and facts["mount_options"] == "inode64,noatime"
    assert facts["mount_points"] == "/fs/nvme0n1p1" and facts["dmsetup"] == "remove_all"
    assert facts["cpufreq_governor"] == "performance" and facts["modules"] == "xfs"
    assert facts["sysctl"] == "vm.drop_caches=1" and facts["benchmark"] == "fio"
    # the fio job text inside echo '…' is not read as commands
    assert "rw" not in " ".join(facts)


def test_reproduce_facts_never_start_anything(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("reproduce_facts started a process")

    for name in ("Popen", "run", "call", "check_call", "check_output"):
        monkeypatch.setattr(subprocess, name, refuse)
    for name in ("system", "popen", "execv", "execvp", "execve", "fork", "spawnv", "posix_spawn"):
        if hasattr(os, name):
            monkeypatch.setattr(os, name, refuse)
    hostile = ("touch /tmp/owned; $(rm -rf /) `reboot`\nmkfs -t ext4 $(curl evil) /dev/sdz1\n"
               "cat > x <<EOF\nmount -t nfs -o evil /a /b\nEOF\necho 'unterminated\n")
    facts = reproduce_facts(hostile)
    assert facts["fs"] == "ext4"
    assert "mount_options" not in facts  # heredoc bodies are data, not commands
    assert materials_module.__doc__ and "never" in materials_module.__doc__


def test_reproduce_facts_of_corpus_scripts():
    fsmark = _attachments("lkp-perf_xfs-fsmark-5.7pct.eml")["reproduce"]
    facts = reproduce_facts(fsmark)
    assert facts["fs"] == "xfs" and facts["mkfs_options"] == "-f -mreflink=0"
    assert facts["mount_options"] == "inode64" and facts["devices"] == "/dev/nvme1n1p1"
    assert facts["cpufreq_governor"] == "performance" and facts["benchmark"] == "fs_mark"
    aim7 = reproduce_facts(_attachments("lkp-perf_xfs-aim7-62.2pct.eml")["reproduce"])
    assert aim7["ramdisk"] == "brd rd_nr=4 rd_size=12582912"
    assert aim7["md"] == "/dev/md0 raid1 of 4 devices, chunk 256"
    assert aim7["sysctl"] == "kernel.sem=500 32000 128 512" and aim7["fs"] == "xfs"
    ext4 = reproduce_facts(_attachments(CORPUS_REPORT)["reproduce"])
    assert ext4["fs"] == "ext4" and ext4["mkfs_options"] == "-q -F" and ext4["mount_fs"] == "ext4"
    assert ext4["devices"] == "/dev/sdb1" and ext4["benchmark"] == "fio"


# --- planning from fetched materials ------------------------------------------------------------

def _hand_report(url: str | None) -> Report:
    return Report(message_id="hand-lkp@example", in_reply_to=None, subject="[xfs] fio.write_iops -9% regression",
                  from_="kernel test robot <lkp@intel.com>", date="2024-01-01T00:00:00+00:00",
                  source=Source("eml"), kind="lkp-regression", links=Links(materials=url))


def test_with_materials_plans_from_the_fetched_job_yaml(tmp_path, store):
    _directory(tmp_path / "www", DIRECTORY, {"job.yaml": JOB_YAML, "reproduce": REPRODUCE, CONFIG: "X=y\n"})
    with _Server(tmp_path / "www") as server:
        report = _hand_report(server.url(DIRECTORY))
        assert isinstance(plan_report(report, TEMPLATES), Refusal)  # the mail alone names no testcase
        fetched, notes = with_materials(report, store, _client(), POLICY, sleep=_Sleeps())
        plan = plan_report(fetched, TEMPLATES)
        assert isinstance(plan, Plan), plan
        assert plan.source == "job.yaml" and plan.template == "fio"
        assert "--rw=randwrite" in plan.argv and "--bs=4K" in plan.argv
        job = fetched.reproducers[-1]
        assert job.kind == "lkp-job" and job.url == server.url(DIRECTORY) + "/job.yaml" and job.content == JOB_YAML
        assert report.reproducers == ()  # the stored report is not changed
        facts_note = next(note for note in notes if note.startswith("reproduce script read, not run"))
        assert "fs=xfs" in facts_note and "mount_options=inode64,noatime" in facts_note
        assert any(CONFIG in note for note in notes)
        asked = server.total()
        with_materials(report, store, _client(), POLICY, sleep=_Sleeps())
        assert server.total() == asked


def test_with_materials_leaves_a_report_without_a_link_alone(tmp_path, store):
    with _Server(tmp_path) as server:
        report = _hand_report(None)
        assert with_materials(report, store, _client(), POLICY, sleep=_Sleeps()) == (report, [])
        assert server.total() == 0


def test_with_materials_leaves_a_report_with_an_attached_job_yaml_alone(tmp_path, store):
    report = _corpus_report(CORPUS_REPORT)
    linked = dataclasses.replace(report, links=dataclasses.replace(report.links, materials="http://127.0.0.1:9/x"))
    same, notes = with_materials(linked, store, _client(), POLICY, sleep=_Sleeps())
    assert same is linked and notes == []  # port 9 is never asked: the attached job.yaml is enough


# --- the command line: a stored report planned through `triage plan` ----------------------------

def _attachments(name: str) -> dict[str, str]:
    decoded = decode_message((require_corpus() / name).read_bytes())
    return {item.name: item.text for item in decoded.attachments if item.name and item.text is not None}


def _corpus_report(name: str) -> Report:
    return parse_message((require_corpus() / name).read_bytes(), Source("eml"))


def _materials_files(name: str) -> dict[str, str]:
    attached = _attachments(name)
    return {key: value for key, value in attached.items()
            if key in ("job.yaml", "reproduce") or key.startswith("config-")}


def _eml_without_attachments(name: str, materials_url: str) -> bytes:
    """The corpus report's mail as plain text, attachments left out, with a materials line."""
    decoded = decode_message((require_corpus() / name).read_bytes())
    assert decoded.date  # ISO 8601 as decode_message gives it: back to RFC 2822
    date = format_datetime(datetime.fromisoformat(decoded.date))
    body = decoded.body.rstrip("\n") + (
        "\n\nThe kernel config and materials to reproduce are available at:\n" + materials_url + "\n")
    headers = (f"Message-ID: <{decoded.message_id}>\nFrom: {decoded.from_}\nSubject: {decoded.subject}\n"
               f"Date: {date}\nMIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n"
               "Content-Transfer-Encoding: 8bit\n\n")
    return (headers + body).encode("utf-8")


def _environment() -> dict[str, str]:
    environment = {key: value for key, value in os.environ.items() if "proxy" not in key.lower()}
    environment["NO_PROXY"] = "127.0.0.1,localhost"
    environment.pop("TRIAGE_RULES", None)
    environment.pop("TRIAGE_DB", None)
    return environment


def _triage(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *args], capture_output=True, text=True,
                          cwd=PROJECT, env=_environment(), timeout=120)


def _point_materials_at(database: Path, message_id: str, url: str) -> None:
    """Rewrite the stored record's materials link: the parser takes only download.01.org links."""
    with SqliteStore(database) as store:
        report = store.get_record(message_id)
        assert report is not None
        assert report.links.materials and report.links.materials.startswith("https://download.01.org/")
        report = dataclasses.replace(
            report, links=dataclasses.replace(report.links, materials=url),
            reproducers=tuple(dataclasses.replace(item, url=url) if item.kind == "lkp-materials" else item
                              for item in report.reproducers))
        store.put_record(message_id, report, store.get_record_version(message_id) or "test")


def test_triage_plan_fetches_the_materials_of_a_stored_lkp_report(tmp_path):
    require_corpus()
    files = _materials_files(CORPUS_REPORT)
    assert {"job.yaml", "reproduce"} <= set(files) and any(name.startswith("config-") for name in files)
    _directory(tmp_path / "www", CORPUS_DIRECTORY, files)
    original = _corpus_report(CORPUS_REPORT)   # with its attachments: planned from job.yaml
    expected = plan_report(original, TEMPLATES)
    assert isinstance(expected, Plan) and expected.source == "job.yaml"
    eml = tmp_path / "report.eml"
    eml.write_bytes(_eml_without_attachments(
        CORPUS_REPORT, "https://download.01.org/0day-ci/" + CORPUS_DIRECTORY))
    database = tmp_path / "triage.db"
    ingested = _triage("ingest", "--db", str(database), "--quiet", str(eml))
    assert ingested.returncode == 0, ingested.stderr
    message_id = original.message_id
    assert message_id
    with _Server(tmp_path / "www") as server:
        _point_materials_at(database, message_id, server.url(CORPUS_DIRECTORY))
        # --no-fetch: planned from the mail's testcase and parameters, and nothing asked
        offline = _triage("plan", message_id, "--db", str(database), "--json", "--no-fetch")
        assert server.total() == 0
        offline_plan = json.loads(offline.stdout)
        assert offline_plan.get("source") != "job.yaml", offline_plan
        # fetched: the same plan as from the attached job.yaml
        # the default shape, as `expected` was planned (without it: this machine, the daemon's host)
        done = _triage("plan", message_id, "--db", str(database), "--json", "--threads", "2")
        assert done.returncode == 0, done.stderr
        plan = json.loads(done.stdout)
        assert plan["kind"] == "plan" and plan["source"] == "job.yaml", plan
        assert plan["template"] == expected.template and plan["argv"] == list(expected.argv)
        assert plan["parameters"] == dict(expected.parameters)
        assert "reproduce script read, not run" in done.stderr and "fs=ext4" in done.stderr
        assert "mkfs_options=-q -F" in done.stderr
        asked = server.total()
        assert asked == 4, server.requests  # listing, job.yaml, reproduce, config-*
        again = _triage("plan", message_id, "--db", str(database))
        assert again.returncode == 0, again.stderr
        assert again.stdout.startswith("plan: fio from job.yaml")
        assert server.total() == asked, "the second plan asked the server again"
        with SqliteStore(database) as store:
            directory = server.url(CORPUS_DIRECTORY) + "/"
            assert store.get_material(directory, "job.yaml") == files["job.yaml"].encode()
            config = next(name for name in files if name.startswith("config-"))
            assert store.get_material(directory, config) == files[config].encode()


def test_triage_plan_no_fetch_refuses_a_report_the_mail_cannot_plan(tmp_path):
    _directory(tmp_path / "www", DIRECTORY, {"job.yaml": JOB_YAML, "reproduce": REPRODUCE})
    database = tmp_path / "triage.db"
    with _Server(tmp_path / "www") as server:
        report = _hand_report(server.url(DIRECTORY))
        with SqliteStore(database) as store:
            store.put_message("hand-lkp@example", b"Subject: s\n\nbody\n", "eml", None, "2024-01-01T00:00:00Z")
            store.put_record("hand-lkp@example", report, "test")
        refused = _triage("plan", "hand-lkp@example", "--db", str(database), "--no-fetch")
        assert refused.returncode == 1 and refused.stdout.startswith("refused: ")
        assert server.total() == 0
        done = _triage("plan", "hand-lkp@example", "--db", str(database), "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["source"] == "job.yaml"
        assert server.total() == 3  # listing, job.yaml, reproduce (no config listed)


def test_triage_rerun_fetches_before_planning_and_no_fetch_does_not(tmp_path):
    """Only refusals here, so no benchmark starts: aim7 has no template."""
    aim7_job = JOB_YAML.replace("testcase: fio-basic", "testcase: aim7")
    _directory(tmp_path / "www", DIRECTORY, {"job.yaml": aim7_job})
    database = tmp_path / "triage.db"
    with _Server(tmp_path / "www") as server:
        report = _hand_report(server.url(DIRECTORY))
        with SqliteStore(database) as store:
            store.put_message("hand-lkp@example", b"Subject: s\n\nbody\n", "eml", None, "2024-01-01T00:00:00Z")
            store.put_record("hand-lkp@example", report, "test")
        offline = _triage("rerun", "hand-lkp@example", "--db", str(database), "--no-fetch")
        assert offline.returncode == 1 and "names no testcase" in offline.stderr, offline.stderr
        assert server.total() == 0
        fetched = _triage("rerun", "hand-lkp@example", "--db", str(database))
        assert fetched.returncode == 1 and "testcase aim7 has no template" in fetched.stderr, fetched.stderr
        assert "planning from" in fetched.stderr and server.total() == 2


# --- issue 17: a command someone waits on says what it fetches and fails fast ------------------

def test_quick_policy_tries_a_failing_host_once_says_what_it_fetches_and_plans_from_the_mail(tmp_path, store):
    from triagebot.reproduce.materials import QUICK_ATTEMPTS, quick_policy, with_materials_over_http

    _directory(tmp_path / "www", DIRECTORY, {"job.yaml": JOB_YAML})
    with _Server(tmp_path / "www") as server:
        url = server.url(DIRECTORY)
        server.failures[urlsplit(url).path + "/"] = 10
        announced: list[str] = []
        report = _hand_report(url)
        same, notes = with_materials_over_http(report, store, quick_policy(POLICY), announce=announced.append)
        assert server.total() == QUICK_ATTEMPTS == 1  # the policy's 3 attempts are not waited out
        assert announced == [f"fetching the directory listing from {url}/"]
        assert same is report and len(notes) == 1
        assert "materials not fetched" in notes[0] and "gave up after 1 attempts" in notes[0]
        assert "planned from the report's own text" in notes[0]


def test_an_unreachable_host_is_one_short_attempt_and_the_stored_copy_still_plans(tmp_path, store):
    import socket

    from triagebot.reproduce.materials import QUICK_TIMEOUT_SECONDS, quick_policy

    assert quick_policy(POLICY).timeout_seconds == min(POLICY.timeout_seconds, QUICK_TIMEOUT_SECONDS)
    with socket.socket() as probe:  # a port nothing listens on: connection refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/0day-ci/{DIRECTORY}"
    announced: list[str] = []
    _, notes = with_materials(_hand_report(url), store, _client(), quick_policy(POLICY), sleep=_Sleeps(),
                              announce=announced.append)
    assert announced == [f"fetching the directory listing from {url}/"]
    assert "127.0.0.1 cannot be reached: it refuses connections (not retried" in notes[0]
    assert "planned from the report's own text" in notes[0]
    # the same directory kept in the store (an earlier fetch): planned from it, no request made
    for name, body in ((LISTING, b'<a href="job.yaml">job.yaml</a>'), ("job.yaml", JOB_YAML.encode())):
        store.put_material(url + "/", name, body)
    announced.clear()
    planned, notes = with_materials(_hand_report(url), store, _client(), quick_policy(POLICY), sleep=_Sleeps(),
                                    announce=announced.append)
    assert announced == [] and any("from the store" in note for note in notes)
    assert any(item.kind == "lkp-job" and item.content == JOB_YAML for item in planned.reproducers)


# --- the reproduce script's benchmark line: the fallback ----------------------------------------

STRESS_REPRODUCE = """\
dmsetup remove_all
wipefs -a --force /dev/sdb1
mkfs -t ext4 -q -F /dev/sdb1
mkdir -p /fs/sdb1
mount -t ext4 /dev/sdb1 /fs/sdb1
cd /fs/sdb1
testtime=60
"stress-ng" "--timeout" "$testtime" "--times" "--verify" "--metrics" "--no-rand-seed" "--dup" "64" 2>&1
"""


def test_benchmark_commands_of_a_script_are_read_not_run() -> None:
    assert benchmark_commands(STRESS_REPRODUCE) == [
        ("stress-ng", "stress-ng --timeout 60 --times --verify --metrics --no-rand-seed --dup 64")]
    # a perf that is not perf bench, and programs no template runs, are no benchmark lines
    assert benchmark_commands("perf record -a sleep 1\n./Run pipe -c 1\nperf bench sched pipe -l 100\n") == [
        ("perf-bench", "perf bench sched pipe -l 100")]
    # the fio of LKP scripts reads its job from stdin: kept, and left to the allowlist to judge
    assert [kind for kind, _ in benchmark_commands(REPRODUCE)] == ["fio"]


def test_a_report_whose_parameters_plan_nothing_falls_back_on_the_scripts_line(tmp_path, store):
    _directory(tmp_path / "www", DIRECTORY, {"reproduce": STRESS_REPRODUCE})
    report = dataclasses.replace(_hand_report(None), testcase="stress-ng", subject="stress-ng.dup.ops_per_sec",
                                 parameters=(("nr_threads", "100%"), ("testtime", "60s")),
                                 headline=Headline("vmstat.cpu.id", -3.0, "regression"))
    with _Server(tmp_path / "www", listing=False) as server:
        linked = dataclasses.replace(report, links=Links(materials=server.url(DIRECTORY)))
        assert isinstance(plan_report(linked, TEMPLATES), Refusal)  # no test among the parameters
        fetched, _notes = with_materials(linked, store, _client(), POLICY, sleep=_Sleeps())
    plan = plan_report(fetched, TEMPLATES, host=HostShape(threads=2, stressors=("dup", "fiemap")))
    assert isinstance(plan, Plan), plan
    assert plan.source == "reproduce-script" and plan.argv[:3] == ("stress-ng", "--timeout", "60s")
    assert "--dup" in plan.argv and "--verify" in plan.argv
    assert plan.notes[0].startswith(f"planned from the benchmark line of {server.url(DIRECTORY)}/reproduce "
                                    "(its LKP parameters gave none: the stress-ng command names no test")
