"""The README and the documentation pages (docs/): the README stays a short front page, every
behaviour the old 2,097-line README named still has a home in the docs, and the examples that
show output are real output, checked by running them.

`tests/data/readme_key_sentences.json` holds, per section of the old README (main 98130ab), the
first sentence of each of its paragraphs and list items (module paths renamed to the folders
they moved to); the two sections rewritten whole (Set-up, Layout) are left out.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT

SHARED = PROJECT.parent / "shared"
CORPUS = SHARED / "corpus" / "messages"
README_MAX_LINES = 300
DOC_FILES = [PROJECT / "README.md", *sorted((PROJECT / "docs").glob("*.md"))]


def normalized(text: str) -> str:
    """Text as a reader sees it: one space for any run of whitespace."""
    return re.sub(r"\s+", " ", text).strip()


def test_the_readme_is_a_front_page() -> None:
    lines = (PROJECT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines (at most {README_MAX_LINES})"
    text = "\n".join(lines)
    assert "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/triage daemon" in lines[13]
    assert lines[14].strip() == "bash .ci/run"
    for page in sorted((PROJECT / "docs").glob("*.md")):
        if page.name != "index.md":
            assert f"docs/{page.name}" in text, f"the README's map of the docs does not name {page.name}"


def test_every_key_sentence_of_the_old_readme_has_a_home_in_the_docs() -> None:
    sections = json.loads((PROJECT / "tests" / "data" / "readme_key_sentences.json").read_text(encoding="utf-8"))
    docs = normalized(" ".join(path.read_text(encoding="utf-8") for path in DOC_FILES))
    missing = [f"{section}: {sentence!r}" for section, sentences in sections.items()
               for sentence in sentences if normalized(sentence) not in docs]
    assert sum(len(sentences) for sentences in sections.values()) > 150
    assert not missing, f"{len(missing)} key sentences found nowhere in README.md or docs/:\n" + "\n".join(missing)


def test_the_key_sentence_check_fails_on_a_sentence_with_no_home() -> None:
    docs = normalized("The daemon\n  polls each source on its interval.")
    assert normalized("The daemon polls each source on its interval.") in docs
    assert normalized("The daemon polls every source at once.") not in docs


# --- examples that show output ------------------------------------------------------------------

def examples() -> list[tuple[str, int, str, list[str]]]:
    """Every example of the docs: (file, line, the `$ triage …` command, the lines shown after it)."""
    found = []
    for path in DOC_FILES:
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines):
            stripped = line.strip()
            if not stripped.startswith("$ triage "):
                continue
            indent = len(line) - len(line.lstrip())
            shown = []
            for later in lines[number + 1:]:
                if later.strip().startswith("$ ") or later.strip().startswith("```") or (
                        indent and later.strip() and len(later) - len(later.lstrip()) < indent):
                    break
                if not later.strip() and indent:
                    break
                shown.append(later[indent:].rstrip())
            found.append((path.name, number + 1, stripped[2:], shown))
    return found


def shown_lines_match(shown: list[str], output: str) -> list[str]:
    """The shown lines that are not, in order, the start of a line of the output (an example may
    cut lines, marked `…`, and leave lines out, marked `…` or `...` on a line of their own)."""
    actual = output.splitlines()
    position, missing = 0, []
    for line in shown:
        cut = line.rstrip().removesuffix("…").removesuffix("...").rstrip()
        if not cut.strip() or cut.strip() in ("…", "..."):
            continue
        found = next((index for index in range(position, len(actual)) if actual[index].rstrip().startswith(cut)),
                     None)
        if found is None:
            missing.append(line)
        else:
            position = found + 1
    return missing


def test_the_example_check_finds_a_line_the_output_does_not_have() -> None:
    output = "lkp-regression  id@x\n  subject:  [linus:master] a long subject\n  testcase: fsmark\n"
    assert shown_lines_match(["lkp-regression  id@x", "  subject:  [linus:master] a lo…", "  …",
                              "  testcase: fsmark"], output) == []
    out_of_order = ["  testcase: fsmark", "  subject:  [linus:master]"]
    assert shown_lines_match(out_of_order, output) == ["  subject:  [linus:master]"]
    assert shown_lines_match(["  testcase: fio"], output) == ["  testcase: fio"]


def _triage(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "triagebot.cli", *argv], capture_output=True, text=True,
                          cwd=PROJECT, env=env, timeout=600)


# Commands whose output an example shows and a test can give again here: `parse` of a file, and
# `show` of the corpus messages ingested into a store of the test's own (and, in the README's tour
# of that store, `list --kind`). Examples of the lab's own reports or of a store set up otherwise
# (operating.md's first use) are other tests' business.
CHECKED = re.compile(r"triage (parse \.\./shared/corpus/\S+|show \S+@\S+|list --kind [\w-]+)$")
CHECKED_LIST_IN = ("README.md",)


@pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus/messages is absent: the examples run on it")
def test_the_examples_that_show_output_are_real_output(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TRIAGE_DB": str(tmp_path / "triage.db"),
           "PYTHONPATH": str(PROJECT), "COLUMNS": "200"}
    ingested = _triage("ingest", str(CORPUS), env=env)
    assert ingested.returncode == 0, ingested.stderr
    checked, failures = [], []
    for name, line, command, shown in examples():
        match = CHECKED.search(command)
        if not match or not shown:
            continue
        argv = match.group(1).split()
        if argv[0] == "list" and name not in CHECKED_LIST_IN:
            continue
        if argv[0] == "show" and not _triage("show", argv[1], env=env).returncode == 0:
            continue  # a report of the docs' own lab examples, not a corpus message
        result = _triage(*argv, env=env)
        checked.append(f"{name}:{line}")
        missing = shown_lines_match(shown, result.stdout)
        if result.returncode != 0 or missing:
            failures.append(f"{name}:{line} `{command}`: exit {result.returncode}; lines not in the output: "
                            f"{missing[:3]}")
    assert len(checked) >= 3, f"too few examples checked: {checked}"
    assert not failures, "\n".join(failures)
