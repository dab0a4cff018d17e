"""The import graph of triagebot: no cycles, no import that runs back up a floor, and no stage
module depends on a command module.

Every module is read with `ast` (imports inside functions count too: a cycle hidden in a function
is still a cycle), nothing is imported.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "triagebot"
STAGES = ("ingest", "parse", "store", "reproduce", "verdict", "notify", "rules")
CORE = ("triagebot.daemon.loop", "triagebot.daemon.flow")
# The house's floors, lowest first: a module imports only from its own package or from a lower
# floor (two packages on one floor do not import each other). The package root holds what every
# stage shares; the command line is the top.
FLOORS = (
    ("errors", "backoff", "logs", "untrusted"),  # the root's modules, and what makes mail safe
    ("records", "reference"),  # the records that cross stages; reference tables (units, CPUs)
    ("http_client",),  # the bounded HTTP client ingest and reproduce share
    ("rules",),
    ("verdict",),
    ("parse",),
    ("store",),
    ("ingest",),
    ("present",),  # a stored report as lines, pages or blocks
    ("notify",),
    ("kernels",),  # kernel builds: a kernel tree's clone, builds cached by commit and config, guest boots
    ("reproduce",),
    ("lab",),  # the lab's queue and context, shared by reruns, bisections and fix tests
    ("lifecycle",),
    ("bisect", "fix_test"),
    ("reply",),
    ("actions",),
    ("web",),
    ("daemon",),
    ("cli",),
)
ROOT_MODULES_AT_MOST = 5  # __init__.py and the shared modules of the first floor


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The triagebot modules `name` imports, anywhere in its body (`from a import b` counts a.b
    when b is a module, else a)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                       for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # `import a.b.c` of a name inside a module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports_of(name, path, known) for name, path in found.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return [_cycle_in(component, edges) for component in components]


def _cycle_in(component: list[str], edges: dict[str, set[str]]) -> list[str]:
    """A path start -> ... -> start inside one strongly connected component, to report."""
    members = set(component)
    start = component[0]
    path, seen = [start], {start}
    while True:
        step = next(target for target in sorted(edges[path[-1]]) if target in members)
        if step in seen:
            return path[path.index(step):] + [step]
        path.append(step)
        seen.add(step)


def is_command(name: str) -> bool:
    """Command-line code: the triagebot.cli package and every module in it (one a subcommand)."""
    return name == "triagebot.cli" or name.startswith("triagebot.cli.")


def defines_add_arguments(path: Path) -> bool:
    """Whether a module declares a subcommand's options (a top-level `add_arguments`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return any(isinstance(node, ast.FunctionDef) and node.name == "add_arguments" for node in tree.body)


# --- the checker itself -------------------------------------------------------------------------

def test_the_checker_finds_a_cycle_hidden_in_a_function(tmp_path: Path) -> None:
    package = tmp_path / "triagebot"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from triagebot import b\n")
    (package / "b.py").write_text("def late():\n"
                                  "    from triagebot.a import thing\n"
                                  "    return thing\n")
    (package / "c.py").write_text("import triagebot.a\n")
    known = {"triagebot", "triagebot.a", "triagebot.b", "triagebot.c"}
    edges = {name: imports_of(name, package / f"{name.rpartition('.')[2]}.py", known)
             for name in ("triagebot.a", "triagebot.b", "triagebot.c")}
    assert edges == {"triagebot.a": {"triagebot.b"}, "triagebot.b": {"triagebot.a"},
                     "triagebot.c": {"triagebot.a"}}
    assert cycles(edges) == [["triagebot.a", "triagebot.b", "triagebot.a"]]
    assert cycles({"triagebot.c": {"triagebot.a"}, "triagebot.a": set()}) == []


# --- the package --------------------------------------------------------------------------------

def test_no_import_cycles() -> None:
    found = cycles(graph())
    assert not found, "import cycles: " + "; ".join(" -> ".join(cycle) for cycle in found)


