"""Records: the frozen data that flows between stages, and its JSON form (schema 1).

The JSON shape is the contract in design/record.md; fields may be added, none renamed.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

SCHEMA_VERSION = 1

KINDS = (
    "lkp-regression",
    "lkp-improvement",
    "lkp-functional",
    "syzbot",
    # a slowdown measured against a patch series under review (issue 38): a person's reply in the
    # series' thread, or the robot's report posted as a reply to the patch; its `series` says which
    "patch-regression",
    "human-report",
    "human-perf-complaint",
    "human-bug",
    "reply",
    "other",
)
STANCES = ("reproduced", "not-reproduced", "none")


@dataclass(frozen=True)
class Source:
    kind: str  # mbox / eml / lore / openwall / text
    url: str | None = None


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str | None = None
    role: str = "mentioned"  # culprit / base / fix / mentioned
    tree: str | None = None
    branch: str | None = None


@dataclass(frozen=True)
class TestMachine:
    description: str
    threads: int | None = None
    sockets: int | None = None
    cpu_model: str | None = None
    microarch: str | None = None
    memory_gb: int | None = None
    tbox_group: str | None = None


@dataclass(frozen=True)
class Headline:
    metric: str
    change_percent: float
    direction: str  # regression / improvement


@dataclass(frozen=True)
class MetricRow:
    name: str
    base: float
    base_stddev_percent: float | None
    change: float
    change_unit: str  # percent / absolute
    head: float
    head_stddev_percent: float | None
    quoted: bool = False  # read from quoted (`> `) text: the report a reply quotes
    # The details line (`gcc-12/performance/…/testcase`) of the table the row is in, when that is
    # another test's table (LKP's "also impacted" tests); None for the report's own table.
    test: str | None = None


@dataclass(frozen=True)
class FailureRow:
    """One row of an LKP `fail:runs  %reproduction  fail:runs` table."""

    name: str
    base_fail: int | None
    base_runs: int | None
    reproduction_percent: float | None
    head_fail: int | None
    head_runs: int | None


@dataclass(frozen=True)
class Reproducer:
    # lkp-materials / lkp-job / fio / sysbench / fsperf / fs_mark / stress-ng / hackbench /
    # perf-bench / iozone / will-it-scale / vdbench / ltp / phoronix / rds-stress (rules/commands.toml) /
    # command / script (a shell script or loop, kept whole with its newlines; never planned)
    kind: str
    command: str | None = None
    url: str | None = None
    content: str | None = None  # the attached job file's text, where one was attached
    quoted: bool = False


@dataclass(frozen=True)
class Links:
    closes: str | None = None
    reported_by: str | None = None
    materials: str | None = None
    other: tuple[str, ...] = ()


@dataclass(frozen=True)
class Attachment:
    name: str | None
    content_type: str
    size: int


@dataclass(frozen=True)
class Measurement:
    """A value the writer measured, from pasted benchmark output or prose ("IOPS=363k")."""

    text: str  # the line or phrase it came from
    name: str | None  # "fio.read_iops", "Amean 1 base", … ; None for a number in prose
    value: float
    unit: str
    # Added for numbers that decide a stance: the side the writer put the value on ("before",
    # "without the patch", "6.5.2"), the spread and the run count written with it, where written.
    label: str | None = None
    stddev: float | None = None  # sample standard deviation, in the value's unit
    runs: int | None = None  # runs the value is the mean of (1 for a single run's result)


@dataclass(frozen=True)
class NumbersStance:
    """What a reply's own before/after numbers say of the reported change, with the statistics.

    ``base_*`` is the reference side (before, without, base, the older kernel), ``suspect_*`` the
    changed one; the change is suspect over base. Values not computed are None.
    """

    outcome: str  # reproduced / not-reproduced / inconclusive
    evidence: str  # the statistics in one line, as `triage show` prints them
    unit: str
    base_label: str
    base_mean: float
    base_stddev: float | None
    base_runs: int | None
    suspect_label: str
    suspect_mean: float
    suspect_stddev: float | None
    suspect_runs: int | None
    change_percent: float | None
    ci_low_percent: float | None
    ci_high_percent: float | None
    p_value: float | None  # Welch's two-sided test
    reported_change_percent: float | None  # the change of the report the reply answers


@dataclass(frozen=True)
class Objection:
    """A technical objection in a reply that matters to triage, with the sentence stating it."""

    kind: str  # debug-config / not-plausible / bisection-doubt / alignment / proposed-fix / more-data
    evidence: str


@dataclass(frozen=True)
class Trailer:
    """A trailer or regzbot command line: `Tested-by: …`, `#regzbot introduced: …`."""

    name: str  # as conventionally spelled: "Fixes", "Reported-by", "regzbot introduced", …
    value: str


@dataclass(frozen=True)
class AlsoImpacted:
    """One entry of LKP's "also has significant impact on the following tests" box."""

    testcase: str | None
    change: str
    test_machine: str | None
    parameters: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Syzbot:
    title: str
    kernel_commit: str | None = None
    dashboard: str | None = None
    repro_c: str | None = None
    repro_syz: str | None = None
    console: str | None = None
    config: str | None = None


