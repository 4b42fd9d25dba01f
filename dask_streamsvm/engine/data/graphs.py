"""The Dask graphs of a source's partitions: culled to one partition, scanned for data they hold.

A cluster ships each worker a :meth:`~.source.DaskSource.subset` of the
partitions: their graphs culled to their own tasks (:func:`culled_graph`),
and, for data that worker already holds, the placeholder :data:`GIVEN`,
filled on the worker (:meth:`~.source.DaskSource.use_data`).
:func:`held_kinds` tells where a collection's data already is.
"""

import numpy as np
import pandas as pd
import scipy.sparse as sp


class Given:
    """The placeholder of a partition's x, y or w whose data is given on the worker
    (:meth:`~.source.DaskSource.use_data`); unpickled as the one :data:`GIVEN`."""

    def __reduce__(self):
        return "GIVEN"

    def __repr__(self):
        return "<given on the worker>"


GIVEN = Given()


def culled_graph(part):
    """A partition's ``(x, y, w)`` delayed objects sharing one graph culled to their own tasks."""
    from dask.delayed import Delayed
    from dask.optimization import cull

    present = [d for d in part if d is not None]
    merged = {}
    for d in present:
        merged.update(d.__dask_graph__())
    graph, _ = cull(merged, [d.key for d in present])
    return tuple(None if d is None else Delayed(d.key, graph) for d in part)


def held_kinds(parts):
    """Where the ``x, y, w`` of the partitions ``parts`` (``(x, y, w)`` delayed objects) already are.

    A tuple of three: ``"persisted"`` when their graphs hold futures of a
    ``dask.distributed`` cluster (``X.persist()``), ``"memory"`` when they
    hold the data itself (``da.from_array``, ``dd.from_pandas``), else None
    (computed from files or other tasks, or absent).  Scans each distinct
    graph once.
    """
    kinds = [None, None, None]
    for j in range(3):
        graphs = {}
        for part in parts:
            d = part[j]
            if d is not None and hasattr(d, "__dask_graph__"):
                graph = d.__dask_graph__()
                graphs.setdefault(id(graph), graph)
        for graph in graphs.values():
            for value in dict(graph).values():
                value = value.value if type(value).__name__ == "DataNode" else value
                if type(value).__name__ == "Future":
                    kinds[j] = "persisted"
                    break
                if isinstance(value, np.ndarray | sp.spmatrix | sp.sparray | pd.DataFrame | pd.Series):
                    kinds[j] = "memory"
            if kinds[j] == "persisted":
                break
    return tuple(kinds)
