"""Notify stage: render, routing, plot, and the real slack_sdk client against a local Slack."""
from __future__ import annotations

import io
import json
import statistics
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import matplotlib.text
import pytest
from PIL import Image

from tests.conftest import FIXTURES, PROJECT
from tests.support.fake_slack import FakeSlack
from triagebot.errors import RulesError, TriageError
from triagebot.notify import plot, render
from triagebot.notify.plot import run_plot, strip_plot
from triagebot.notify.slack import NotifyError, SlackNotifier
from triagebot.notify.terminal import TerminalNotifier, payload_to_text
from triagebot.parse.report import parse_message
from triagebot.records.report import Report, Source, report_from_json, report_to_json
from triagebot.records.states import TriageState, triage_state
from triagebot.rules.routing import load_routing, parse_routing, subsystems

TOKEN = "xoxb-1234-5678-triagetest"
CHANNEL = "C0TRIAGE1"
MAIL = FIXTURES / "mail"


def report_json(path: str) -> dict:
    return report_to_json(parse_message((MAIL / path).read_bytes(), Source("eml")))


@pytest.fixture(scope="module")
def lkp_report() -> dict:
    return report_json("edge/crlf-lkp-regression.eml")


@pytest.fixture
def slack():
    with FakeSlack(token=TOKEN, channels={CHANNEL: "perf-triage", "C0XFS0001": "xfs-perf"}) as server:
        yield server


@pytest.fixture
def notifier(slack: FakeSlack) -> SlackNotifier:
    return SlackNotifier(TOKEN, base_url=slack.base_url, timeout_seconds=5)


PLAN = {"schema": 1, "kind": "plan", "template": "fio", "argv": ["fio", "--name=w", "--rw=randwrite",
        "--bs=4k", "--directory={scratch}"], "metric": "write_iops", "better": "higher",
        "parser": "fio-json", "timeout_seconds": 600, "source": "lkp-testcase",
        "message_id": "202403151042.7c1e5f3a-oliver.sang@intel.com", "report_metric": "fio.write_iops",
        "reported_change_percent": -8.4, "scaled": ["test_size 256g -> 2g: the host has 20 GB scratch"],
        "notes": []}
REFUSAL = {"schema": 1, "kind": "refusal", "reason": "the report names no benchmark command",
           "missing": ["the fio job file"], "source": None, "message_id": None}
VERDICT = {"outcome": "confirmed", "measured_change_percent": -8.1, "ci_low": -9.0, "ci_high": -7.2,
           "confidence": 0.95, "p_value": 0.0004, "p_mann_whitney": 0.0002,
           "p_kolmogorov_smirnov": 0.0003, "alpha": 0.01, "runs_base": 10, "runs_suspect": 10,
           "better": "higher", "reported_change_percent": -8.4, "floor_percent": 1.5,
           "same_bound_percent": 4.2, "scale": "ratio",
           "reason": "suspect is 8.1% lower than base (95% CI -9.0% to -7.2%), p = 0.0004 < 0.01"}


def run_json(count: int = 10) -> dict:
    samples = []
    for index in range(count * 2):
        role = "base" if index % 2 == 0 else "suspect"
        value = (47000 if role == "base" else 43200) + (index * 37) % 300
        samples.append({"role": role, "commit": "2708de7eae" if role == "base" else "ef0b4a2fa7",
                        "index": index, "value": float(value), "seconds": 300.0,
                        "running_kernel": "6.8.0", "attempts": 1, "stdout": "", "metrics": {}})
    return {"host": "lab-vm-1", "base_commit": "2708de7eae", "suspect_commit": "ef0b4a2fa7",
            "plan": PLAN, "started_at": "2024-03-16T10:00:00+00:00", "samples": samples,
            "status": "done", "error": None, "finished_at": "2024-03-16T12:00:00+00:00",
            "verdict": VERDICT, "events": []}


def block_texts(blocks: list[dict]) -> str:
    parts = []
    for block in blocks:
        if "text" in block:
            parts.append(block["text"]["text"])
        parts += [item["text"] for item in block.get("fields", []) + block.get("elements", [])]
    return "\n".join(parts)


# --- the Slack client against the local server --------------------------------------------------