@dataclass(frozen=True)
class ProseNumber:
    """A measured value stated in prose: "510 MB/s", "5-10% increase"."""

    text: str
    value: float
    unit: str
    quoted: bool = False


@dataclass(frozen=True)
class PatchSeries:
    """The series under review a `patch-regression` measures, as the message names it.

    From a reply: the thread's patch subject (reply prefixes and list tags dropped), its version
    as written (`v2`; None when no `vN` is written), the message replied to, a `base-commit:`
    line the message carries (quoted or not) and the tree the subject's tag names
    (`[PATCH net-next v2]`). From the robot's report: its `patch subject:`, `patch link:` and
    `base:` lines. The daemon completes it from the stored thread (the series' own base-commit,
    its author) when it plans the rerun. `statement` is the writer's sentence stating the
    slowdown and `numbers` the figures written in or around it, as written ("~4900 MiB/s",
    "26%"); `attributed` says whether the writer tied it to the series in words ("with this
    patch", "w/ series", "your patches") rather than the thread alone, and claims no gain for it."""

    subject: str
    version: int | None = None
    message_id: str | None = None
    base_commit: str | None = None
    tree: str | None = None
    statement: str | None = None
    numbers: tuple[str, ...] = ()
    attributed: bool = False


@dataclass(frozen=True)
class Report:
    message_id: str | None
    in_reply_to: str | None
    subject: str
    from_: str
    date: str | None
    source: Source
    kind: str
    commits: tuple[Commit, ...] = ()
    testcase: str | None = None
    parameters: tuple[tuple[str, str], ...] = ()
    test_machine: TestMachine | None = None
    headline: Headline | None = None
    metrics: tuple[MetricRow, ...] = ()
    reproducers: tuple[Reproducer, ...] = ()
    kernel_config: tuple[tuple[str, str], ...] = ()
    links: Links = field(default_factory=Links)
    stance: str = "none"
    quoted: bool = False
    # Fields added beyond the schema-1 minimum (allowed by record.md):
    references: tuple[str, ...] = ()
    compiler: str | None = None
    lkp_config: str | None = None
    failures: tuple[FailureRow, ...] = ()
    also_impacted: tuple[AlsoImpacted, ...] = ()
    syzbot: Syzbot | None = None
    prose_numbers: tuple[ProseNumber, ...] = ()
    attachments: tuple[Attachment, ...] = ()
    thread_links: tuple[tuple[str, str], ...] = ()
    defects: tuple[str, ...] = ()
    stance_evidence: str | None = None  # the writer's sentence that decided `stance`
    objections: tuple[Objection, ...] = ()
    trailers: tuple[Trailer, ...] = ()
    measurements: tuple[Measurement, ...] = ()  # the writer's own counter-measurements
    stance_numbers: NumbersStance | None = None  # the stance the writer's own numbers give
    series: PatchSeries | None = None  # a patch-regression's series under review (issue 38)


# The start of each defect the parse lists for a line of an LKP report's parameter block that
# does not read whole; the planner refuses such a report, naming the line (issue 21).
PARAMETER_DEFECT = "LKP parameters: "

