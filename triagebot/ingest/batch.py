"""Parse stage, in bulk: many messages parsed by worker processes, results in input order.

A year of a list is thousands of independent messages, so a backfill uses every core: the
messages are handed to forked workers by index (they inherit the list, nothing is copied
through pipes), each returns its rendered output, and the parent writes them in order.
Small inputs are parsed in-process: starting workers costs more than it saves.

spaCy (the stance and objection readers) is loaded by one process only: loading it costs most
of a second of CPU, about as much as a worker's share of a year's parse. The workers read each
message without it (`read_message`: a Draft) and hand the few drafts that need it (rough
sentences found by the keyword gates) back unrendered; the parent sends their requests to a
single reader process and completes and renders those records once the reader has answered, in
input order. The records are those `parse_message` gives in one process. The reader starts when the first such message
comes back, or earlier: `triage parse` starts it before reading a file big enough for workers
(`likely_parallel`), so that spaCy loads on the core that idles while the file is read and split.
"""
from __future__ import annotations

import collections
import gc
import multiprocessing
import os
import signal
import sys
import types
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from triagebot.errors import MessageError
from triagebot.parse import language
from triagebot.parse.draft import (
    Draft,
    LanguageAnswer,
    LanguageReader,
    LanguageRequest,
    complete,
    read_language,
)
from triagebot.parse.objections import OBJECTION_READING
from triagebot.parse.report import parse_message, read_message
from triagebot.parse.stance import STANCE_READING
from triagebot.records.report import Report, Source

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
    # Inside a batch only: the record not yet rendered, with what the reader must read for it.
    pending: Draft | None = None


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
    """A worker's parse without spaCy: a draft that needs the reader is handed back unrendered."""
    try:
        draft = read_message(raw, Source(kind, url))
    except MessageError as error:
        return Outcome(name, None, str(error))
    except Exception as error:  # noqa: BLE001 - as in _parse_one
        return Outcome(name, None, failure_text(error))
    if draft.request is not None:
        return Outcome(name, None, None, draft)
    return _rendered(name, draft.report, render)


def _rendered(name: str, report: Report, render: Render) -> Outcome:
    try:
        return Outcome(name, render(report), None)
    except Exception as error:  # noqa: BLE001 - as in _parse_one
        return Outcome(name, None, failure_text(error))


def _parse_chunk(bounds: tuple[int, int]) -> list[Outcome]:
    messages = _BATCH["messages"]
    render = _BATCH["render"]
    parse = _parse_deferring if _BATCH["defer"] else _parse_one
    return [parse(*messages[index], render) for index in range(*bounds)]  # type: ignore[index,call-arg]


def _ignore_interrupts() -> None:
    """A worker's start: Ctrl-C (SIGINT to the terminal's whole process group) is the parent's
    to handle; it ends the pool. A worker that took it too would print its own traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _start_reader() -> None:
    """The reader process's start: load spaCy while the workers go on parsing.

    The import allocates hundreds of thousands of objects that live as long as the process, so
    the cyclic collector, which would walk them again and again, is off while it runs and they
    are frozen (left out of later collections) afterwards.
    """
    _ignore_interrupts()
    gc.disable()
    try:
        import_spacy_for_reading()
        _load_readers()
    except Exception as error:  # noqa: BLE001 - handed on below, not swallowed
        # Raised here, it would make the pool start a new reader, again and again, and the
        # batch would wait for an answer for ever; each request answers with it instead.
        _READER_START_ERROR.append(error)
    finally:
        gc.enable()
    gc.freeze()


# In the reader process: why it could not load spaCy, if it could not.
_READER_START_ERROR: list[Exception] = []


def _load_readers() -> None:
    """spaCy's pipeline and both Matchers, built in this process (forked children inherit them)."""
    language.pipeline()
    language.matcher(STANCE_READING)
    language.matcher(OBJECTION_READING)


