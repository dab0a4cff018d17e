"""The cheap first tests that spare the parser a scan (h-speed): each must let through every text
the full test would find something in, so skipping the scan changes no record."""
from __future__ import annotations

import random

import pytest

from triagebot.parse.finite import RUN_STRIDE, may_hold_huge_number

FULL_GATE = r"[\d,.]{300}|\d[eE][+-]?\d{3}"  # the one scan the sampled gate replaced


@pytest.mark.parametrize("offset", range(RUN_STRIDE + 1))
def test_a_run_of_300_digits_is_found_wherever_it_starts(offset: int) -> None:
    text = "a" * offset + "9" * 300 + " b"
    assert may_hold_huge_number(text)
    assert not may_hold_huge_number("a" * offset + "9" * 299 + " b")  # one short: no such number


def test_runs_of_commas_and_dots_count_and_an_exponent_alone_is_enough() -> None:
    assert may_hold_huge_number("x " + "1,000." * 50 + " y")
    assert may_hold_huge_number("the rate went to 1e+400 per second")
    assert may_hold_huge_number("7E999")
    assert not may_hold_huge_number("e400 with no digit before it, 1e40 has two")


def test_the_gate_answers_as_the_full_scan_on_random_texts() -> None:
    import re

    full = re.compile(FULL_GATE)
    generator = random.Random(24)
    alphabet = "0123456789,.eE+- ab\n"
    for _ in range(400):
        pieces = []
        for _ in range(generator.randrange(1, 8)):
            if generator.random() < 0.3:
                pieces.append("5" * generator.randrange(250, 320))
            else:
                pieces.append("".join(generator.choice(alphabet) for _ in range(generator.randrange(1, 200))))
        text = "".join(pieces)
        assert may_hold_huge_number(text) == bool(full.search(text)), text[:80]


ORIGINAL_MESSAGE_TEXTS = [
    "-----Original Message-----\nFrom: a\nold text",
    "Thanks, applied.\n-- \nsig\n--- a/x.c\n-----original message-----  \nFrom: b\nolder",
    "mine\n--\n\n   Original Message --\nquoted by the whitespace run",
    "mine\n  -----Original Message-----\nnot at the line start: stays own text",
    "- -Original Message--\nno run of dashes",
    "--",
    "mine\n--",
]


@pytest.mark.parametrize("text", ORIGINAL_MESSAGE_TEXTS)
def test_the_original_message_line_is_found_as_by_the_full_search(text: str) -> None:
    from triagebot.parse.quoting import _ORIGINAL_MESSAGE_ANYWHERE, split_quotes

    text += "\n> a quoted line, so that the text is split at all"
    full = _ORIGINAL_MESSAGE_ANYWHERE.search(text)
    split = split_quotes(text)
    if full is None:
        assert split.quoted == "a quoted line, so that the text is split at all"
    else:
        assert split.own == text[:full.start()] and split.quoted == text[full.end():]


def _four_pass_split(text: str) -> tuple[str, str, int]:
    """The quote split as it was written before its one-pass form: own text, quoted text, depth."""
    import re

    quoted_line = re.compile(r"^[ \t]{0,3}>.*$", re.MULTILINE)
    quote_prefix = re.compile(r"^[ \t]{0,3}((?:>[ \t]?)+)", re.MULTILINE)
    block = "\n".join(quoted_line.findall(text))
    depth = max((prefix.count(">") for prefix in set(quote_prefix.findall(block))), default=0)
    own = quoted_line.sub("\x00", text).replace("\x00\n", "").replace("\x00", "")
    return own, quote_prefix.sub("", block), depth


def test_the_one_pass_quote_split_gives_what_the_four_passes_gave() -> None:
    from triagebot.parse.quoting import split_quotes

    generator = random.Random(9)
    # no colon: no attribution line, so the split's own two passes are all that differ
    tokens = ["> ", ">", " ", "\t", "\n", "\n\n", "word", "    >", "  >", ">>", "> > ", "\r", "\x00", "-"]
    checked = 0
    for _ in range(3000):
        text = "".join(generator.choice(tokens) for _ in range(generator.randrange(0, 40)))
        split = split_quotes(text)
        if ">" not in text:
            continue
        assert (split.own, split.quoted, split.max_depth) == _four_pass_split(text), repr(text)
        checked += 1
    assert checked > 2000
    assert split_quotes("mine\n> > deep\n>   > spaced\n  > x\n    > code").max_depth == 2


