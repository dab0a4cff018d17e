"""`triage rerun MESSAGE-ID` — plan, pick a host, run base and suspect, decide.

The report is planned for the host most like its test machine (or `--host`); the suspect is
the report's culprit (or `--suspect`), the base its base commit, else the culprit's parent
`<sha>^` (or `--base`). A regression of a series under review (`patch-regression`, issue 38) is
rerun as the series' base against base+series, b4 preparing the series from the stored thread as a
fix test does, on a host that may build code from mail. Samples alternate base and suspect; the
run, every sample and the verdict are stored together. On a host that cannot switch kernels the
run is an A/A run of one round (its outcome is a-a-only whatever more samples say). Ctrl-C or
SIGTERM stops the run there and keeps the samples taken, stored as a run cut short (`triage
show`; a new rerun starts over). Exit 0 with a verdict, 1 for a refusal, an unknown id or a run
that ended in error, 130 (Ctrl-C) or 143 (SIGTERM) for a run cut short.
"""
from __future__ import annotations

import argparse
import contextlib
import getpass
import json
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

from triagebot.cli.common import (
    add_db_argument,
    add_json_argument,
    add_rules_argument,
    database_path,
    open_store,
    report_kernels,
)
from triagebot.cli.keys import resolve_key
from triagebot.cli.plotfile import check_plot_path, write_plot
from triagebot.errors import TriageError
from triagebot.fix_test.flow import archive_of
from triagebot.fix_test.series import FixRefused
from triagebot.fix_test.under_review import measure_series, series_mbox, series_to_test
from triagebot.lab.mail_code import team_rule
from triagebot.notify.render import short_commit
from triagebot.records.report import Report
from triagebot.records.threads import normalize_message_id
from triagebot.reproduce.executors.choose import executor_for
from triagebot.reproduce.host_lock import host_lock
from triagebot.reproduce.hosts import choose_host, score_host
from triagebot.reproduce.limits import host_shape
from triagebot.reproduce.materials import with_materials_over_http
from triagebot.reproduce.plan import Plan, plan_report
from triagebot.reproduce.rounds import commits_of, rounds_within
from triagebot.reproduce.runner import RunRecord, Sample, rerun
from triagebot.rules.hosts import Host
from triagebot.rules.settings import Settings, settings_for
from triagebot.store.protocol import Store
from triagebot.verdict.same_kernel import A_A_ONLY
from triagebot.verdict.sequential import LookSchedule


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("message_id", metavar="MESSAGE-ID")
    add_db_argument(parser)
    add_rules_argument(parser, "rules directory with hosts.toml and reproducers/")
    parser.add_argument("--host", help="host name from hosts.toml (default: the closest idle one)")
    parser.add_argument("--base", help="base commit (default: the report's base, else the culprit's parent)")
    parser.add_argument("--suspect", help="suspect commit (default: the report's culprit)")
    parser.add_argument("--budget", type=int, default=20, metavar="N",
                        help=f"at most N runs a side, at least {MIN_BUDGET} (default 20: looks at 6, 10, 15, 20)")
    parser.add_argument("--plot", metavar="FILE", help="also write the samples plot (PNG) to FILE")
    add_json_argument(parser, "print the stored run as JSON")
    parser.add_argument("--no-fetch", action="store_true",
                        help="do not fetch the report's LKP materials (job.yaml, reproduce, config): "
                             "plan from the mail")


MIN_BUDGET = LookSchedule().rounds[0]  # the first look's runs a side: fewer decide nothing


def _progress(sample: Sample) -> None:
    print(f"  sample {sample.index:>3}  {sample.role:7} {short_commit(sample.commit):14} {sample.value:>14.6g}  "
          f"({sample.seconds:.1f} s)", file=sys.stderr)


def check_options(args: argparse.Namespace, command: str = "triage rerun") -> None:
    """The options alone, before anything is read or fetched: TriageError naming the bad one."""
    if args.budget < MIN_BUDGET:
        raise TriageError(f"--budget {args.budget}: at least {MIN_BUDGET} runs a side are needed "
                          f"(the first look takes {MIN_BUDGET})")
    if args.plot:
        check_plot_path(args.plot)


