"""The package's layers, read from its source: imports go one way, kernels stay small.

Estimators (top-level modules) call the engine (``engine/``), which calls
the kernels (``kernels/``).  The import graph is built with :mod:`ast` from
every ``import`` statement, function-level ones included, so a lazy import
cannot hide a cycle.
"""

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dask_streamsvm"
# numba's code generator: kernels/rows.py builds a prefetch intrinsic with it.
KERNEL_THIRD_PARTY = {"numpy", "numba", "llvmlite"}
MAX_POSITIONAL = 12


def _module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _sources():
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(name, path):
    """Modules ``name`` imports: absolute names, submodules resolved when they exist."""
    modules = _sources()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                found.add(sub if sub in modules else module)
    return found


def _graph():
    modules = _sources()
    graph = {}
    for name, path in modules.items():
        graph[name] = {m for m in _imports(name, path) if m in modules and m != name}
    return graph


def _cycle(graph):
    """A list of modules forming an import cycle, or None."""
    state, stack = {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_package_has_no_import_cycle():
    assert _cycle(_graph()) is None


def test_the_cycle_finder_finds_a_planted_cycle():
    graph = _graph()
    graph["dask_streamsvm.engine.reader"] = graph["dask_streamsvm.engine.reader"] | {"dask_streamsvm.linear"}
    assert _cycle(graph) is not None


@pytest.mark.parametrize("layer", ["kernels", "engine"])
def test_layers_import_only_downwards(layer):
    modules = _sources()
    stdlib = set(sys.stdlib_module_names)
    wrong = []
    for name, path in modules.items():
        if not name.startswith(f"dask_streamsvm.{layer}"):
            continue
        for imported in _imports(name, path):
            top = imported.split(".")[0]
            if imported.startswith("dask_streamsvm"):
                allowed = ("dask_streamsvm.kernels",) if layer == "kernels" else (
                    "dask_streamsvm.kernels", "dask_streamsvm.engine"
                )  # fmt: skip
                if not imported.startswith(allowed):
                    wrong.append((name, imported))
            elif layer == "kernels" and top not in KERNEL_THIRD_PARTY | stdlib:
                wrong.append((name, imported))
    assert wrong == []


def test_no_function_takes_more_than_12_positional_arguments():
    wide = []
    for name, path in _sources().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = len(node.args.posonlyargs) + len(node.args.args)
                if n > MAX_POSITIONAL:
                    wide.append(f"{name}.{node.name}: {n}")
    assert wide == []
