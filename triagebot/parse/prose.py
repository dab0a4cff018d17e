"""Parse stage: facts stated in prose: kernel config options, hardware, numbers (rules).

What a reply says of reproducing is read by stance.py (spaCy), not here.
"""
from __future__ import annotations

import re

from triagebot.records.report import ProseNumber, TestMachine

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")

# An option stated anywhere in a line ("Config has CONFIG_PREEMPT=y"), but not a removed
# diff line ("-CONFIG_XFS_DEBUG=y"), which says the option is gone.
_CONFIG = re.compile(r"^(?![ \t]*-)[^\n]*?(?<![\w-])(CONFIG_[A-Z0-9_]+)=(\"[^\"\n]*\"|[^\s,;]+)", re.MULTILINE)
_CONFIG_UNSET = re.compile(r"^[ \t+]*# (CONFIG_[A-Z0-9_]+) is not set", re.MULTILINE)

# Thread counts, most explicit first: "32 threads" beats "16 cores" in "16 cores / 32 threads".
# "12 cpu's" is how some write it; "a 12-core model" counts cores.
_THREAD_COUNTS = (
    re.compile(r"\b(\d+)\s*(?:hardware\s+|logical\s+)?threads\b"),
    re.compile(r"\b(\d+)\s*(?:virtual\s+|logical\s+)?(?:CPUs|cpus|CPU's|cpu's|vCPUs|vcpus)(?!\w)"),
    re.compile(r"\b(\d+)(?:\s*(?:physical\s+)?cores\b|-core\b)"),
)
# "256 GiB of RAM", "128gib of RAM", "1.5TiB memory"; and the other way round, "total dram 192GB".
_MEMORY_WORD = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(GiB|GB|G|TiB|TB)\s+(?:of\s+)?"
                          r"(?:RAM|memory|DRAM|ram|(?:LP)?DDR\d)\b"
                          r"|\b(?:RAM|memory|DRAM)\s+(?:of\s+|is\s+|size\s+)?(\d+(?:\.\d+)?)\s*(GiB|GB|G|TiB|TB)\b",
                          re.IGNORECASE)
# A server or instance named by product: it says which machine, though no field holds it.
_PRODUCT = re.compile(r"\b(?:Dell\s+Power[Ee]dge\s+[A-Z]{0,2}\d+\w*|HPE?\s+ProLiant\s+\w+(?:\s+Gen\d+)?|"
                      r"Lenovo\s+ThinkSystem\s+\w+|Supermicro\s+[\w-]+|Think[Pp]ad\s+\w+|"
                      r"[a-z]\d[a-z]{0,3}\.\d*x?large)\b", re.IGNORECASE)
_PRODUCT_LITERALS = ("owerEdge", "oweredge", "ProLiant", "hinkSystem", "upermicro", "hinkpad", "hinkPad", "large")
# What else of a machine a clause may state: its disk, a VM's size.
_MACHINE_PART = re.compile(r"\b(?:NVMe|SSD|HDD|disk|drive|-smp|-m\s+\d+G|sockets?)\b", re.IGNORECASE)
_CLAUSE_BREAK = re.compile(r";\s+|,\s+|:\s+(?=[A-Z0-9a-z])")
_SOCKET_WORDS = {"single": 1, "one": 1, "dual": 2, "two": 2, "quad": 4, "four": 4}
_SOCKETS = re.compile(r"\b(single|one|dual|two|quad|four|\d)[- ]sockets?\b|\b(\d) sockets\b|"
                      r"\b(2|4)\s*x\s+(?=Xeon|EPYC|AMD|Intel)"
                      r"|\b(two|four|dual|quad) (?=(?:Intel\s+)?(?:Xeon|EPYC|AMD))",
                      re.IGNORECASE)
# A CPU count said of the machine with no model or memory beside it: "96 CPUs with NUMA disabled",
# "a box with 48 CPUs" (issue 24: machine lines of people's reports).
_CPUS_OF_MACHINE = re.compile(r"\bNUMA\b|\bSMT\b|hyper-?thread|\b(?:machine|server|box|host|system)\s+(?:has|with)\b",
                              re.IGNORECASE)
