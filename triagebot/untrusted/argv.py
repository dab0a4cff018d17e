"""Shared by every stage: values from mail made safe for a program's argv (never read as an option).

A Message-ID, a commit or branch name or a path reaches b4, git, lkp, ssh and the lab's hooks as
one argv word. A program that parses options reads a word starting with `-` as one: a cover
letter `Message-Id: <-o/some/dir>` handed to b4 as its last word makes b4 write the series into
that directory. Every argv built with such a value goes through this module, in one of two ways:

- `after_options(options, operands)`: the program's own words, then `--`, then the values. b4
  (argparse), git (parse-options) and ssh (getopt) read every word after `--` as an operand.
- `substituted(template, values)`: an operator's hook (rules/hosts.toml) or a template's words
  with placeholders filled in. No `--` can be added there (the hook's own parser is not ours to
  know), so a value that starts with `-` is refused (`OptionLike`).

`operand` is the check itself, for a caller that places a value by hand.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

END_OF_OPTIONS = "--"


class OptionLike(ValueError):
    """A value from mail that a program would read as an option (or that is no argv word)."""


def operand(value: str, what: str) -> str:
    """`value` when it can only be read as an operand; OptionLike when it starts with `-`, is
    empty, or holds a NUL (no argv word can)."""
    if not value:
        raise OptionLike(f"{what} is empty: it cannot be given to a program")
    if value.startswith("-"):
        raise OptionLike(f"{what} {value[:80]!r} starts with '-': a program would read it as an option")
    if "\0" in value:
        raise OptionLike(f"{what} {value[:80]!r} holds a NUL byte: it cannot be given to a program")
    return value


def after_options(options: Sequence[str], operands: Sequence[str]) -> list[str]:
    """`options`, then `--`, then `operands`: what follows `--` is never an option, so an operand
    may start with `-` and is still read as data (a NUL is refused: OptionLike)."""
    for value in operands:
        if "\0" in value:
            raise OptionLike(f"{value[:80]!r} holds a NUL byte: it cannot be given to a program")
    return [*options, END_OF_OPTIONS, *operands]


def substituted(template: Sequence[str], values: Mapping[str, str], what: str = "a value") -> tuple[str, ...]:
    """Each word of `template` with each placeholder of `values` (`{commit}` -> its value)
    replaced; OptionLike when a value starts with `-` (see `operand`)."""
    for placeholder, value in values.items():
        operand(value, f"{what} for {placeholder}")
    if not values:
        return tuple(template)
    # one pass: a value that holds another placeholder's name is not replaced again
    pattern = re.compile("|".join(re.escape(placeholder) for placeholder in values))
    return tuple(pattern.sub(lambda match: values[match.group(0)], word) for word in template)
