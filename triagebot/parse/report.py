"""Parse stage: assemble one Report from one message's bytes (mail, archive page or paste)."""
from __future__ import annotations

import dataclasses
import re

from triagebot.errors import MessageError
from triagebot.parse import lkp as lkp_parser
from triagebot.parse import prose
from triagebot.parse.classify import (
    REPLY_PREFIXES,
    classify,
    has_patch,
    is_patch_review,
    is_plain_patch,
    is_report_thread,
    lkp_sender,
)
from triagebot.parse.commits import find_commits
from triagebot.parse.draft import Draft, LanguageRequest, complete
from triagebot.parse.finite import finite_only, may_hold_huge_number
from triagebot.parse.kind_rules import (
    BUG_TITLE,
    BUGZILLA_SUBJECT,
    CI_RESULT_SUBJECT,
    NOT_A_REPORT_SUBJECT,
    PERF_BODY,
    REGZBOT_INTRODUCED,
    ROBOT_SENDERS,
    TITLE_PREFIX,
)
from triagebot.parse.language import rough_sentences
from triagebot.parse.limits import MAX_LINE_CHARS
from triagebot.parse.machine import stated_machine
from triagebot.parse.measurements import read_measurements
from triagebot.parse.message import DecodedAttachment, decode_message, header_names
from triagebot.parse.metrics import parse_tables
from triagebot.parse.numbers import combine_stance, judge_numbers
from triagebot.parse.objections import OBJECTION_GATE, after_line_break, objections_without_spacy, read_trailers
from triagebot.parse.patch_reports import people_patch_series, people_slowdown, robot_patch_series, series_subject
from triagebot.parse.possible_report import measured_slowdown, possible_slowdown
from triagebot.parse.quoting import split_quotes
from triagebot.parse.reported import performance_worse_percent, reported_headline
from triagebot.parse.reproducers import benchmark_hints, command_hints, find_commands, inline_commands
from triagebot.parse.stance import STANCE_GATE, Stance, reads_stance
from triagebot.parse.webpage import PageMessage, looks_like_html, parse_page, parse_paste
from triagebot.records.report import Attachment, Commit, Links, Report, Reproducer, Source, Syzbot, TestMachine
from triagebot.untrusted.visible import without_format_characters

_URL = re.compile(r"https?://[^\s<>\"'()\[\]]+")
# The value runs from its first to its last non-space character: a lazy `(.+?)\s*$` there was
# quadratic in a run of spaces inside the value (`Link: x` + 100k spaces + `y` took minutes).
_TRAILER = re.compile(r"^[|> \t]*+(Reported-by|Closes|Link|Tested-by|Reviewed-by):\s*+(\S(?:.*\S)?)\s*$",
                      re.MULTILINE | re.IGNORECASE)
_TRAILER_AFTER_BREAK = after_line_break(_TRAILER)  # found over "\n" + text
_BENCHMARKS = re.compile(r"\b(fio|sysbench|fs_mark|fsmark|stress-ng|hackbench|dbench|filebench|"
                         r"fxmark|aim7|xfstests|fsperf|perf bench|iozone|pgbench|unixbench)\b")
# The same, each position rejected by its first letter: the names' first letters, read from the
# pattern above (used as written once it is no longer a plain list of names). Half the scan's cost.
_BENCHMARK_NAMES = _BENCHMARKS.pattern.removeprefix(r"\b(").removesuffix(r")\b").split("|")
_BENCHMARKS_BY_LETTER = (
    re.compile(f"(?=[{''.join(sorted({name[0] for name in _BENCHMARK_NAMES}))}])" + _BENCHMARKS.pattern)
    if all(re.fullmatch(r"[\w -]+", name) for name in _BENCHMARK_NAMES) else _BENCHMARKS)
_DEBUG_OPTION = re.compile(r"CONFIG_\w*(?:DEBUG|KASAN|KCSAN|LOCKDEP|PROVE_LOCKING|UBSAN|KMEMLEAK|"
                           r"PREEMPT|_WARN)\w*")