def unit(name: str) -> str:
    """The package (or root module) a module belongs to: `triagebot.bisect.flow` -> `bisect`."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def upward_imports(edges: dict[str, set[str]], floors: tuple[tuple[str, ...], ...]) -> list[str]:
    """Every import of a module from another package on its own floor or a higher one."""
    floor = {package: index for index, packages in enumerate(floors) for package in packages}
    found = []
    for name, targets in edges.items():
        for target in targets:
            here, there = unit(name), unit(target)
            if not here or not there or here == there:  # triagebot/__init__.py, or inside one package
                continue
            if here not in floor or there not in floor:
                found.append(f"{name} -> {target} (a package on no floor: add it to FLOORS)")
            elif floor[there] >= floor[here]:
                found.append(f"{name} -> {target}")
    return sorted(found)


def test_the_floor_check_finds_an_import_that_runs_back_up() -> None:
    floors = (("records",), ("parse", "store"), ("cli",))
    edges = {"triagebot.parse.a": {"triagebot.records.b", "triagebot.parse.c"},
             "triagebot.records.b": {"triagebot.parse.a"},
             "triagebot.store.d": {"triagebot.parse.a"},
             "triagebot.cli.e": {"triagebot.store.d", "triagebot.web.f"}}
    assert upward_imports(edges, floors) == [
        "triagebot.cli.e -> triagebot.web.f (a package on no floor: add it to FLOORS)",
        "triagebot.records.b -> triagebot.parse.a",
        "triagebot.store.d -> triagebot.parse.a",
    ]


def test_no_import_runs_back_up_a_floor() -> None:
    found = upward_imports(graph(), FLOORS)
    assert not found, "imports that run back up: " + "; ".join(found)


def test_every_package_has_a_floor_and_the_root_keeps_few_modules() -> None:
    on_floors = {package for packages in FLOORS for package in packages}
    packages = {path.name for path in PACKAGE.iterdir() if path.is_dir() and (path / "__init__.py").exists()}
    root_modules = sorted(path.stem for path in PACKAGE.glob("*.py"))
    assert packages <= on_floors, f"packages on no floor: {sorted(packages - on_floors)}"
    assert len(root_modules) <= ROOT_MODULES_AT_MOST, f"the package root holds {root_modules}"
    assert set(root_modules) - {"__init__"} <= set(FLOORS[0]), f"root modules off the first floor: {root_modules}"


def test_no_stage_daemon_or_flow_imports_a_command_module() -> None:
    edges = graph()
    stage = [name for name in edges if name in CORE
             or any(name.startswith(f"triagebot.{package}.") or name == f"triagebot.{package}"
                    for package in STAGES)]
    bad = sorted(f"{name} imports {target}" for name in stage if not is_command(name)
                 for target in edges[name] if is_command(target))
    assert not bad, "stage code imports command code: " + "; ".join(bad)


def test_every_subcommand_lives_in_the_cli_package() -> None:
    outside = sorted(name for name, path in modules().items()
                     if not is_command(name) and defines_add_arguments(path))
    assert not outside, "subcommand code outside triagebot/cli/: " + ", ".join(outside)


def test_command_code_is_the_cli_package_only() -> None:
    assert is_command("triagebot.cli") and is_command("triagebot.cli.main") and is_command("triagebot.cli.plan")
    assert not is_command("triagebot.client") and not is_command("triagebot.reproduce.commandline")
    assert not is_command("triagebot.daemon.loop") and not is_command("triagebot.daemon.flow")


def test_the_graph_sees_the_package() -> None:
    edges = graph()
    assert "triagebot.reproduce.executors.choose" in edges
    assert "triagebot.reproduce.executors.local" in edges["triagebot.reproduce.executors.choose"]
    assert not {name for name in edges["triagebot.reproduce.executors.protocol"]
                if name.endswith((".local", ".ssh"))}