_CPU_MODEL = re.compile(
    r"((?:Intel(?:\(R\))?\s+)?(?:Xeon(?:\(R\))?|Core(?:\(TM\))?)\s*[\w()@.\s-]{0,40}?\d{3,5}\w*(?:\s+v\d\b)?"
    r"|(?:AMD\s+)?(?:EPYC|Ryzen|Opteron|Threadripper(?:\s+PRO)?)\s+[\w\s-]{0,30}?\d{3,5}\w*"
    r"|\bi[3579]-\d{4,5}\w*|Graviton\d?|Ampere\s+Altra(?:\s+Max)?|Ampere\s+\w+"
    # other vendors' server parts: Huawei, Arm, IBM, Cavium/Marvell, Hygon, Apple
    r"|Kunpeng\s*\d{3,4}\w*|Neoverse[- ][NV]\d\w*|Cortex-A\d{2,3}\w*|\bPOWER(?:8|9|10)\b|ThunderX\d?"
    r"|Hygon\s+[A-Z]?\d{4}\w*|Apple\s+M\d(?:\s+(?:Pro|Max|Ultra))?)"
)
# Every alternative of _CPU_MODEL holds one of these: a text naming none has no CPU model, and its
# ~200 candidate sentences are not searched one by one (tests/test_parse_speed_gates.py checks).
CPU_MODEL_LITERALS = ("Xeon", "Core", "EPYC", "Ryzen", "Opteron", "Threadripper", "i3-", "i5-", "i7-", "i9-",
                      "Graviton", "Ampere", "Kunpeng", "Neoverse", "Cortex-A", "POWER", "ThunderX", "Hygon", "Apple")

# A count's scale before IOPS, glued or not, and a rate of a scaled count per second (issue 38):
# "~120K IOPS" (dev6 replies 107), "840K IOPS" (dev6:7), "12.2 k iops" (dev6:9), "288k IOPS …
# 234k IOPS" (linux-ext4 2024), "3.0M IOPS" (the issue); "13.070 ± 0.158M/s" (dev7:13), "~500M/s"
# (dev7:40), "60G/s" (the issue). The value keeps the count's scale (3.0M IOPS is 3,000,000 IOPS);
# a bare "M/s" is a rate of a count the writer did not name, kept as written.
_NUMBER_UNIT = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?)(?:\s*(?:-|–|to)\s*(\d+(?:\.\d+)?))?\s*"
    r"(?P<scale>[kKMG](?=\s?(?:IOPS|iops|IOPs)\b)\s?)?"
    r"(?P<unit>MB/s|MiB/s|GB/s|GiB/s|KB/s|KiB/s|kB/s|IOPS|iops|IOPs|kIOPS|ops/s(?:ec)?|files/sec|[KMG]/s\b|"
    r"msec|ms|usec|us|µs|seconds|secs|s\b|%)"
)
_SCALE = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}

# The same scan started from a digit (a character class the scan skips to fast), the character
# before it checked after; a pattern whose first test is a look-behind is tried at every position.
_NUMBER_START = r"(?<![\w.])(\d+"
_NUMBER_UNIT_FROM_DIGIT = (re.compile(r"(\d(?<![\w.]\d)\d*" + _NUMBER_UNIT.pattern.removeprefix(_NUMBER_START),
                                      _NUMBER_UNIT.flags)
                           if _NUMBER_UNIT.pattern.startswith(_NUMBER_START) else _NUMBER_UNIT)


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


NEAR_SENTENCES = 2  # sentences either side of the machine's where its memory may be stated


