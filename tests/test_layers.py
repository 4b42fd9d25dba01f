"""The package's layers, read from its source: imports go one way, kernels stay small.

Estimators (top-level modules) call the engine (``engine/``), which calls
the kernels (``kernels/``).  Inside the engine, its rooms are layered too
(:data:`ROOMS`): the door (``fit``, ``choice``) over the cluster, the
cluster over the models' drivers, the models over the dual and primal
solvers, the solvers over the read path, the read path over the store and
the plan.  The import graph is built with :mod:`ast` from every ``import``
statement, function-level ones included, so a lazy import cannot hide a
cycle.  A name is imported from the module that defines it, or from a
package's face (its ``__init__``), and a private name never crosses modules.
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


# The linear models' modules reach the engine through its door (where, then fit), the plan's
# vocabulary and the Dask source.
ESTIMATOR_ENGINE = {
    "dask_streamsvm.engine.fit",
    "dask_streamsvm.engine.choice",
    "dask_streamsvm.engine.plan.problem",
    "dask_streamsvm.engine.plan.losses",
    "dask_streamsvm.engine.plan.sizes",
    "dask_streamsvm.engine.data.source",
    "dask_streamsvm.engine.data.waiting",  # computing Dask input in memory names a cluster without workers
}
LINEAR_MODULES = (
    "dask_streamsvm.linear",
    "dask_streamsvm.logistic",
    "dask_streamsvm._linear_model",
)
# The engine's rooms by layer: a room imports only rooms of a lower layer (and itself); two rooms of
# one layer import neither the other.  "door" is the modules directly in engine/.
ROOMS = {
    "door": 6, "cluster": 5, "models": 4, "dual": 3, "primal": 3, "data": 2, "store": 1, "plan": 1,
}  # fmt: skip
# The rooms of losses: only they name one (in code, strings and comments; docstrings are docs).
LOSS_ROOMS = {"dask_streamsvm.kernels.losses", "dask_streamsvm.engine.plan.losses"}
# A loss's name: the hinge, or "squared" on its own (a squared norm is no loss, and the messages
# that name it are the reliability tests' to keep).
LOSS_NAME = re.compile(r"hinge|squared(?![ _]norm)", re.IGNORECASE)


def _engine_imports(name):
    return {m for m in _imports(name, _sources()[name]) if m.startswith("dask_streamsvm.engine")}


@pytest.mark.parametrize("module", LINEAR_MODULES)
def test_the_estimator_reaches_the_engine_only_through_its_front_door(module):
    assert _engine_imports(module) <= ESTIMATOR_ENGINE


def test_the_front_door_rule_sees_an_engine_import():
    """The rule above reads the imports it should: _linear_model.py does import engine.fit."""
    assert "dask_streamsvm.engine.fit" in _engine_imports("dask_streamsvm._linear_model")


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
        name: _loss_names(path.read_text()) for name, path in _sources().items() if name not in LOSS_ROOMS
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


def _room(module):
    """The engine room of ``module`` ("door" for the modules directly in engine/), or None."""
    parts = module.split(".")
    if parts[:2] != ["dask_streamsvm", "engine"] or len(parts) < 3:
        return None
    return parts[2] if parts[2] in ROOMS else "door"


def _room_crossings(graph):
    """``(importer, imported)`` pairs of the engine that import a room of the same or a higher layer."""
    wrong = []
    for name, imported in graph.items():
        here = _room(name)
        for other in imported:
            there = _room(other)
            if here is None or there is None or here == there:
                continue
            if ROOMS[there] >= ROOMS[here]:
                wrong.append((name, other))
    return sorted(wrong)


def test_the_engines_rooms_import_only_lower_layers():
    rooms = {p.name for p in (PACKAGE / "engine").iterdir() if (p / "__init__.py").exists()}
    assert set(ROOMS) - {"door"} == rooms  # every room has its layer
    assert _room_crossings(_graph()) == []


def test_the_room_rule_finds_a_planted_import_up_or_across():
    graph = _graph()
    graph["dask_streamsvm.engine.data.reader"] |= {"dask_streamsvm.engine.dual.cache"}  # up
    graph["dask_streamsvm.engine.dual.sbm"] |= {"dask_streamsvm.engine.primal.newton"}  # across
    assert _room_crossings(graph) == [
        ("dask_streamsvm.engine.data.reader", "dask_streamsvm.engine.dual.cache"),
        ("dask_streamsvm.engine.dual.sbm", "dask_streamsvm.engine.primal.newton"),
    ]


def test_the_engine_is_rooms_behind_a_door():
    """At most 4 modules directly in engine/ (the door and its face), at most 13 in any folder, and
    each room's face says in a docstring what it owns."""
    engine = PACKAGE / "engine"
    assert len(list(engine.glob("*.py"))) <= 4
    for folder in [engine, *(p for p in engine.iterdir() if (p / "__init__.py").exists())]:
        assert len(list(folder.glob("*.py"))) <= 13, folder
        assert ast.get_docstring(ast.parse((folder / "__init__.py").read_text())), folder


