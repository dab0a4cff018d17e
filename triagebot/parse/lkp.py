"""Parse stage: the structured parts of Intel 0-day (LKP, "kernel test robot") reports."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from triagebot.parse.limits import MAX_COMMITS, MAX_MACHINE_CHARS
from triagebot.records.report import PARAMETER_DEFECT, AlsoImpacted, Commit, Headline, TestMachine
from triagebot.untrusted.visible import has_hidden, visible, without_format_characters

# 2023+: "kernel test robot noticed a -5.7% regression of fsmark.files_per_sec on:"
# 2019-22: "FYI, we noticed a -6.3% regression of aim7.jobs-per-min due to commit:"
_HEADLINE = re.compile(
    r"noticed an? ([-+]?\d+(?:\.\d+)?)% (regression|improvement) of (\S+?)(?: on| due to|:|\s*$)"
)
_FUNCTIONAL_HEADLINE = re.compile(
    r"noticed (?:\"([^\"]+)\"|(\S+:\S+)) (?:on|due to)"
)
# Values run to their last non-space character and runs of spaces are taken possessively
# (`\s*+`): a lazy value before `\s*$`, or two `\s*` around an optional part, backtrack
# quadratically on a long run of spaces.
_COMMIT_LINE = re.compile(r"^commit:\s*+([0-9a-f]{7,40})\s*+(?:\(\"(.*?)\"\))?\s*$")
_COMMIT_LIST_ENTRY = re.compile(r"^\s+([0-9a-f]{7,40})\s+\(\"(.*)\"\)\s*$")
# A base that is a release tag is listed by its name alone: `  v5.13-rc2`.
_TAG_LIST_ENTRY = re.compile(r"^\s+(v\d{1,2}\.\d{1,3}(?:\.\d{1,3})?(?:-rc\d{1,2})?)\s*$")
_TREE_LINE = re.compile(r"^(https?://\S+|git://\S+)\s+(\S+)\s*$")
_TEST_ON = re.compile(
    r"^\[(?:test failed|still regression|test failed again|regression) on ([\w./-]+)\s++([0-9a-f]{7,40})\]"
)
_KEY_LINE = re.compile(r"^(?:in )?(testcase|config|compiler|version|url|base|patch link|"
                       r"patch subject):\s*+(.*\S|)\s*$")
_MACHINE_LINE = re.compile(r"^(?:on )?test machine:\s*+(\S(?:.*\S)?)\s*$")
_MACHINE = re.compile(
    r"^(?P<threads>\d+) threads(?: (?P<sockets>\d+) sockets)?\s*+(?P<cpu>.*?)\s*+"
    r"(?:\((?P<arch>[^()]*)\))?\s*+with (?P<memory>\d+)\s*+G(?:B)? memory"
)
_PARAMETERS_START = re.compile(r"^(?:with following )?parameters:\s*$")
# An LKP parameter key is ASCII (`nr_task`, `fs2`, `mount_option`, `ucode`); a key or value
# that reads otherwise is a defect of the whole block, never the block's end (issue 21).
_PARAMETER = re.compile(r"^[ \t]++([A-Za-z0-9_.-]+):[ \t]*+(.*\S|)\s*$")
_SHOWN_CHARS = 80  # of a parameter line quoted in a defect
_MATERIALS = re.compile(r"https?://download\.01\.org/0day-ci/archive/\d{8}/\S+")
_ALSO_BOX_START = "also has significant impact on the following tests"
# Where the report proper starts: a preamble above it ("we reported … when this commit is
# in linux-next: commit: <sha>") may name another commit on a `commit:` line of its own.
_REPORT_START = re.compile(r"kernel test robot noticed|FYI, we noticed|^Greeting,\s*$")
# The trailer box: `| Closes: https://lore.kernel.org/oe-lkp/<msgid>`, and its early-2023 form
# `| Link: …` (the same link under the older trailer name).
_BOX_TRAILER = re.compile(r"^\|[ \t]*+(?:Closes|Link):[ \t]*+(https?://lore\.kernel\.org/oe-(?:lkp|kbuild-all)/\S+)\s*$")


@dataclass
class LkpFacts:
    headline: Headline | None = None
    functional_title: str | None = None
    commits: list[Commit] = field(default_factory=list)
    testcase: str | None = None
    lkp_config: str | None = None
    compiler: str | None = None
    parameters: dict[str, str] = field(default_factory=dict)
    # each line of the parameter block that does not read as one new `key: value`, as a defect
    # (records.PARAMETER_DEFECT): the planner refuses a report whose block does not read whole
    parameter_defects: list[str] = field(default_factory=list)
    test_machine: TestMachine | None = None
    materials: str | None = None
    closes: str | None = None  # the lore link of the report's `| Closes:` (or older `| Link:`) line
    also_impacted: list[AlsoImpacted] = field(default_factory=list)
    recipe: list[str] = field(default_factory=list)


def parse_headline(text: str) -> tuple[Headline | None, str | None]:
    """The headline (perf reports) or the functional title; headlines may wrap over lines."""
    head = " ".join(text[:3000].split())
    match = _HEADLINE.search(head)
    if match:
        change, direction, metric = match.groups()
        return Headline(metric=metric, change_percent=float(change), direction=direction), None
    functional = _FUNCTIONAL_HEADLINE.search(head)
    if functional:
        return None, functional.group(1) or functional.group(2)
    return None, None


def parse_machine(description: str, tbox_group: str | None = None) -> TestMachine:
    # The lazy CPU name still retries the rest at each of its characters: only a machine
    # line's worth is read (LKP's are under 200 characters).
    match = _MACHINE.match(description[:MAX_MACHINE_CHARS])
    if not match:
        return TestMachine(description=description, tbox_group=tbox_group)
    cpu = match.group("cpu").strip() or None
    return TestMachine(
        description=description,
        threads=int(match.group("threads")),
        sockets=int(match.group("sockets")) if match.group("sockets") else None,
        cpu_model=cpu,
        microarch=(match.group("arch") or "").strip() or None,
        memory_gb=int(match.group("memory")),
        tbox_group=tbox_group,
    )


def _parameters(lines: list[str], start: int) -> tuple[dict[str, str], list[str]]:
    """The `key: value` lines under `parameters:`, up to the first blank or unindented line, and
    a defect for each line in between that does not read as one new key with a plain value (a
    `<<:` merge key, a zero-width character, a key given twice: the first value is kept)."""
    values: dict[str, str] = {}
    defects: list[str] = []
    index = start
    # blank lines may separate the header from the entries
    while index < len(lines) and not lines[index].strip():
        index += 1
    while index < len(lines):
        line = lines[index]
        if not line.strip() or line[0] not in " \t":
            break
        match = _PARAMETER.match(line)
        where = f"{PARAMETER_DEFECT}body line {index + 1} `{visible(line.strip())[:_SHOWN_CHARS]}`"
        if not match or has_hidden(match.group(2)):
            defects.append(f"{where}, does not read as `key: value`")
        elif match.group(1) in values:
            defects.append(f"{where}, gives {match.group(1)} a second time "
                           f"(first `{visible(values[match.group(1)])[:_SHOWN_CHARS]}`)")
        else:
            values[match.group(1)] = match.group(2)
        index += 1
    return values, defects


def _axes(lines: list[str]) -> dict[str, str]:
    """The details block's `a/b/tbox_group/testcase:` header zipped with its value line."""
    for index, line in enumerate(lines[:-1]):
        stripped = line.strip()
        if stripped.endswith(":") and "/" in stripped and "tbox_group" in stripped:
            names = stripped[:-1].split("/")
            values = lines[index + 1].strip().split("/")
            if len(names) == len(values):
                return dict(zip(names, values, strict=True))
    return {}


