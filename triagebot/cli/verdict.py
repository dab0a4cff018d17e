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
from triagebot.rules.floors import load_floors
from triagebot.store.protocol import normalize_message_id
from triagebot.verdict.sequential import LookSchedule, decide_adaptively, rounds_within


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("message_id", metavar="MESSAGE-ID")
    add_db_argument(parser)
    add_json_argument(parser, "print the recomputed verdict as JSON")


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
    return adaptive.verdict.to_json() | {"looks": len(adaptive.looks)}


def run(args: argparse.Namespace) -> int:
    message_id = normalize_message_id(args.message_id)
    database = database_location(args)
    if not database.exists():
        print(f"triage verdict: {message_id}: no such message ({database} does not exist yet)", file=sys.stderr)
        return 1
    with open_store(args) as store:
        stored = store.latest_run(message_id)
    if stored is None:
        print(f"triage verdict: {message_id}: no stored rerun (run `triage rerun {message_id}` first)", file=sys.stderr)
        return 1
    if not stored.get("samples"):
        print(f"triage verdict: {message_id}: the last rerun has no samples ({stored.get('error')})", file=sys.stderr)
        return 1
    verdict = recompute(stored)
    if args.json:
        print(json.dumps(verdict, ensure_ascii=False))
        return 0
    print(f"{verdict['outcome']}: {verdict['reason']}")
    before = (stored.get("verdict") or {}).get("outcome")
    if before and before != verdict["outcome"]:
        print(f"  (stored verdict was {before}; the rules or floors changed since)")
    return 0
