"""The rules package: one loader for every rules file, and Settings read once and passed down.

Each rules file's own validation is tested beside its stage (test_hosts.py, test_reproduce_plan.py,
test_notify.py, test_verdict_command.py); here: sources.toml, what the loader does for all of them
(encoding, line numbers, the one error format) and that the daemon's flow never re-reads them.
"""
from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, PROJECT
from triagebot.daemon import flow
from triagebot.errors import RulesError
from triagebot.http_client.protocol import HttpPolicy
from triagebot.parse.report import parse_message
from triagebot.records.report import Source, report_from_json, report_to_json
from triagebot.rules.floors import parse_floors
from triagebot.rules.loader import parse_text, read_file
from triagebot.rules.routing import parse_routing
from triagebot.rules.settings import Settings, load_settings
from triagebot.rules.sources import SourceSettings
from triagebot.store.sqlite import SqliteStore


def sources_dir(tmp_path: Path, text: str) -> Path:
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "sources.toml").write_text(text, encoding="utf-8")
    return rules


# -- sources.toml -------------------------------------------------------------------------------

def test_the_packaged_rules_load_into_one_settings_value() -> None:
    settings = load_settings(PROJECT / "rules")
    assert [source.url for source in settings.sources] == ["https://lore.kernel.org/oe-lkp/",
                                                          "https://lore.kernel.org/linux-kernel/"]
    assert settings.http.timeout_seconds == 30 and settings.http.attempts == 5
    assert settings.http.deadline_seconds == 120 and settings.http.max_redirects == 5
    assert settings.need_hosts()[0].name and settings.need_templates().named("fio") is not None
    assert settings.routing.default_channel.startswith("#") and settings.floors.floor_for(None) == 1.5
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.sources = ()  # type: ignore[misc]


def test_sources_values_are_read_as_given(tmp_path: Path) -> None:
    rules = sources_dir(tmp_path, '[http]\nuser_agent = "bot (ops@example.org)"\nattempts = 3\n'
                                  'backoff_seconds = 0\n[[lore]]\nurl = "http://127.0.0.1:9/a/"\n'
                                  'poll_minutes = 0.5\n[[openwall]]\nurl = "https://example.org/oss/"\n')
    settings = load_settings(rules)
    assert settings.http == dataclasses.replace(HttpPolicy(), user_agent="bot (ops@example.org)", attempts=3,
                                                backoff_seconds=0.0)
    assert settings.sources == (SourceSettings("lore", "http://127.0.0.1:9/a/", 0.5),
                                SourceSettings("openwall", "https://example.org/oss/", 15.0))


def test_poll_bounds_come_from_sources_toml_with_defaults(tmp_path: Path) -> None:
    from triagebot.http_client.bounds import MIB, PollBounds

    assert load_settings(sources_dir(tmp_path, "[http]\n")).bounds == PollBounds()
    (tmp_path / "b").mkdir()
    settings = load_settings(sources_dir(tmp_path / "b", "[bounds]\npoll_messages = 300\npoll_mib = 64\n"
                                                         "poll_seconds = 120\nmib_per_day = 512\nentry_attempts = 5\n"))
    assert settings.bounds == PollBounds(messages=300, bytes=64 * MIB, seconds=120, bytes_per_day=512 * MIB,
                                         entry_attempts=5)


