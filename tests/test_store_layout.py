"""Store stage: one `Store` protocol covers the whole store; SQLite's backend is made of parts."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

from triagebot.store import lifecycle_protocol, protocol
from triagebot.store.protocol import Store
from triagebot.store.sql import SqlStore
from triagebot.store.sqlite import SqliteStore

STORE = Path(protocol.__file__).parent


def protocol_members(cls: type) -> set[str]:
    return {name for klass in cls.__mro__ if klass.__module__ in (protocol.__name__, lifecycle_protocol.__name__)
            for name in vars(klass) if not name.startswith("_")}


def test_the_protocol_covers_every_public_method_of_the_sqlite_store(tmp_path: Path) -> None:
    public = {name for name, _ in inspect.getmembers(SqliteStore) if not name.startswith("_")}
    # what a caller can do with the SQLite store, it can do with any `Store`
    assert public - protocol_members(Store) == set()
    with SqliteStore(tmp_path / "t.db") as store:
        assert isinstance(store, Store)
        assert protocol_members(Store) - set(dir(store)) == set()


def test_the_sqlite_store_is_composed_not_mixed_in() -> None:
    # the backend only opens its connection; the store is the parts composed over it
    assert SqliteStore.__mro__ == (SqliteStore, SqlStore, object)
    assert SqlStore.__mro__ == (SqlStore, object)


def imports_of(path: Path) -> set[str]:
    """Every triagebot.store module `path` imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("triagebot.store."):
            found.add((node.module or "").removeprefix("triagebot.store."))
        elif isinstance(node, ast.Import):
            found.update(alias.name.removeprefix("triagebot.store.") for alias in node.names
                         if alias.name.startswith("triagebot.store."))
    return found


def test_store_modules_import_no_cycle_and_the_protocol_no_implementation() -> None:
    graph = {path.stem: imports_of(path) for path in STORE.glob("*.py")}
    assert graph["protocol"] <= {"lifecycle_protocol"}  # the contract names no backend
    assert graph["lifecycle_protocol"] == set()

    def visit(module: str, path: tuple[str, ...]) -> None:
        assert module not in path, f"import cycle: {' -> '.join(path + (module,))}"
        for imported in graph.get(module, ()):
            visit(imported, path + (module,))

    for module in graph:
        visit(module, ())
