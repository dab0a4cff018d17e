"""Reproduce stage: the kernel config a report gives, for a host whose switcher builds kernels.

An LKP report links its materials directory, whose config-<version> is the config the robot built
with: fetched like the job file (triagebot.reproduce.materials: once, then from the store). A
person's report may name CONFIG_ lines in its text (`kernel_config` of the parse): those are
merged over whatever config the build starts from. A fetched file that is no kernel config (an
HTML error page) is set aside with a note, and the switcher's own config is used.
"""
from __future__ import annotations

from collections.abc import Callable

from triagebot.http_client.protocol import HttpClient, HttpPolicy, SourceError
from triagebot.kernels.config import ConfigError, KernelConfig, options_of
from triagebot.records.report import Report
from triagebot.reproduce.materials import fetch_materials, materials_link, quick_policy


def report_kernel_config(report: Report, store, client: HttpClient, policy: HttpPolicy
                         ) -> tuple[KernelConfig | None, tuple[tuple[str, str], ...], list[str]]:
    """(the report's whole config or None, the CONFIG_ lines its mail names, notes)."""
    options = tuple((name, value) for name, value in report.kernel_config if name.startswith("CONFIG_"))
    link = materials_link(report)
    if link is None:
        return None, options, []
    try:
        materials = fetch_materials(link, client, policy, store,
                                    attachment_names=[item.name for item in report.attachments])
    except SourceError as error:
        return None, options, [f"the report's kernel config not fetched: {error}"]
    if materials.config is None or materials.config_name is None:
        return None, options, [f"{materials.url} has no kernel config: the switcher's own config is used"]
    try:
        options_of(materials.config)
    except ConfigError as error:
        return None, options, [f"{materials.config_name} is no kernel config ({error}): the switcher's own is used"]
    origin = f"the report's {materials.config_name} (LKP materials)"
    return KernelConfig("file", origin, materials.config), options, [f"kernel config: {origin}"]


def report_kernel_config_over_http(report: Report, store, policy: HttpPolicy,
                                   announce: Callable[[str], None] = lambda line: None
                                   ) -> tuple[KernelConfig | None, tuple[tuple[str, str], ...]]:
    """`report_kernel_config` over a requests client (one quick attempt: the store has it after
    the plan's fetch); each note told to `announce`."""
    if materials_link(report) is None:
        config, options, notes = report_kernel_config(report, store, _NoClient(), policy)
    else:
        from triagebot.http_client.client import RequestsClient

        client = RequestsClient(quick_policy(policy))
        try:
            config, options, notes = report_kernel_config(report, store, client, quick_policy(policy))
        finally:
            client.close()
    for note in notes:
        announce(note)
    return config, options


class _NoClient:
    """No materials link: nothing is asked."""

    def get(self, url: str, **kwargs):  # pragma: no cover - never called without a link
        raise SourceError(f"no HTTP client for {url}")
