"""Slack text from mail is escaped and links come only from URLs that are plainly URLs
(../shared/hostile/round3/slack-mrkdwn-tree-url.md): an LKP report whose tree line is
`https://git.kernel.org/x|PWNED-LINK><!channel><https://evil.example/phish master` and whose
subject carries `<!here>` is taken on, its payloads posted to the test Slack server, and neither
a broadcast nor a link to evil.example reaches what Slack reads. Then, for any text (Hypothesis),
the escaping leaves no `<`, `>` or bare `&` and no `<!`, `<@`, `<#`."""
from __future__ import annotations

import json
import re

from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import FIXTURES
from tests.support.fake_slack import FakeSlack
from triagebot.lifecycle.follow import parent_payload
from triagebot.notify import render
from triagebot.notify.slack import SlackNotifier
from triagebot.parse.report import parse_message
from triagebot.records.report import Source
from triagebot.store.sqlite import SqliteStore
from triagebot.untrusted.mrkdwn import escape, link, safe_url

RAW = (FIXTURES / "slack-hostile" / "lkp-tree-url.eml").read_bytes().replace(
    b"regression <b>x</b>", b"regression <!here> <@U0BOSS> <#C0GENERAL> & <https://evil.example/a|click>")
REPORT_ID = "209905090905.aff4e0e6-oliver.sang@intel.com"
TOKEN, CHANNEL = "xoxb-mrkdwn", "C0PERF"
_CONTROL = re.compile(r"<[!@#]|<https?://evil|evil\.example/phish[^<>|]*\|")


def mrkdwn_texts(payload: dict) -> list[str]:
    """Every text of a payload Slack reads as mrkdwn: its `text`, and each block's but a header's
    (plain_text, which Slack shows as it is)."""
    found = [payload.get("text") or ""]

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if node.get("type") == "mrkdwn":
                found.append(str(node.get("text", "")))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(payload.get("blocks") or [])
    return found


def test_the_recipes_tree_url_posts_no_broadcast_and_no_evil_link(tmp_path) -> None:
    report = parse_message(RAW, Source("eml"))
    culprit = next(commit for commit in report.commits if commit.role == "culprit")
    assert culprit.tree.startswith("https://git.kernel.org/x|PWNED-LINK><!channel>")  # as the mail wrote it
    with SqliteStore(tmp_path / "s.db") as store:
        store.put_message(REPORT_ID, RAW, "test", None, "2099-05-09T00:00:00+00:00")
        store.put_record(REPORT_ID, report, "test")
        store.start_triage(REPORT_ID, CHANNEL)
        store.add_move(REPORT_ID, "fix-proposed", "<!channel>@evil.example", "a fix <!here> proposed & said")
        payloads = [render.parent_message(report, "new"), parent_payload(store, store.get_triage(REPORT_ID)),
                    render.digest_message("2099-05-09", [(report, ("<!channel> odd",))]),
                    render.plan_reply({"kind": "refusal", "reason": "<!here> no", "missing": ["<@U1>"]}),
                    render.moved_reply("<!channel>"), render.verdict_reply(None, {"error": "<!here> failed"})]
    for payload in payloads:
        for text in mrkdwn_texts(payload):
            assert not _CONTROL.search(text), text
    # posted for real: what the Slack server keeps of the parent has neither
    with FakeSlack(token=TOKEN, channels={CHANNEL: "perf-triage"}) as slack:
        SlackNotifier(TOKEN, base_url=slack.base_url).post_parent(CHANNEL, payloads[0])
        [posted] = slack.messages(CHANNEL)
    stored = json.dumps(posted)
    assert "<!channel>" not in stored and "<!here>" not in stored and "<https://evil.example" not in stored
    assert "&lt;!here&gt;" in stored  # the subject's broadcast, shown as the text it is
    assert "(xfs: &lt;script&gt;" in posted["text"]  # the notification text is escaped too
    culprit_field = posted["blocks"][1]["fields"][0]["text"]
    assert culprit_field.startswith("*Culprit*\n2edf06a50f5b")  # no link at all: the URL is not plainly one
    assert "&lt;!channel&gt;" in culprit_field


def test_a_persons_subject_reaches_the_notification_text_escaped() -> None:
    raw = (FIXTURES / "lab" / "sysbench-cpu-regression.eml").read_bytes().replace(
        b"Subject: [REGRESSION]", b"Subject: <!here> [REGRESSION] & <@U0BOSS>")
    payload = render.parent_message(parse_message(raw, Source("eml")), "new")
    assert payload["text"].startswith("[new] &lt;!here&gt; [REGRESSION] &amp; &lt;@U0BOSS&gt; sysbench cpu")
    assert all(not _CONTROL.search(text) for text in mrkdwn_texts(payload))


def test_a_link_is_made_only_from_a_plain_url() -> None:
    assert link("https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git/commit/?id=abc&x=1", "abc") == (
        "<https://git.kernel.org/pub/scm/linux/kernel/git/torvalds/linux.git/commit/?id=abc&amp;x=1|abc>")
    assert render.link(render.lore_url("a<b>|c@x"), "mail") == "<https://lore.kernel.org/all/a%3Cb%3E%7Cc@x/|mail>"
    for url in ("https://git.kernel.org/x|PWNED><!channel>", "javascript:alert(1)", "https://a b.example/",
                "https://evil.example/\u202e", "ftp://git.kernel.org/", "https://user@host.example/",
                'https://x.example/"onclick', "https://x.example/a\\b", "https:///path", None, ""):
        assert safe_url(url) is None, url
        assert link(url, "label<>") == "label&lt;&gt;"
    # a host named anywhere in the URL is not the URL's host
    assert render.commit_url("https://evil.example/git.kernel.org", "abc") is None
    assert render.commit_url("https://evil.example/?github.com/", "abc") is None
    assert render.commit_url("https://git.kernel.org/pub/scm/x.git", "abc") == (
        "https://git.kernel.org/pub/scm/x.git/commit/?id=abc")


@given(st.text())
def test_escaped_text_holds_no_control_sequence(text: str) -> None:
    escaped = escape(text)
    assert "<" not in escaped and ">" not in escaped
    assert not re.search(r"&(?!amp;|lt;|gt;)", escaped)  # every & starts one of the three escapes
    assert not any(mark in escaped for mark in ("<!", "<@", "<#"))
    assert escaped.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&") == text  # nothing lost


@given(st.text(), st.text(max_size=200))
def test_a_link_from_any_text_opens_nothing_but_a_plain_url(url: str, label: str) -> None:
    made = link(url, label)
    if made.startswith("<"):  # a link: its URL passed the check, its label escaped
        target, _, shown = made[1:-1].partition("|")
        assert safe_url(url) == target and "|" not in shown and not re.search(r"[<>]", target + shown)
    else:
        assert made == escape(label)


@given(st.text(min_size=1, max_size=400), st.integers(min_value=40, max_value=300))
def test_cutting_escaped_text_to_slacks_limits_cuts_no_escape_in_two(text: str, limit: int) -> None:
    cut = render.truncate(escape(text), limit)
    assert not re.search(r"&(?!amp;|lt;|gt;)", cut) and "<" not in cut
