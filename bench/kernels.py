"""Benchmark: real kernels built and booted by triagebot, and the verdicts they give.

    PYTHONPATH=. python3 bench/kernels.py [--switcher vm|uml] [--fresh-ccache] [--boots 5] [--bisect] [--json]

On the fixture tree (tests/support/kernel_tree.py: Debian's linux-source-6.12 and ten commits of
ours, the sixth making personality(2) slower), in a temporary kernel cache:

1. build: the slow commit's parent cold (through the shared ccache, or an empty one with
   --fresh-ccache: a cold build with no help), the same kernel again in a second, fresh work
   directory (every object a ccache hit), the slow commit incrementally in the first one;
2. boot: `--boots` guests of one kernel running `true`: the guest's uptime when its init ran, and
   the host's wall time of the whole boot;
3. rerun: `triage rerun` of the personality report (fixtures/kernels/) on the embedded default
   host, slow commit against its parent, then an innocent commit against its parent: outcome,
   measured change, runs, wall time;
4. --bisect: `triage bisect` over the ten commits, base to tip: the commit it names, steps, wall.

Every figure is measured in the same run; the machine's load is printed beside them (this
machine is shared: wall times are pessimistic, CPU times are given for the builds).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.support.kernel_tree import (
    REPORT_MESSAGE_ID,
    fixture_tree,
    missing,
    parent_of,
    report_text,
    write_kernel_rules,
)
from triagebot.kernels.boot import NEEDS
from triagebot.kernels.build import KernelBuilder
from triagebot.kernels.config import chosen_config
from triagebot.reproduce.executors.guest import GuestExecutor
from triagebot.rules.settings import load_settings

PROJECT = Path(__file__).resolve().parents[1]


def triage(*args: str) -> tuple[dict, float, str]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "triagebot.cli", *args, "--json"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    seconds = time.monotonic() - started
    if not done.stdout.strip():
        raise SystemExit(f"triage {args[0]} printed nothing: {done.stderr[-3000:]}")
    return json.loads(done.stdout), seconds, done.stderr


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_build(builder: KernelBuilder, ref: str, arch: str, config, needed) -> dict:
    cpu, started = children_cpu(), time.monotonic()
    artefact = builder.build(ref, arch, config, needed=needed, announce=lambda line: print(f"  {line}", flush=True))
    return {"commit": artefact.commit[:12], "how": artefact.how, "compiled": artefact.compiled,
            "wall_s": round(time.monotonic() - started, 1), "cpu_s": round(children_cpu() - cpu, 1),
            "release": artefact.release}


def ccache_zero(directory: str) -> None:
    subprocess.run(["ccache", "--zero-stats"], capture_output=True, env={**os.environ, "CCACHE_DIR": directory})


def ccache_stats(directory: str) -> str:
    done = subprocess.run(["ccache", "--print-stats"], capture_output=True, text=True,
                          env={**os.environ, "CCACHE_DIR": directory})
    stats = dict(line.split("\t", 1) for line in done.stdout.splitlines() if "\t" in line)
    return f"direct hits {stats.get('direct_cache_hit', '?')}, misses {stats.get('cache_miss', '?')}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--switcher", choices=("vm", "uml"), default="vm")
    parser.add_argument("--fresh-ccache", action="store_true", help="start from an empty ccache (a cold build)")
    parser.add_argument("--boots", type=int, default=5)
    parser.add_argument("--bisect", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if missing():
        raise SystemExit(missing())
    figures: dict = {"load_at_start": os.getloadavg()[0]}
    started = time.monotonic()
    tree = fixture_tree()
    figures["fixture_tree_s"] = round(time.monotonic() - started, 1)
    root = Path(tempfile.mkdtemp(prefix="bench-kernels-"))
    try:
        rules = write_kernel_rules(root, tree, PROJECT)
        if args.fresh_ccache:
            text = (rules / "trees.toml").read_text().replace("ccache_dir = ", f'ccache_dir = "{root / "ccache"}"\n#')
            (rules / "trees.toml").write_text(text)
        hosts_text = (rules / "hosts.toml").read_text().replace('switcher = "auto"', f'switcher = "{args.switcher}"')
        (rules / "hosts.toml").write_text(hosts_text)
        settings = load_settings(rules)
        (host,) = settings.need_hosts()
        assert host.switcher is not None
        builder = KernelBuilder(host.switcher.kernel_tree, host.switcher.builds)
        config = chosen_config(host.switcher, None, (), lambda: ("", ""), NEEDS[args.switcher])
        parent = parent_of(tree, tree.slow)
        print(f"fixture tree: {tree.path} ({figures['fixture_tree_s']} s); building {args.switcher}", flush=True)
        ccache = host.switcher.builds.ccache_dir or str(root / "kernels" / "ccache")
        ccache_zero(ccache)
        cold = timed_build(builder, parent, host.switcher.arch, config, NEEDS[args.switcher])
        cold["ccache"] = ccache_stats(ccache)
        # the same kernel in a second kernel cache (its own clone, work directory and artefacts)
        # sharing the ccache: what a cold build costs once the ccache has seen it
        second = KernelBuilder(host.switcher.kernel_tree, dataclasses.replace(
            host.switcher.builds, cache_dir=str(root / "kernels-second"), ccache_dir=ccache))
        second.clone.resolve(parent)  # the clone is not the build's time
        ccache_zero(ccache)
        warm = timed_build(second, parent, host.switcher.arch, config, NEEDS[args.switcher])
        warm["ccache"] = ccache_stats(ccache)
        incremental = timed_build(builder, tree.slow, host.switcher.arch, config, NEEDS[args.switcher])
        figures["builds"] = {"cold": cold, "cold_with_ccache": warm, "incremental": incremental}
        with GuestExecutor(host) as executor:
            executor.switch_kernel(tree.slow)
            for _ in range(args.boots):
                executor.run(["true"], timeout=60)
            uptimes = [boot["uptime_at_init"] for boot in executor.boots if boot["uptime_at_init"] is not None]
            walls = [boot["seconds"] for boot in executor.boots]
        figures["boot"] = {"boots": len(walls), "uptime_at_init_median_s": statistics.median(uptimes),
                           "wall_median_s": statistics.median(walls), "wall_max_s": max(walls)}
        report = root / "report.eml"
        report.write_bytes(report_text(tree))
        database = root / "bench.db"
        subprocess.run([sys.executable, "-m", "triagebot.cli", "ingest", "--db", str(database), str(report)],
                       check=True, capture_output=True)
        common = ("--db", str(database), "--rules", str(rules), "--no-fetch")
        figures["reruns"] = {}
        for name, base, suspect in (("slow", parent, tree.slow), ("innocent", parent_of(tree, tree.innocent),
                                                                  tree.innocent)):
            run, seconds, _ = triage("rerun", REPORT_MESSAGE_ID, *common, "--base", base, "--suspect", suspect,
                                     "--budget", "6")
            verdict = run.get("verdict") or {}
            figures["reruns"][name] = {
                "outcome": verdict.get("outcome", run.get("error")),
                "measured_pct": verdict.get("measured_change_percent"),
                "runs": f"{verdict.get('runs_base')}+{verdict.get('runs_suspect')}", "wall_s": round(seconds, 1),
                "builds": [f"{build['commit'][:12]} {build['how']} {build['seconds']} s" for build in run["builds"]],
                "base_median": statistics.median(s["value"] for s in run["samples"] if s["role"] == "base"),
                "suspect_median": statistics.median(s["value"] for s in run["samples"] if s["role"] == "suspect")}
            print(f"rerun {name}: {figures['reruns'][name]}", flush=True)
        if args.bisect:
            result, seconds, _ = triage("bisect", REPORT_MESSAGE_ID, *common, "--good", tree.base, "--bad",
                                        tree.commits[-1])
            figures["bisect"] = {"status": result.get("status"), "first_bad": (result.get("first_bad") or "")[:12],
                                 "slow_commit": tree.slow[:12], "commits": len(tree.commits),
                                 "steps": len(result.get("steps") or []), "wall_s": round(seconds, 1),
                                 "runs": sum(len(attempt.get("samples") or []) for step in result.get("steps") or []
                                             for attempt in step.get("attempts") or [])}
            print(f"bisect: {figures['bisect']}", flush=True)
        figures["load_at_end"] = os.getloadavg()[0]
        figures["total_wall_s"] = round(time.monotonic() - started, 1)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    lines = [f"{key}: {value}" for key, value in figures.items()]
    print(json.dumps(figures, indent=1) if args.json else "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
