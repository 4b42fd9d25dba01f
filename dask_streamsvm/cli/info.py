"""``dask-streamsvm info``: what a model file holds, read as it is written, without building the model.

Reading the file (:func:`~.paths.read_model_file`: its format, the estimator
it names and every array's checksum checked) imports neither scikit-learn nor
the solvers, so the command answers at once; ``predict`` and ``evaluate``
load the model whole, every parameter checked as ``fit`` checks it.
"""

import json

import numpy as np

from .commands import nonzero_text, reads_made, rows_streamed
from .paths import read_model_file
from .text import UserError, numbers_text, one_line, printable, short_list


class _Shown(str):
    """Text shown as it is where a value's repr would be (a feature map's ``Name(k=v)``)."""

    def __repr__(self):
        return str(self)


def _param_shown(value):
    """A parameter as a model file holds it (``_persist._jsonable``), shown: a dict from its pairs, a
    feature map as ``Name(param=value, ...)``; anything else as it is."""
    if isinstance(value, list):
        return [_param_shown(v) for v in value]
    if not isinstance(value, dict):
        return value
    entry = value.get("__feature_map__")
    if set(value) == {"__feature_map__"} and isinstance(entry, list) and len(entry) == 2:
        name, params = entry
        if isinstance(params, dict):
            return _Shown(f"{name}({', '.join(f'{k}={_param_shown(v)!r}' for k, v in params.items())})")
    pairs = value.get("__pairs__")
    if set(value) == {"__pairs__"} and isinstance(pairs, list):
        try:
            return {_param_shown(k): _param_shown(v) for k, v in pairs}
        except (TypeError, ValueError):  # not [key, value] pairs of plain keys: shown as written
            return value
    return value


def _per_problem(values, floor=None):
    """A model file's ``objective_`` or ``duality_gap_`` (a list, one value per problem) as the
    model gives it: a number for one problem; ``floor``: the least value shown."""
    values = [v if floor is None else max(v, floor) for v in np.atleast_1d(np.asarray(values, dtype=float))]
    return float(values[0]) if len(values) == 1 else [float(v) for v in values]


NOT_SHOWN = ("callbacks", "validation_data")  # never saved (always None in a file): not shown by info


def _reads(saved):
    """Reads of the data a streamed fit made, from its ``history_`` as the file holds it (as ``train``
    counts them), or None (a fit in memory, on a cluster, or a history that does not count its rows)."""
    history = _param_shown(saved)
    if not isinstance(history, list) or not all(isinstance(r, dict) for r in history):
        return None
    return reads_made(history, rows_streamed(history))


def _linear(attributes, arrays):
    """What ``info`` shows of a linear model: its passes (and reads of the data), its certificate, and
    which model a ``LogisticRegression`` fitted (``multi_class_``; None for the others, and for files
    written before it was kept)."""
    return {
        "multi_class": attributes.get("multi_class_"),
        "passes": int(attributes["n_iter_"]),
        "reads": None if "cluster_parts_" in attributes else _reads(attributes.get("history_")),
        "duality_gap": _per_problem(attributes["duality_gap_"], floor=0.0),
        "objective": _per_problem(attributes["objective_"]),
    }


def _penalty(estimator, params, arrays):
    """A linear model's penalty, as its parameters set it: ``penalty`` ("l2", "l1" or "elasticnet"),
    ``l1_ratio`` (the L1 share: 1 for ``LinearSVC(penalty="l1")``; ``LogisticRegression``'s deprecated
    ``penalty``, where given, wins over its ``l1_ratio``, as in its fit) and, with an L1 part, the
    nonzero weights of ``coef_`` (the intercepts not counted) out of all; None without one."""
    penalty = params.get("penalty", "l2")
    if estimator == "LinearSVC":
        ratio = 1.0 if penalty == "l1" else 0.0
    else:
        ratio = {"l1": 1.0, "l2": 0.0}.get(penalty, float(params.get("l1_ratio", 0.0)))
    coef = arrays["coef_"]
    return {
        "penalty": "l2" if ratio == 0 else "l1" if ratio == 1 else "elasticnet",
        "l1_ratio": ratio,
        "nonzero_weights": int(np.count_nonzero(coef)) if ratio > 0 else None,
        "weights": int(np.size(coef)),
    }


def _budgeted(attributes, arrays):
    """What ``info`` shows of a ``BudgetedSVC``: its epochs, support vectors per problem, kernel and
    merges (the file's arrays, read as written: ``load`` checks them)."""
    return {
        "epochs": int(attributes["n_iter_"]),
        "support_vectors": [int(n) for n in arrays["n_support_"]],
        "gamma": float(arrays["gamma_"][0]),
        "steps": int(arrays["steps"][0]),
        "merges": int(arrays["merge_counts"][:, 0].sum()),
        "removals": int(arrays["merge_counts"][:, 1].sum()),
    }


