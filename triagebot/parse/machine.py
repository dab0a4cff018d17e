"""Parse stage: what a person's report states of its machine beyond a server CPU's model line.

prose.hardware reads the machine a sentence describes by its CPU model ("dual Xeon Silver 4314",
"AMD EPYC 7002 with 2TB RAM") or its CPU count and memory. People who report from boards,
laptops and appliances name the system-on-chip or a mobile part instead, and a socket count
without a model. The forms, each seen in several reports of fixtures/labels/dev5 (issue 24,
round three; `dev5:N` is line N of its reports.jsonl):

- an SoC by its family's name: "Tegra20 and Tegra30" (dev5:4), "Tegra X1 SoC" (dev5:29),
  "Rockchip 3399-based" (dev5:6), "Octeon 70XX based boards" (dev5:14), "our AM62 devices"
  (dev5:21), "VUART on AST2500" (dev5:27), "an Amlogic S905X2 board" (dev5:55), "an OMAP 4430"
  (dev5:56): linux-tegra, linux-crypto, linux-mmc, linux-mips, openbmc, linux-omap;
- a mobile or embedded Intel part by its number: "the Intel T4500 laptop" (dev5:20);
- a socket count with no model beside it: "a two-socket 12-core x86_64 system" (dev5:2).

A Wi-Fi or Bluetooth chip (BCM4329, MT7925, AX200) is the device under test, not the machine, and
is not read. Pure: text in, a TestMachine or None out.
"""
from __future__ import annotations

import re

from triagebot.records.report import TestMachine

# Cheap literal gate: most mail names none of these.
_GATE = ("Tegra", "Rockchip", "RK3", "Octeon", "AM", "AST2", "Amlogic", "OMAP", "Exynos", "Snapdragon", "i.MX",
         "Allwinner", "Intel ", "socket")
_SOC = re.compile(
    r"\b(Tegra\s?(?:\d{2,3}|X\d|K1)"
    r"|Rockchip\s+(?:RK\s?)?\d{4}|RK3\d{3}"
    r"|Octeon(?:\s+(?:II|III|TX2?))?\s+(?:CN)?\d{2}[\dX]{2}"
    # TI's Sitara parts only where the text says they are the board's: "AM62 devices", "AM654 SoC"
    r"|AM\d{2,3}[\dx]?(?=\s+(?:SoC|devices?|boards?|based|EVM|processors?)\b)"
    r"|AST2[456]00"
    r"|Amlogic\s+[AST]\d{3}\w*|OMAP\s?\d{4}|Exynos\s?\d{4}|Snapdragon\s+\d{3}|i\.MX\s?\d\w*|Allwinner\s+[AHR]\d{1,3}"
    r"|Intel\s+(?:Pentium\s+|Celeron\s+|Atom\s+)?[TNJ]\d{4}[A-Z]?)\b")
_SOCKETS = re.compile(r"\b(single|one|dual|two|quad|four|eight|[1-8])[- ]sockets?\b", re.IGNORECASE)
_SOCKET_WORDS = {"single": 1, "one": 1, "dual": 2, "two": 2, "quad": 4, "four": 4, "eight": 8}
WINDOW = 20000  # characters of the writer's text where the machine is stated


def stated_machine(text: str, found: TestMachine | None) -> TestMachine | None:
    """`found` (prose.hardware's answer) completed with an SoC or mobile part as its CPU model and
    a socket count, where it lacks them; None when neither states anything."""
    if found is not None and found.cpu_model and found.sockets:
        return found
    if not any(literal in text for literal in _GATE):
        return found
    window = text[:WINDOW]
    cpu_model = found.cpu_model if found is not None else None
    description = found.description if found is not None else None
    if cpu_model is None:
        soc = _SOC.search(window)
        if soc is not None:
            cpu_model = " ".join(soc.group(1).split())
            description = description or _line_of(window, soc.start())
    sockets = found.sockets if found is not None else None
    if sockets is None:
        counted = _SOCKETS.search(window)
        if counted is not None:
            word = counted.group(1).lower()
            sockets = int(word) if word.isdigit() else _SOCKET_WORDS[word]
            description = description or _line_of(window, counted.start())
    if description is None:
        return found
    if found is None:
        return TestMachine(description=description, cpu_model=cpu_model, sockets=sockets)
    return TestMachine(description=found.description, threads=found.threads, sockets=sockets, cpu_model=cpu_model,
                       microarch=found.microarch, memory_gb=found.memory_gb, tbox_group=found.tbox_group)


def _line_of(text: str, at: int) -> str:
    """The line holding position `at`, spaces collapsed: the description of what was read."""
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return " ".join(text[start:end if end >= 0 else len(text)].split())[:200]