_SYZBOT_FIELDS = {
    "HEAD commit": "head",
    "git tree": "tree",
    "console output": "console",
    "kernel config": "config",
    "dashboard link": "dashboard",
    "syz repro": "repro_syz",
    "C reproducer": "repro_c",
}
MAX_OTHER_LINKS = 100
_CONTROL_BYTES = bytes(byte for byte in range(32) if byte < 9 or 13 < byte)
# Quoted text is only worth reading for context when it looks like a report or names commits.
_QUOTED_REPORT_HINT = re.compile(r"kernel test robot|noticed a|[Rr]egression|REGRESSION|first bad commit|"
                                 r"[Bb]isect")


def _is_binary(raw: bytes) -> bool:
    sample = raw[:8192]
    if b"\x00" in sample:
        return True
    control = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    return control > len(sample) * 0.05


def _head_block(raw: bytes) -> str:
    """The bytes up to and including the first blank line (at most 64 KiB), as text; no more than
    the opening lines `_has_header_block` reads (an mbox "From " line and HEADER_LINES_CHECKED):
    the whole header block, ~90 lines of list mail, was decoded here and again by the mail path."""
    start = 0
    while start < len(raw) and raw[start] in (10, 13):  # no lstrip: it would copy the whole message
        start += 1
    window = raw[start:start + 65536]
    line_end = -1
    for _ in range(HEADER_LINES_CHECKED + 1):
        line_end = window.find(b"\n", line_end + 1)
        if line_end == -1:
            break
    if line_end != -1:
        window = window[:line_end + 1]
    end = window.find(b"\n\n")
    crlf_end = window.find(b"\r\n\r\n")
    if crlf_end != -1 and (end == -1 or crlf_end < end):
        end = crlf_end + 2
    limit = end + 2 if end != -1 else 65536
    return window[:limit].decode("utf-8", "replace")


HEADER_LINES_CHECKED = 12  # opening lines that must read as header fields for the mail path
_KNOWN_HEADERS = ("from", "date", "subject", "message-id", "received", "return-path", "to")


def _has_header_block(text: str) -> bool:
    """True when the text opens with RFC 822 header fields, one of them a usual mail header."""
    text = text.lstrip("\r\n")
    if text.startswith("From "):
        text = text.split("\n", 1)[1] if "\n" in text else ""  # an mbox separator line
    # The opening lines decide; the mail path reports any damage further down as defects.
    opening = text.split("\n", HEADER_LINES_CHECKED)[:HEADER_LINES_CHECKED]
    lines: list[str] = []
    for line in opening:
        line = line.rstrip("\r")
        if not line:
            break
        lines.append(line)
    if not lines:
        return False
    names = header_names("\n".join(lines))
    return names is not None and any(name in names for name in _KNOWN_HEADERS)


def parse_message(raw: bytes, source: Source) -> Report:
    """The Report for one message, the same in any process. Raises MessageError only for bytes
    that are no message."""
    return complete(read_message(raw, source))


def read_message(raw: bytes, source: Source) -> Draft:
    """One message read without spaCy: its record but for the language reader's fields, and what
    that reader must read (see draft.py). Raises MessageError only for bytes that are no message."""
    if not raw or raw.isspace():  # not raw.strip(): a copy of the whole message
        raise MessageError("empty input")
    if _is_binary(raw):
        raise MessageError("binary data, not a mail message, archive page or text")
    head_text = raw[:4096].decode("utf-8", "replace")
    if looks_like_html(head_text):
        page = parse_page(raw.decode("utf-8", "replace"))
        return _from_page(page, Source("openwall", source.url) if source.kind == "text" else source)
    if _has_header_block(_head_block(raw)):
        return _from_mail(raw, source)
    page = parse_paste(raw.decode("utf-8", "replace"))
    return _from_page(page, source)


