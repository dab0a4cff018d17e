"""What a person's report states of its machine beyond a server CPU line (issue 24, round three):
a system-on-chip by its family's name, a mobile part, a socket count (parse/machine.py). The
sentences are written for the test in the forms fixtures/labels/dev5 shows."""
from __future__ import annotations

import pytest

from triagebot.parse.machine import stated_machine
from triagebot.parse.prose import hardware
from triagebot.records import report as records


def _machine(text: str) -> records.TestMachine | None:
    return stated_machine(text, hardware(text))


@pytest.mark.parametrize(("text", "cpu_model"), [
    ("The GPU test is slow on my Tegra30 tablet since 6.1.", "Tegra30"),
    ("Seen on a Rockchip 3588-based board after the update.", "Rockchip 3588"),
    ("After moving some Octeon 71XX based boards to 6.1 it got slow.", "Octeon 71XX"),
    ("We measure boot time on our AM64 devices with each release.", "AM64"),
    ("The console on AST2600 became slow with 6.6.", "AST2600"),
    ("On the Intel N5105 mini PC the copy is slower.", "Intel N5105"),
])
def test_a_system_on_chip_or_mobile_part_is_the_cpu_model(text: str, cpu_model: str) -> None:
    machine = _machine(text)
    assert machine is not None and machine.cpu_model == cpu_model


def test_a_socket_count_with_no_model() -> None:
    machine = _machine("My client is a two-socket 16-core x86_64 system running 6.2.")
    assert machine is not None and machine.sockets == 2 and machine.cpu_model is None


def test_a_wifi_chip_or_a_driver_name_is_no_machine() -> None:
    assert _machine("The MT7925 card halved its speed with 6.13.2; the BCM4329 chip too.") is None
    assert _machine("The AM654 driver waits 1.5 seconds at boot.") is None


def test_a_server_cpu_line_keeps_its_model_and_gains_no_soc() -> None:
    machine = _machine("The box has two Intel Xeon E5-2690 v4 CPUs and 128 GB of RAM.")
    assert machine is not None and machine.cpu_model == "Intel Xeon E5-2690 v4" and machine.memory_gb == 128