def test_auth_test_right_token(notifier: SlackNotifier, slack: FakeSlack) -> None:
    identity = notifier.auth_test()
    assert identity["ok"] and identity["user_id"] and identity["team_id"]
    call = slack.calls_to("auth.test")[0]
    assert call.headers["authorization"] == f"Bearer {TOKEN}"


def test_auth_test_wrong_token_is_invalid_auth(slack: FakeSlack) -> None:
    wrong = SlackNotifier("xoxb-wrong", base_url=slack.base_url)
    with pytest.raises(NotifyError) as caught:
        wrong.auth_test()
    assert caught.value.code == "invalid_auth" and caught.value.method == "auth.test"
    assert isinstance(caught.value, TriageError) and not caught.value.retryable


def test_token_and_url_from_environment(slack: FakeSlack, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_BOT_TOKEN", TOKEN)
    monkeypatch.setenv("SLACK_API_URL", slack.base_url.rstrip("/"))
    assert SlackNotifier().auth_test()["ok"]
    monkeypatch.delenv("SLACK_BOT_TOKEN")
    with pytest.raises(NotifyError, match="SLACK_BOT_TOKEN"):
        SlackNotifier()


def test_parent_posted_appears_in_history(notifier: SlackNotifier, slack: FakeSlack,
                                          lkp_report: dict) -> None:
    payload = render.parent_message(report_from_json(lkp_report), "new")
    ts = notifier.post_parent(CHANNEL, payload)
    history = notifier.history(CHANNEL)
    assert [message["ts"] for message in history] == [ts]
    assert history[0]["blocks"] == payload["blocks"] and history[0]["text"] == payload["text"]
    text = block_texts(history[0]["blocks"])
    assert history[0]["blocks"][0]["type"] == "header"
    assert "fio.write_iops -8.4% regression" in history[0]["blocks"][0]["text"]["text"]
    assert "git.kernel.org/cgit/linux/kernel/git/torvalds/linux.git/commit/?id=ef0b4a2fa72f" in text
    assert "fio-basic" in text and "lkp-icl-2sp9" in text and "*new*" in text
    assert "https://lore.kernel.org/all/202403151042.7c1e5f3a-oliver.sang@intel.com/" in text
    call = slack.calls_to("chat.postMessage")[0]
    assert call.headers["content-type"].startswith("application/json")  # blocks as JSON arrays


def test_replies_are_threaded_and_update_changes_parent(notifier: SlackNotifier, slack: FakeSlack,
                                                        lkp_report: dict) -> None:
    posted = notifier.post_message("#perf-triage", render.parent_message(report_from_json(lkp_report), "new"))
    assert posted.channel == CHANNEL  # a #name in, the ID out: chat.update needs it
    parent = posted.ts
    plan_ts = notifier.post_reply(CHANNEL, parent, render.plan_reply(PLAN))
    run = run_json()
    started = render.run_progress_reply({**run, "samples": run["samples"][:1], "status": "running"},
                                        "started", 40)
    progress_ts = notifier.post_reply(CHANNEL, parent, started)
    verdict_ts = notifier.post_reply(CHANNEL, parent, render.verdict_reply(None, run))
    final = render.parent_message(report_from_json(lkp_report), triage_state(PLAN, run), plan=PLAN, run=run)
    notifier.update_parent(CHANNEL, parent, final)

    messages = slack.messages(CHANNEL)
    assert [message["ts"] for message in messages] == [parent, plan_ts, progress_ts, verdict_ts]
    assert [message.get("thread_ts") for message in messages] == [parent] * 4
    history = notifier.history(CHANNEL)
    assert len(history) == 1 and history[0]["reply_count"] == 3  # replies stay in the thread
    assert "*confirmed*" in block_texts(history[0]["blocks"]) and history[0]["edited"]
    assert history[0]["text"].startswith("[confirmed]")
    assert "Verdict: confirmed" in messages[3]["text"] and "8.1% lower" in messages[3]["text"]
    assert "fio --name=w" in block_texts(messages[1]["blocks"])


def test_plot_upload_reaches_server_as_png(notifier: SlackNotifier, slack: FakeSlack,
                                           lkp_report: dict) -> None:
    parent = notifier.post_parent(CHANNEL, render.parent_message(report_from_json(lkp_report), "confirmed"))
    run = run_json()
    file_id = notifier.upload_plot(CHANNEL, parent, run_plot(run), render.plot_title(report_from_json(lkp_report), run))
    data = slack.uploaded(file_id)
    assert data is not None and data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    width, height, depth, colour = struct.unpack(">IIBB", data[16:26])
    assert (length, kind, depth, colour) == (13, b"IHDR", 8, 2) and width > 0 and height > 0
    assert zlib.crc32(data[12:29]) == struct.unpack(">I", data[29:33])[0]
    get_url = slack.calls_to("files.getUploadURLExternal")[0]
    assert int(get_url.params["length"]) == len(data)
    complete = slack.calls_to("files.completeUploadExternal")[0]
    assert complete.params["channel_id"] == CHANNEL and complete.params["thread_ts"] == parent
    shared = slack.messages(CHANNEL)[-1]
    assert shared["thread_ts"] == parent and shared["files"][0]["id"] == file_id
    assert shared["files"][0]["mimetype"] == "image/png"


def test_channel_not_found_names_the_channel(notifier: SlackNotifier, lkp_report: dict) -> None:
    with pytest.raises(NotifyError) as caught:
        notifier.post_parent("C0NOSUCH1", render.parent_message(report_from_json(lkp_report), "new"))
    error = caught.value
    assert (error.code, error.channel, error.method) == ("channel_not_found", "C0NOSUCH1",
                                                         "chat.postMessage")
    assert "C0NOSUCH1" in str(error) and "channel_not_found" in str(error)


def test_rate_limit_burst_is_retried_and_arrives_once(notifier: SlackNotifier, slack: FakeSlack,
                                                      lkp_report: dict) -> None:
    slack.rate_limit("chat.postMessage", count=2, retry_after=1)
    started = time.monotonic()
    ts = notifier.post_parent(CHANNEL, render.parent_message(report_from_json(lkp_report), "new"))
    assert time.monotonic() - started >= 2  # Retry-After honoured, twice
    calls = slack.calls_to("chat.postMessage")
    assert [call.status for call in calls] == [429, 429, 200]
    assert [message["ts"] for message in slack.messages(CHANNEL)] == [ts]


def test_rate_limit_beyond_retries_raises_retryable(slack: FakeSlack, lkp_report: dict) -> None:
    notifier = SlackNotifier(TOKEN, base_url=slack.base_url, rate_limit_retries=1)
    slack.rate_limit("chat.postMessage", count=3, retry_after=0)
    with pytest.raises(NotifyError) as caught:
        notifier.post_parent(CHANNEL, render.parent_message(report_from_json(lkp_report), "new"))
    assert caught.value.code == "ratelimited" and caught.value.retryable
    assert slack.messages(CHANNEL) == []


def test_outage_raises_retryable(notifier: SlackNotifier, slack: FakeSlack, lkp_report: dict) -> None:
    slack.outage(True)
    with pytest.raises(NotifyError) as caught:
        notifier.post_parent(CHANNEL, render.parent_message(report_from_json(lkp_report), "new"))
    assert caught.value.retryable and caught.value.code == "http_503"
    slack.outage(False)
    assert notifier.post_parent(CHANNEL, render.parent_message(report_from_json(lkp_report), "new"))
    assert len(slack.messages(CHANNEL)) == 1


# --- render -------------------------------------------------------------------------------------

def test_render_fits_slack_limits_and_server_accepts(notifier: SlackNotifier, slack: FakeSlack,
                                                     lkp_report: dict) -> None:
    rows = [{"name": f"perf-profile.children.cycles-pp.function_{index:04d}_" + "x" * 60,
             "base": 1.0 + index, "base_stddev_percent": None, "change": 2.5,
             "change_unit": "percent", "head": 1.1 + index, "head_stddev_percent": None}
            for index in range(600)]
    huge = {**lkp_report, "metrics": rows, "subject": "[xfs] " + "very long subject " * 3000,
            "headline": {"metric": "m" * 400, "change_percent": -8.4, "direction": "regression"}}
    payload = render.parent_message(report_from_json(huge), "running")
    assert len(payload["blocks"]) <= render.MAX_BLOCKS
    assert len(payload["text"]) <= render.MAX_MESSAGE_TEXT
    for block in payload["blocks"]:
        if block["type"] == "header":
            assert len(block["text"]["text"]) <= render.MAX_HEADER_TEXT
        if block["type"] == "section":
            assert len(block["text"]["text"]) <= render.MAX_SECTION_TEXT
            assert all(len(item["text"]) <= render.MAX_FIELD_TEXT for item in block.get("fields", []))
    assert render.TRUNCATED in block_texts(payload["blocks"])
    assert "588 more rows" in block_texts(payload["blocks"])
    notifier.post_parent(CHANNEL, payload)  # the server enforces Slack's limits too
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": f"b{i}"}} for i in range(80)]
    many = render.fit({"text": "x" * 50000, "blocks": blocks})
    assert len(many["blocks"]) == render.MAX_BLOCKS and len(many["text"]) == render.MAX_MESSAGE_TEXT
    notifier.post_parent(CHANNEL, many)


# Each state renders, and the state names are the documented set.
@pytest.mark.parametrize("state", list(TriageState))
def test_every_state_renders(lkp_report: dict, state: str) -> None:
    payload = render.parent_message(report_from_json(lkp_report), state)
    assert f"*{state}*" in block_texts(payload["blocks"]) and payload["text"].startswith(f"[{state}]")


def test_triage_state_from_stored_records() -> None:
    assert triage_state() == "new"
    assert triage_state(PLAN) == "planned"
    assert triage_state(REFUSAL) == "refused"
    assert triage_state(PLAN, {**run_json(), "verdict": None, "status": "running"}) == "running"
    assert triage_state(PLAN, {**run_json(), "verdict": None, "status": "error"}) == "error"
    assert triage_state(PLAN, run_json()) == "confirmed"


def test_refusal_and_error_replies(lkp_report: dict) -> None:
    refusal = render.plan_reply(REFUSAL)
    assert "no benchmark command" in refusal["text"] and "the fio job file" in refusal["text"]
    failed = render.verdict_reply(None, {**run_json(), "verdict": None, "status": "error",
                                         "error": "switch_kernel hook failed"})
    assert failed["text"] == "Run failed: switch_kernel hook failed"


def test_progress_moments_not_per_sample() -> None:
    moments = [render.progress_moment(done, 40) for done in range(1, 41)]
    assert [moment for moment in moments if moment] == ["started", "halfway"]
    assert moments.index("halfway") == 19
    reply = render.run_progress_reply(run_json(5), "halfway", 20)
    assert "10 of up to 20 samples" in reply["text"] and "Medians so far" in reply["text"]


def test_terminal_notifier_prints_the_same_content(lkp_report: dict, tmp_path: Path) -> None:
    stream = io.StringIO()
    terminal = TerminalNotifier(stream, plot_dir=tmp_path)
    parent = terminal.post_parent("#perf-triage", render.parent_message(report_from_json(lkp_report), "new"))
    terminal.post_reply("#perf-triage", parent, render.verdict_reply(VERDICT))
    terminal.upload_plot("#perf-triage", parent, strip_plot([1, 2, 3], [2, 3, 4]), "samples")
    out = stream.getvalue()
    assert "fio.write_iops -8.4% regression" in out and "Testcase: fio-basic" in out
    assert "kernel test robot <oliver.sang@intel.com>" in out  # escapes undone
    assert "(https://git.kernel.org/cgit/linux/kernel/git/torvalds/linux.git/commit/?id=" in out
    assert "Verdict: confirmed" in out and ":red_circle:" not in out
    assert len(list(tmp_path.glob("*.png"))) == 1
    assert payload_to_text({"text": "a &lt;b&gt;"}) == "a <b>"


def png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    return struct.unpack(">II", png[16:24])


def test_plot_png_is_valid_sized_and_deterministic() -> None:
    png = strip_plot([10.0, 10.5, 9.8], [12.0, 12.2, float("nan")])
    assert png == strip_plot([10.0, 10.5, 9.8], [12.0, 12.2])  # non-finite values are left out
    assert png_size(png) == (plot.WIDTH_INCHES * plot.DPI, plot.HEIGHT_INCHES * plot.DPI)
    with Image.open(io.BytesIO(png)) as image:  # a PNG an image library decodes whole
        image.load()
        colours = {colour for _, colour in image.convert("RGB").getcolors(1 << 20)}
    assert {(31, 119, 180), (255, 127, 14)} <= colours  # base and suspect samples are drawn
    # nothing to plot, or nothing but one value: still a plot, not an error
    assert png_size(strip_plot([], [])) == png_size(strip_plot([5, 5], [5])) == png_size(png)


def texts(figure) -> str:
    return "\n".join(item.get_text() for item in figure.findobj(matplotlib.text.Text))


def test_run_plot_names_the_commits_metric_medians_and_reported_change() -> None:
    run = run_json()
    figure = plot.run_figure(run)
    [axes] = figure.axes
    assert axes.get_xlabel() == "commit" and axes.get_ylabel() == "write_iops (higher is better)"
    ticks = [label.get_text() for label in axes.get_xticklabels()]
    assert ticks == ["base\n2708de7eae\n10 samples", "suspect\nef0b4a2fa7\n10 samples"]
    values = {role: [sample["value"] for sample in run["samples"] if sample["role"] == role]
              for role in ("base", "suspect")}
    for role in ("base", "suspect"):  # every sample of each side, at its value
        [points] = [item for item in axes.collections if item.get_gid() == f"{role}-samples"]
        assert sorted(points.get_offsets()[:, 1]) == sorted(values[role])
        [median] = [item for item in axes.collections if item.get_gid() == f"{role}-median"]
        assert median.get_segments()[0][0][1] == statistics.median(values[role])
    [reported] = [item for item in axes.collections if item.get_gid() == "reported"]
    assert reported.get_segments()[0][0][1] == pytest.approx(statistics.median(values["base"]) * (1 - 0.084))
    words = texts(figure)
    assert "write_iops on lab-vm-1" in words and "reported \u22128.4%, measured \u22128.1%" in words
    assert "verdict: confirmed" in words and "reported change \u22128.4% from the base median" in words
    assert f"median {statistics.median(values['base']):,.6g}" in words
    assert run_plot(run) == plot.png_of(plot.run_figure(run))


def test_show_and_the_plot_give_one_median_for_an_even_sample_count() -> None:
    from triagebot.present.summary import render_run

    # four samples a side: the median is the mean of the two middle ones, not the upper one
    run = run_json(count=4)
    values = {role: sorted(sample["value"] for sample in run["samples"] if sample["role"] == role)
              for role in ("base", "suspect")}
    assert values["base"] == [47000.0, 47074.0, 47148.0, 47222.0]
    [axes] = plot.run_figure(run).axes
    shown = render_run(run)
    for role, expected in (("base", 47111.0), ("suspect", 43348.0)):
        [median] = [item for item in axes.collections if item.get_gid() == f"{role}-median"]
        assert median.get_segments()[0][0][1] == expected
        assert f"  {role + ':':9} " in shown and f"median {expected:.6g} over 4 runs" in shown


def test_matplotlib_is_imported_only_to_draw_a_plot() -> None:
    # `triage parse` / `status` start without it; the daemon loads it at its first plot
    code = ("import sys, triagebot.cli.main, triagebot.cli.parse, triagebot.daemon.loop, triagebot.daemon.flow, "
            "triagebot.cli.status;"
            " assert 'matplotlib' not in sys.modules, 'matplotlib imported at start'")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PROJECT)
    assert result.returncode == 0, result.stderr