def _onepass(attributes, arrays):
    """What ``info`` shows of a ``OnePassSVC``: each problem's ball and whether the constant model of
    the majority class was kept."""
    return {
        "radius": [float(r) for r in attributes["radius_"]],
        "core_vectors": [int(m) for m in attributes["n_core_vectors_"]],
        "majority_fallback": bool(attributes["majority_fallback_"]),
        "standardized": attributes.get("standardize_") is not None,
    }


# What info reads of each estimator's model, and the lines it shows of it.
_MODELS = {"LinearSVC": _linear, "LogisticRegression": _linear, "BudgetedSVC": _budgeted,
           "OnePassSVC": _onepass}  # fmt: skip


def _model_lines(info):
    """The lines ``info`` prints of what the estimator's model holds."""
    if "duality_gap" in info:
        # A streamed fit's reads of the data, as train's summary counts them (its passes count from
        # 0, and one read may feed several).
        reads = info["reads"]
        of_data = "" if reads is None else f" ({reads} read{'' if reads == 1 else 's'} of the data)"
        penalty = f"{info['penalty']} (l1_ratio={info['l1_ratio']:g})"
        if info["nonzero_weights"] is not None:
            penalty += f": {nonzero_text(info['nonzero_weights'], info['weights'])}"
        fitted = [] if info["multi_class"] is None else [f"{'multi_class_':16}{info['multi_class']}"]
        return [
            *fitted,
            f"{'penalty':16}{penalty}",
            f"{'passes':16}{info['passes']}{of_data}",
            f"{'duality gap':16}{numbers_text(info['duality_gap'], '.2e')} (relative, certified at the end "
            "of training)",
            f"{'objective':16}{numbers_text(info['objective'], '.8g')}",
        ]
    if "support_vectors" in info:
        budget = info["params"].get("budget")
        return [
            f"{'epochs':16}{info['epochs']} ({info['steps']:,} steps)",
            f"{'support vectors':16}{info['support_vectors']} per problem (budget {budget} each)",
            f"{'gamma_':16}{info['gamma']:.6g} (kernel exp(-gamma_ ||x - x'||^2))",
            f"{'merges':16}{info['merges']:,} ({info['removals']:,} removals)",
        ]
    fallback = " (the constant model of the majority class was kept)" if info["majority_fallback"] else ""
    return [
        f"{'ball radius':16}{numbers_text(info['radius'], '.6g')} per problem",
        f"{'core vectors':16}{info['core_vectors']} per problem",
        f"{'majority class':16}{'kept' if info['majority_fallback'] else 'not kept'}{fallback}",
    ]


def cmd_info(args):
    """What a model file holds, read as it is written (:func:`~.paths.read_model_file`: format,
    estimator and checksums checked), without building the model: neither scikit-learn nor the
    solvers are imported, so it answers at once.  ``predict`` and ``evaluate`` load the model whole."""
    meta, arrays = read_model_file(args.model)
    attributes = meta["attributes"]
    names = attributes.get("feature_names_in_")
    try:
        info = {
            "file": args.model,
            "format": meta.get("format"),
            "format_version": meta.get("version"),
            "written_by": meta.get("library_version"),
            "estimator": meta["estimator"],
            "classes": arrays["classes_"].tolist(),
            "n_features": int(attributes["n_features_in_"]),
            "feature_names": None if names is None else [str(c) for c in names],
            **_MODELS[meta["estimator"]](attributes, arrays),
            **(
                _penalty(meta["estimator"], meta["params"], arrays)
                if _MODELS[meta["estimator"]] is _linear
                else {}
            ),
            "params": {k: _param_shown(v) for k, v in meta["params"].items() if k not in NOT_SHOWN},
        }
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        what = f"{exc} is missing" if isinstance(exc, KeyError) else one_line(exc)
        raise UserError(f"{args.model}: inconsistent model file: {what}") from None
    if args.json:
        print(json.dumps(info, default=str))  # JSON escapes control characters (and all non-ASCII)
        return 0
    # The file's text goes to a terminal: printable keeps its escape sequences from acting.
    lines = [
        f"{'model file':16}{args.model} ({info['format']} version {info['format_version']}, written by "
        f"dask_streamsvm {info['written_by']})",
        f"{'estimator':16}{info['estimator']}",
        f"{'classes':16}{short_list(info['classes'])}",
        f"{'n_features':16}{info['n_features']:,}",
    ]
    if info["feature_names"] is not None:
        lines.append(f"{'feature names':16}{short_list(info['feature_names'], 8)}")
    shown = ", ".join(f"{k}={v!r}" for k, v in info["params"].items())
    lines += [*_model_lines(info), f"{'parameters':16}{shown}"]
    for line in lines:
        print(printable(line))
    return 0
