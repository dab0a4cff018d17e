"""The machine a person's report describes (issue 16): other vendors' CPUs, server product names,
"12 cpu's", "128gib of RAM", and the machine's clauses as its description, not the whole sentence."""
from __future__ import annotations

import pytest

from triagebot.parse.prose import hardware


@pytest.mark.parametrize(("text", "cpu_model", "threads", "memory_gb"), [
    ("The box has 12 cpu's and 128gib of RAM.", None, 12, 128),
    ("CPU's are four Intel Xeon Platinum 8268 and server is a Dell Poweredge R940. The system has 1.5TiB memory.",
     "Intel Xeon Platinum 8268", None, 1536),
    ("Tested on a Kunpeng 920 server with 96 cores and 256 GB of RAM.", "Kunpeng 920", 96, 256),
    ("It is an Ampere Altra Max box (128 threads), 512 GB of RAM.", "Ampere Altra Max", 128, 512),
    ("Host: an IBM POWER9 machine with 64 threads and 128 GB of memory.", "POWER9", 64, 128),
    ("server's total dram 192GB", None, None, 192),
    ("This test was done with 4GB of RAM, so little cache is involved.", None, None, 4),
])
def test_machine_facts(text: str, cpu_model: str | None, threads: int | None, memory_gb: int | None) -> None:
    machine = hardware(text)
    assert machine is not None
    assert (machine.cpu_model, machine.threads, machine.memory_gb) == (cpu_model, threads, memory_gb)


def test_a_pasted_inxi_dump_is_read_line_by_line() -> None:
    dump = ("Machine:\n  Type: Desktop Mobo: ASUSTeK model: TUF GAMING X570-PLUS\n"
            + "  Speed (MHz): avg: 2666 min/max: 2200/4672 cores: 1: 3800 2: 2200 3: 2200\n" * 6
            + "CPU:\n  Info: 12-core model: AMD Ryzen 9 3900X bits: 64 type: MT MCP cache: L2: 6 MiB\n")
    machine = hardware(dump)
    assert machine is not None and machine.cpu_model == "AMD Ryzen 9 3900X"
    assert len(machine.description) < 120


def test_the_description_is_the_machine_not_the_sentence() -> None:
    machine = hardware("On a system with 64 virtual CPUs and 256 GiB of RAM, I am observing a significant drop.")
    assert machine is not None and machine.description == "On a system with 64 virtual CPUs and 256 GiB of RAM"
    kept = hardware("I'm not seeing this on my i7-12700K (64 GB DDR4, Samsung 980 Pro), nor on the laptop.")
    assert kept is not None and kept.description == "I'm not seeing this on my i7-12700K (64 GB DDR4, Samsung 980 Pro)"