def _from_page(page: PageMessage, source: Source) -> Draft:
    attachments = tuple(Attachment(name, kind, size) for name, kind, size in page.attachments)
    return _assemble(
        message_id=page.message_id,
        in_reply_to=page.in_reply_to,
        references=(),
        subject=page.subject,
        sender=page.from_,
        date=page.date,
        source=source,
        body=page.body,
        attachments=(),
        listed_attachments=attachments,
        defects=page.defects,
        thread_links=page.nav,
    )


def _from_mail(raw: bytes, source: Source) -> Draft:
    decoded = decode_message(raw)
    defects = list(decoded.defects)
    if decoded.message_id is None:
        defects.append("no Message-ID header")
    if decoded.header_count == 0:
        defects.append("no mail headers")
    return _assemble(
        message_id=decoded.message_id,
        in_reply_to=decoded.in_reply_to,
        references=decoded.references,
        subject=decoded.subject,
        sender=decoded.from_,
        date=decoded.date,
        source=source,
        body=decoded.body,
        attachments=decoded.attachments,
        listed_attachments=tuple(
            Attachment(item.name, item.content_type, item.size) for item in decoded.attachments
        ),
        defects=tuple(defects),
        thread_links=(),
    )


def _links(own: str, materials: str | None) -> Links:
    closes = reported_by = None
    other: list[str] = []
    for match in _TRAILER_AFTER_BREAK.finditer("\n" + own):
        name, value = match.group(1).lower(), match.group(2)
        if name == "reported-by" and reported_by is None:
            reported_by = value
        elif name == "closes" and closes is None:
            closes = value
    for url in _URL.findall(own):
        url = url.rstrip(".,;:")
        if url not in (closes, materials) and url not in other:
            other.append(url)
        if len(other) >= MAX_OTHER_LINKS:
            break
    return Links(closes=closes, reported_by=reported_by, materials=materials, other=tuple(other))


def _attachment_named(attachments: tuple[DecodedAttachment, ...], *names: str) -> DecodedAttachment | None:
    for item in attachments:
        if item.name and item.text is not None and item.name.lower() in names:
            return item
    return None


def _config_attachment(attachments: tuple[DecodedAttachment, ...]) -> dict[str, str]:
    """Debug-relevant options of an attached kernel config (the full file stays attached)."""
    for item in attachments:
        if item.name and item.name.startswith("config-") and item.text:
            options = prose.kernel_config(item.text)
            # enabled debug/sanitizer options only: these are what changes a benchmark's behaviour
            return {name: value for name, value in options.items()
                    if value in ("y", "m") and _DEBUG_OPTION.fullmatch(name)
                    and not name.startswith(("CONFIG_HAVE_", "CONFIG_ARCH_", "CONFIG_CC_"))
                    and "SUPPORT" not in name and "DEBUG_INFO" not in name}
    return {}


def _syzbot(subject: str, own: str) -> tuple[Syzbot, list[Commit]]:
    values: dict[str, str] = {}
    for line in own.split("\n")[:40]:
        name, _, value = line.partition(":")
        key = _SYZBOT_FIELDS.get(name.strip())
        if key and value.strip() and key not in values:
            values[key] = value.strip()
    title = re.sub(r"^(?:\[[^\]]*\]\s*)+", "", subject).strip()
    commits: list[Commit] = []
    head = values.get("head", "")
    head_match = re.match(r"([0-9a-f]{7,40})\s*(.*)", head)
    if head_match:
        # the kernel syzbot tested, not a culprit: syzbot does not bisect in its first report
        commits.append(Commit(head_match.group(1), head_match.group(2) or None, "mentioned",
                              tree=values.get("tree")))
    report = Syzbot(
        title=title,
        kernel_commit=head_match.group(1) if head_match else None,
        dashboard=values.get("dashboard"),
        repro_c=values.get("repro_c"),
        repro_syz=values.get("repro_syz"),
        console=values.get("console"),
        config=values.get("config"),
    )
    return report, commits


