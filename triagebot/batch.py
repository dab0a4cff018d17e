"""Parse stage, in bulk: many messages parsed by worker processes, results in input order.

A year of a list is thousands of independent messages, so a backfill uses every core: the
messages are handed to forked workers by index (they inherit the list, nothing is copied
through pipes), each returns its rendered output, and the parent writes them in order.
Small inputs are parsed in-process: starting workers costs more than it saves.
"""
from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from triagebot.errors import MessageError
from triagebot.parse.report import parse_message
from triagebot.parse import objections, stance
from triagebot.records import Report, Source

PARALLEL_FROM = 200  # messages; fewer are parsed in this process
CHUNK = 64  # messages a worker takes at a time


@dataclass(frozen=True)
class Outcome:
    name: str
    output: object  # the rendered record (text, JSON text or a dict), None when the input was no message
    error: str | None


Render = Callable[[Report], object]

# The batch a forked worker reads by index: set by the parent just before the pool starts.
_BATCH: dict[str, object] = {}


def default_jobs() -> int:
    """Worker processes for a large input: the cores this process may use, at most 8."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


def _parse_one(name: str, kind: str, raw: bytes, url: str | None, render: Render) -> Outcome:
    try:
        return Outcome(name, render(parse_message(raw, Source(kind, url))), None)
    except MessageError as error:
        return Outcome(name, None, str(error))


def _parse_chunk(bounds: tuple[int, int]) -> list[Outcome]:
    messages = _BATCH["messages"]
    render = _BATCH["render"]
    return [_parse_one(*messages[index], render) for index in range(*bounds)]  # type: ignore[index,misc]


def parse_messages(messages: Sequence[tuple[str, str, bytes, str | None]], render: Render, jobs: int, *,
                   warm_readers: bool = False) -> Iterator[Outcome]:
    """Parse (name, source kind, raw, source URL) messages, render each; outcomes in input order.

    `warm_readers` loads spaCy here before the workers fork, for callers that start workers
    many times (an import in chunks): they inherit it instead of each loading it again. One
    pool is better off letting its workers load it side by side.
    """
    if jobs <= 1 or len(messages) < PARALLEL_FROM or "fork" not in multiprocessing.get_all_start_methods():
        for name, kind, raw, url in messages:
            yield _parse_one(name, kind, raw, url, render)
        return
    _BATCH.update(messages=messages, render=render)
    if warm_readers:
        stance.pipeline()
        objections.matcher()
    try:
        bounds = [(start, min(start + CHUNK, len(messages))) for start in range(0, len(messages), CHUNK)]
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            for outcomes in pool.imap(_parse_chunk, bounds):
                yield from outcomes
    finally:
        _BATCH.clear()
