"""The layout the code keeps: no module of homing imports another in a cycle, no file under
operator/ passes 250 lines, and the README's repository map names every package."""
from __future__ import annotations

import ast
from pathlib import Path

OPERATOR = Path(__file__).resolve().parents[2] / "operator"
README = Path(__file__).resolve().parents[2] / "README.md"
MAX_LINES = 250


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


def test_no_file_under_operator_passes_the_line_bound():
    long = {str(p.relative_to(OPERATOR)): n for p in modules().values() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_the_readme_map_names_every_package():
    text = README.read_text()
    packages = sorted({str(p.parent.relative_to(OPERATOR.parent)) + "/" for p in OPERATOR.glob("homing/*/__init__.py")}
                      | {str(p.parent.relative_to(OPERATOR.parent)) + "/" for p in OPERATOR.glob("homing/engine/*/__init__.py")})
    missing = [p for p in packages if f"`{p}`" not in text]
    assert missing == []