@pytest.mark.parametrize("module", ["triagebot.parse.objections", "triagebot.parse.report"])
def test_trailers_found_from_line_breaks_are_those_found_at_line_starts(module: str) -> None:
    import importlib

    parsed = importlib.import_module(module)
    at_line_start, after_break = parsed._TRAILER, parsed._TRAILER_AFTER_BREAK
    generator = random.Random(31)
    tokens = ["Link: ", "link:", "Closes: x", "Reported-by: A <a@b>", "Fixes: 123abc (\"s\")", "Cc:", "Tested-by:",
              " ", "\t", "\n", "\n\n", "> ", "|", "value", "  ", "\r", ":", "Reviewed-by:\n  y", "Acked-by: z  \n"]
    matched = 0
    for _ in range(3000):
        text = "".join(generator.choice(tokens) for _ in range(generator.randrange(0, 25)))
        expected = [match.groups() for match in at_line_start.finditer(text)]
        assert [match.groups() for match in after_break.finditer("\n" + text)] == expected, repr(text)
        matched += bool(expected)
    assert matched > 1000


def _top_level_alternatives(pattern: str) -> list[str]:
    """A regex's alternatives outside any group or class (escapes kept whole)."""
    alternatives, current, depth, index = [], "", 0, 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            current += pattern[index:index + 2]
            index += 2
            continue
        if char == "[":
            end = pattern.index("]", index + 2 if pattern[index + 1] in "^]" else index + 1)
            current += pattern[index:end + 1]
            index = end + 1
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "|" and depth == 0:
            alternatives.append(current)
            current = ""
        else:
            current += char
        index += 1
    return [*alternatives, current]


def test_every_culprit_word_starts_with_a_letter_of_its_gate() -> None:
    from triagebot.parse import commits

    for alternative in _top_level_alternatives(commits._CULPRIT_CONTEXT.pattern):
        first = alternative.removeprefix(r"\b")[:1].lower()
        assert first in commits.CULPRIT_CONTEXT_FIRST_LETTERS, (
            f"{alternative!r} starts with {first!r}: add it to CULPRIT_CONTEXT_FIRST_LETTERS")


def test_the_gated_culprit_words_are_found_where_the_words_are() -> None:
    from triagebot.parse import commits

    generator = random.Random(7)
    words = ["introduced", "Bisected", "first bad", "caused by", "culprit", "regressed by", "comes from",
             "associated with", "offending", "causes", "tracked it down", "narrowed down", "the one that",
             "points to", "blame", "root cause", "ROOT CAUSED BY", "ıntroduce", " ", "\n", "x", ".", "abc123def"]
    for _ in range(2000):
        text = "".join(generator.choice(words) for _ in range(generator.randrange(0, 20)))
        assert ([match.span() for match in commits._CULPRIT_CONTEXT_GATED.finditer(text)]
                == [match.span() for match in commits._CULPRIT_CONTEXT.finditer(text)]), repr(text)


def test_numbers_found_from_their_first_digit_are_those_of_the_look_behind_scan() -> None:
    from triagebot.parse import prose

    assert prose._NUMBER_UNIT_FROM_DIGIT is not prose._NUMBER_UNIT  # the pattern still opens as expected
    generator = random.Random(11)
    tokens = ["12", "3.5", "0", " ", "MB/s", "%", "ms", "s", "x", ".", "-", " to ", "IOPS", "v", "_", "٣", "\n", "usec"]
    found = 0
    for _ in range(3000):
        text = "".join(generator.choice(tokens) for _ in range(generator.randrange(0, 20)))
        expected = [match.span() + match.groups() for match in prose._NUMBER_UNIT.finditer(text)]
        assert [match.span() + match.groups() for match in prose._NUMBER_UNIT_FROM_DIGIT.finditer(text)] == expected
        found += bool(expected)
    assert found > 500


def test_benchmark_names_found_by_first_letter_are_those_of_the_full_scan() -> None:
    from triagebot.parse import report

    assert report._BENCHMARKS_BY_LETTER is not report._BENCHMARKS  # still a plain list of names
    generator = random.Random(13)
    tokens = [*report._BENCHMARK_NAMES, " ", "x", "-", "_", "\n", "Fio", "fio2", "perf", "bench", "a"]
    for _ in range(3000):
        text = "".join(generator.choice(tokens) for _ in range(generator.randrange(0, 12)))
        full, gated = report._BENCHMARKS.search(text), report._BENCHMARKS_BY_LETTER.search(text)
        assert (full and full.span()) == (gated and gated.span()), repr(text)


def test_every_cpu_model_form_holds_a_literal_of_its_gate() -> None:
    from triagebot.parse import prose

    source = prose._CPU_MODEL.pattern
    assert source.startswith("(") and source.endswith(")")
    for alternative in _top_level_alternatives(source[1:-1]):
        written = alternative.replace("i[3579]-", "i3-")  # the i3/i5/i7/i9 form: each holds "iN-"
        assert any(literal in written for literal in prose.CPU_MODEL_LITERALS), (
            f"{alternative!r} holds none of CPU_MODEL_LITERALS: add its literal there")
    for digit in "3579":
        assert f"i{digit}-" in prose.CPU_MODEL_LITERALS
