"""Reproduce stage: an LKP report's materials directory, fetched once and kept in the store.

An LKP report links a directory (`https://download.01.org/0day-ci/archive/<date>/<id>`) that
holds the job file (`job.yaml`), the `reproduce` script and the kernel config (`config-<ver>`).
`fetch_materials` GETs them with `triagebot.ingest.http.fetch` (timeouts and backoff from the
HttpPolicy, including its total deadline), refuses any file over its size cap while streaming
it (an honest Content-Length over the cap before reading any of it; otherwise as soon as the
body, decoded, passes the cap: never read whole first, so the job.yaml the planner's YAML
reader sees is at most 4 MiB), takes a 404 as "not there", gives up at once on a host whose
name does not resolve or that refuses connections (HostUnreachable: offline, no retries), and
keeps each file in the store by (directory URL, name), so a second fetch asks the network nothing.
The config's name comes from the directory listing when the server serves one, else from the
report's attachments' names; without either it is skipped.

`with_materials` gives the planner a report that carries the fetched job.yaml as an lkp-job
reproducer, so `plan_report` plans from it exactly as from an attached job.yaml.

The `reproduce` script is text to read, never to run: `reproduce_facts` reads facts from it
(disk setup, filesystem, mkfs and mount options, cpufreq governor, sysctls) with shlex and
regular expressions only. Nothing here starts a process.
"""
from __future__ import annotations

import dataclasses
import html
import re
import shlex
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

from triagebot.backoff import Sleeper
from triagebot.http_client.client import NameUnresolved, error_causes, fetch, is_name_lookup_failure
from triagebot.http_client.protocol import (
    BodyTooLarge,
    HttpClient,
    HttpPolicy,
    HttpResponse,
    ResponseRefused,
    SourceError,
)
from triagebot.records.report import Report, Reproducer

JOB_FILE = "job.yaml"
REPRODUCE_FILE = "reproduce"
MATERIAL_FILES = (JOB_FILE, REPRODUCE_FILE)  # plus the kernel config, named config-<version>
LISTING = "/"  # the store's name for the directory listing page (no file can be named "/")
MIB = 1 << 20
SIZE_CAPS = {JOB_FILE: 4 * MIB, REPRODUCE_FILE: 4 * MIB, "config": 16 * MIB, LISTING: 2 * MIB}
_CONFIG_NAME = re.compile(r"^config-[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")
_HREF = re.compile(r"""href\s*=\s*["']([^"'<>]+)["']""", re.IGNORECASE)
# HTTP answers that mean "no listing here" (a 404, or listing switched off on the server).
_NO_LISTING = re.compile(r": HTTP (401|403)$")
# a command someone waits on (`triage plan`) tries the host once, and gives up on a host that
# does not answer within this many seconds (connect, or silence while reading): the plan then
# comes from the store's copy or the mail's text, instead of the daemon's 5 attempts with backoff
QUICK_ATTEMPTS = 1
QUICK_TIMEOUT_SECONDS = 5.0
Announce = Callable[[str], None]  # told "fetching job.yaml from URL" before each GET


class MaterialsError(SourceError):
    """A materials file could not be used: too big, or the link is not an http(s) URL."""


class HostUnreachable(ResponseRefused):
    """The materials host's name does not resolve or it refuses connections: asking again in a
    few seconds would only keep a planner waiting (the retry policy is for a server that answers
    badly, not for one that is not there), so `fetch` does not retry it."""


def _unreachable(error: BaseException) -> str | None:
    """"its name does not resolve" / "it refuses connections" when `error` (or what caused it,
    through requests' and urllib3's wrappers) says so, else None."""
    for item in error_causes(error):
        if is_name_lookup_failure(item):
            return "its name does not resolve"
        if isinstance(item, ConnectionRefusedError):
            return "it refuses connections"
    return None


class _FailFast:
    """An HttpClient that turns "host not there" into HostUnreachable (not retried)."""

    def __init__(self, client: HttpClient) -> None:
        self._client = client

    def get(self, url: str, **kwargs) -> HttpResponse:
        try:
            return self._client.get(url, **kwargs)
        except NameUnresolved as error:
            host = urlsplit(url).hostname or url
            raise HostUnreachable(f"{host} cannot be reached: its name does not resolve (not retried; "
                                  f"offline?)") from error
        except ResponseRefused:
            raise
        except SourceError as error:
            why = _unreachable(error)
            if why is None:
                raise
            host = urlsplit(url).hostname or url
            raise HostUnreachable(f"{host} cannot be reached: {why} (not retried; offline?)") from error