def cut_long_lines(text: str) -> tuple[str, str | None]:
    """The text with each line cut to MAX_LINE_CHARS characters; the defect when one was cut."""
    if len(text) <= MAX_LINE_CHARS:
        return text, None
    lines = text.split("\n")
    long_lines = sum(1 for line in lines if len(line) > MAX_LINE_CHARS)
    if not long_lines:
        return text, None
    return ("\n".join(line[:MAX_LINE_CHARS] for line in lines),
            f"{long_lines} lines longer than {MAX_LINE_CHARS} characters cut")


def _assemble(*, message_id, in_reply_to, references, subject, sender, date, source, body,
              attachments, listed_attachments, defects, thread_links) -> Draft:
    body, cut = cut_long_lines(body)
    if cut:
        defects = (*defects, cut)
    # Commits are read as a terminal shows the text (commits.find_commits, lkp.parse_lkp): a
    # zero-width space inside a SHA does not split it into a culprit prefix and another commit.
    hidden = without_format_characters(body)[1] + without_format_characters(subject)[1]
    if hidden:
        defects = (*defects, f"{hidden} hidden format characters (zero-width, bidi controls) in the text, "
                             "ignored in reading commits")
    if is_plain_patch(subject):
        # A patch posting: quoting and prose reading would be spent on a diff.
        split = split_quotes("")
        own = body
        kind = "other"
    else:
        split = split_quotes(body)
        own = split.own
        kind = classify(subject, sender, own)
        kind = _second_look(kind, subject, sender, own, split.quoted)
    fields: dict = {}
    quoted = False
    request = None
    # The robot's regression report on a patch it tested before it was merged (issue 38): the
    # same report, of the kind whose suspect is the series under review.
    robot_series = robot_patch_series(own, subject, in_reply_to) if kind == "lkp-regression" else None
    if robot_series is not None:
        kind = "patch-regression"
    if kind.startswith("lkp-") or robot_series is not None:
        fields = _lkp_fields(own, attachments)
        defects = (*defects, *fields.pop("defects"))
        if robot_series is not None:
            fields["series"] = robot_series
    elif kind == "syzbot":
        syzbot, commits = _syzbot(subject, own)
        fields = {"syzbot": syzbot, "commits": tuple(commits),
                  "links": _links(own, None)}
    elif kind == "other":
        # Patches and discussion: trailers and commit references only; no benchmark reading.
        fields = {"commits": tuple(find_commits(_trailer_text(own))), "links": _links(own, None),
                  "trailers": read_trailers(own)}
    else:
        # a reply in a series' thread that quotes a slowdown measured against it answers a report
        # (issue 38): what it says of reproducing is read as in any report's thread
        answers_report = kind == "reply" and _answers_a_slowdown(subject, split.quoted)
        fields, request = _prose_fields(own, subject, kind, answers_report=answers_report,
                                        forwarded=_forwarded_report(kind, own, split.quoted))
        # A review in a patch thread quotes the patch: there is no report to take context from.
        if kind == "reply" and split.quoted and not is_patch_review(subject):
            fields, quoted = _with_quoted_context(fields, split.quoted)
        if fields.get("measurements"):
            fields = _with_numbers(fields, split.quoted)
        scripts = attached_scripts(attachments)
        if scripts:
            fields = {**fields, "reproducers": (*fields["reproducers"], *scripts)}
        if kind == "patch-regression":
            slowdown = people_slowdown(own) or possible_slowdown(own) or measured_slowdown(own)
            series = people_patch_series(subject, in_reply_to, body, slowdown) if slowdown else None
            if series is None:  # classify saw one: the two readings are the same function's
                kind = "reply"
            else:
                fields["series"] = series
    report = Report(
        message_id=message_id,
        in_reply_to=in_reply_to,
        subject=subject,
        from_=sender,
        date=date,
        source=source,
        kind=kind,
        quoted=quoted,
        references=tuple(references),
        attachments=listed_attachments,
        thread_links=tuple(thread_links),
        defects=tuple(defects),
        **fields,
    )
    if may_hold_huge_number(body):
        report = finite_only(report)
    return Draft(report, request)


