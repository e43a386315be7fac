"""The layout the code keeps: no module of homing imports another in a cycle, the engine
imports nothing of the adapters and its lower layers nothing of placement (the import
contract: a file holds one concept however long, and the layers keep the engine pure), and
the repository map (docs/dev/repository.md) names every package."""
from __future__ import annotations

import ast
from pathlib import Path

OPERATOR = Path(__file__).resolve().parents[2] / "operator"
REPOSITORY_MAP = Path(__file__).resolve().parents[2] / "docs" / "dev" / "repository.md"
# The import contract, (importer prefix, prefixes it may not import): the engine is plain data in,
# plain data out (settings are plain data); what it remembers, who a pod is and what the cluster
# holds are read by placement, never the other way round.
ADAPTERS = ("homing.kube", "homing.cli", "homing.tools", "homing.explain", "homing.placementmemory", "homing.__main__")
CONTRACT = (
    ("homing.engine", ADAPTERS),
    ("homing.engine.memory", ("homing.engine.placement", "homing.engine.replicas")),
    ("homing.engine.identity", ("homing.engine.placement", "homing.engine.replicas", "homing.engine.memory")),
    ("homing.engine.cluster", ("homing.engine.placement", "homing.engine.replicas", "homing.engine.memory")),
)


def modules(root: Path = OPERATOR) -> dict[str, Path]:
    found = {}
    for path in root.rglob("*.py"):
        if "__pycache__" in path.parts or any(p.endswith(".egg-info") for p in path.parts):
            continue
        name = ".".join(path.relative_to(root).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def import_graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module-level imports only (an import inside a function runs when it is called). A
    submodule's import of its own package is left out: the package is initialised first anyway."""
    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        deps: set[str] = set()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            deps |= {t for t in targets if t in mods and t != name and not name.startswith(t + ".")}
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    group.append(w)
                    if w == v:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_no_module_imports_another_in_a_cycle():
    assert cycles(import_graph(modules())) == []


def test_the_cycle_check_can_fail():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def broken_contract(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) pairs the contract forbids."""
    def within(name: str, prefix: str) -> bool:
        return name == prefix or name.startswith(prefix + ".")

    return sorted((importer, dep) for importer, deps in graph.items() for dep in deps
                  for layer, forbidden in CONTRACT if within(importer, layer) and any(within(dep, f) for f in forbidden))


def test_the_engine_keeps_the_import_contract():
    assert broken_contract(import_graph(modules())) == []


def test_the_contract_check_can_fail():
    graph = {"homing.engine.memory.index": {"homing.engine.placement.displacement"},
             "homing.engine.placement.decide": {"homing.kube.client", "homing.engine.memory.index"},
             "homing.kube.state.pods": {"homing.engine.placement.decide"}}
    assert broken_contract(graph) == [("homing.engine.memory.index", "homing.engine.placement.displacement"),
                                      ("homing.engine.placement.decide", "homing.kube.client")]


def test_the_repository_map_names_every_package():
    text = REPOSITORY_MAP.read_text()
    packages = sorted({str(p.parent.relative_to(OPERATOR.parent)) + "/" for p in OPERATOR.glob("homing/*/__init__.py")}
                      | {str(p.parent.relative_to(OPERATOR.parent)) + "/" for p in OPERATOR.glob("homing/engine/*/__init__.py")})
    missing = [p for p in packages if f"`{p}`" not in text]
    assert missing == []
