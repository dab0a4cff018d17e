"""Benchmark: how much of the real LKP stream the lab would rerun (issue 15's coverage figure).

Every report of `../shared/corpus/lkp-stream/` is parsed and planned as the daemon plans it
(choose_host over the hosts, then plan_report with that host's shape, offline: no materials
fetched), on two labs:

  (a) the packaged rules' hosts as they are on this machine (the embedded default host);
  (b) the same hosts, each also declaring lkp-tests (`tools = { "lkp-tests" = DIR }`), DIR an
      unpacked copy of ../shared/tools/lkp-tests.tar.gz (or `--lkp-tests DIR`).
  (c) the embedded hosts, each also declaring every benchmark a template needs the lab to
      install itself (`tools = { "will-it-scale" = "/opt/will-it-scale", … }`: the templates
      with `tool`), and no lkp-tests.

It prints planned / refused by testcase, the refusal reasons, and each report's kind against
the direction it states (subject, or the first line of one posted as a reply; a performance report read as anything but
lkp-regression / lkp-improvement of that direction is a misreading). Targets: (b) >= 90%,
(a) >= 60%. `--json` prints the figures as one JSON object.
"""
from __future__ import annotations

import argparse
import collections
import csv
import dataclasses
import json
import re
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from triagebot.parse.report import parse_message
from triagebot.records.report import Report, Source
from triagebot.reproduce.hosts import choose_host
from triagebot.reproduce.limits import host_shape
from triagebot.reproduce.plan import Plan, Refusal, plan_report
from triagebot.rules.hosts import Host
from triagebot.rules.settings import PACKAGED_RULES, settings_for

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
STREAM = SHARED / "corpus" / "lkp-stream"
SNAPSHOT = SHARED / "tools" / "lkp-tests.tar.gz"
TARGETS: dict[str, float | None] = {"embedded": 0.60, "with lkp-tests": 0.90, "with lab tools": None}


@dataclasses.dataclass
class Outcome:
    file: str
    testcase: str
    kind: str
    wanted_kind: str
    planned: bool
    reason: str  # the refusal's reason, or the plan's template


_NOTICED = re.compile(r"noticed an? [-+]?[\d.]+% (regression|improvement) of")


def wanted_kind(subject: str, raw: bytes) -> str:
    """The kind the report states: its subject (`… N% improvement`) or, for one posted as a reply
    to a patch, its first line (`kernel test robot noticed a N% improvement of …`)."""
    found = _NOTICED.search(raw.decode("utf-8", "replace"))
    direction = found.group(1) if found else ("improvement" if "improvement" in subject.lower() else "regression")
    return f"lkp-{direction}"


def read_stream(stream: Path) -> list[tuple[str, str, Report]]:
    """(file, the kind it states, its record) for each report of the stream."""
    with (stream / "INDEX.tsv").open(encoding="utf-8") as index:
        rows = list(csv.DictReader(index, delimiter="\t"))
    reports = []
    for row in rows:
        path = stream / row["file"]
        raw = path.read_bytes()
        reports.append((row["file"], wanted_kind(row["subject"], raw), parse_message(raw, Source("eml", str(path)))))
    return reports


def plan_on(hosts: tuple[Host, ...], reports: list[tuple[str, str, Report]], templates) -> list[Outcome]:
    outcomes = []
    for name, wanted, report in reports:
        match = choose_host(hosts, report.test_machine)
        if match is None:
            result: Plan | Refusal = Refusal("no host")
        else:
            result = plan_report(report, templates, host=host_shape(match.host))
        planned = isinstance(result, Plan)
        outcomes.append(Outcome(name, report.testcase or "(none)", report.kind, wanted, planned,
                                result.template if isinstance(result, Plan) else result.reason))
    return outcomes


def with_lkp_tests(hosts: tuple[Host, ...], directory: Path) -> tuple[Host, ...]:
    return tuple(dataclasses.replace(host, tools=tuple(sorted(dict(host.tools, **{"lkp-tests": str(directory)})
                                                               .items())))
                 for host in hosts)