# What the second look may read again (possible_report.py): a reply, a person's message read as no
# report, or a functional bug report. Never the robots', a patch, a pull request or an announcement.
SECOND_LOOK_KINDS = ("reply", "other", "human-bug")
# A new thread tagged only for discussion ("[RFC] performance regression with …"): no patch, no
# pull request; its text is read like any other post's when it carries no patch.
_DISCUSSION_TAG = re.compile(r"^\s*(?:\[[^\]]*\]\s*)*?\[\s*(?:RFC|RFT|DISCUSS\w*|QUESTION)\s*\](?!\s*\[)",
                             re.IGNORECASE)


def _answers_a_slowdown(subject: str, quoted: str) -> bool:
    """A reply quoting a claimed slowdown answers it: its own slowdown words are a reproduction."""
    return quotes_a_slowdown(quoted) or quotes_a_patch_regression(subject, quoted)


def _second_look(kind: str, subject: str, sender: str, own: str, quoted: str) -> str:
    """The kind after a second, broad look (issue 38: nothing that may be a report is dropped
    silently): a message the kind rules left unread whose writer may state a slowdown becomes a
    report the daemon is unsure of — a `patch-regression` in a series' thread, else a
    `human-perf-complaint` — which the day's digest lists. A reply in a report's thread (its
    subject, or a quoted slowdown) answers that report: its stance is read, not a report of its own."""
    if kind not in SECOND_LOOK_KINDS or lkp_sender(sender):
        return kind
    # a robot's own mail is left; a bug tracker's `New:` mail carries a person's report (ext4 2024's
    # "[Bug 219300] New: …": "over 10 times slower than ntfs", read as a functional bug)
    tracker = BUGZILLA_SUBJECT.match(subject)
    if ROBOT_SENDERS.search(sender) and not (tracker and tracker.group(1)):
        return kind
    if kind == "other" and ((NOT_A_REPORT_SUBJECT.search(subject) and not _DISCUSSION_TAG.match(subject))
                            or CI_RESULT_SUBJECT.search(subject) or has_patch(own)):
        return kind  # a patch, a pull request, an announcement, a bot's results
    # a thread's first message says what it is about in its subject too ("USBC resume callback takes
    # far too long, between 650ms and 1200ms", dev10:16): read as the writer's first sentence
    title = TITLE_PREFIX.sub("", subject[tracker.end():] if tracker else subject, count=1)
    said = own if kind == "reply" else f"{title}\n\n{own}"
    if possible_slowdown(said, starter=kind != "reply") is None and not (
            # figures alone, without and with the change, are read in a series' thread only
            # ("1.2 seconds … before the kernel is patched, and about 1.3 seconds after", dev12:53)
            kind == "reply" and series_subject(subject) is not None and measured_slowdown(own) is not None):
        return kind
    if kind == "reply":
        if _answers_a_slowdown(subject, quoted):
            return kind
        if series_subject(subject) is not None:
            # a series' title may name what it speeds up ("improve write latency"): still a review
            # thread, whose replies' slowdowns are the series' own
            return "patch-regression"
        # a reply in a report's or a failure's thread answers it (its stance is read: "still fails
        # here, and boots slower too", dev6 replies 102)
        # and so does a reply in a thread whose subject states a slowdown ("arm-smmu-v3 high cpu
        # usage for NVMe", dev11 replies 267)
        if is_report_thread(subject) or BUG_TITLE.search(subject) \
                or possible_slowdown(REPLY_PREFIXES.sub("", subject, count=1), starter=True) is not None:
            return kind
        return "human-perf-complaint"
    return "human-perf-complaint"


_FIXES_LINE = re.compile(r"^[ \t]*Fixes:.*$", re.MULTILINE)


def _trailer_text(own: str) -> str:
    if "Fixes:" not in own:
        return ""
    return "\n".join(_FIXES_LINE.findall(own))


# A test program a person attaches is how they measured or broke it (issue 38): "dsync_test.sh"
# (dev2 replies 50), "test-tlb-range-perf.c" (dev7:60), "godown.c" (dev:26). Listed as a `script`
# reproducer (never planned: a template runs only a command line it can read option by option)
# named `attachment:NAME`, with its text when the part is text. The robot's `job-script` is its own.
_SCRIPT_NAME = re.compile(r"\.(?:sh|bash|py|pl|c|fio|bt)$", re.IGNORECASE)
MAX_SCRIPTS = 10


