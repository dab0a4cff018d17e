"""`triage decide`, the decision on numbers given by hand.

Exit status: 0 when a verdict is printed (confirmed, not-reproduced or inconclusive), 1 for an
``error`` verdict or a bad rules file, 2 for a bad option value (one line on stderr, no
traceback). Negative values go after an equals sign: ``--base=-1.5,-1.2``.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from triagebot.cli.common import add_json_argument, add_rules_argument
from triagebot.rules.floors import load_floors
from triagebot.verdict.decide import DEFAULT_ALPHA, Outcome, Verdict, decide, signed_percent

USAGE_ERROR = 2
_MINUS_SIGNS = str.maketrans({"\u2212": "-", "\u2013": "-"})  # pasted "−28.3%" reads as -28.3


class OptionError(ValueError):
    """A command-line value that is not what the option takes; the message names both."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--base", required=True, metavar="X,Y,...",
                        help="base (good kernel) samples, comma-separated")
    parser.add_argument("--suspect", required=True, metavar="X,Y,...",
                        help="suspect (bad kernel) samples, comma-separated")
    parser.add_argument("--better", required=True, choices=("higher", "lower"),
                        help="which direction of the metric is good")
    parser.add_argument("--reported", metavar="PERCENT",
                        help="the change the report claims, signed, e.g. -28.3")
    parser.add_argument("--floor", metavar="PERCENT",
                        help="smallest change that may confirm "
                             "(default: from --metric's rule, else 1.5)")
    parser.add_argument("--metric", metavar="NAME",
                        help="metric name, to look its floor up in rules/metric_floors.toml")
    add_rules_argument(parser, "floors file to use instead of rules/metric_floors.toml", type=Path, metavar="PATH")
    add_json_argument(parser, "print the verdict as one JSON object")


def run(args: argparse.Namespace) -> int:
    try:
        base = parse_samples(args.base, "--base")
        suspect = parse_samples(args.suspect, "--suspect")
        reported = None if args.reported is None else parse_number(args.reported, "--reported")
        floor = None if args.floor is None else parse_number(args.floor, "--floor")
    except OptionError as error:
        print(f"triage decide: {error}", file=sys.stderr)
        return USAGE_ERROR
    if floor is not None and not (math.isfinite(floor) and floor >= 0):
        print(f"triage decide: --floor: {args.floor!r} is not a percentage >= 0", file=sys.stderr)
        return USAGE_ERROR
    if floor is None:
        # A bad rules file raises RulesError, which the CLI prints as one line (exit 1).
        floor = load_floors(args.rules).floor_for(args.metric)
    verdict = decide(base, suspect, args.better, reported, floor, alpha=DEFAULT_ALPHA)
    if args.json:
        sys.stdout.write(json.dumps(verdict.to_json(), ensure_ascii=False, allow_nan=False) + "\n")
    else:
        sys.stdout.write(render(verdict) + "\n")
    return 1 if verdict.outcome == Outcome.ERROR else 0


def parse_number(text: str, option: str) -> float:
    """A float from an option value; '%' and a typographic minus are accepted."""
    cleaned = text.strip().translate(_MINUS_SIGNS).removesuffix("%").strip()
    try:
        return float(cleaned)
    except ValueError:
        raise OptionError(f"{option}: {text.strip()!r} is not a number") from None


def parse_samples(text: str, option: str) -> list[float]:
    """Comma-separated numbers; NaN and infinity are kept so the verdict can name the bad run."""
    items = [item.strip() for item in text.split(",")]
    if items and items[-1] == "":
        items.pop()  # a trailing comma, as in a pasted list
    values = []
    for position, item in enumerate(items, start=1):
        if not item:
            raise OptionError(f"{option}: value {position} is empty in {text!r}")
        try:
            values.append(float(item.translate(_MINUS_SIGNS)))
        except ValueError:
            raise OptionError(f"{option}: {item!r} (value {position}) is not a number") from None
    return values


def render(verdict: Verdict) -> str:
    """The verdict for a terminal: outcome and reason sentence, then the figures behind it."""
    lines = [f"{verdict.outcome}: {verdict.reason}"]
    if verdict.p_value is not None:
        lines.append(f"  p-values: Mann-Whitney {verdict.p_mann_whitney:.3g}, KS "
                     f"{verdict.p_kolmogorov_smirnov:.3g}; smaller x2 = {verdict.p_value:.3g} "
                     f"(different below {verdict.alpha:g}); change on the {verdict.scale} scale")
    reported = "none" if verdict.reported_change_percent is None else signed_percent(
        verdict.reported_change_percent)
    lines.append(f"  runs:     {verdict.runs_base} base + {verdict.runs_suspect} suspect; "
                 f"reported {reported}; floor {verdict.floor_percent:g}%; "
                 f"no-repro must rule out {verdict.same_bound_percent:g}%; better {verdict.better}")
    return "\n".join(lines)