def with_lab_tools(hosts: tuple[Host, ...], templates) -> tuple[Host, ...]:
    """The hosts, each declaring every tool a template needs (at /opt/<tool>: planning never looks)."""
    needed = {template.tool: f"/opt/{template.tool}" for template in templates if template.tool}
    return tuple(dataclasses.replace(host, tools=tuple(sorted(dict(host.tools, **needed).items()))) for host in hosts)


def summary(outcomes: list[Outcome]) -> dict[str, Any]:
    by_testcase: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    reasons: collections.Counter[str] = collections.Counter()
    for outcome in outcomes:
        by_testcase[outcome.testcase][0 if outcome.planned else 1] += 1
        if not outcome.planned:
            reasons[_reason_class(outcome.reason)] += 1
    planned = sum(outcome.planned for outcome in outcomes)
    return {"planned": planned, "reports": len(outcomes), "share": planned / max(1, len(outcomes)),
            "by_testcase": dict(sorted(by_testcase.items(), key=lambda item: (-sum(item[1]), item[0]))),
            "refusals": dict(reasons.most_common())}


def _reason_class(reason: str) -> str:
    """A refusal reason with the report-specific value cut, so like reasons count together."""
    return reason if len(reason) <= 110 else reason[:107] + "..."


def print_table(title: str, result: dict[str, Any], target: float | None) -> None:
    aim = f"; target {target:.0%}" if target is not None else ""
    print(f"## {title}: {result['planned']} of {result['reports']} planned ({result['share']:.1%}{aim})")
    print(f"{'testcase':<28}{'planned':>8}{'refused':>8}")
    for testcase, (planned, refused) in result["by_testcase"].items():
        print(f"{testcase:<28}{planned:>8}{refused:>8}")
    if result["refusals"]:
        print("refusal reasons:")
        for reason, count in result["refusals"].items():
            print(f"  {count:>3}  {reason}")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stream", type=Path, default=STREAM, help="folder of LKP reports with INDEX.tsv")
    parser.add_argument("--rules", type=Path, default=PACKAGED_RULES, help="rules directory (default: packaged)")
    parser.add_argument("--lkp-tests", type=Path, help="an installed lkp-tests (default: unpack the snapshot)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if not (args.stream / "INDEX.tsv").exists():
        print(f"coverage: {args.stream}/INDEX.tsv not found (the shared corpus is absent)", file=sys.stderr)
        return 2
    settings = settings_for(args.rules)
    hosts, templates = settings.need_hosts(), settings.need_templates()
    reports = read_stream(args.stream)
    results: dict[str, Any] = {}
    outcomes: dict[str, list[Outcome]] = {"embedded": plan_on(hosts, reports, templates)}
    lab_tools = plan_on(with_lab_tools(hosts, templates), reports, templates)
    with tempfile.TemporaryDirectory(prefix="lkp-tests-") as folder:
        directory = args.lkp_tests
        if directory is None:
            if not SNAPSHOT.exists():
                print(f"coverage: {SNAPSHOT} not found: no lkp-tests to plan with", file=sys.stderr)
                return 2
            with tarfile.open(SNAPSHOT) as archive:
                archive.extractall(folder, filter="tar")  # it holds links to absolute paths
            directory = Path(folder) / "lkp-tests"
        outcomes["with lkp-tests"] = plan_on(with_lkp_tests(hosts, directory.resolve()), reports, templates)
    outcomes["with lab tools"] = lab_tools
    for lab, found in outcomes.items():
        results[lab] = summary(found)
    misread = [dataclasses.asdict(outcome) for outcome in outcomes["embedded"]
               if outcome.kind != outcome.wanted_kind]
    results["misread_kinds"] = misread
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    for lab in outcomes:
        print_table(f"{lab} ({', '.join(host.name for host in hosts)})", results[lab], TARGETS[lab])
    print(f"## kinds: {len(reports) - len(misread)} of {len(reports)} read as the LKP performance report "
          f"they state")
    for item in misread:
        print(f"  {item['file']}: {item['kind']} (the report says {item['wanted_kind']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