# --- routing ------------------------------------------------------------------------------------

ROUTES = """
default_channel = "#perf-triage"

[[route]]
channel = "#locks"
subsystem = "fs/*"
testcase = "will-it-scale"

[[route]]
channel = "C0XFS0001"
subsystem = ["xfs", "iomap"]

[[route]]
channel = "#btrfs"
list = "linux-btrfs"

[[route]]
channel = "#fsmark"
metric = "fsmark.*"

[[route]]
channel = "#ext4"
subsystem = "ext4"
"""


# One report per route, and unmatched ones to the default.
@pytest.mark.parametrize("fixture, list_name, channel", [
    ("edge/attachments-lkp-2021.eml", None, "#locks"),         # [fs/locks] + will-it-scale
    ("edge/crlf-lkp-regression.eml", None, "C0XFS0001"),       # "[linus:master] [xfs] …"
    ("edge/wrapped-fio-command.eml", None, "C0XFS0001"),       # "[REGRESSION] iomap: …"
    ("lkp/improvement-2024.eml", "linux-btrfs", "#btrfs"),     # the list decides before the metric
    ("lkp/improvement-2024.eml", None, "#fsmark"),             # metric glob
    ("human/bisected-fsmark.eml", None, "#ext4"),              # "[REGRESSION] ext4: …"
    ("edge/no-charset.eml", None, "#perf-triage"),             # no prefix: default
    ("edge/base64-body.eml", "linux-kernel", "#perf-triage"),  # "ext4 buffered…" is no prefix
])
def test_routing_picks_channel(fixture: str, list_name: str | None, channel: str) -> None:
    routing = parse_routing(ROUTES, "test-routes.toml")
    assert routing.channel_for(report_from_json(report_json(fixture)), list_name) == channel


