"""Numbers in requests and malformed requests (issue 34, finding 9): one parser for every number a
request carries (untrusted/whole_numbers.py), and no request, signed or not, answered 500.

`str.isdigit()` took `²` and 5,000 digits that `int()` then refused: the Slack timestamp header
(read before any signature) and `/?limit=` answered 500 with a traceback, and so did a validly
signed Slack body of the wrong shape. Here every endpoint of the one app (the pages, /healthz,
/metrics, Slack's) is fed those cases, then a Hypothesis batch of malformed requests; none may
answer 5xx or log a traceback. The app is driven through Starlette's TestClient (a real uvicorn
adds nothing to what the app answers; tests/test_web_server_bounds.py and bench/request_fuzz.py
drive one).
"""
from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from tests.support.fake_slack import FakeSlack, sign
from tests.support.slack_world import CHANNEL, REPORT_ID, ROUTING, SECRET, TOKEN, decided_report
from triagebot.rules.routing import parse_routing
from triagebot.store.sqlite import SqliteStore
from triagebot.untrusted.whole_numbers import MAX_DIGITS, BadNumber, whole_number
from triagebot.web.app import Health, build_app
from triagebot.web.slack_app import SLACK_PATH, SlackSettings
from triagebot.web.views import Site

SUPERSCRIPT_TWO = "\u00b2"  # isdigit() says yes, int() says no
ARABIC_INDIC = "\u0661\u0662"  # int() reads 12: never a number in a request
PATHS = ("/", "/hosts", "/healthz", "/metrics", "/style.css", f"/r/{REPORT_ID}", f"/r/{REPORT_ID}/plot.png",
         f"/r/{REPORT_ID}/plot.svg", "/r/nobody@example.org", SLACK_PATH, "/nowhere")


def test_whole_numbers_are_ascii_digits_of_bounded_length() -> None:
    assert whole_number("0", "n") == 0 and whole_number("1733400000", "n") == 1733400000
    assert whole_number("9" * MAX_DIGITS, "n") == int("9" * MAX_DIGITS)
    for text, words in ((SUPERSCRIPT_TWO, "not a whole number (ASCII digits 0-9 only)"),
                        (ARABIC_INDIC, "not a whole number"), ("+5", "not a whole number"),
                        (" 5", "not a whole number"), ("1_000", "not a whole number"), ("-1", "not a whole number"),
                        ("", "empty"), ("9" * 5000, "5000 characters, a whole number has at most 18 digits")):
        with pytest.raises(BadNumber, match="^limit") as refused:
            whole_number(text, "limit")
        assert words in str(refused.value)
    with pytest.raises(BadNumber, match=r"limit '0': out of range, a whole number from 1 to 1000"):
        whole_number("0", "limit", low=1, high=1000)
    # a refused value is quoted cut and escaped: a reason is one short line whatever was sent
    with pytest.raises(BadNumber) as long_one:
        whole_number("\u202e" + "x" * 100, "n")
    assert "\\u202e" in str(long_one.value) and len(str(long_one.value)) < 160


@pytest.fixture
def apps(tmp_path: Path) -> Iterator[dict[str, TestClient]]:
    """The one app with every route (a stored report, the health answers, Slack through the test
    Slack server), in the team's view and the public one."""
    database = tmp_path / "web.db"
    with SqliteStore(database) as store:
        decided_report(store)

    @contextmanager
    def open_store() -> Iterator[SqliteStore]:
        with SqliteStore(database) as store:
            yield store

    routing = parse_routing(ROUTING, "routing.toml")
    health = Health(healthz=lambda: (200, b'{"status": "ok"}\n', "application/json"),
                    metrics=lambda: (200, b"triage_up 1\n", "text/plain"))
    with FakeSlack(token=TOKEN, channels={CHANNEL: "perf-triage"}) as slack:
        slack_settings = SlackSettings(signing_secret=SECRET, token=TOKEN, open_store=open_store,
                                       permissions=routing.permissions, api_url=slack.base_url)
        clients = {"team": TestClient(build_app(Site(open_store, None, database), health, slack_settings)),
                   "public": TestClient(build_app(Site(open_store, None, database, public=True), health,
                                                  slack_settings))}
        yield clients


