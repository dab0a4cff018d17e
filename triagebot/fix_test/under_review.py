"""Fix testing's tools for a series under review (issue 38): a `patch-regression` is rerun as the
series' base against base+series, the series made am-ready by b4 exactly as a fix is
(series.prepare_fix) and applied and built by the host's build_patched hook (recovery.build_patched).

`series_to_test` reads the stored thread (pure: its raw messages in, the series or a refusal out):
the patch mail the report answers, else the newest version of the series the report names; its
version, parts and author (the series' From, who the verdict goes to besides the reporter); and
its base, in this order: the robot's own base when the robot measured it (what was measured), the
series' `base-commit:` (b4 writes it at the foot of the cover letter or patch), one quoted in the
report, else the tree the subject names (`[PATCH net-next]`), handed to the host as a ref.
Nothing read from the mail is run: b4 and the hooks get Message-IDs, paths and refs as argv words.
"""
from __future__ import annotations

import email
import email.policy
import re
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from email.utils import getaddresses
from pathlib import Path
from typing import Any

from triagebot.fix_test.recovery import build_patched
from triagebot.fix_test.series import FixRefused, PreparedFix, prepare_fix
from triagebot.parse.patch_reports import base_commit_of
from triagebot.parse.patches import PatchMail, patch_mail
from triagebot.records.report import Report
from triagebot.reproduce.executors.protocol import Executor
from triagebot.reproduce.plan import Plan
from triagebot.reproduce.runner import RunRecord, Sample, rerun
from triagebot.rules.hosts import Host
from triagebot.verdict.sequential import LookSchedule

_WORDS = re.compile(r"[\w./-]+")
_TAGS = re.compile(r"^\s*(?:\[[^\]]*\]\s*)+")
# a ref a host's hook may be handed: git's ref characters, never a leading '-'
_REF = re.compile(r"^[0-9A-Za-z][0-9A-Za-z._/+-]{0,127}$")


@dataclass(frozen=True)
class SeriesToTest:
    """The series a patch-regression is rerun with, as resolved from the stored thread."""

    message_id: str  # the patch mail b4 is given: the series is the one holding it
    subject: str
    version: int
    parts: int  # the patches of that version in the thread
    base: str  # a commit, a tag or a tree's ref
    base_from: str  # robot / base-commit / quoted / tree: where the base was read
    author: str | None  # the series' From, as written
    senders: tuple[str, ...] = ()  # the From address of each mail of that version: whose code it is

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "senders": list(self.senders)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SeriesToTest:
        return cls(message_id=str(data["message_id"]), subject=str(data["subject"]), version=int(data["version"]),
                   parts=int(data.get("parts") or 0), base=str(data["base"]),
                   base_from=str(data.get("base_from") or ""), author=data.get("author"),
                   senders=tuple(data.get("senders") or ()))

    def describe(self) -> str:
        return f"v{self.version} of the series <{self.message_id}> ({self.subject})"


def _title(subject: str) -> str:
    """A patch subject without its tags, reply prefixes or case: how two mails name one patch."""
    subject = re.sub(r"^(?:\s*(?:re|aw|sv)\s*:\s*)+", "", subject, flags=re.IGNORECASE)
    return " ".join(_WORDS.findall(_TAGS.sub("", subject).lower()))


def _sender(raw: bytes) -> tuple[str, str] | None:
    """(name, address) of a mail's From."""
    headers = email.message_from_bytes(raw[:65536], policy=email.policy.compat32)
    found = getaddresses([str(headers.get("From", ""))])
    if not found or not found[0][1]:
        return None
    return found[0]