def attached_scripts(attachments: tuple[DecodedAttachment, ...]) -> tuple[Reproducer, ...]:
    found = [Reproducer(kind="script", url=f"attachment:{item.name}", content=item.text)
             for item in attachments if item.name and _SCRIPT_NAME.search(item.name)]
    return tuple(found[:MAX_SCRIPTS])


def _lkp_fields(own: str, attachments: tuple[DecodedAttachment, ...]) -> dict:
    facts = lkp_parser.parse_lkp(own)
    metrics, failures = parse_tables(own.split("\n"))
    reproducers: list[Reproducer] = []
    if facts.materials:
        reproducers.append(Reproducer(kind="lkp-materials", url=facts.materials))
    job = _attachment_named(attachments, "job.yaml")
    run_line = next((line for line in facts.recipe if " run " in f" {line} "), None)
    if job is not None or run_line:
        reproducers.append(Reproducer(kind="lkp-job", command=run_line,
                                      content=job.text if job else None))
    kernel_config = prose.kernel_config(own)
    kernel_config.update({k: v for k, v in _config_attachment(attachments).items()
                          if k not in kernel_config})
    return {
        "commits": tuple(facts.commits),
        "testcase": facts.testcase,
        "parameters": tuple(facts.parameters.items()),
        "test_machine": facts.test_machine,
        "headline": facts.headline,
        "metrics": tuple(metrics),
        "failures": tuple(failures),
        "reproducers": tuple(reproducers),
        "kernel_config": tuple(kernel_config.items()),
        "links": _lkp_links(own, facts),
        "compiler": facts.compiler,
        "lkp_config": facts.lkp_config,
        "also_impacted": tuple(facts.also_impacted),
        "defects": tuple(facts.parameter_defects),
    }


def _lkp_links(own: str, facts: lkp_parser.LkpFacts) -> Links:
    """The links; Closes from the report's box when written as the older `| Link:` trailer."""
    links = _links(own, facts.materials)
    if links.closes is None and facts.closes:
        return dataclasses.replace(links, closes=facts.closes, other=tuple(url for url in links.other
                                                                             if url != facts.closes))
    return links


_COMMAND_HINTS = command_hints()  # rules/commands.toml's programs, prompts, scripts
_BENCHMARK_HINTS = benchmark_hints()
_HARDWARE_HINTS = ("CPU", "cpu", "Xeon", "EPYC", "Ryzen", "Core", "thread", "RAM", "memory", "GB",
                   "GiB", "NVMe", "SSD", "HDD", "Graviton", "Ampere", "i7-", "i9-", "i5-")


QUOTED_SLOWDOWN_WINDOW = 20000  # characters of quoted text where a reply's parent states a slowdown


# Where a claimed slowdown may stand: a percentage after a digit, or a slowness word, found by
# plain substring search (a regex scan of every quote cost more than the rest of the rule); the
# slowdown rules then read a few lines around each.
_SLOWDOWN_WORDS = ("slow", "Slow", "erform", "hroughput")  # and Perform, Throughput
SLOWDOWN_REACH = 200  # characters either side of a hint that the rules read
MAX_SLOWDOWN_HINTS = 40


def _slowdown_hints(window: str) -> list[int]:
    hints: list[int] = []
    position = window.find("%")
    while position != -1 and len(hints) < MAX_SLOWDOWN_HINTS:
        before = window[max(0, position - 2):position]
        if before[-1:].isdigit() or (before[-1:] == " " and before[:1].isdigit()):
            hints.append(position)
        position = window.find("%", position + 1)
    for word in _SLOWDOWN_WORDS:
        position = window.find(word)
        while position != -1 and len(hints) < 2 * MAX_SLOWDOWN_HINTS:
            hints.append(position)
            position = window.find(word, position + SLOWDOWN_REACH)
    return sorted(hints)


