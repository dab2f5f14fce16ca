"""The package's layers point one way and its modules import no cycle (docs/architecture.md).

The import graph is grimp's: every ``import`` statement of a module, at the
top, inside a function or under ``if TYPE_CHECKING``, so neither hides a
cycle. ``python tests/test_layers.py`` prints the cycles and upward imports.
"""

from __future__ import annotations

import sys
from pathlib import Path

import grimp

# lowest first; a module may import its own layer and those before it (the longest listed prefix names its layer)
LAYERS = (
    ("pbmt", "pbmt.base", "pbmt.metrics"),
    ("pbmt.model",),
    ("pbmt.search",),
    ("pbmt.features",),
    ("pbmt.tune", "pbmt.train", "pbmt.api"),
    ("pbmt.commands", "pbmt.__main__"),
)


def import_graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports, anywhere in its source."""
    graph = grimp.build_graph(package, cache_dir=None)
    return {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (or a module importing itself), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(root: str) -> None:
        # Tarjan's algorithm with an explicit stack of (module, its remaining successors)
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[module] = min(low[module], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[module])
                if low[module] == index[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1 or module in graph.get(module, ()):
                        found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def layer_of(module: str, layers=LAYERS) -> int:
    """Index of the layer whose longest prefix names ``module`` (ValueError when none does)."""
    best, where = -1, -1
    for i, prefixes in enumerate(layers):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, where = len(prefix), i
    if where < 0:
        raise ValueError(f"{module} is in no layer: add it to LAYERS and docs/architecture.md")
    return where


def upward_imports(graph: dict[str, set[str]], layers=LAYERS) -> list[tuple[str, str]]:
    """(importer, imported) pairs where the imported module sits in a higher layer."""
    return sorted((a, b) for a, targets in graph.items() for b in targets if layer_of(b, layers) > layer_of(a, layers))


def test_pbmt_has_no_import_cycle_and_no_upward_import():
    graph = import_graph("pbmt")
    assert len(graph) > 100 and "pbmt.search.decoder" in graph["pbmt.search.sampler"]
    assert cycles(graph) == []
    assert upward_imports(graph) == []


def test_a_cycle_hidden_in_a_function_or_type_checking_block_is_found(tmp_path, monkeypatch):
    package = tmp_path / "layered"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text("def f():\n    from layered import high\n    return high\n")
    (package / "high.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                                     "    from layered.low import f\n")
    (package / "alone.py").write_text("import layered.alone\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = import_graph("layered")
    assert cycles(graph) == [["layered.alone"], ["layered.high", "layered.low"]]
    layers = (("layered",), ("layered.low", "layered.alone"), ("layered.high",))
    assert upward_imports(graph, layers) == [("layered.low", "layered.high")]


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    found = import_graph("pbmt")
    for component in cycles(found):
        print("cycle:", " ".join(component))
    for importer, imported in upward_imports(found):
        print(f"upward: {importer} -> {imported}")
