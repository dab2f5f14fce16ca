"""The package's layers point one way, each module sits in its layer's package, no module imports another
package's private module, and its modules import no cycle (docs/architecture.md).

The import graph is grimp's: every ``import`` statement of a module, at the
top, inside a function or under ``if TYPE_CHECKING``, so neither hides a
cycle. A module loaded by name at run time (``importlib.import_module``,
``__import__``) would be an edge the graph cannot see, so none is allowed.
``python tests/test_layers.py`` prints what breaks a rule.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import grimp

PACKAGE = Path(__file__).resolve().parent.parent / "pbmt"

# lowest first; a module may import its own layer and those before it (the longest listed prefix names its layer).
# Each layer is a set of packages; the only modules at the top of pbmt are its faces: the package itself (its
# names come from pbmt.api), pbmt.api (the Python API) and pbmt.__main__ (python -m pbmt).
LAYERS = (
    ("pbmt.base", "pbmt.metrics"),
    ("pbmt.model",),
    ("pbmt.search",),
    ("pbmt.features",),
    ("pbmt.tune", "pbmt.train", "pbmt.api"),
    ("pbmt.commands", "pbmt", "pbmt.__main__"),
)
FACES = {"pbmt", "pbmt.api", "pbmt.__main__"}


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


def private_imports(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) pairs where ``imported`` is private to a package (a name in its path starts with one
    underscore) that ``importer`` is not inside: a package's private modules serve that package alone."""
    found = []
    for importer, targets in graph.items():
        for imported in targets:
            parts = imported.split(".")
            private = [i for i, part in enumerate(parts) if part.startswith("_") and not part.startswith("__")]
            if private and not (importer + ".").startswith(".".join(parts[:private[0]]) + "."):
                found.append((importer, imported))
    return sorted(found)


def modules_outside_layer_packages(graph: dict[str, set[str]], layers=LAYERS, faces=FACES) -> list[str]:
    """Modules directly under the top package that are neither one of its ``faces`` nor a package of a layer."""
    packages = {prefix for layer in layers for prefix in layer} - set(faces)
    top = min(graph, key=len)
    return sorted(m for m in graph if m.count(".") == top.count(".") + 1 and m not in faces and m not in packages)


def hidden_imports(package: Path) -> list[str]:
    """``file:line`` of every call or name of ``import_module`` or ``__import__`` under ``package``: an import
    made at run time by a computed name is an edge no import graph sees."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else \
                next((a.name for a in node.names if a.name in ("import_module", "__import__")), None) \
                if isinstance(node, ast.ImportFrom) else None
            if name in ("import_module", "__import__"):
                found.append(f"{path.relative_to(package.parent)}:{node.lineno}")
    return found


def test_pbmt_has_no_import_cycle_and_no_upward_import():
    graph = import_graph("pbmt")
    assert len(graph) > 100 and "pbmt.search.decoder" in graph["pbmt.search.sampler"]
    assert cycles(graph) == [], "modules import each other in a circle: one of them belongs in a lower layer"
    assert upward_imports(graph) == [], "a module imports a layer above its own (docs/architecture.md)"


def test_every_module_sits_in_the_package_of_its_layer():
    graph = import_graph("pbmt")
    assert "pbmt.base.files" in graph and "pbmt.commands.cli" in graph
    assert modules_outside_layer_packages(graph) == [], (
        "a module at the top of pbmt/ hides its layer: move it into its layer's package (LAYERS)")


def test_no_module_imports_another_packages_private_module():
    graph = import_graph("pbmt")
    assert "pbmt.search._scoring_kernels" in graph["pbmt.search._decoder_kernels"]  # its own package's: allowed
    assert private_imports(graph) == [], (
        "a module imports a private (_name) module of another package: import what that package's public "
        "modules offer instead")


def test_the_options_every_verb_shares_reach_no_training_module():
    # every verb's parser imports pbmt.commands.options: a training module reached from it (for one constant)
    # would load training's kernels into `pbmt translate`
    graph = import_graph("pbmt")
    reached, todo = set(), ["pbmt.commands.options"]
    while todo:
        for module in graph[todo.pop()] - reached:
            reached.add(module)
            todo.append(module)
    assert "pbmt.train" in reached and "pbmt.base.parallel" in reached
    assert sorted(m for m in reached if m.startswith("pbmt.train.")) == []


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


def test_no_module_loads_a_module_by_a_computed_name():
    assert hidden_imports(PACKAGE) == [], (
        "importlib.import_module or __import__ hides an edge from the import graph (and so from the layer "
        "check): import the module by name, as pbmt/commands/cli.py imports the verbs")


def test_private_imports_misplaced_modules_and_hidden_imports_are_found(tmp_path, monkeypatch):
    package = tmp_path / "rooms"
    (package / "low").mkdir(parents=True)
    (package / "high").mkdir()
    for init in ("__init__.py", "low/__init__.py", "high/__init__.py"):
        (package / init).write_text("")
    (package / "low" / "_kernels.py").write_text("")
    (package / "low" / "public.py").write_text("from rooms.low import _kernels\n")
    (package / "high" / "user.py").write_text("from rooms.low._kernels import *\nimport importlib\n"
                                              "importlib.import_module('rooms.low.public')\n")
    (package / "stray.py").write_text("x = __import__('rooms.low')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = import_graph("rooms")
    assert private_imports(graph) == [("rooms.high.user", "rooms.low._kernels")]
    assert modules_outside_layer_packages(graph, (("rooms.low",), ("rooms.high",)), {"rooms"}) == ["rooms.stray"]
    assert hidden_imports(package) == ["rooms/high/user.py:3", "rooms/stray.py:1"]


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    found = import_graph("pbmt")
    for component in cycles(found):
        print("cycle:", " ".join(component))
    for importer, imported in upward_imports(found):
        print(f"upward: {importer} -> {imported}")
    for importer, imported in private_imports(found):
        print(f"private: {importer} -> {imported}")
    for module in modules_outside_layer_packages(found):
        print(f"outside a layer's package: {module}")
    for place in hidden_imports(PACKAGE):
        print(f"hidden import: {place}")