def quotes_a_slowdown(quoted: str) -> bool:
    """A reply quoting a claimed slowdown ("This one is causing a 10-20% performance hit"): its
    thread is a report's, whatever its subject (a patch review, a question)."""
    if not quoted:
        return False
    window = quoted[:QUOTED_SLOWDOWN_WINDOW]
    done = -1
    for hint in _slowdown_hints(window):
        if hint < done:
            continue  # inside the piece already read
        piece = window[max(0, hint - SLOWDOWN_REACH):hint + SLOWDOWN_REACH]
        if performance_worse_percent(piece) is not None or PERF_BODY.search(piece):
            return True
        done = hint + SLOWDOWN_REACH // 2
    return False


QUOTED_PATCH_REGRESSION_WINDOW = 3000  # characters of quoted text read for a slowdown measured against a series


def quotes_a_patch_regression(subject: str, quoted: str) -> bool:
    """A reply in a series' thread quoting a slowdown measured against the series, with a figure or
    tied to it in words: "I'm able to reproduce the regression" under "performance regresses by about
    20%" (dev7 replies 3), "still poor than original" under the tester's w/ and w/o table (dev7
    replies 31)."""
    if not quoted or series_subject(subject) is None:
        return False
    # the answered report's words stand first in what is quoted; a quoted patch below them is code
    found = people_slowdown(quoted[:QUOTED_PATCH_REGRESSION_WINDOW])
    return found is not None and (found.figure or found.attributed)


# A regression tracker's forward of a bug tracker's report (issue 24 round three, dev5:6, dev5:9,
# dev5:13, dev5:23, dev5:25 on linux-crypto, linux-wireless and linux-integrity): "I noticed a
# regression report in bugzilla.kernel.org … To quote from <url>:" or "Quoting from it:", the
# reporter's text as a quotation, then a `#regzbot introduced` line. The quotation is the report:
# its figures and its machine are the record's. Its commands are not read from it (a quoted
# `dmesg | grep` is the reporter's query), nor its commits (the regzbot line names the culprit).
_FORWARD = re.compile(r"\b(?:to quote from|quoting from|quoting (?:it|the report)|i noticed a (?:regression )?report|"
                      r"decided to forward)\b", re.IGNORECASE)


def _machine(text: str, human: bool) -> TestMachine | None:
    """The machine the text states: prose.hardware's server forms; in a person's report also an
    SoC, a mobile part or a socket count (machine.py)."""
    found = prose.hardware(text) if any(hint in text for hint in _HARDWARE_HINTS) else None
    return stated_machine(text, found) if human else found


def _forwarded_report(kind: str, own: str, quoted: str) -> str | None:
    """The quoted report of a tracker's forward, or None when the message is no such forward."""
    if kind not in ("human-report", "human-perf-complaint") or not quoted or "#regzbot" not in own:
        return None
    if not REGZBOT_INTRODUCED.search(own) or not _FORWARD.search(own[:3000]):
        return None
    return quoted


# A person's report: read for its commands in sentences, its machine and its commits in the title.
PEOPLE_REPORTS = ("human-report", "human-perf-complaint", "human-bug", "patch-regression")


