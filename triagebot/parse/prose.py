"""Parse stage: facts stated in prose: kernel config options, hardware, numbers (rules).

What a reply says of reproducing is read by stance.py (spaCy), not here.
"""
from __future__ import annotations

import re

from triagebot.records import ProseNumber, TestMachine

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")

# An option stated anywhere in a line ("Config has CONFIG_PREEMPT=y"), but not a removed
# diff line ("-CONFIG_XFS_DEBUG=y"), which says the option is gone.
_CONFIG = re.compile(r"^(?![ \t]*-)[^\n]*?(?<![\w-])(CONFIG_[A-Z0-9_]+)=(\"[^\"\n]*\"|[^\s,;]+)", re.MULTILINE)
_CONFIG_UNSET = re.compile(r"^[ \t+]*# (CONFIG_[A-Z0-9_]+) is not set", re.MULTILINE)

# Thread counts, most explicit first: "32 threads" beats "16 cores" in "16 cores / 32 threads".
_THREAD_COUNTS = (
    re.compile(r"\b(\d+)\s*(?:hardware\s+|logical\s+)?threads\b"),
    re.compile(r"\b(\d+)\s*(?:virtual\s+|logical\s+)?(?:CPUs|cpus|vCPUs|vcpus)\b"),
    re.compile(r"\b(\d+)\s*(?:physical\s+)?cores\b"),
)
_MEMORY_WORD = re.compile(r"\b(\d+)\s*(?:GiB|GB|G)\s+(?:of\s+)?(?:RAM|memory|DRAM|ram|(?:LP)?DDR\d)\b",
                          re.IGNORECASE)
_SOCKET_WORDS = {"single": 1, "one": 1, "dual": 2, "two": 2, "quad": 4, "four": 4}
_SOCKETS = re.compile(r"\b(single|one|dual|two|quad|four|\d)[- ]sockets?\b|\b(\d) sockets\b|"
                      r"\b(2|4)\s*x\s+(?=Xeon|EPYC|AMD|Intel)|\b(two|four) (?=(?:Intel\s+)?(?:Xeon|EPYC|AMD))",
                      re.IGNORECASE)
_CPU_MODEL = re.compile(
    r"((?:Intel(?:\(R\))?\s+)?(?:Xeon(?:\(R\))?|Core(?:\(TM\))?)\s*[\w()@.\s-]{0,40}?\d{3,5}\w*"
    r"|(?:AMD\s+)?(?:EPYC|Ryzen)\s+[\w\s-]{0,30}?\d{3,5}\w*|\bi[3579]-\d{4,5}\w*|Graviton\d?|Ampere\s+\w+)"
)

_NUMBER_UNIT = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?)(?:\s*(?:-|–|to)\s*(\d+(?:\.\d+)?))?\s*"
    r"(MB/s|MiB/s|GB/s|GiB/s|KB/s|KiB/s|kB/s|IOPS|iops|kIOPS|ops/s(?:ec)?|files/sec|"
    r"msec|ms|usec|us|µs|seconds|secs|s\b|%)"
)


def sentences(text: str) -> list[str]:
    """Rough sentence split of prose, wrapped lines joined."""
    return [" ".join(part.split()) for part in _SENTENCE_END.split(text) if part.strip()]


def kernel_config(text: str) -> dict[str, str]:
    """`CONFIG_*` options stated in the text; `# CONFIG_X is not set` is `n`."""
    options: dict[str, str] = {}
    if "CONFIG_" not in text:
        return options
    for line_match in _CONFIG_UNSET.finditer(text):
        options[line_match.group(1)] = "n"
    for match in _CONFIG.finditer(text):
        options[match.group(1)] = match.group(2).rstrip(".,;")
    return options


def _thread_count(sentence: str, model_span: tuple[int, int] | None) -> int | None:
    for pattern in _THREAD_COUNTS:
        for match in pattern.finditer(sentence):
            # "Xeon Silver 4314 CPUs": the number belongs to the model name, not a count
            if model_span and model_span[0] <= match.start(1) < model_span[1]:
                continue
            return int(match.group(1))
    return None


def _socket_count(sentence: str) -> int | None:
    match = _SOCKETS.search(sentence)
    if not match:
        return None
    word = next(group for group in match.groups() if group)
    return int(word) if word.isdigit() else _SOCKET_WORDS[word.lower()]


def hardware(text: str) -> TestMachine | None:
    """A test machine described in prose ("64 virtual CPUs and 256 GiB of RAM")."""
    best: str | None = None
    for sentence in sentences(text)[:200]:
        if len(sentence) > 400:
            continue
        has_cpu = _CPU_MODEL.search(sentence)
        if has_cpu or (_thread_count(sentence, None) and _MEMORY_WORD.search(sentence)):
            best = sentence
            break
    if best is None:
        return None
    memory = _MEMORY_WORD.search(best)
    cpu = _CPU_MODEL.search(best)
    return TestMachine(
        description=best,
        threads=_thread_count(best, cpu.span(1) if cpu else None),
        sockets=_socket_count(best),
        cpu_model=" ".join(cpu.group(1).split()) if cpu else None,
        memory_gb=int(memory.group(1)) if memory else None,
    )


def numbers(text: str, *, quoted: bool = False, limit: int = 50) -> list[ProseNumber]:
    """Values with units stated in prose: "510 MB/s", "5-10% increase"."""
    found: list[ProseNumber] = []
    for match in _NUMBER_UNIT.finditer(text):
        unit = match.group(3)
        if unit == "s" and not match.group(0).rstrip().endswith("s"):
            continue
        found.append(ProseNumber(text=match.group(0).strip(), value=float(match.group(1)),
                                 unit=unit, quoted=quoted))
        if len(found) >= limit:
            break
    return found
