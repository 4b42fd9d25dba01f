"""The package's layers, read from its source: imports go one way, kernels stay small.

Estimators (top-level modules) call the engine (``engine/``), which calls
the kernels (``kernels/``).  The import graph is built with :mod:`ast` from
every ``import`` statement, function-level ones included, so a lazy import
cannot hide a cycle.
"""

import ast
import re
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
    reader = "dask_streamsvm.engine.data.reader"
    graph[reader] = graph[reader] | {"dask_streamsvm.linear"}
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


# The linear models' modules reach the engine through its front door, the plan, the source and the archive.
ESTIMATOR_ENGINE = {
    "dask_streamsvm.engine.fit",
    "dask_streamsvm.engine.plan.problem",
    "dask_streamsvm.engine.data.source",
    "dask_streamsvm.engine.store.archive",
}
LINEAR_MODULES = (
    "dask_streamsvm.linear",
    "dask_streamsvm.logistic",
    "dask_streamsvm._linear_model",
    "dask_streamsvm._linear_input",
)
# The rooms of losses: only they name one (in code, strings and comments; docstrings are docs).
LOSS_ROOMS = {"dask_streamsvm.kernels.losses", "dask_streamsvm.engine.plan.losses"}
# A loss's name: the hinge, or "squared" on its own (a squared norm is no loss, and the messages
# that name it are the reliability tests' to keep).
LOSS_NAME = re.compile(r"hinge|squared(?![ _]norm)", re.IGNORECASE)
MAX_LINES = 600


def _engine_imports(name):
    return {m for m in _imports(name, _sources()[name]) if m.startswith("dask_streamsvm.engine")}


@pytest.mark.parametrize("module", LINEAR_MODULES)
def test_the_estimator_reaches_the_engine_only_through_its_front_door(module):
    assert _engine_imports(module) <= ESTIMATOR_ENGINE


def test_the_front_door_rule_sees_an_engine_import():
    """The rule above reads the imports it should: linear.py does import engine.fit."""
    assert "dask_streamsvm.engine.fit" in _engine_imports("dask_streamsvm.linear")


def _docs_and_defaults(tree):
    """The ids of the docstrings (docs) and of the defaults of ``__init__`` parameters (an
    estimator's declared parameters): the strings that may name a loss."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            found.update(id(d) for d in [*node.args.defaults, *node.args.kw_defaults] if d is not None)
    return found


def _loss_names(text):
    """``(line, text)`` of every identifier, string and comment that names a loss (docstrings and the
    defaults of ``__init__`` aside)."""
    import io
    import tokenize

    tree = ast.parse(text)
    docs = _docs_and_defaults(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            words = [node.value]
        elif isinstance(node, ast.Name):
            words = [node.id]
        elif isinstance(node, ast.Attribute):
            words = [node.attr]
        elif isinstance(node, ast.arg):
            words = [node.arg]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            words = [node.name]
        elif isinstance(node, ast.alias):
            words = [node.name, node.asname or ""]
        else:
            continue
        found += [(getattr(node, "lineno", 0), w) for w in words if LOSS_NAME.search(w)]
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT and LOSS_NAME.search(token.string):
            found.append((token.start[0], token.string))
    return found


def test_only_the_rooms_of_losses_name_a_loss():
    named = {
        name: _loss_names(path.read_text())
        for name, path in _sources().items()
        if name not in LOSS_ROOMS
    }
    assert {name: found for name, found in named.items() if found} == {}


def test_the_loss_rule_finds_a_planted_name():
    planted = (
        'x = 1  # the squared loss\ndef f(hinge_loss):\n    """Docs may say hinge."""\n    return "hinge"\n'
        'y = "its squared norm x . x"\nclass E:\n    def __init__(self, loss="squared_hinge"):\n'
        '        self.loss = "hinge"\n'
    )
    found = [line for line, _ in _loss_names(planted)]
    assert found.count(1) == 1 and found.count(2) == 1 and found.count(4) == 1 and 3 not in found
    assert 5 not in found and 7 not in found and found.count(8) == 1


def test_no_module_is_longer_than_600_lines():
    lines = {name: len(path.read_text().splitlines()) for name, path in _sources().items()}
    assert {name: n for name, n in lines.items() if n > MAX_LINES} == {}


def test_the_solvers_table_of_the_docs_lists_the_registered_solvers():
    """docs/guide/solvers.md's table names every solver of the registry, and no other."""
    from dask_streamsvm.engine.plan.problem import SOLVERS

    table = (PACKAGE.parent / "docs" / "guide" / "solvers.md").read_text().split("| `solver` |")[1]
    rows = [line for line in table.split("\n\n")[0].splitlines() if line.startswith('| `"')]
    listed = {re.match(r'\| `"([a-z]+)"`', line).group(1) for line in rows}
    assert listed == set(SOLVERS) - {"auto"}