def _with_materials(report: Report, store: Store, settings: Settings) -> Report:
    """The report with its LKP materials' job.yaml (fetched, or from the store); notes to stderr."""
    report, notes = with_materials_over_http(
        report, store, settings.http,
        announce=lambda line: print(f"triage rerun: {line}", file=sys.stderr, flush=True))
    for note in notes:
        print(f"triage rerun: {note}", file=sys.stderr)
    return report


def _rerun_series(args: argparse.Namespace, store: Store, report: Report, plan: Plan, host: Host, database: Path,
                  settings: Settings) -> int:
    """A regression of a series under review (issue 38): its base against base+series, the series
    made am-ready by b4 from the stored thread and built by the host's build_patched hook, where
    code from mail may be built (lab/mail_code.py)."""
    message_id = report.message_id or ""
    thread = [raw for raw in (store.get_raw(key) for key in store.thread_of(message_id)) if raw is not None]
    try:
        series = series_to_test(report, thread)
        refused = team_rule(settings.trust)(host, series.describe(), series.senders, f"cli:{getpass.getuser()}")
        if refused is not None:
            raise FixRefused(refused)
        mbox = series_mbox(series, thread, archive_of(report.source.url))
    except FixRefused as error:
        print(f"triage rerun: {message_id}: not rerun: {error}", file=sys.stderr)
        return 1
    print(f"rerun of {message_id} on {host.name}: base {series.base} against base + {series.describe()}",
          file=sys.stderr)
    with host_lock(database, host.name), executor_for(host) as executor:
        result = measure_series(host, executor, plan, series, mbox, rounds=rounds_within(args.budget),
                                floor_percent=settings.floors.floor_for(plan.report_metric or plan.metric),
                                on_sample=_progress)
    run_json = result.to_json() | {"series": series.to_json()}
    store.save_run(message_id, plan.to_json() | {"series": series.to_json()}, run_json)
    if args.json:
        print(json.dumps(run_json, ensure_ascii=False))
    elif result.status == "done":
        print(render_verdict(run_json))
    if result.status != "done":
        print(f"triage rerun: {message_id}: run ended in error: {result.error}", file=sys.stderr)
        return 1
    return 0


