"""`triage hosts` — the lab's hosts and their facts, and how each matches a report.

`--match MESSAGE-ID` scores every host against that stored report's test machine (and the disk
type its LKP parameters ask for) and lists the differences, best first; the host a run would
take is the first. `--json` prints the same as one JSON object. Exit 1 for an unknown id.
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import Any

from triagebot.cli.common import (
    add_db_argument,
    add_json_argument,
    add_rules_argument,
    database_location,
    open_store,
)
from triagebot.records.report import Report
from triagebot.records.threads import normalize_message_id
from triagebot.reproduce.hosts import (
    HostMatch,
    disk_from_parameters,
    host_to_json,
    score_host,
    switcher_needs,
    switcher_words,
)
from triagebot.rules.hosts import Host
from triagebot.rules.settings import settings_for


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_rules_argument(parser)
    add_json_argument(parser, "print the hosts (and matches) as JSON")
    parser.add_argument("--match", metavar="MESSAGE-ID",
                        help="score each host against this stored report's test machine")
    add_db_argument(parser)


def _facts(host: Host) -> str:
    cpu = host.cpu_model + (f" ({host.microarch})" if host.microarch else "")
    sockets = "socket" if host.sockets == 1 else "sockets"
    return f"{cpu}, {host.threads} threads, {host.sockets} {sockets}, {host.memory_gb}G memory, {host.disk}"


def _render_host(host: Host) -> list[str]:
    reach = "this machine" if host.reach == "local" else (
        f"ssh {host.ssh.user}@{host.ssh.host}:{host.ssh.port}" if host.ssh else "ssh")
    read = f" (read from this machine: {', '.join(host.described)})" if host.described else ""
    lines = [f"{host.name}  [{reach}]", f"  {_facts(host)}{read}",
             f"  scratch: {host.scratch_dir}"
             + (f"; devices: {', '.join(host.scratch_devices)}" if host.scratch_devices else "")]
    if host.disks:
        lines.append(f"  disks: {'; '.join(host.disks)}")
    if host.program_names:
        lines.append(f"  programs: {', '.join(host.program_names)}")
    if host.labels:
        lines.append(f"  labels: {', '.join(host.labels)}")
    lines.append(f"  running kernel: {shlex.join(host.running_kernel)}")
    if host.switcher is not None:
        asked = " (chosen by switcher = \"auto\")" if host.switcher.asked == "auto" else ""
        lines.append(f"  switch kernel: {host.switcher.kind}{asked}: each commit built from kernel tree "
                     f"{host.switcher.kernel_tree.name} and run {switcher_words(host)}")
        for need in switcher_needs(host):
            mark = {True: "has it", False: "MISSING", None: "checked at the first switch"}[need["has"]]
            lines.append(f"    needs {need['need']}: {mark}" + (f" ({need['why']})" if need.get("why") else ""))
        return lines
    lines.append("  switch kernel: " + (shlex.join(host.switch_kernel) if host.switch_kernel else
                                        "none: runs only on the running kernel (A/A runs, no verdict on a commit)"
                                        + (f"; {host.switcher_note}" if host.switcher_note else "")))
    if host.untrusted_code:
        lines.append("  untrusted code: the daemon builds any sender's patch series here by itself")
    return lines


def _load_report(args: argparse.Namespace, message_id_arg: str) -> Report | str:
    """The stored report, or the message saying why there is none."""
    try:
        message_id = normalize_message_id(message_id_arg)
    except ValueError:
        return f"{message_id_arg!r}: not a Message-ID"
    database = database_location(args)
    if not database.exists():
        return f"{message_id}: no such message ({database} does not exist yet)"
    with open_store(args) as store:
        record = store.get_record(message_id)
        if record is None:
            alias = store.resolve_alias(message_id)
            record = store.get_record(alias) if alias else None
    if record is None:
        return f"{message_id}: no such message in {database}"
    return record


def _match_json(match: HostMatch) -> dict[str, Any]:
    return {"host": match.host.name, "score": match.score, "differences": list(match.differences)}


def run(args: argparse.Namespace) -> int:
    hosts = settings_for(args.rules).need_hosts()
    matches: list[HostMatch] | None = None
    report: Report | None = None
    if args.match:
        loaded = _load_report(args, args.match)
        if isinstance(loaded, str):
            print(f"triage hosts: {loaded}", file=sys.stderr)
            return 1
        report = loaded
        disk = disk_from_parameters(report.parameters)
        matches = sorted((score_host(host, report.test_machine, disk, report.parameters) for host in hosts),
                         key=lambda match: -match.score)  # stable: ties keep hosts.toml order
    if args.json:
        data: dict[str, Any] = {"hosts": [host_to_json(host) for host in hosts]}
        if matches is not None and report is not None:
            data["report"] = {"message_id": report.message_id,
                              "test_machine": report.test_machine.description if report.test_machine else None}
            data["matches"] = [_match_json(match) for match in matches]
        print(json.dumps(data, ensure_ascii=False, indent=2))
        return 0
    if matches is None:
        print("\n".join("\n".join(_render_host(host)) for host in hosts) if hosts else "no hosts")
        return 0
    assert report is not None
    machine = report.test_machine.description if report.test_machine else "(none stated)"
    print(f"report {report.message_id}\n  test machine: {machine}")
    for rank, match in enumerate(matches):
        chosen = "  <- a run takes this host when it is idle" if rank == 0 else ""
        print(f"\n{match.host.name}  score {match.score:.2f}{chosen}\n  {_facts(match.host)}")
        for difference in match.differences:
            print(f"  - {difference}")
        if not match.differences:
            print("  - no differences in the facts compared")
    return 0
