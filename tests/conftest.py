"""Shared test helpers: the corpus location and the --update-golden flag."""
from __future__ import annotations

from pathlib import Path

import pytest

# the real servers as fixtures (smtp, fake_slack, sshd, lab_world, public_inbox): tests/support/fixtures.py
pytest_plugins = ("tests.support.fixtures",)

PROJECT = Path(__file__).resolve().parent.parent
SHARED = PROJECT.parent / "shared"
CORPUS = SHARED / "corpus" / "messages"
FIXTURES = PROJECT / "fixtures"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true",
                     help="rewrite golden .expected.json files from the parser's output")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


def require_corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"the shared corpus is absent: {CORPUS} not found (tests read it from ../shared)")
    return CORPUS


# -- the store on both backends (tests/support/postgres.py) -----------------------------------

@pytest.fixture(scope="session")
def postgres_server():
    """One real PostgreSQL server for the session, on a Unix socket in a temporary directory."""
    from tests.support.postgres import start_server

    server = start_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def stores(request: pytest.FixtureRequest, tmp_path: Path):
    """Stores of one backend by name; a test taking it runs once on SQLite, once on PostgreSQL."""
    from tests.support.postgres import Stores

    server = request.getfixturevalue("postgres_server") if request.param == "postgresql" else None
    return Stores(request.param, tmp_path, server)


# -- the order tests start in ----------------------------------------------------------------

# The files whose tests take minutes (a daemon bisecting, twenty worker kills, real lkp-tests and
# kernel runs): started first, so that under `pytest -n 4` (.ci/run) they run beside the many
# short tests instead of after them, and the suite ends when its longest test does.
LONG_FIRST = ("test_kernels_real.py", "test_worker_kills.py", "test_lkp_run.py", "test_bisect_daemon.py",
              "test_after_verdict_postgres.py", "test_bisect_lab.py", "test_daemon.py", "test_lab_parallel.py",
              "test_fix_daemon.py", "test_fix_lab.py", "test_rerun_ssh.py", "test_slack_lab.py")


def pytest_collection_finish(session: pytest.Session) -> None:
    """Under `--dist loadgroup` every test of an xdist_group must carry its group in its id, or
    pytest-xdist sends the group's tests to several processes at once (they share one machine-wide
    resource: /lkp/result, the kernels' cache): a pytest and pytest-xdist that do not agree on
    where an id lives (pytest 9 with xdist 3.8) fail here, at once, rather than flakily later."""
    if not getattr(session.config.option, "loadgroup", False):  # set in each xdist worker
        return
    ungrouped = [item.nodeid for item in session.items
                 if item.get_closest_marker("xdist_group") is not None and "@" not in item.nodeid]
    if ungrouped:
        raise pytest.UsageError(f"--dist loadgroup did not group {len(ungrouped)} tests (e.g. {ungrouped[0]}): "
                                "this pytest-xdist cannot mark ids under this pytest; install pytest<9")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: index for index, name in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order