def run(args: argparse.Namespace) -> int:
    check_options(args)
    settings = settings_for(args.rules)
    rules = settings.rules_dir
    message_id = normalize_message_id(args.message_id)
    database = database_path(args)
    with open_store(args) as store:
        message_id = resolve_key(store, message_id)  # a sha256-… short key or its prefix
        stored = store.get_record(message_id)
        if stored is None:
            print(f"triage rerun: {message_id}: no such message in {database}", file=sys.stderr)
            return 1
        report = stored
        hosts = settings.need_hosts()
        if args.host:
            chosen = [host for host in hosts if host.name == args.host]
            if not chosen:
                raise TriageError(f"no host {args.host!r} in {rules / 'hosts.toml'}")
            match = score_host(chosen[0], report.test_machine, parameters=report.parameters)
        else:
            match = choose_host(hosts, report.test_machine, parameters=report.parameters)
        host = match.host
        if not args.no_fetch:
            report = _with_materials(report, store, settings)
        plan = plan_report(report, settings.need_templates(), host=host_shape(host))
        if not isinstance(plan, Plan):
            print(f"triage rerun: {message_id}: not planned: {plan.reason}", file=sys.stderr)
            return 1
        if report.kind == "patch-regression" and not (args.base or args.suspect):
            return _rerun_series(args, store, report, plan, host, database, settings)
        default_base, default_suspect = commits_of(report)
        base, suspect = args.base or default_base, args.suspect or default_suspect
        if not base or not suspect:
            print(f"triage rerun: {message_id}: the report names no culprit commit; give --base and --suspect",
                  file=sys.stderr)
            return 1
        print(f"rerun of {message_id} on {host.name} (match {match.score:.2f}"
              f"{'; differs: ' + '; '.join(match.differences) if match.differences else ''})", file=sys.stderr)
        print(f"  plan: {' '.join(plan.argv)}  -> {plan.output_metric}, {plan.better} is better", file=sys.stderr)
        if not host.can_switch_kernel:
            print(f"triage rerun: {host.name} cannot switch kernels: base and suspect both run on its running "
                  f"kernel (an A/A run). It measures noise and tests the plan; it ends as {A_A_ONLY}, never a "
                  f"verdict on {short_commit(suspect)}"
                  + (f" ({host.switcher_note})" if host.switcher_note else ""), file=sys.stderr)
        host_match = {"host_match": {"score": match.score, "differences": list(match.differences)}}
        kernel_config, report_options = report_kernels("rerun", host, report, store, settings)
        cut_short: list[RunRecord] = []
        try:
            with _terminated_as_interruption(), host_lock(database, host.name), executor_for(host) as executor:
                result = rerun(plan, host, executor, base, suspect, on_sample=_progress,
                               rounds=rounds_within(args.budget), on_cut_short=cut_short.append,
                               floor_percent=settings.floors.floor_for(plan.report_metric or plan.metric),
                               kernel_config=kernel_config, report_options=report_options)
        except (KeyboardInterrupt, Terminated) as interruption:
            if not cut_short or not cut_short[0].samples:
                print(f"triage rerun: {message_id}: stopped before the first sample: nothing to keep", file=sys.stderr)
            else:
                store.save_run(message_id, plan.to_json(), cut_short[0].to_json() | host_match)
                print(f"triage rerun: {message_id}: {cut_short[0].error}; the samples are kept as a run cut short "
                      f"(triage show {message_id}); a new rerun starts over", file=sys.stderr)
            return 143 if isinstance(interruption, Terminated) else 130
        run_json = result.to_json() | host_match
        store.save_run(message_id, plan.to_json(), run_json)
    if args.plot and result.samples:
        write_plot(args.plot, run_json)
        print(f"triage rerun: samples plot written to {args.plot}", file=sys.stderr)
    if args.json:
        print(json.dumps(run_json, ensure_ascii=False))
    elif result.status == "done":
        print(render_verdict(run_json))
    for event in result.events:
        print(f"triage rerun: {event}", file=sys.stderr)
    if result.status != "done":
        print(f"triage rerun: {message_id}: run ended in error: {result.error}", file=sys.stderr)
        return 1
    return 0


class Terminated(BaseException):
    """SIGTERM during a rerun: it stops there, as Ctrl-C does, and keeps the samples taken."""

    def __str__(self) -> str:
        return "terminated (SIGTERM)"


@contextlib.contextmanager
def _terminated_as_interruption() -> Iterator[None]:
    """While the run goes on, SIGTERM raises Terminated (Python's default would end the process
    with nothing stored); the handler found is put back after."""
    def terminated(_signum: int, _frame: object) -> None:
        raise Terminated()
    found = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, found)


def render_verdict(run_json: dict) -> str:
    """The verdict line, with how comparable the host was to the report's machine."""
    verdict = run_json["verdict"]
    if verdict["outcome"] == A_A_ONLY:
        head = f"{A_A_ONLY} (no verdict on the commit): {verdict['reason']}"
    else:
        head = f"{verdict['outcome']}: {verdict['reason']}"
    lines = [head,
             f"  host:     {run_json['host']} (match {run_json['host_match']['score']:.2f} to the report's machine)"]
    if run_json["host_match"]["differences"]:
        lines.append("  differs:  " + "; ".join(run_json["host_match"]["differences"]))
    if verdict.get("kernel_switch"):
        lines.append(f"  kernels:  built and booted by triagebot; the benchmark ran {verdict['kernel_switch']}")
        for build in run_json.get("builds") or []:
            lines.append(f"            {build['commit'][:12]} {build['release']}: {build['how']}"
                         + (f" in {build['seconds']:.0f} s" if build.get("how") != "cached" else ""))
    if not verdict.get("host_can_switch_kernel", True):
        lines.append("  note:     this host cannot switch kernels: base and suspect ran on the same kernel "
                     "(an A/A run); describe a lab host that can in hosts.toml for a verdict")
    elif verdict["outcome"] == "not-reproduced" and run_json["host_match"]["score"] < 0.5:
        lines.append("  note:     not reproduced on a very different machine: weak evidence against the report")
    return "\n".join(lines)