@dataclass(frozen=True)
class Materials:
    url: str                        # the directory, ending in "/"
    job_yaml: str | None
    reproduce: str | None
    config_name: str | None
    config: str | None
    events: tuple[str, ...] = ()    # one line per file: fetched, from the store, not there; retries

    @property
    def job_url(self) -> str:
        return file_url(self.url, JOB_FILE)


def directory_url(url: str) -> str:
    """The materials link as the directory URL the store keys by (ending in "/")."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise MaterialsError(f"{url!r}: a materials link must be an http(s) URL")
    if parts.query or parts.fragment:
        raise MaterialsError(f"{url}: a materials link has no query or fragment")
    return url.strip().rstrip("/") + "/"


def file_url(directory: str, name: str) -> str:
    return directory + quote(name, safe="")


def size_cap(name: str) -> int:
    return SIZE_CAPS.get(name, SIZE_CAPS["config"] if name.startswith("config") else SIZE_CAPS[JOB_FILE])


def _size(count: int) -> str:
    return f"{count} bytes" if count < 10 * 1024 else f"{count / 1024:.0f} KiB"


def _refused(url: str, name: str, size: int | None) -> MaterialsError:
    cap = size_cap(name)
    what = f"{size} bytes" if size is not None else f"more than {cap} bytes (stopped reading at the cap)"
    return MaterialsError(f"{url}: {name} is {what}, over the {cap} byte cap: refused")


def _get(directory: str, name: str, client: HttpClient, policy: HttpPolicy, store, sleep: Sleeper,
         events: list[str], *, listing: bool = False, announce: Announce | None = None) -> bytes | None:
    """One file from the store, else from the server (then kept); None when it is not there."""
    cached = store.get_material(directory, name)
    if cached is not None and len(cached) > size_cap(name):
        raise _refused(f"{file_url(directory, name)} (kept in the store)", name, len(cached))
    if cached is not None:
        events.append(f"{'the listing' if listing else name} of {directory}: from the store")
        return cached
    url = directory if listing else file_url(directory, name)
    if announce is not None:
        announce(f"fetching {'the directory listing' if listing else name} from {url}")
    try:
        response = fetch(client, url, policy, limit=size_cap(name), sleep=sleep, events=events)
    except BodyTooLarge as error:
        raise _refused(url, name, error.declared) from error
    except SourceError as error:
        if listing and _NO_LISTING.search(str(error)):
            events.append(f"{url}: no directory listing ({error})")
            return None
        raise
    if response.status == 404:
        events.append(f"{url}: not there (HTTP 404)")
        return None
    body = response.body  # at most size_cap(name) bytes: the client stopped there
    store.put_material(directory, name, body)
    events.append(f"{url}: fetched {'the directory listing' if listing else name} ({_size(len(body))})")
    return body


def listed_names(page: str) -> set[str]:
    """File names an HTML directory listing links to (Apache, nginx, python -m http.server)."""
    names = set()
    for href in _HREF.findall(page):
        target = unquote(html.unescape(href)).split("?")[0].split("#")[0]
        if target and not target.endswith("/"):
            names.add(target.rsplit("/", 1)[-1])
    return names


def config_name_of(names: Iterable[str | None]) -> str | None:
    """The kernel config among these file names (config-<version>); the last in sort order."""
    found = sorted(name for name in names if name and _CONFIG_NAME.match(name))
    return found[-1] if found else None


def _text(body: bytes | None) -> str | None:
    return None if body is None else body.decode("utf-8", "replace")


def fetch_materials(url: str, client: HttpClient, policy: HttpPolicy, store, *,
                    sleep: Sleeper = time.sleep, attachment_names: Iterable[str | None] = (),
                    announce: Announce | None = None) -> Materials:
    """job.yaml, reproduce and the kernel config of one materials directory, via the store.

    Raises SourceError when the server cannot be read (after the policy's retries; at once,
    as HostUnreachable, when the host's name does not resolve or it refuses connections) and
    MaterialsError for a file over its cap; a file the server does not have is None.
    """
    directory = directory_url(url)
    events: list[str] = []
    client = _FailFast(client)
    page = _get(directory, LISTING, client, policy, store, sleep, events, listing=True, announce=announce)
    listed = listed_names(_text(page) or "") if page is not None else set()
    # A listing that names none of the files is not trusted to say what is missing.
    trusted = bool(listed & {JOB_FILE, REPRODUCE_FILE}) or config_name_of(listed) is not None
    config_name = config_name_of(listed) if trusted else None
    if config_name is None and not trusted:
        config_name = config_name_of(attachment_names)
    bodies: dict[str, bytes | None] = {}
    for name in (*MATERIAL_FILES, *((config_name,) if config_name else ())):
        if trusted and name not in listed:
            events.append(f"{file_url(directory, name)}: not in the directory listing")
            bodies[name] = None
            continue
        bodies[name] = _get(directory, name, client, policy, store, sleep, events, announce=announce)
    if config_name is None:
        events.append(f"{directory}: no kernel config name known (no listing, no config-* attachment): skipped")
    return Materials(
        url=directory,
        job_yaml=_text(bodies[JOB_FILE]),
        reproduce=_text(bodies[REPRODUCE_FILE]),
        config_name=config_name,
        config=_text(bodies.get(config_name)) if config_name else None,
        events=tuple(events),
    )


# --- the reproduce script, read -----------------------------------------------------------------

_GOVERNORS = ("performance", "powersave", "ondemand", "schedutil", "conservative", "userspace")
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")
_SEPARATORS = ("|", "||", "&&", ";", "&", "(", ")", ";;")
_BENCHMARKS = ("fio", "fs_mark", "stress-ng", "sysbench", "hackbench", "perf", "dd", "filebench",
               "fxmark", "./multitask", "./check", "unixbench", "vm-scalability", "aim7")
_MKFS_VALUE_OPTIONS = ("-b", "-E", "-O", "-L", "-N", "-i", "-I", "-m", "-d", "-l", "-n", "-s", "-r", "-J", "-G",
                       "-U", "-T", "-M", "-C")


def _logical_lines(script: str) -> list[str]:
    """Lines joined where a quote or a `\\` continues them; here-document bodies dropped."""
    lines: list[str] = []
    pending = ""
    terminator: str | None = None
    for raw in script.splitlines():
        if terminator is not None:
            if raw.strip() == terminator:
                terminator = None
            continue
        text = f"{pending}\n{raw}" if pending else raw
        if text.endswith("\\"):
            pending = text[:-1]
            continue
        try:
            shlex.split(text, comments=True)
        except ValueError:          # an open quote: the command goes on on the next line
            pending = text
            continue
        pending = ""
        lines.append(text)
        heredoc = _HEREDOC.search(text)
        if heredoc:
            terminator = heredoc.group(2)
    if pending:
        lines.append(pending)
    return lines


def _commands(line: str) -> list[list[str]]:
    """The simple commands of one logical line, as word lists (`a | b && c` -> 3 of them)."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        tokens = list(lexer)
    except ValueError:
        tokens = line.split()
    commands: list[list[str]] = [[]]
    for token in tokens:
        if token in _SEPARATORS:
            commands.append([])
        else:
            commands[-1].append(token)
    return [command for command in commands if command]


def _expand(word: str, variables: dict[str, str]) -> str:
    return _VARIABLE.sub(lambda match: variables.get(match.group(1), match.group(0)), word)


def _add(facts: dict[str, list[str]], key: str, value: str) -> None:
    value = value.strip()
    if value and value not in facts.setdefault(key, []):
        facts[key].append(value)


def _mkfs(words: list[str], facts: dict[str, list[str]]) -> None:
    program = words[0].rsplit("/", 1)[-1]
    fs = program.split(".", 1)[1] if "." in program else None
    options: list[str] = []
    devices: list[str] = []
    index = 1
    while index < len(words):
        word = words[index]
        if word == "-t" and index + 1 < len(words):
            fs = words[index + 1]
            index += 2
            continue
        if word.startswith("-t") and len(word) > 2 and fs is None:
            fs = word[2:]
        elif word.startswith("-"):
            if word in _MKFS_VALUE_OPTIONS and index + 1 < len(words):
                options.append(f"{word} {words[index + 1]}")
                index += 2
                continue
            options.append(word)
        else:
            devices.append(word)
        index += 1
    if fs:
        _add(facts, "fs", fs)
    _add(facts, "mkfs_options", " ".join(options))
    for device in devices:
        _add(facts, "devices", device)


def _mount(words: list[str], facts: dict[str, list[str]]) -> None:
    places: list[str] = []
    index = 1
    while index < len(words):
        word = words[index]
        if word == "-t" and index + 1 < len(words):
            _add(facts, "mount_fs", words[index + 1])
            index += 2
            continue
        if word == "-o" and index + 1 < len(words):
            _add(facts, "mount_options", words[index + 1])
            index += 2
            continue
        if word.startswith("-o") and len(word) > 2:
            _add(facts, "mount_options", word[2:])
        elif not word.startswith("-"):
            places.append(word)
        index += 1
    if len(places) == 2:
        _add(facts, "mount_points", places[1])


def _write(value: str, target: str, facts: dict[str, list[str]]) -> None:
    """`echo VALUE > TARGET`: the cpufreq governor, a sysctl or another /sys setting."""
    if target.endswith("scaling_governor") and value in _GOVERNORS:
        _add(facts, "cpufreq_governor", value)
    elif target.startswith("/proc/sys/"):
        _add(facts, "sysctl", f"{target[len('/proc/sys/'):].replace('/', '.')}={value}")
    elif target.startswith("/sys/"):
        _add(facts, "sysfs", f"{target}={value}")


def _script_commands(script: str, variables: dict[str, str], *,
                     without_redirections: bool = False) -> Iterator[list[str]]:
    """The words of each command of a `reproduce` script, its variables expanded (read as text,
    never executed). Leading assignments (`file=…/scaling_governor`) are remembered in
    `variables` for later words (`> "$file"`) and are not themselves commands; the caller may
    add to `variables` too (`export NAME=value`)."""
    for line in _logical_lines(script):
        for words in _commands(_REDIRECTION.sub("", line) if without_redirections else line):
            while words and _ASSIGNMENT.match(words[0]) and len(words[0].split("=", 1)[0]) < 64:
                name, value = words[0].split("=", 1)
                variables[name] = _expand(value, variables)
                words = words[1:]
            if words:
                yield [_expand(word, variables) for word in words]


def reproduce_facts(script: str) -> dict[str, str]:
    """Facts an LKP `reproduce` script states, read from its text (it is never executed).

    Keys, where the script says so: fs, mkfs_options, devices, wiped, mount_fs, mount_options,
    mount_points, dmsetup, ramdisk, md, modules, cpufreq_governor, sysctl, sysfs, environment,
    benchmark. Several values of one key are joined with "; " (devices, mount points: ", ").
    """
    facts: dict[str, list[str]] = {}
    variables: dict[str, str] = {}
    for words in _script_commands(script, variables):
        program = words[0].rsplit("/", 1)[-1] if words[0].startswith("/") else words[0]
        arguments = words[1:]
        if program in ("mkfs",) or program.startswith("mkfs."):
            _mkfs(words, facts)
        elif program == "mount":
            _mount(words, facts)
        elif program == "wipefs":
            for word in arguments:
                if word.startswith("/dev/"):
                    _add(facts, "wiped", word)
        elif program == "dmsetup" and arguments:
            _add(facts, "dmsetup", " ".join(arguments))
        elif program == "modprobe" and arguments and arguments[0] != "-r":
            module = next((word for word in arguments if not word.startswith("-")), None)
            if module is None:
                continue
            settings = [word for word in arguments if "=" in word]
            if module in ("brd", "null_blk", "scsi_debug"):
                _add(facts, "ramdisk", " ".join([module, *settings]))
            else:
                _add(facts, "modules", " ".join([module, *settings]))
        elif program == "mdadm" and ("--create" in arguments or "-C" in arguments):
            level = next((word.split("=", 1)[1] for word in arguments if word.startswith("--level=")), None)
            count = next((word.split("=", 1)[1] for word in arguments if word.startswith("--raid-devices=")),
                         None)
            chunk = next((word.split("=", 1)[1] for word in arguments if word.startswith("--chunk=")), None)
            device = next((word for word in arguments if word.startswith("/dev/md")), "an md device")
            text = f"{device} {level or 'raid'}"
            if count:
                text += f" of {count} devices"
            if chunk:
                text += f", chunk {chunk}"
            _add(facts, "md", text)
        elif program == "echo" and len(words) >= 3:
            for index, word in enumerate(words):
                if word in (">", ">>") and index + 1 < len(words):
                    _write(" ".join(item for item in words[1:index] if not item.startswith("-")),
                           words[index + 1], facts)
                    break
        elif program == "export":
            for word in arguments:
                if _ASSIGNMENT.match(word):
                    _add(facts, "environment", word)
                    name, value = word.split("=", 1)
                    variables[name] = value
        elif program == "sysctl":
            for word in arguments:
                if "=" in word and not word.startswith("-"):
                    _add(facts, "sysctl", word)
        if program in _BENCHMARKS or words[0] in _BENCHMARKS:
            _add(facts, "benchmark", program)
    joined = {"devices": ", ", "wiped": ", ", "mount_points": ", ", "environment": " "}
    return {key: joined.get(key, "; ").join(values) for key, values in facts.items() if values}


# Programs whose command line in a reproduce script a template may run, and the reproducer kind
# the planner reads it as (perf only as `perf bench`): the same allowlist as a pasted command.
SCRIPT_BENCHMARKS = {"fio": "fio", "sysbench": "sysbench", "fs_mark": "fs_mark", "stress-ng": "stress-ng",
                     "hackbench": "hackbench", "perf": "perf-bench"}
MAX_SCRIPT_COMMAND = 4000  # characters of one benchmark line kept
# A redirection standing as a word of its own (`2>&1`, `> log`, `>>out`): where output goes, not
# what the benchmark runs.
_REDIRECTION = re.compile(r"(?<!\S)\d?(?:>>|>|<)(?:&\d+|\s*[^\s|;&]+)")


def benchmark_commands(script: str) -> list[tuple[str, str]]:
    """(reproducer kind, command line) of each benchmark line of an LKP `reproduce` script, read
    from its text with its variables expanded (it is never executed); the planner reads each
    through the template allowlist, as a pasted command."""
    found: list[tuple[str, str]] = []
    for words in _script_commands(script, {}, without_redirections=True):
        program = words[0].rsplit("/", 1)[-1]
        kind = SCRIPT_BENCHMARKS.get(program)
        if kind is None or (kind == "perf-bench" and words[1:2] != ["bench"]):
            continue
        command = shlex.join([program, *words[1:]])
        if len(command) <= MAX_SCRIPT_COMMAND:
            found.append((kind, command))
    return found


# --- the planner's view -------------------------------------------------------------------------

def materials_link(report: Report) -> str | None:
    """The report's materials directory link: links.materials, else an lkp-materials reproducer."""
    if report.links.materials:
        return report.links.materials
    return next((item.url for item in report.reproducers if item.kind == "lkp-materials" and item.url), None)


def needs_materials(report: Report) -> bool:
    """True when the report links materials but carries no job.yaml text to plan from."""
    has_job = any(item.kind == "lkp-job" and item.content for item in report.reproducers)
    return materials_link(report) is not None and not has_job


def with_materials(report: Report, store, client: HttpClient, policy: HttpPolicy, *,
                   sleep: Sleeper = time.sleep, announce: Announce | None = None) -> tuple[Report, list[str]]:
    """The report with its materials' job.yaml as an lkp-job reproducer, and notes saying so.

    Unchanged (and no request made) when it links no materials or already carries a job.yaml.
    A directory that cannot be read leaves the report unchanged, with a note saying why: the
    planner then plans from the testcase and parameters the mail states.
    """
    link = materials_link(report)
    if link is None or not needs_materials(report):
        return report, []
    try:
        materials = fetch_materials(link, client, policy, store, sleep=sleep,
                                    attachment_names=[item.name for item in report.attachments],
                                    announce=announce)
    except SourceError as error:
        return report, [f"materials not fetched: {error}; planned from the report's own text"]
    notes = list(materials.events)
    if materials.reproduce is not None:
        facts = reproduce_facts(materials.reproduce)
        shown = ", ".join(f"{key}={value}" for key, value in facts.items())
        notes.append(f"reproduce script read, not run: {shown or 'no disk, filesystem or machine settings found'}")
    if materials.config is not None:
        notes.append(f"kernel config {materials.config_name}: {_size(len(materials.config))}")
    # The script's benchmark lines: what the planner falls back on where the LKP parameters plan nothing.
    script = tuple(Reproducer(kind=kind, command=command, url=f"{materials.url.rstrip('/')}/{REPRODUCE_FILE}")
                   for kind, command in benchmark_commands(materials.reproduce or ""))
    if materials.job_yaml is None:
        notes.append(f"{materials.url} has no {JOB_FILE}: planned from the report's text")
        return (dataclasses.replace(report, reproducers=(*report.reproducers, *script)) if script else report), notes
    job = Reproducer(kind="lkp-job", url=materials.job_url, content=materials.job_yaml)
    notes.append(f"planning from {materials.job_url}")
    return dataclasses.replace(report, reproducers=(*report.reproducers, *script, job)), notes


def quick_policy(policy: HttpPolicy) -> HttpPolicy:
    """`policy` for a command someone waits on: one attempt, a short connect and read timeout."""
    return dataclasses.replace(policy, attempts=QUICK_ATTEMPTS,
                               timeout_seconds=min(policy.timeout_seconds, QUICK_TIMEOUT_SECONDS))


def with_materials_over_http(report: Report, store, policy: HttpPolicy, *,
                             announce: Announce | None = None) -> tuple[Report, list[str]]:
    """`with_materials` over a requests client with the HTTP manners `policy` (rules/sources.toml).

    No request when the report needs no materials; `announce` is told each file before its GET.
    """
    if not needs_materials(report):
        return report, []
    from triagebot.http_client.client import RequestsClient

    client = RequestsClient(policy)
    try:
        return with_materials(report, store, client, policy, announce=announce)
    finally:
        client.close()