def hardware(text: str) -> TestMachine | None:
    """A test machine described in prose ("64 virtual CPUs and 256 GiB of RAM"); the description
    is the clauses of its sentence that state the machine, not the whole sentence."""
    best: str | None = None
    memory_only: str | None = None
    candidates = _hardware_candidates(text)
    products = any(literal in text for literal in _PRODUCT_LITERALS)  # most mail names none
    models = any(literal in text for literal in CPU_MODEL_LITERALS)
    at = 0
    for number, sentence in enumerate(candidates):
        has_cpu = models and _CPU_MODEL.search(sentence)
        memory = _names_memory(sentence) and _MEMORY_WORD.search(sentence)  # a literal first: cheap
        if has_cpu or (memory and _thread_count(sentence, None)) or (products and _PRODUCT.search(sentence)) \
                or (("CPU" in sentence or "cpu" in sentence) and _CPUS_OF_MACHINE.search(sentence)
                    and _THREAD_COUNTS[1].search(sentence)):
            best, at = sentence, number
            break
        if memory_only is None and memory:
            memory_only = sentence  # "This test was done with 4GB of RAM": the memory alone
    chosen = best if best is not None else memory_only
    if chosen is None:
        return None
    memory = _MEMORY_WORD.search(chosen) or None
    if memory is None and best is not None:
        # "The system has 1.5TiB memory … CPU's are four Intel Xeon Platinum 8268": the next sentence
        # or two about the same machine
        memory = next((found for near in candidates[max(0, at - NEAR_SENTENCES):at + NEAR_SENTENCES + 1]
                       if (found := _MEMORY_WORD.search(near))), None)
    cpu = _CPU_MODEL.search(chosen)
    return TestMachine(
        description=_machine_clauses(chosen),
        threads=_thread_count(chosen, cpu.span(1) if cpu else None) if best is not None else None,
        sockets=_socket_count(chosen),
        cpu_model=" ".join(cpu.group(1).split()) if cpu else None,
        memory_gb=_memory_gb(memory) if memory else None,
    )


def _hardware_candidates(text: str) -> list[str]:
    """Sentences, a long one (a pasted `inxi` or `lscpu` dump has no full stops) as its lines."""
    found: list[str] = []
    for part in _SENTENCE_END.split(text)[:400]:
        if not part.strip():
            continue
        joined = " ".join(part.split())
        if len(joined) <= 400:
            found.append(joined)
        elif any(literal in part for literal in _DUMP_LITERALS):
            found.extend(" ".join(line.split()) for line in part.split("\n") if line.strip() and len(line) <= 400)
        if len(found) >= 200:
            break
    return found[:200]


_DUMP_LITERALS = ("CPU", "cpu", "model", "Model", "Xeon", "EPYC", "Ryzen")  # an inxi or lscpu dump names one
_MEMORY_LITERALS = ("RAM", "ram", "emory", "EMORY", "DDR")


def _names_memory(sentence: str) -> bool:
    return any(literal in sentence for literal in _MEMORY_LITERALS)


def _memory_gb(match: re.Match[str]) -> int:
    amount, unit = (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
    return int(round(float(amount) * (1024 if unit.lower().startswith("t") else 1)))


def _clauses(sentence: str) -> list[str]:
    """The sentence cut at "; ", ", " and ": ", but not inside parentheses ("(64 GB DDR4, …)")."""
    clauses: list[str] = []
    start = 0
    for brk in _CLAUSE_BREAK.finditer(sentence):
        inside = sentence.count("(", start, brk.start()) - sentence.count(")", start, brk.start())
        if inside > 0:
            continue
        clauses.append(sentence[start:brk.start()])
        start = brk.end()
    clauses.append(sentence[start:])
    return clauses


def _machine_clauses(sentence: str) -> str:
    """The clauses from the first to the last that states a machine fact."""
    clauses = _clauses(sentence)
    facts = [index for index, clause in enumerate(clauses)
             if _CPU_MODEL.search(clause) or _MEMORY_WORD.search(clause) or _PRODUCT.search(clause)
             or _thread_count(clause, None) is not None or _MACHINE_PART.search(clause)]
    if not facts:
        return sentence
    kept = [clause.strip() for clause in clauses[facts[0]:facts[-1] + 1]]
    return ", ".join(kept).rstrip(".,;:")


def numbers(text: str, *, quoted: bool = False, limit: int = 50) -> list[ProseNumber]:
    """Values with units stated in prose: "510 MB/s", "5-10% increase"."""
    found: list[ProseNumber] = []
    for match in _NUMBER_UNIT_FROM_DIGIT.finditer(text):
        unit = match.group("unit")
        if unit == "s" and not match.group(0).rstrip().endswith("s"):
            continue
        scale = _SCALE[match.group("scale").strip()] if match.group("scale") else 1.0
        found.append(ProseNumber(text=match.group(0).strip(), value=float(match.group(1)) * scale,
                                 unit=unit, quoted=quoted))
        if len(found) >= limit:
            break
    return found
