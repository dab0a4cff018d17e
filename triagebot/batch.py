"""Parse stage, in bulk: many messages parsed by worker processes, results in input order.

A year of a list is thousands of independent messages, so a backfill uses every core: the
messages are handed to forked workers by index (they inherit the list, nothing is copied
through pipes), each returns its rendered output, and the parent writes them in order.
Small inputs are parsed in-process: starting workers costs more than it saves.

spaCy (the stance and objection readers) is loaded by one process only: loading it costs most
of a second of CPU, about as much as a worker's share of a year's parse. The workers hand the
few messages that need it (rough sentences found by the same keyword gates) back unrendered with
what spaCy must read; the parent sends that to a single reader process and renders those records
once the reader has answered, in input order. The reader starts when the first such message
comes back, or earlier: `triage parse` starts it before reading a file big enough for workers
(`likely_parallel`), so that spaCy loads on the core that idles while the file is read and split.
"""
from __future__ import annotations

import collections
import dataclasses
import gc
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from triagebot.errors import MessageError
from triagebot.parse.report import parse_message
from triagebot.parse import objections, stance
from triagebot.records import Report, Source

PARALLEL_FROM = 200  # messages; fewer are parsed in this process
CHUNK = 64  # messages a worker takes at a time
# A file this big holds about PARALLEL_FROM messages of a list (about 11 KB each; gzip about a
# quarter): worth starting the reader before reading it (`Reader.start`).
PARALLEL_FILE_BYTES = 2 * 1024 * 1024
PARALLEL_GZIP_BYTES = PARALLEL_FILE_BYTES // 4


@dataclass(frozen=True)
class Outcome:
    name: str
    output: object  # the rendered record (text, JSON text or a dict), None when the input was no message
    error: str | None
    # Inside a batch only: the record not yet rendered and what the reader must read for it.
    pending: tuple[Report, dict[str, tuple]] | None = None


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


def likely_parallel(path: str) -> bool:
    """True when the file at `path` is big enough to be parsed by workers (a guess from its size)."""
    try:
        size = os.stat(path).st_size
    except (OSError, ValueError):
        return False  # standard input ("-"), or nothing there: the reading will say
    return size >= (PARALLEL_GZIP_BYTES if path.endswith(".gz") else PARALLEL_FILE_BYTES)


MAX_ERROR_CHARS = 300  # characters of an unexpected exception's text kept in Outcome.error


def failure_text(error: BaseException) -> str:
    """One line for an exception the parser should not have raised: its type and its text."""
    text = " ".join(str(error).split())
    if len(text) > MAX_ERROR_CHARS:
        text = text[:MAX_ERROR_CHARS] + "…"
    return f"parser failed: {type(error).__name__}" + (f": {text}" if text else "")


def _parse_one(name: str, kind: str, raw: bytes, url: str | None, render: Render) -> Outcome:
    """One message's Outcome; any exception of its parse or render is its error, never raised.

    MessageError is the parser's own refusal (empty, binary); anything else is a parser bug
    that one message hit, and must not stop the batch (the ingest quarantines that message).
    """
    try:
        return Outcome(name, render(parse_message(raw, Source(kind, url))), None)
    except MessageError as error:
        return Outcome(name, None, str(error))
    except Exception as error:  # noqa: BLE001 - one message's failure, kept as its outcome
        return Outcome(name, None, failure_text(error))


def _parse_deferring(name: str, kind: str, raw: bytes, url: str | None, render: Render) -> Outcome:
    """A worker's parse: what needs spaCy is left to the reader process (stance.DEFERRED)."""
    pending: dict[str, tuple] = {}
    token = stance.DEFERRED.set(pending)
    try:
        report = parse_message(raw, Source(kind, url))
    except MessageError as error:
        return Outcome(name, None, str(error))
    except Exception as error:  # noqa: BLE001 - as in _parse_one
        return Outcome(name, None, failure_text(error))
    finally:
        stance.DEFERRED.reset(token)
    if pending:
        return Outcome(name, None, None, (report, pending))
    return _rendered(name, report, render)


def _rendered(name: str, report: Report, render: Render) -> Outcome:
    try:
        return Outcome(name, render(report), None)
    except Exception as error:  # noqa: BLE001 - as in _parse_one
        return Outcome(name, None, failure_text(error))


def _parse_chunk(bounds: tuple[int, int]) -> list[Outcome]:
    messages = _BATCH["messages"]
    render = _BATCH["render"]
    parse = _parse_deferring if _BATCH["defer"] else _parse_one
    return [parse(*messages[index], render) for index in range(*bounds)]  # type: ignore[index,misc,operator]


def _start_reader() -> None:
    """The reader process's start: load spaCy while the workers go on parsing.

    The import allocates hundreds of thousands of objects that live as long as the process, so
    the cyclic collector, which would walk them again and again, is off while it runs and they
    are frozen (left out of later collections) afterwards.
    """
    gc.disable()
    try:
        stance.import_spacy_for_reading()
        stance.pipeline()
        objections.matcher()
    except Exception as error:  # noqa: BLE001 - handed on below, not swallowed
        # Raised here, it would make the pool start a new reader, again and again, and the
        # batch would wait for an answer for ever; each request answers with it instead.
        _READER_START_ERROR.append(error)
    finally:
        gc.enable()
    gc.freeze()