def _also_impacted(lines: list[str]) -> list[AlsoImpacted]:
    entries: list[AlsoImpacted] = []
    inside = False
    current: dict[str, Any] | None = None
    last_key = ""
    for line in lines:
        if _ALSO_BOX_START in line:
            inside = True
            continue
        if not inside:
            continue
        stripped = line.strip()
        if stripped.startswith("+-"):
            if current:
                entries.append(_also_entry(current))
                current = None
            continue
        if not stripped.startswith("|"):
            if current is not None or entries:
                if current:
                    entries.append(_also_entry(current))
                break
            continue
        cells = [cell.strip() for cell in stripped.strip("|").split("|")]
        if len(cells) < 2:
            continue
        key, value = cells[0], "|".join(cells[1:]).strip()
        if current is None:
            current = {"params": []}
        if key:
            last_key = key
        if last_key.startswith("testcase"):
            current["change"] = value
        elif last_key == "test machine":
            current["machine"] = value
        elif last_key == "test parameters" and "=" in value:
            name, _, setting = value.partition("=")
            current["params"].append((name.strip(), setting.strip()))
    return entries


def _also_entry(raw: dict[str, Any]) -> AlsoImpacted:
    change = str(raw.get("change", ""))
    testcase, _, rest = change.partition(":")
    return AlsoImpacted(
        testcase=testcase.strip() or None if rest else None,
        change=rest.strip() if rest else change,
        test_machine=raw.get("machine") if isinstance(raw.get("machine"), str) else None,
        parameters=tuple(raw.get("params", [])),
    )


