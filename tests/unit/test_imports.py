"""Dependencies inside ``catalogd/`` point one way: no module imports itself back, however far round,
no package either, and the client side imports nothing of the daemon.

Every import counts, also those inside functions and under ``if TYPE_CHECKING:`` (a lazy
or type-only import hides a cycle from Python, not from a reader: the two modules still
know each other). The generated Thrift code is not ours to arrange and is left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[2] / "catalogd"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {
        _module_name(p): p
        for p in PACKAGE_ROOT.rglob("*.py")
        if "gen" not in p.relative_to(PACKAGE_ROOT).parts
    }


def _imports(tree: ast.AST, module: str, is_package: bool, known: set[str]) -> set[str]:
    found: set[str] = set()

    def resolve(name: str) -> str | None:
        # The longest known module that ``name`` is, or is inside of.
        while name:
            if name in known:
                return name
            name = name.rpartition(".")[0]
        return None

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = resolve(alias.name)
                if target:
                    found.add(target)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module if is_package else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    base = base.rpartition(".")[0]
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module or ""
            for alias in node.names:
                target = resolve(f"{source}.{alias.name}") or resolve(source)
                if target:
                    found.add(target)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    found.discard(module)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {
        name: _imports(ast.parse(path.read_text()), name, path.name == "__init__.py", known)
        for name, path in modules.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path ``[a, b, ..., a]``, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def dfs(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state:
                cycle = dfs(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = dfs(node)
            if cycle:
                return cycle
    return None


def test_no_import_cycle_inside_catalogd() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_cycle() -> None:
    # The check above must be able to fail.
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_graph_sees_lazy_type_only_and_relative_imports() -> None:
    tree = ast.parse(
        "from . import y\n"
        "def f():\n    import pkg.z\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg import w\n"
    )
    assert _imports(tree, "pkg.x", False, {"pkg", "pkg.x", "pkg.y", "pkg.z", "pkg.w"}) == {"pkg.y", "pkg.z", "pkg.w"}



# ------------------------------------------------------------------------------- packages


def package_of(module: str, root: str = "catalogd") -> str:
    """``root.dynamic.job`` -> ``root.dynamic``; a module right under ``root`` (``root.manager``) is its own."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == root else module


def package_graph(graph: dict[str, set[str]], root: str = "catalogd") -> dict[str, set[str]]:
    """The module graph with each module collapsed into its package under ``root``; no self-edges."""
    packages: dict[str, set[str]] = {}
    for module, targets in graph.items():
        source = package_of(module, root)
        packages.setdefault(source, set()).update(package_of(t, root) for t in targets)
    for source, targets in packages.items():
        targets.discard(source)
    return packages


def test_no_import_cycle_between_packages() -> None:
    # Modules may be acyclic while their packages are not (dynamic.job -> spark.atomic and
    # spark.atomic -> dynamic.statements): then neither package can be read, tested or moved alone.
    cycle = find_cycle(package_graph(import_graph()))
    assert cycle is None, "package cycle: " + " -> ".join(cycle or [])


def test_the_package_graph_finds_a_cycle_the_module_graph_misses() -> None:
    # The check above must be able to fail.
    modules = {"pkg.a.one": {"pkg.b.two"}, "pkg.b.three": {"pkg.a.four"}, "pkg.a.four": set(), "pkg.b.two": set(),
               "pkg.top": {"pkg.a.one"}}
    assert find_cycle(modules) is None
    assert package_graph(modules, "pkg") == {"pkg.a": {"pkg.b"}, "pkg.b": {"pkg.a"}, "pkg.top": {"pkg.a"}}
    assert find_cycle(package_graph(modules, "pkg")) == ["pkg.a", "pkg.b", "pkg.a"]


# ---------------------------------------------------------------------------- client side

#: What users run away from the daemon (the CLI, the Python client, the PySpark helpers and the
#: Spark code they share with the daemon's jobs). What these import in turn (model, errors,
#: names, wire, tls, hive_types, sql_lexer, config, ...) is client side too and is checked with them.
CLIENT_SIDE = ("catalogd.client", "catalogd.cli", "catalogd.spark", "catalogd.spark_common")

#: The daemon: its catalogs and metastores, the HMS endpoint, dynamic tables, the servers, the
#: manager, and the modules only they use.
DAEMON = ("catalogd.catalog", "catalogd.metastore", "catalogd.hms", "catalogd.dynamic", "catalogd.server",
          "catalogd.manager", "catalogd.views", "catalogd.not_found", "catalogd.datadir", "catalogd.faults",
          "catalogd.keys")

#: ``catalogd serve`` runs the daemon in the CLI's process: the one client-side module that imports
#: it (inside the command, so that every other command starts without it).
DAEMON_ENTRIES = frozenset({"catalogd.cli.serve"})


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def daemon_imports(graph: dict[str, set[str]], client: tuple[str, ...], daemon: tuple[str, ...],
                   entries: frozenset[str] = frozenset()) -> list[list[str]]:
    """Each import path from a client-side module to a daemon module, not through ``entries``."""
    found: list[list[str]] = []
    starts = sorted(m for m in graph if _within(m, client) and m not in entries)
    parent: dict[str, str | None] = {m: None for m in starts}
    queue = list(starts)
    while queue:  # breadth first: each path shown is a shortest one
        module = queue.pop(0)
        for target in sorted(graph.get(module, ())):
            if target in parent or target in entries:
                continue
            parent[target] = module
            if _within(target, daemon):
                path = [target]
                while (step := parent[path[-1]]) is not None:
                    path.append(step)
                found.append(path[::-1])
            else:
                queue.append(target)
    return found


def test_client_side_imports_nothing_of_the_daemon() -> None:
    paths = daemon_imports(import_graph(), CLIENT_SIDE, DAEMON, DAEMON_ENTRIES)
    assert not paths, "client side imports the daemon: " + "; ".join(" -> ".join(p) for p in paths)


def test_the_client_side_check_finds_an_import_of_the_daemon() -> None:
    # The check above must be able to fail, also when the import is one module removed.
    graph = {"c.client": {"c.model"}, "c.model": {"c.catalog.types"}, "c.catalog.types": set(),
             "c.cli.serve": {"c.server"}, "c.server": set()}
    assert daemon_imports(graph, ("c.client", "c.cli"), ("c.catalog", "c.server"), frozenset({"c.cli.serve"})) == [
        ["c.client", "c.model", "c.catalog.types"]
    ]
    assert daemon_imports(graph, ("c.cli",), ("c.server",)) == [["c.cli.serve", "c.server"]]
