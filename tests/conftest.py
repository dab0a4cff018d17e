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
