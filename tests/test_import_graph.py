"""The import graph of triagebot: no cycles, and no stage module depends on a command module.

Every module is read with `ast` (imports inside functions count too: a cycle hidden in a function
is still a cycle), nothing is imported.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "triagebot"
STAGES = ("ingest", "parse", "store", "reproduce", "verdict", "notify", "rules")
CORE = ("triagebot.daemon", "triagebot.flow")


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
    assert not is_command("triagebot.daemon") and not is_command("triagebot.flow")


def test_the_graph_sees_the_package() -> None:
    edges = graph()
    assert "triagebot.reproduce.executors.choose" in edges
    assert "triagebot.reproduce.executors.local" in edges["triagebot.reproduce.executors.choose"]
    assert not {name for name in edges["triagebot.reproduce.executors.protocol"]
                if name.endswith((".local", ".ssh"))}