@pytest.mark.parametrize(("text", "message"), [
    ('[[lore]]\nurl = "http://a/"\n[[lore]]\nurl = "file:///etc/"\n',
     ":3: [[lore]] entry 2: url must be an http(s) list URL ending in '/', not 'file:///etc/'"),
    ('[[lore]]\nurl = "http://a/"\npoll_minute = 5\n',
     ":1: [[lore]] entry 1: unknown key(s) poll_minute (expected poll_minutes, url)"),
    ('[[openwall]]\nurl = "http://a/"\npoll_minutes = 0\n',
     ":1: [[openwall]] entry 1: poll_minutes must be a number from 0.1 to 10080, not 0"),
    ('# the manners\n[http]\ntimeout_seconds = true\n',
     ":2: [http]: timeout_seconds must be a number from 1 to 600, not True"),
    ('[http]\nuser_agent = ""\n', ":1: [http]: user_agent must be a non-empty string, not ''"),
    ('[http]\ntimeout_secs = 5\n', ":1: [http]: unknown key(s) timeout_secs (expected attempts,"),
    ('\n[[mbox]]\nurl = "http://a/"\n', ":2: unknown key(s) mbox (expected bounds, http, lore, openwall)"),
    ('lore = "http://a/"\n', ":1: lore must be an array of tables ([[lore]]), not 'http://a/'"),
    # issue 21: the poll bounds are validated like the rest
    ('[bounds]\npoll_messages = 0\n', ":1: [bounds]: poll_messages must be a number from 1 to 100000, not 0"),
    ('[bounds]\nmib_per_day = "lots"\n', ":1: [bounds]: mib_per_day must be a number from 1 to 100000, not 'lots'"),
    ('[bounds]\npoll_minutes = 5\n', ":1: [bounds]: unknown key(s) poll_minutes (expected entry_attempts,"),
    ('[[lore]]\nurl = "http://a/"\n[[lore]\n', ":3: not valid TOML: "),
])
def test_a_bad_sources_file_names_file_line_entry_and_problem(tmp_path: Path, text: str, message: str) -> None:
    rules = sources_dir(tmp_path, text)
    with pytest.raises(RulesError) as caught:
        load_settings(rules)
    assert str(caught.value).startswith(str(rules / "sources.toml") + message)
    assert "\n" not in str(caught.value)


# -- the loader, for every file -----------------------------------------------------------------

def test_rules_are_read_as_utf8_whatever_the_locale(tmp_path: Path) -> None:
    """Under LANG=C (ASCII), a UTF-8 sources.toml still loads: the loader never uses the locale."""
    rules = sources_dir(tmp_path, '[http]\nuser_agent = "triagebot (operator: Jürgen Groß)"\n')
    script = ("import locale, sys\n"
              "from pathlib import Path\n"
              "from triagebot.rules.settings import load_settings\n"
              "print(locale.getpreferredencoding(False))\n"
              "print(load_settings(Path(sys.argv[1])).http.user_agent.encode('unicode_escape').decode())\n")
    result = subprocess.run([sys.executable, "-X", "utf8=0", "-c", script, str(rules)], capture_output=True,
                            text=True, cwd=PROJECT, timeout=60,
                            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C", "LANG": "C", "PYTHONCOERCECLOCALE": "0",
                                 "PYTHONPATH": str(PROJECT)})
    assert result.returncode == 0, result.stderr
    encoding, agent = result.stdout.splitlines()
    assert encoding.lower() not in ("utf-8", "utf8")  # the test means something only under a non-UTF-8 locale
    assert agent == "triagebot (operator: J\\xfcrgen Gro\\xdf)"


def test_a_file_that_is_not_utf8_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "hosts.toml"
    path.write_bytes(b'[[host]]\nname = "lab"\ncpu_model = "Xeon \xae"\n')  # Latin-1 (R)
    with pytest.raises(RulesError, match=r"hosts.toml:3: not UTF-8 \(byte 0xae at offset 40\)"):
        read_file(path)


def test_an_unreadable_file_is_a_rules_error(tmp_path: Path) -> None:
    with pytest.raises(RulesError, match="routing.toml: cannot be read"):
        read_file(tmp_path / "routing.toml")


