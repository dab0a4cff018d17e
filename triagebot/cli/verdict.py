"""`triage verdict MESSAGE-ID` — the verdict recomputed from the stored samples.

The last stored rerun's samples are fed again, in the order they were taken, through the same
adaptive procedure and the current floors (rules/metric_floors.toml), so a changed floor or a
fixed statistics bug shows here without running anything. `--store` keeps the new verdict.
"""
from __future__ import annotations

import argparse
import json
import sys

from triagebot.cli.common import add_db_argument, add_json_argument, database_location, open_store
from triagebot.cli.keys import resolve_key
from triagebot.cli.plotfile import check_plot_path, write_plot
from triagebot.records.threads import normalize_message_id
from triagebot.rules.floors import load_floors
from triagebot.verdict.same_kernel import a_a_verdict, as_stored, is_same_kernel
from triagebot.verdict.sequential import LookSchedule, decide_adaptively, rounds_within


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("message_id", metavar="MESSAGE-ID")
    add_db_argument(parser)
    add_json_argument(parser, "print the recomputed verdict as JSON")
    parser.add_argument("--plot", metavar="FILE", help="also write the stored samples' plot (PNG) to FILE")


def recompute(run: dict) -> dict:
    """The adaptive verdict of a stored run, replayed from its samples in the order taken."""
    base = [sample["value"] for sample in run["samples"] if sample["role"] == "base"]
    suspect = [sample["value"] for sample in run["samples"] if sample["role"] == "suspect"]
    plan = run["plan"]
    rounds = rounds_within(min(len(base), len(suspect)))
    taken = {"base": 0, "suspect": 0}

    def replay(size: int) -> tuple[list[float], list[float]]:
        start = taken["base"]
        taken["base"] = taken["suspect"] = start + size
        return base[start:start + size], suspect[start:start + size]

    floor = load_floors().floor_for(plan.get("report_metric") or plan.get("metric"))
    adaptive = decide_adaptively(replay, plan["better"], plan.get("reported_change_percent"), floor,
                                 LookSchedule(rounds=rounds or (len(base),)))
    verdict = adaptive.verdict.to_json() | {"looks": len(adaptive.looks)}
    if is_same_kernel(run):  # both sides on one kernel: noise, never a verdict on the commit
        return a_a_verdict(verdict, run)
    return verdict


def run(args: argparse.Namespace) -> int:
    message_id = normalize_message_id(args.message_id)
    database = database_location(args)
    if args.plot:
        check_plot_path(args.plot)
    if not database.exists():
        print(f"triage verdict: {message_id}: no such message ({database} does not exist yet)", file=sys.stderr)
        return 1
    with open_store(args) as store:
        message_id = resolve_key(store, message_id)  # a sha256-… short key or its prefix
        stored = store.latest_run(message_id)
        known = stored is not None or store.has_message(message_id)
    if not known:
        print(f"triage verdict: {message_id}: no such message in {database}", file=sys.stderr)
        return 1
    if stored is None:
        print(f"triage verdict: {message_id}: no stored rerun (run `triage rerun {message_id}` first)", file=sys.stderr)
        return 1
    if not stored.get("samples"):
        print(f"triage verdict: {message_id}: the last rerun has no samples ({stored.get('error')})", file=sys.stderr)
        return 1
    verdict = recompute(stored)
    if args.plot:
        write_plot(args.plot, as_stored(stored) | {"verdict": verdict})
        print(f"triage verdict: samples plot written to {args.plot}", file=sys.stderr)
    if args.json:
        print(json.dumps(verdict, ensure_ascii=False))
        return 0
    print(f"{verdict['outcome']}: {verdict['reason']}")
    before = (as_stored(stored).get("verdict") or {}).get("outcome")
    if before and before != verdict["outcome"]:
        print(f"  (stored verdict was {before}; the rules or floors changed since)")
    return 0