_PAIR_FIELDS = {"parameters", "kernel_config", "thread_links"}


_FIELD_NAMES: dict[type, tuple[str, ...] | None] = {}


def _field_names(cls: type) -> tuple[str, ...] | None:
    """Field names of a record class (cached: this runs for every value of every record)."""
    try:
        return _FIELD_NAMES[cls]
    except KeyError:
        names = tuple(item.name for item in fields(cls)) if is_dataclass(cls) else None
        _FIELD_NAMES[cls] = names
        return names


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    names = _field_names(type(value))
    if names is not None:
        return {name: _plain(getattr(value, name)) for name in names}
    return value


def report_to_json(report: Report) -> dict[str, Any]:
    """The schema-1 JSON object for one report (record.md's field order first)."""
    data: dict[str, Any] = {"schema": SCHEMA_VERSION}
    for item in fields(report):
        value = getattr(report, item.name)
        key = "from" if item.name == "from_" else item.name
        if item.name in _PAIR_FIELDS:
            data[key] = dict(value)
        elif item.name == "also_impacted":
            data[key] = [
                {**_plain(entry), "parameters": dict(entry.parameters)} for entry in value
            ]
        else:
            data[key] = _plain(value)
    return data


def _build(cls: type, data: dict[str, Any] | None) -> Any:
    if data is None:
        return None
    return cls(**data)


def _series(data: dict[str, Any] | None) -> PatchSeries | None:
    if data is None:
        return None
    return PatchSeries(**{**data, "numbers": tuple(data.get("numbers") or ())})


def report_from_json(data: dict[str, Any]) -> Report:
    """Inverse of report_to_json; raises ValueError on a schema it does not know."""
    if data.get("schema") != SCHEMA_VERSION:
        raise ValueError(f"unsupported record schema {data.get('schema')!r}")
    links = data.get("links") or {}
    return Report(
        message_id=data["message_id"],
        in_reply_to=data["in_reply_to"],
        subject=data["subject"],
        from_=data["from"],
        date=data["date"],
        source=Source(**data["source"]),
        kind=data["kind"],
        commits=tuple(Commit(**item) for item in data.get("commits", [])),
        testcase=data.get("testcase"),
        parameters=tuple(data.get("parameters", {}).items()),
        test_machine=_build(TestMachine, data.get("test_machine")),
        headline=_build(Headline, data.get("headline")),
        metrics=tuple(MetricRow(**item) for item in data.get("metrics", [])),
        reproducers=tuple(Reproducer(**item) for item in data.get("reproducers", [])),
        kernel_config=tuple(data.get("kernel_config", {}).items()),
        links=Links(
            closes=links.get("closes"),
            reported_by=links.get("reported_by"),
            materials=links.get("materials"),
            other=tuple(links.get("other", [])),
        ),
        stance=data.get("stance", "none"),
        quoted=data.get("quoted", False),
        references=tuple(data.get("references", [])),
        compiler=data.get("compiler"),
        lkp_config=data.get("lkp_config"),
        failures=tuple(FailureRow(**item) for item in data.get("failures", [])),
        also_impacted=tuple(
            AlsoImpacted(**{**item, "parameters": tuple(item.get("parameters", {}).items())})
            for item in data.get("also_impacted", [])
        ),
        syzbot=_build(Syzbot, data.get("syzbot")),
        prose_numbers=tuple(ProseNumber(**item) for item in data.get("prose_numbers", [])),
        attachments=tuple(Attachment(**item) for item in data.get("attachments", [])),
        thread_links=tuple(data.get("thread_links", {}).items()),
        defects=tuple(data.get("defects", [])),
        stance_evidence=data.get("stance_evidence"),
        objections=tuple(Objection(**item) for item in data.get("objections", [])),
        trailers=tuple(Trailer(**item) for item in data.get("trailers", [])),
        measurements=tuple(Measurement(**item) for item in data.get("measurements", [])),
        stance_numbers=_build(NumbersStance, data.get("stance_numbers")),
        series=_series(data.get("series")),
    )