def signed_post(client: TestClient, body: bytes, stamp: bytes | None = None, **headers: str):
    timestamp = int(time.time())
    return client.post(SLACK_PATH, content=body, headers={
        "content-type": "application/x-www-form-urlencoded",
        "x-slack-request-timestamp": stamp if stamp is not None else str(timestamp).encode(),
        "x-slack-signature": sign(SECRET, timestamp, body), **headers})


@pytest.mark.parametrize("stamp", [SUPERSCRIPT_TWO.encode("latin-1"), b"9" * 5000, ARABIC_INDIC.encode(),
                                   b"-1", b"1e9", b" 1"])
def test_a_malformed_slack_timestamp_is_400_before_any_signature_is_checked(apps, stamp: bytes, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    answer = signed_post(apps["team"], b"x", stamp=stamp)
    assert answer.status_code == 400, answer.text
    assert "X-Slack-Request-Timestamp" in answer.text and "whole number" in answer.text
    assert not [record for record in caplog.records if record.exc_info]


@pytest.mark.parametrize("limit", [SUPERSCRIPT_TWO, "9" * 5000, ARABIC_INDIC, "0", "1001", "-3", "ten"])
def test_a_malformed_limit_is_400_with_the_reason(apps, limit: str, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    for client in apps.values():
        answer = client.get("/?limit=" + quote(limit))
        assert answer.status_code == 400, answer.text
        assert "limit" in answer.text and "whole number" in answer.text
    assert apps["team"].get("/?limit=7").status_code == 200
    assert not [record for record in caplog.records if record.exc_info]


MALFORMED_SIGNED = [
    b"payload=notjson", b"payload=%7B%7D", b"{}", b"\xff\xfe", b"payload=%5B1%5D", b"command=/triage&text=show",
    b"command=/other&user_id=U0RUNNER", b"payload=" + quote('{"type":"block_actions","actions":[{}]}').encode(),
    b"payload=" + quote('{"type":"block_actions","user":{"id":"U0RUNNER"},"trigger_id":"t",'
                        '"actions":[{"action_id":7}]}').encode(),
    b"payload=" + quote('{"type":"view_submission","user":{"id":"U0RUNNER"},'
                        '"view":{"callback_id":"rerun-with","private_metadata":"{}"}}').encode(),
    b"payload=" + quote('{"type":"shortcut","user":{"id":"U0RUNNER"}}').encode(),
    b"payload=a&payload=b", b"%zz=1",
    # what slack-bolt itself reads before any listener, of a type it does not handle (bench/request_fuzz.py found it)
    b"payload=" + quote('{"type":"block_actions","user":{"id":"U0RUNNER"},"trigger_id":"t","team":7,'
                        '"actions":[{"action_id":"rerun","value":"x"}]}').encode(),
    b"payload=" + quote('{"type":"block_actions","user":{"id":"U0RUNNER"},"trigger_id":"t","authorizations":"x",'
                        '"actions":[{"action_id":"rerun","value":"x"}]}').encode(),
    b"payload=" + quote('{"type":"block_actions","user":{"id":"U0RUNNER"},"trigger_id":"t","message":{"user":5},'
                        '"actions":[{"action_id":"rerun","value":"x"}]}').encode(),
    b"payload=" + quote('{"type":"block_actions","user":{"id":"U0RUNNER"},"trigger_id":"t","channel":"C1",'
                        '"actions":[{"action_id":"rerun","value":"x"}]}').encode(),
]


@pytest.mark.parametrize("body", MALFORMED_SIGNED)
def test_a_validly_signed_body_of_the_wrong_shape_is_400(apps, body: bytes, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    answer = signed_post(apps["team"], body)
    assert answer.status_code == 400, answer.text
    assert "a signed body this app does not handle" in answer.text
    assert not [record for record in caplog.records if record.exc_info]


def test_a_well_formed_signed_command_still_reaches_the_listeners(apps) -> None:
    body = b"command=/triage&text=status&user_id=U0RUNNER&channel_id=" + CHANNEL.encode()
    answer = signed_post(apps["team"], body)
    assert answer.status_code == 200 and "confirmed 1" in answer.text


def test_a_signature_that_is_not_ascii_is_refused_not_raised(apps, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    answer = apps["team"].post(SLACK_PATH, content=b"\xff", headers={
        "x-slack-request-timestamp": str(int(time.time())), "x-slack-signature": "v0=\u00e9".encode("latin-1")})
    assert answer.status_code == 401 and "signature that does not match" in answer.text
    assert not [record for record in caplog.records if record.exc_info]


# --- a batch of malformed requests, every endpoint ------------------------------------------------

NUMBERISH = st.one_of(st.text(max_size=30), st.sampled_from([SUPERSCRIPT_TWO, ARABIC_INDIC, "9" * 5000, "-1", "0",
                                                             "1001", "٣", "1" * 19, "\x00", "%", "1e3"]))
HEADER_VALUE = st.binary(max_size=60).map(lambda raw: raw.replace(b"\r", b"").replace(b"\n", b"")
                                          .replace(b"\x00", b"").strip(b" \t"))
FIELD = st.sampled_from(["limit", "since", "state", "kind", "list", "testcase", "x", "payload", "command"])


@st.composite
def malformed_request(draw: st.DrawFn) -> dict:
    # Slack's endpoint, the one route that reads a body, is drawn half the time
    path = draw(st.one_of(st.just(SLACK_PATH), st.sampled_from(PATHS),
                          st.text(max_size=40).map(lambda text: "/" + quote(text))))
    query = "&".join(f"{draw(FIELD)}={quote(draw(NUMBERISH))}" for _ in range(draw(st.integers(0, 4))))
    headers = {}
    if draw(st.booleans()):
        headers["x-slack-request-timestamp"] = draw(st.one_of(NUMBERISH.map(lambda text: text.encode("utf-8")),
                                                              HEADER_VALUE))
    if draw(st.booleans()):
        headers["x-slack-signature"] = draw(HEADER_VALUE)
    body = draw(st.one_of(st.binary(max_size=200), st.builds(
        lambda payload: b"payload=" + quote(json.dumps(payload)).encode(),
        st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                         st.sampled_from(["type", "user", "id", "actions", "action_id", "value", "view",
                                          "callback_id", "private_metadata", "trigger_id", "channel", "state",
                                          "team", "enterprise", "authorizations", "container", "channel_id",
                                          "message", "event", "values", "block_id", "selected_option"]),
                         inner, max_size=5), max_leaves=12))))
    method = draw(st.one_of(st.just("POST"), st.sampled_from(["GET", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH"])))
    return {"method": method,
            "url": path + ("?" + query if query else ""), "headers": headers, "body": body,
            "sign": draw(st.booleans()), "view": draw(st.sampled_from(["team", "public"]))}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(request=malformed_request())
def test_no_malformed_request_to_any_endpoint_is_answered_5xx_or_logs_a_traceback(apps, request: dict,
                                                                                  caplog) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.clear()
    headers = dict(request["headers"])
    if request["sign"] and request["method"] == "POST":  # signed by whoever holds the secret: the shape decides
        stamp = int(time.time())
        headers = {"x-slack-request-timestamp": str(stamp).encode(),
                   "content-type": "application/x-www-form-urlencoded",
                   "x-slack-signature": sign(SECRET, stamp, request["body"]).encode()}
    answer = apps[request["view"]].request(request["method"], request["url"], content=request["body"],
                                           headers=headers)
    assert answer.status_code < 500, (request, answer.status_code, answer.text[:300])
    assert not [record for record in caplog.records if record.exc_info], request
