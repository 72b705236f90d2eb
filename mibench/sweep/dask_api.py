"""The optional dask backend's entry: its API, or one line saying how to install it."""
from __future__ import annotations

from mibench.errors import MibenchError


def dask_api():
    """dask.distributed's ``Client``, ``LocalCluster`` and ``as_completed``; without dask, one line."""
    try:
        from dask.distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise MibenchError("--backend dask needs dask[distributed] (pip install 'mibench[cluster]')") from None
    return Client, LocalCluster, as_completed