def _prose_fields(own: str, subject: str, kind: str, *, answers_report: bool = False,
                  forwarded: str | None = None) -> tuple[dict, LanguageRequest | None]:
    """A human report's or reply's fields, and what the language reader must read for it;
    `forwarded` is the report a tracker's forward quotes, read for the figures and the machine."""
    stated = own if forwarded is None else f"{own}\n\n{forwarded}"
    # Cheap substring gates first: most review replies name no program and no hardware.
    commands = find_commands(own) if any(hint in own for hint in _COMMAND_HINTS) else []
    if kind in PEOPLE_REPORTS:
        written = {item.command for item in commands}
        commands += [item for item in inline_commands(own) if item.command not in written]
    testcase = None
    benchmark = next((item for item in commands if item.kind not in ("command", "script")), None)
    if benchmark is not None and benchmark.command:
        testcase = benchmark.command.split()[0].rsplit("/", 1)[-1]
    if testcase is None:
        named = _BENCHMARKS_BY_LETTER.search(own[:20000]) or _BENCHMARKS_BY_LETTER.search(subject)
        testcase = named.group(1) if named else None
    # What a reply says of reproducing, objecting and measuring matters in a report's thread.
    in_report_thread = kind == "reply" and (answers_report or is_report_thread(subject))
    human = kind in PEOPLE_REPORTS
    stance_thread = in_report_thread or (kind == "reply" and reads_stance(subject))
    stance_rough = rough_sentences(own, STANCE_GATE) if human or stance_thread else ()
    objections = objections_without_spacy(own) if in_report_thread else ()
    objection_rough = rough_sentences(own, OBJECTION_GATE) if in_report_thread else ()
    request = None
    if stance_rough or objection_rough:
        request = LanguageRequest(stance_rough, kind == "reply", objection_rough, objections)
    commits = find_commits(own, subject=subject if human else "")
    return {
        "commits": tuple(commits),
        "testcase": testcase,
        "test_machine": _machine(stated, human),
        "reproducers": tuple(commands),
        "kernel_config": tuple(prose.kernel_config(own).items()),
        "links": _links(own, None),
        "stance": "none",  # until the language reader's answer (complete)
        "stance_evidence": None,
        "objections": objections,
        "trailers": read_trailers(own),
        "measurements": read_measurements(own) if in_report_thread else (),
        "prose_numbers": tuple(prose.numbers(own)),
        # a performance report states a change; a functional bug report has none to rerun
        "headline": reported_headline(stated) if kind in ("human-report", "human-perf-complaint",
                                                          "patch-regression") else None,
    }, request


def _with_numbers(fields: dict, quoted_text: str) -> dict:
    """The stance the writer's own before/after numbers give, against the report quoted
    (numbers.py); the words' stance, read later, is combined with it by the same function."""
    numbers = judge_numbers(fields["measurements"], fields.get("headline"), quoted_text)
    if numbers is None:
        return fields
    stance = combine_stance(Stance("none", None), numbers)
    return {**fields, "stance_numbers": numbers, "stance": stance.stance, "stance_evidence": stance.evidence}


def _with_quoted_context(fields: dict, quoted_text: str) -> tuple[dict, bool]:
    """A reply's own fields completed from the report it quotes, and the top-level `quoted` flag.

    `quoted` is true only when every fact that identifies the case (commits, machine,
    reproducers, config) came from quoted text: a reply that adds its own machine or commands
    is the writer's own evidence about a quoted report.
    """
    own_facts = any(fields[name] for name in ("commits", "test_machine", "reproducers", "kernel_config"))
    taken: dict = {}
    if not fields["commits"] and _QUOTED_REPORT_HINT.search(quoted_text[:20000]):
        taken.update(_quoted_context(quoted_text))
    # Benchmark programs only: a quoted patch's mount or dd lines are not the case's reproducer.
    if not fields["reproducers"] and any(hint in quoted_text for hint in _BENCHMARK_HINTS):
        commands = find_commands(quoted_text, quoted=True)
        if commands:
            taken["reproducers"] = tuple(commands)
    if taken.get("testcase") is None and fields.get("testcase"):
        taken.pop("testcase", None)  # the writer's own benchmark name stands
    return {**fields, **taken}, bool(taken) and not own_facts


def _quoted_context(quoted: str) -> dict:
    """What a reply is about, from the report it quotes (marked quoted: true)."""
    facts = lkp_parser.parse_lkp(quoted)
    if facts.commits:
        metrics, _ = parse_tables(quoted.split("\n"), quoted=True)  # rows marked quoted: true
        return {"commits": tuple(facts.commits), "testcase": facts.testcase,
                "headline": facts.headline, "metrics": tuple(metrics)}
    commits = find_commits(quoted)
    if commits:
        return {"commits": tuple(commits)}
    return {}