def test_line_numbers_point_at_the_table_or_the_key() -> None:
    text = '# head\nprogram = "fio"\n\n[params.bs]\ntype = "size"\n\n[ params . rw ]\ntype = "enum"\n'
    file = parse_text(text, "t.toml")
    assert file.key_line("program") == 2 and file.table_line("params.bs") == 4
    assert file.table_line("params.rw") == 7 and file.table_line("params") is None
    assert file.key_line("type") is None  # only top-level keys: `type` is inside a table
    with pytest.raises(RulesError, match=r"^t.toml:2: program must be"):
        file.top().fail("program must be x", "program")
    [(_, rw)] = [item for item in file.tables("params") if item[0] == "rw"]
    with pytest.raises(RulesError, match=r"^t.toml:7: \[params.rw\]: choices is missing$"):
        rw.string("choices")


def test_blank_lines_before_a_header_do_not_shift_its_line() -> None:
    text = "\n\n[[floor]]\npattern = 'a'\nfloor_percent = 1\n\n\n[[floor]]\npattern = 'b'\nfloor_percent = 99\n"
    with pytest.raises(RulesError, match=r"^f.toml:8: \[\[floor\]\] entry 2 \(pattern 'b'\): floor_percent"):
        parse_floors(text, "f.toml")


# -- Settings: what is absent, and read once ----------------------------------------------------

def test_absent_files_get_their_defaults_and_a_step_that_needs_hosts_says_so(tmp_path: Path) -> None:
    rules = sources_dir(tmp_path, '[[lore]]\nurl = "http://127.0.0.1:9/list/"\n')
    settings = load_settings(rules)
    assert settings.hosts is None and settings.templates is None
    # routing and floors fall back to the packaged files, as before the rules package
    assert settings.routing == load_settings(PROJECT / "rules").routing
    assert settings.floors.rules == load_settings(PROJECT / "rules").floors.rules
    with pytest.raises(RulesError, match="hosts.toml: no host inventory"):
        settings.need_hosts()
    with pytest.raises(RulesError, match="reproducers: no reproducer templates"):
        settings.need_templates()


def test_the_flow_plans_from_the_settings_it_was_given_not_from_disk(tmp_path: Path) -> None:
    """hosts.toml and the templates are read once, when the settings are built: a pass does not
    read them again (an edit takes effect at the next start)."""
    rules = tmp_path / "rules"
    shutil.copytree(PROJECT / "rules", rules)
    settings: Settings = dataclasses.replace(load_settings(rules), routing=parse_routing(
        'default_channel = "#perf-triage"\n', "test"))
    (rules / "hosts.toml").write_text("[[host]\n")  # broken after start
    shutil.rmtree(rules / "reproducers")
    raw = (FIXTURES / "lab" / "sysbench-cpu-regression.eml").read_bytes()
    record = report_to_json(parse_message(raw, Source("eml")))
    lab = flow.DaemonContext(settings=settings, database=tmp_path / "t.db", deliver=lambda: None)
    with SqliteStore(tmp_path / "t.db") as store:
        store.put_message(record["message_id"], raw, "test", None, "2026-12-01T00:00:00+00:00")
        store.put_record(record["message_id"], report_from_json(record), "test")
        assert flow.admit(store, lab, admit_days=14, now=datetime(2024, 4, 20, tzinfo=UTC))
        assert flow.plan_new(store, lab) == [record["message_id"]]
        triage = store.get_triage(record["message_id"])
        assert triage.state == "planned", triage.note
        assert triage.host == settings.need_hosts()[0].name


def test_the_rules_package_needs_no_stage_code_beyond_plain_data() -> None:
    """Stages import triagebot.rules, never the other way round (beyond HttpPolicy and the report
    units): no command, daemon or flow module comes with it."""
    script = ("import sys, triagebot.rules.settings\n"
              "print('\\n'.join(sorted(name for name in sys.modules if name.startswith('triagebot'))))\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=PROJECT, timeout=60)
    assert result.returncode == 0, result.stderr
    loaded = set(result.stdout.split())
    forbidden = {name for name in loaded
                 if name.split(".")[1:2] in (["cli"], ["daemon"], ["flow"], ["store"], ["reproduce"], ["notify"],
                                             ["verdict"]) or name.endswith("command")}
    assert not forbidden, forbidden
    assert "triagebot.rules.settings" in loaded
