"""Benchmark: command lines in people's mail, against hand labels (fixtures/labels/commands.jsonl).

For each labelled message the writer's own reproducers ({kind, command}, in order) are compared
with the label's. Two figures: the extraction (reproducers.find_commands over the message's own,
unquoted text, whatever kind the classifier gives the message) and the record (the parsed
Report's own reproducers, which a message classified `other` does not get). A message counts as
right only when its whole list is right. The misses are printed with what was expected.

    PYTHONPATH=$PWD python3 bench/commands.py [--labels FILE] [--shared DIR]
    PYTHONPATH=$PWD python3 bench/commands.py --scan PATH...   # every command line read, as JSON lines

`--scan` prints what the extraction reads from each message's own text of the inputs given
(["INPUT#N", kind, command] a line), so a rule change is measured on the same mail before and
after (run it on both, diff the sorted outputs).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT))

from triagebot.ingest.inputs import iter_inputs  # noqa: E402
from triagebot.parse.message import decode_message  # noqa: E402
from triagebot.parse.quoting import split_quotes  # noqa: E402
from triagebot.parse.report import parse_message  # noqa: E402
from triagebot.parse.reproducers import find_commands  # noqa: E402
from triagebot.records.report import Source  # noqa: E402

LABELS = PROJECT / "fixtures" / "labels" / "commands.jsonl"
SHARED = PROJECT.parent / "shared"
_MESSAGE_ID = re.compile(rb"^Message-ID:[ \t]*(?:\r?\n[ \t]+)?<?([^>\s]+)>?", re.MULTILINE | re.IGNORECASE)
_BLANK_LINE = re.compile(rb"\r?\n\r?\n")

Pair = tuple[str, str | None]


def read_labels(path: Path = LABELS) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _message_id(raw: bytes) -> str | None:
    match = _MESSAGE_ID.search(_BLANK_LINE.split(raw, 1)[0])
    return match.group(1).decode(errors="replace") if match else None


def labelled_messages(labels: Iterable[dict], shared: Path = SHARED) -> dict[tuple[str, str], bytes]:
    """The raw labelled messages: the corpus files, and each list-year read once."""
    wanted: dict[str, set[str]] = {}
    for label in labels:
        wanted.setdefault(label["source"], set()).add(label["message_id"])
    found: dict[tuple[str, str], bytes] = {}
    for path in sorted((shared / "corpus" / "messages").glob("*.eml")):
        raw = path.read_bytes()
        message_id = _message_id(raw)
        if message_id in wanted.get("corpus", set()):
            found[("corpus", message_id)] = raw
    for source in sorted(set(wanted) - {"corpus"}):
        for entry in iter_inputs(str(shared / "corpus" / "lists" / f"{source}.mbox.gz")):
            if entry.raw is not None:
                message_id = _message_id(entry.raw)
                if message_id in wanted[source]:
                    found[(source, message_id)] = entry.raw
    return found


def extracted(raw: bytes) -> list[Pair]:
    """The extraction: own text's commands, whatever the message's kind."""
    own = split_quotes(decode_message(raw).body).own
    return [(item.kind, item.command) for item in find_commands(own)]


def recorded(raw: bytes, source: str) -> list[Pair]:
    report = parse_message(raw, Source("eml" if source == "corpus" else "mbox"))
    return [(item.kind, item.command) for item in report.reproducers if not item.quoted]


def expected(label: dict) -> list[Pair]:
    return [(item["kind"], item["command"]) for item in label["reproducers"]]


def measure(labels: list[dict], messages: dict[tuple[str, str], bytes]) -> dict:
    """Agreement of both readings with the labels, and the extraction's misses."""
    right_extracted = right_recorded = 0
    misses: list[tuple[str, list[Pair], list[Pair]]] = []
    for label in labels:
        raw = messages[(label["source"], label["message_id"])]
        want = expected(label)
        got = extracted(raw)
        if got == want:
            right_extracted += 1
        else:
            misses.append((label["message_id"], want, got))
        right_recorded += recorded(raw, label["source"]) == want
    return {"labels": len(labels), "extracted": right_extracted, "recorded": right_recorded, "misses": misses}


def scan(paths: Iterable[str]) -> int:
    """Every command line the extraction reads from each message's own text, as JSON lines."""
    found = 0
    for path in paths:
        for entry in iter_inputs(path):
            if entry.raw is None:
                continue
            for kind, command in extracted(entry.raw):
                print(json.dumps([entry.name, kind, command], ensure_ascii=False))
                found += 1
    print(f"{found} command lines", file=sys.stderr)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--shared", type=Path, default=SHARED)
    parser.add_argument("--scan", nargs="+", metavar="PATH", help="print every command line read from these inputs")
    args = parser.parse_args()
    if args.scan:
        return scan(args.scan)
    if not (args.shared / "corpus").is_dir():
        print(f"{args.shared}/corpus: not found (the labelled messages are read from ../shared)", file=sys.stderr)
        return 2
    labels = read_labels(args.labels)
    messages = labelled_messages(labels, args.shared)
    missing = [label["message_id"] for label in labels if (label["source"], label["message_id"]) not in messages]
    if missing:
        print(f"labelled messages not found: {missing}", file=sys.stderr)
        return 2
    result = measure(labels, messages)
    print(f"extraction: {result['extracted']} of {result['labels']} messages with every command line right")
    print(f"record:     {result['recorded']} of {result['labels']} (a message read as `other` gets none)")
    for message_id, want, got in result["misses"]:
        print(f"miss {message_id}")
        for kind, command in want:
            print(f"  want {kind}: {command!r}"[:300])
        for kind, command in got:
            print(f"  got  {kind}: {command!r}"[:300])
    return 0


if __name__ == "__main__":
    sys.exit(main())
