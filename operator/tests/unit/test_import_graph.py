"""The pfslayout modules import each other one way only.

A cycle (two modules importing each other, often through a function-level import that hides it) makes
the import order matter and ties the two modules' private names together. The graph is read from the
source with ``ast`` (imports inside functions count too), so a new cycle fails here, naming its modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def _modules() -> dict[str, Path]:
    mods = {}
    for path in sorted((SRC / "pfslayout").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


def _edges(mod: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """Modules ``mod`` imports. ``from pkg import sub`` depends on ``sub``, not on the rest of ``pkg``; an
    import of one's own parent package is no edge (Python initialises parents first in any case)."""
    deps: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = {f"{node.module}.{a.name}" for a in node.names} & mods.keys()
            if len(subs) == len(node.names):
                deps |= subs
            else:
                deps.add(node.module)
        elif isinstance(node, ast.Import):
            deps |= {a.name for a in node.names}
    return {d for d in deps if d in mods and d != mod and not mod.startswith(d + ".")}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
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
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_cycle_detection_sees_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_pfslayout_has_no_import_cycle() -> None:
    mods = _modules()
    graph = {mod: _edges(mod, path, mods) for mod, path in mods.items()}
    assert "pfslayout.costmodel.formulas" in graph["pfslayout.costmodel.fast"]
    assert _cycles(graph) == [], "modules that import each other (make the dependency one-way)"


def test_costmodel_fast_does_not_reach_back_into_table() -> None:
    mods = _modules()
    deps = _edges("pfslayout.costmodel.fast", mods["pfslayout.costmodel.fast"], mods)
    assert "pfslayout.costmodel.table" not in deps


# The layers, lowest first (docs/operator.md): the domain (cost model, planner, calibration, traces,
# OrangeFS's own formats) knows nothing of Kubernetes; `kinds` builds the objects of each kind from it
# without calling the API; `operator` calls the API. Within `operator`, reconcilers never reach up into
# the Kopf handlers that call them.
DOMAIN = ("pfslayout.calibration", "pfslayout.costmodel", "pfslayout.planner", "pfslayout.traces",
          "pfslayout.orangefs", "pfslayout.shimconfig", "pfslayout.units", "pfslayout.errors", "pfslayout.naming",
          "pfslayout.images")
FORBIDDEN = [(DOMAIN, ("pfslayout.k8s", "pfslayout.kinds", "pfslayout.operator", "pfslayout.cli")),
             (("pfslayout.kinds",), ("pfslayout.operator", "pfslayout.cli")),
             (("pfslayout.operator.reconcilers",), ("pfslayout.operator.handlers", "pfslayout.operator.main"))]


def _within(mod: str, packages: tuple[str, ...]) -> bool:
    return any(mod == p or mod.startswith(p + ".") for p in packages)


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    return sorted(f"{mod} imports {dep}" for mod, deps in graph.items() for lower, above in FORBIDDEN
                  if _within(mod, lower) for dep in deps if _within(dep, above))


def test_layer_check_sees_a_violation() -> None:
    assert layer_violations({"pfslayout.costmodel.x": {"pfslayout.k8s.api"}, "pfslayout.k8s.api": set()}) \
        == ["pfslayout.costmodel.x imports pfslayout.k8s.api"]


def test_each_layer_imports_only_those_below_it() -> None:
    mods = _modules()
    graph = {mod: _edges(mod, path, mods) for mod, path in mods.items()}
    assert layer_violations(graph) == []