def test_routing_list_from_lore_source_url() -> None:
    routing = parse_routing(ROUTES, "test-routes.toml")
    report = Report(message_id="20240101.abc@example.com", in_reply_to=None, subject="something", from_="",
                    date=None, kind="human-report",
                    source=Source("lore", "https://lore.kernel.org/linux-btrfs/20240101.abc@example.com/"))
    assert routing.channel_for(report) == "#btrfs"


def test_shipped_routing_file_loads() -> None:
    routing = load_routing(PROJECT / "rules" / "routing.toml")
    assert routing.default_channel and routing.routes
    assert routing.channel_for(report_from_json(report_json("edge/crlf-lkp-regression.eml"))) == "#xfs-perf"


def test_subsystem_prefixes() -> None:
    assert subsystems("Re: [linus:master] [xfs] ef0b4a2fa7: fio.write_iops -8.4% regression") == ("xfs",)
    assert subsystems("[PATCH v2 1/3] ext4: fix a thing") == ("ext4",)
    assert subsystems("[fs/locks] abcdef0123: will-it-scale") == ("fs/locks",)
    assert subsystems("perf bench sched messaging ~20% slower") == ()


# A bad entry names the file, the entry and its line.
@pytest.mark.parametrize("text, message", [
    ('default_channel = "#x"\n[[route]]\nchannel = "#a"\nsubsystem = "xfs"\n[[route]]\n'
     'channel = "#b"\ncolour = "red"\n',
     ":5: [[route]] entry 2: unknown key(s) colour (expected channel, list, metric"),
    ('default_channel = "#x"\n[[route]]\nsubsystem = "xfs"\n', ":2: [[route]] entry 1: channel is missing"),
    ('default_channel = "#x"\n[[route]]\nchannel = "#a"\n', ":2: [[route]] entry 1: matches everything"),
    ('default_channel = "#x"\n[[route]]\nchannel = "not a channel"\nlist = "x"\n',
     ":2: [[route]] entry 1: channel must be a Slack channel ID"),
    ('default_channel = "#x"\n[[route]]\nchannel = "#a"\nmetric = []\n',
     ":2: [[route]] entry 1: metric must be a non-empty string"),
    ('[[route]]\nchannel = "#a"\nlist = "x"\n', "default_channel is missing"),
    ('default_channel = "#x"\nroute = 3\n', "array of tables"),
    ('default_channel = \n', "not valid TOML"),
])
def test_bad_routing_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "routing.toml"
    path.write_text(text)
    with pytest.raises(RulesError) as caught:
        load_routing(path)
    assert str(caught.value).startswith(str(path)) and message in str(caught.value)


def test_fake_slack_rejects_missing_token(slack: FakeSlack) -> None:
    import urllib.request

    request = urllib.request.Request(slack.base_url + "chat.postMessage",
                                     data=b"channel=C0TRIAGE1&text=hi", method="POST")
    with urllib.request.urlopen(request) as answer:
        assert json.loads(answer.read()) == {"ok": False, "error": "not_authed"}