def series_to_test(report: Report, thread: list[bytes]) -> SeriesToTest:
    """The series of a patch-regression's stored thread (see the module text); FixRefused saying
    what is missing: no patch mail of the series stored, or no base to apply it on."""
    named = report.series
    if report.kind != "patch-regression" or named is None:
        raise FixRefused(f"{report.message_id} is no regression of a series under review")
    mails: list[tuple[PatchMail, bytes]] = []
    for raw in thread:
        found = patch_mail(raw)
        if found is not None:
            mails.append((found, raw))
    if not mails:
        raise FixRefused(f"no [PATCH] mail of the series {named.subject!r} is stored in the thread "
                         f"(`triage ingest {named.message_id or report.message_id}` fetches the whole thread)")
    by_id = {mail.message_id: (mail, raw) for mail, raw in mails}
    chosen = by_id.get(named.message_id or "")
    if chosen is None:  # answered a reply, or the robot's patch link: the series by its subject
        title = _title(named.subject)
        same = [(mail, raw) for mail, raw in mails if _title(mail.subject) == title
                and (named.version is None or mail.version == named.version)]
        if same:
            chosen = max(same, key=lambda item: (item[0].version, -item[0].part))
    if chosen is None:
        newest = max(mail.version for mail, _ in mails)
        if named.version is not None and any(mail.version == named.version for mail, _ in mails):
            newest = named.version
        chosen = min(((mail, raw) for mail, raw in mails if mail.version == newest),
                     key=lambda item: (item[0].part == 0, item[0].part))
    patch, _raw = chosen
    version = [(mail, raw) for mail, raw in mails if mail.version == patch.version]
    base, base_from = _base(report, [raw for _, raw in version])
    first = min(version, key=lambda item: item[0].part)  # the cover letter, else part 1
    parts = sum(1 for mail, _ in version if mail.part > 0)
    author = _sender(first[1])
    senders = sorted({found[1].lower() for found in (_sender(raw) for _, raw in version) if found})
    return SeriesToTest(message_id=patch.message_id, subject=patch.subject, version=patch.version, parts=parts,
                        base=base, base_from=base_from,
                        author=(f"{author[0]} <{author[1]}>" if author[0] else author[1]) if author else None,
                        senders=tuple(senders))


def _base(report: Report, raws: list[bytes]) -> tuple[str, str]:
    named = report.series
    assert named is not None
    if report.parameters or report.lkp_config:  # the robot's report: the base it measured against
        robot_base = next((commit.sha for commit in report.commits if commit.role == "base"), None)
        if robot_base or named.base_commit:
            return str(robot_base or named.base_commit), "robot"
    for raw in raws:
        found = base_commit_of(raw.decode("utf-8", "replace"))
        if found:
            return found, "base-commit"
    if named.base_commit and _REF.match(named.base_commit):
        return named.base_commit, "quoted"
    tree = (named.tree or "").split()
    ref = tree[-1] if tree else ""
    if ref and _REF.match(ref):
        return ref, "tree"
    raise FixRefused(f"the series {named.subject!r} names no base: no base-commit line in its mails and no "
                     "tree in its subject to apply it on")


def prepare_series(thread: list[bytes], workdir: Path, archive_url: str, series: SeriesToTest) -> PreparedFix:
    """The series am-ready, by b4, exactly as a fix is prepared (FixRefused when it cannot be)."""
    return prepare_fix(thread, workdir, archive_url, series.message_id)


def series_mbox(series: SeriesToTest, thread: list[bytes], archive_url: str) -> bytes:
    """b4's am-ready mbox of the series, made in a scratch directory removed after (FixRefused)."""
    with tempfile.TemporaryDirectory(prefix="triage-series-") as work:
        return prepare_series(thread, Path(work), archive_url, series).mbox.read_bytes()


def measure_series(host: Host, executor: Executor, plan: Plan, series: SeriesToTest, mbox: bytes, *,
                   rounds: LookSchedule, floor_percent: float,
                   on_sample: Callable[[Sample], None] | None = None) -> RunRecord:
    """Base against base+series on `host` (its lock held by the caller): the host's build_patched
    hook applies b4's mbox on the base and builds it, then the rerun's plan and statistics judge the
    patched kernel (the suspect) against the base."""
    patched = build_patched(host, executor, series.base, mbox)
    return rerun(plan, host, executor, series.base, patched, rounds=rounds, floor_percent=floor_percent,
                 on_sample=on_sample)