def _defined(path):
    """The names a module defines at its top level (functions, classes, assignments, in ``if`` and
    ``try`` blocks too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def _borrowed_names(sources):
    """``(importer, module, name)`` of every ``from .m import n`` in the package whose ``n`` is not
    defined in ``m`` (a package's face, ``__init__``, may hand names on), and of every private name
    (``_x``, dunders aside) imported from another module."""
    found = []
    for name, path in sources.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            base = package.split(".")
            module = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
            if module not in sources:
                continue
            defined = _defined(sources[module])
            face = sources[module].name == "__init__.py"
            for alias in node.names:
                if f"{module}.{alias.name}" in sources:
                    continue  # a submodule
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private or (not face and alias.name not in defined):
                    found.append((name, module, alias.name))
    return sorted(found)


def test_every_name_is_imported_from_where_it_is_defined():
    assert _borrowed_names(_sources()) == []


def test_the_borrowed_name_rule_finds_a_planted_one(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from .a import f\n")
    (package / "a.py").write_text("from .b import g\ndef f():\n    return g()\n_h = 1\n")
    (package / "b.py").write_text("def g():\n    return 1\n")
    (package / "c.py").write_text("from .a import g, f, _h\nfrom . import f as face\n")
    sources = {"pkg": package / "__init__.py", **{f"pkg.{m}": package / f"{m}.py" for m in "abc"}}
    assert _borrowed_names(sources) == [("pkg.c", "pkg.a", "_h"), ("pkg.c", "pkg.a", "g")]


@pytest.mark.parametrize(
    "module, cls", [("_linear_model", "LinearModel"), ("onepass", "OnePassSVC"), ("budgeted", "BudgetedSVC")]
)
def test_each_estimators_fit_calls_at_most_two_engine_functions(module, cls):
    """An estimator's ``_fit`` reaches the engine through at most two calls (the linear models:
    where, then fit); its own algorithms (the two other models') stay its own."""
    tree = ast.parse((PACKAGE / f"{module}.py").read_text())
    engine_names = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("engine")
        for alias in node.names
    }
    method = next(
        f for c in tree.body if isinstance(c, ast.ClassDef) and c.name == cls
        for f in c.body if isinstance(f, ast.FunctionDef) and f.name == "_fit"
    )  # fmt: skip
    calls = [n.func.id for n in ast.walk(method) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    assert len([name for name in calls if name in engine_names]) <= 2
    assert "streams" not in engine_names


def test_the_door_asks_no_rule_itself():
    """engine/fit.py asks :func:`~dask_streamsvm.engine.choice.choose` (and its second stage), never
    the rules it applies."""
    text = (PACKAGE / "engine" / "fit.py").read_text()
    assert "use_primal(" not in text and "cluster_method(" not in text and "where_to_fit(" not in text


def test_the_solvers_table_of_the_docs_lists_the_registered_solvers():
    """docs/guide/solvers.md's table names every solver of the registry, and no other."""
    from dask_streamsvm.engine.plan.problem import SOLVERS

    table = (PACKAGE.parent / "docs" / "guide" / "solvers.md").read_text().split("| `solver` |")[1]
    rows = [line for line in table.split("\n\n")[0].splitlines() if line.startswith('| `"')]
    listed = {re.match(r'\| `"([a-z]+)"`', line).group(1) for line in rows}
    assert listed == set(SOLVERS) - {"auto"}