def parse_lkp(text: str) -> LkpFacts:
    """Every structured LKP fact in a report body (own text, quotes already removed)."""
    facts = LkpFacts()
    facts.headline, facts.functional_title = parse_headline(text)
    # commit lines are read as a terminal shows them (a zero-width space does not split a SHA);
    # the parameter block as sent, where a hidden character is a line that does not read
    sent_lines = text.split("\n")
    lines = without_format_characters(text)[0].split("\n")
    axes = _axes(lines)
    culprit: Commit | None = None
    seen: set[str] = set()
    machine_description: str | None = None
    report_start = next((index for index, line in enumerate(lines[:200]) if _REPORT_START.search(line)), 0)
    for index, line in enumerate(lines):
        commit_match = _COMMIT_LINE.match(line.strip())
        if commit_match and culprit is None and index < report_start:
            sha, subject = commit_match.groups()  # a preamble's commit: not this report's culprit
            if sha not in seen:
                facts.commits.append(Commit(sha=sha, subject=subject, role="mentioned"))
                seen.add(sha)
            continue
        if commit_match and culprit is None:
            sha, subject = commit_match.groups()
            tree = branch = None
            if index + 1 < len(lines):
                tree_match = _TREE_LINE.match(lines[index + 1].strip())
                if tree_match:
                    tree, branch = tree_match.groups()
            culprit = Commit(sha=sha, subject=subject, role="culprit", tree=tree, branch=branch)
            facts.commits.append(culprit)
            seen.add(sha)
            continue
        if line.strip() == "commit:" and culprit is not None:
            # the details block: base first, then the culprit again, then any others
            entry_index = index + 1
            position = 0
            while entry_index < len(lines):
                entry = _COMMIT_LIST_ENTRY.match(lines[entry_index])
                tag = _TAG_LIST_ENTRY.match(lines[entry_index]) if not entry else None
                if not entry and not tag:
                    break
                sha, subject = entry.groups() if entry else (tag.group(1), None)  # type: ignore[union-attr]
                if culprit.sha.startswith(sha) or sha.startswith(culprit.sha):
                    pass  # the culprit again: one record, not two
                elif len(seen) < MAX_COMMITS and not any(known.startswith(sha) or sha.startswith(known)
                                                         for known in seen):
                    role = "base" if position == 0 else "mentioned"
                    facts.commits.append(Commit(sha=sha, subject=subject, role=role))
                    seen.add(sha)
                position += 1
                entry_index += 1
            continue
        tested = _TEST_ON.match(line.strip())
        if tested:
            tree_name, sha = tested.groups()
            if sha not in seen:
                facts.commits.append(Commit(sha=sha, role="mentioned", branch=tree_name))
                seen.add(sha)
            continue
        key_match = _KEY_LINE.match(line)
        if key_match:
            key, value = key_match.groups()
            if key == "testcase" and facts.testcase is None:
                facts.testcase = value or None
            elif key == "config" and facts.lkp_config is None:
                facts.lkp_config = value or None
            elif key == "compiler" and facts.compiler is None:
                facts.compiler = value or None
            elif key == "base" and value:
                # patch-tested reports: "base: <tree url> <branch>" or "base: <sha>"
                parts = value.split()
                sha = next((part for part in parts if re.fullmatch(r"[0-9a-f]{12,40}", part)), None)
                if sha and sha not in seen:
                    facts.commits.append(Commit(sha=sha, role="base"))
                    seen.add(sha)
            continue
        if line.startswith("|") and facts.closes is None:
            trailer = _BOX_TRAILER.match(line)
            if trailer:
                facts.closes = trailer.group(1)
                continue
        machine_match = _MACHINE_LINE.match(line)
        if machine_match and machine_description is None:
            machine_description = machine_match.group(1)
            continue
        if _PARAMETERS_START.match(line.strip()) and not facts.parameters and not facts.parameter_defects:
            facts.parameters, facts.parameter_defects = _parameters(sent_lines, index + 1)
            continue
        stripped = line.strip()
        if stripped.startswith(("bin/lkp ", "sudo bin/lkp ", "git clone https://github.com/intel/lkp-tests")):
            facts.recipe.append(stripped.split("  #")[0].split(" # ")[0].strip())
    materials = _MATERIALS.search(text)
    if materials:
        facts.materials = materials.group(0).rstrip(".,)>")
    if machine_description:
        facts.test_machine = parse_machine(machine_description, axes.get("tbox_group"))
    elif axes.get("tbox_group"):
        facts.test_machine = TestMachine(description="", tbox_group=axes["tbox_group"])
    if facts.testcase is None and axes.get("testcase"):
        facts.testcase = axes["testcase"]
    # Reports without `compiler:`/`config:` lines still name both in the details block.
    if facts.compiler is None and axes.get("compiler"):
        facts.compiler = axes["compiler"]
    if facts.lkp_config is None and axes.get("kconfig"):
        facts.lkp_config = axes["kconfig"]
    facts.also_impacted = _also_impacted(lines)
    return facts