def import_spacy_for_reading() -> None:
    """Import spaCy without its command line, in the reader process, which only reads sentences.

    `import spacy` also imports `spacy.cli` (weasel, typer, requests, jinja2, ...) for the one
    name `spacy.info`: about a third of the import, none of it used to read a sentence. While
    spaCy's `__init__` runs, `spacy.cli.info` is a stand-in whose `info` imports the real one
    when called; the stand-ins are removed afterwards, so a later `import spacy.cli` is the real
    import. Should spaCy's `__init__` want more of its CLI, the plain import is used instead.
    """
    if "spacy" in sys.modules:
        return
    package = types.ModuleType("spacy.cli")
    package.__path__ = []  # a package, so that `spacy.cli.info` can be found under it
    module = types.ModuleType("spacy.cli.info")

    def info(*args: Any, **kwargs: Any) -> Any:
        from spacy.cli.info import info as real_info  # the stand-ins are gone by now

        return real_info(*args, **kwargs)

    module.info = info  # type: ignore[attr-defined]
    stand_ins = {"spacy.cli": package, "spacy.cli.info": module}
    sys.modules.update(stand_ins)
    try:
        import spacy  # noqa: F401
    except (ImportError, AttributeError):
        pass  # the plain import below
    finally:
        for name, stand_in in stand_ins.items():
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]
    import spacy  # noqa: F401,F811  (a no-op when the import above worked)


def _read_one(request: LanguageRequest) -> LanguageAnswer | str:
    """The reader's answer for one draft; the error's text when reading it raised."""
    try:
        return read_language(request)
    except Exception as error:  # noqa: BLE001 - that message's outcome, not the batch's
        return failure_text(error)


def read_chunk(requests: list[LanguageRequest]) -> list[LanguageAnswer | str]:
    """What the language reader finds for each request of a chunk (in a worker process), or
    the error text of one it could not read."""
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

    def read(self, requests: list[LanguageRequest]) -> Any:
        """An AsyncResult holding read_language's answer (or error text) for each request, in order."""
        self.start()
        return self._pool.apply_async(read_chunk, (requests,))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.terminate()
            self._pool.join()
            self._pool = None

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _answered(waiting: collections.deque, *,
              everything: bool) -> Iterator[tuple[list[Outcome], list[LanguageAnswer | str]]]:
    """The leading chunks whose reader answers are in (all of them, waiting, when `everything`),
    taken off `waiting`, with those answers; a reader's error is raised here."""
    while waiting and (everything or waiting[0][1] is None or waiting[0][1].ready()):
        outcomes, answers = waiting.popleft()
        yield outcomes, answers.get() if answers is not None else []


def completed_outcomes(outcomes: list[Outcome], answers: list[LanguageAnswer | str],
                       render: Render) -> Iterator[Outcome]:
    """A chunk's outcomes with the reader's answers put into the drafts, rendered."""
    replies = iter(answers)
    for outcome in outcomes:
        if outcome.pending is None:
            yield outcome
            continue
        answer = next(replies)
        if isinstance(answer, str):
            yield Outcome(outcome.name, None, answer)
            continue
        yield _rendered(outcome.name, complete(outcome.pending, _answering(answer)), render)


def _answering(answer: LanguageAnswer) -> LanguageReader:
    """A language reader that gives the answer the reader process gave for the draft's request."""
    return lambda request: answer


def parse_messages(messages: Sequence[tuple[str, str, bytes, str | None]], render: Render, jobs: int, *,
                   warm_readers: bool = False, reader: Reader | None = None) -> Generator[Outcome, None, None]:
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
        _load_readers()
    # spaCy already here (warmed, or read for a small input before): the workers inherit it.
    _BATCH.update(messages=messages, render=render, defer=not language.is_loaded())
    own_reader = reader is None
    if reader is None:
        reader = Reader()
    failure: Exception | None = None
    try:
        bounds = [(start, min(start + CHUNK, len(messages))) for start in range(0, len(messages), CHUNK)]
        with context.Pool(jobs, initializer=_ignore_interrupts) as pool:
            waiting: collections.deque = collections.deque()  # (outcomes, reader's answers or None)
            for outcomes in pool.imap(_parse_chunk, bounds):
                if failure is not None:
                    continue  # the rest is parsed and dropped: the pools then close as after a whole run
                requests = [outcome.pending.request for outcome in outcomes
                            if outcome.pending is not None and outcome.pending.request is not None]
                waiting.append((outcomes, reader.read(requests) if requests else None))
                try:
                    for outcomes, answers in _answered(waiting, everything=False):
                        yield from completed_outcomes(outcomes, answers, render)
                except Exception as error:  # noqa: BLE001 - the reader's, raised below once the pools are idle
                    failure = error
            if failure is None:
                try:
                    for outcomes, answers in _answered(waiting, everything=True):
                        yield from completed_outcomes(outcomes, answers, render)
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