# In the reader process: why it could not load spaCy, if it could not.
_READER_START_ERROR: list[Exception] = []


def _read_one(request: dict[str, tuple]) -> dict[str, Any]:
    """The reader's answer for one message; {"error": …} when reading it raised."""
    try:
        return stance.read_pending(request)
    except Exception as error:  # noqa: BLE001 - that message's outcome, not the batch's
        return {"error": failure_text(error)}


def _read_chunk(requests: list[dict[str, tuple]]) -> list[dict[str, Any]]:
    if _READER_START_ERROR:
        raise _READER_START_ERROR[0]  # spaCy could not load: every message's reading fails
    return [_read_one(request) for request in requests]


class Reader:
    """The one process that loads spaCy and reads what a batch's workers defer to it.

    Started on first use, or earlier by `start()`: a caller that knows a big input is coming
    starts it before reading the input, so that spaCy loads on the core that idles while this
    process reads and splits the file. Closing it stops the process.
    """

    def __init__(self) -> None:
        self._pool: Any = None

    def start(self) -> None:
        if self._pool is None and "fork" in multiprocessing.get_all_start_methods():
            self._pool = multiprocessing.get_context("fork").Pool(1, initializer=_start_reader)

    def read(self, requests: list[dict[str, tuple]]) -> Any:
        """An AsyncResult holding read_pending's answer for each request, in order."""
        self.start()
        return self._pool.apply_async(_read_chunk, (requests,))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None

    def __enter__(self) -> "Reader":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _answered(waiting: collections.deque, *, everything: bool) -> Iterator[tuple[list[Outcome], list[dict[str, Any]]]]:
    """The leading chunks whose reader answers are in (all of them, waiting, when `everything`),
    taken off `waiting`, with those answers; a reader's error is raised here."""
    while waiting and (everything or waiting[0][1] is None or waiting[0][1].ready()):
        outcomes, answers = waiting.popleft()
        yield outcomes, answers.get() if answers is not None else []


def _completed(outcomes: list[Outcome], answers: list[dict[str, Any]], render: Render) -> Iterator[Outcome]:
    """A chunk's outcomes with the reader's answers put into the deferred records, rendered."""
    replies = iter(answers)
    for outcome in outcomes:
        if outcome.pending is None:
            yield outcome
            continue
        report, _ = outcome.pending
        answer = next(replies)
        if "error" in answer:
            yield Outcome(outcome.name, None, answer["error"])
            continue
        changes: dict[str, Any] = {}
        if "stance" in answer:
            changes.update(stance=answer["stance"].stance, stance_evidence=answer["stance"].evidence)
        if "objections" in answer:
            changes["objections"] = answer["objections"]
        yield _rendered(outcome.name, dataclasses.replace(report, **changes), render)


def parse_messages(messages: Sequence[tuple[str, str, bytes, str | None]], render: Render, jobs: int, *,
                   warm_readers: bool = False, reader: Reader | None = None) -> Iterator[Outcome]:
    """Parse (name, source kind, raw, source URL) messages, render each; outcomes in input order.

    `warm_readers` loads spaCy here before the workers fork, for callers that start workers
    many times (an import in chunks): they inherit it and read for themselves. Otherwise one
    reader process loads it, once, for the messages the workers hand back: `reader` when given
    (the caller's, perhaps started already, kept open for its next input), else one of its own.
    """
    if jobs <= 1 or len(messages) < PARALLEL_FROM or "fork" not in multiprocessing.get_all_start_methods():
        for name, kind, raw, url in messages:
            yield _parse_one(name, kind, raw, url, render)
        return
    context = multiprocessing.get_context("fork")
    if warm_readers:
        stance.pipeline()
        objections.matcher()
    # spaCy already here (warmed, or read for a small input before): the workers inherit it.
    _BATCH.update(messages=messages, render=render, defer=stance.pipeline.cache_info().currsize == 0)
    own_reader = reader is None
    if reader is None:
        reader = Reader()
    failure: Exception | None = None
    try:
        bounds = [(start, min(start + CHUNK, len(messages))) for start in range(0, len(messages), CHUNK)]
        with context.Pool(jobs) as pool:
            waiting: collections.deque = collections.deque()  # (outcomes, reader's answers or None)
            for outcomes in pool.imap(_parse_chunk, bounds):
                if failure is not None:
                    continue  # the rest is parsed and dropped: the pools then close as after a whole run
                requests = [outcome.pending[1] for outcome in outcomes if outcome.pending is not None]
                waiting.append((outcomes, reader.read(requests) if requests else None))
                try:
                    for outcomes, answers in _answered(waiting, everything=False):
                        yield from _completed(outcomes, answers, render)
                except Exception as error:  # noqa: BLE001 - the reader's, raised below once the pools are idle
                    failure = error
            if failure is None:
                try:
                    for outcomes, answers in _answered(waiting, everything=True):
                        yield from _completed(outcomes, answers, render)
                except Exception as error:  # noqa: BLE001 - as above
                    failure = error
            for _, answers in waiting:  # the reader idle, too, before the pools close
                if answers is not None:
                    answers.wait()
        if failure is not None:
            raise failure
    finally:
        if own_reader:
            reader.close()
        _BATCH.clear()
