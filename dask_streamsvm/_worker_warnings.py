"""The filter of :func:`~dask_streamsvm.io.dask_parquet_deprecations_hidden` on a cluster's workers.

Dask's Parquet reader runs in the worker processes when a graph that reads Parquet is computed on a
``distributed`` cluster (``score``, a lazy ``predict`` computed by the user), and its pandas
deprecation is raised there, where a filter entered on the client does not reach.  This module
imports ``distributed``: :mod:`~dask_streamsvm.io` imports it only once ``distributed`` is imported.
"""

import warnings
import weakref

from distributed.diagnostics.plugin import WorkerPlugin

PLUGIN_NAME = "dask_streamsvm-dask-parquet-deprecations-hidden"
_registered = weakref.WeakSet()  # clients whose workers have the plugin


class HideDaskParquetDeprecations(WorkerPlugin):
    """Installs, on every worker of the cluster (those that join later too), the filter
    ``(message, module)`` of :func:`~dask_streamsvm.io._hide_dask_parquet_deprecations` (pandas'
    ``inplace`` deprecation where pandas attributes it to Dask's Parquet modules); the worker's
    other warnings are as they were."""

    name = PLUGIN_NAME

    def __init__(self, message, module):
        self.message, self.module = message, module

    def setup(self, worker):
        warnings.filterwarnings("ignore", message=self.message, module=self.module)


def hide_on_workers(client, message, module):
    """Registers :class:`HideDaskParquetDeprecations` with ``client``'s cluster, once per client
    (a synchronous one: an asynchronous client's caller awaits its own calls)."""
    if client is None or client.asynchronous or client in _registered or client.status != "running":
        return
    client.register_plugin(HideDaskParquetDeprecations(message, module), name=PLUGIN_NAME)
    _registered.add(client)
