"""Where graph and parameter servers run: Dask distributed workers.

By default a ``LocalCluster`` with one worker process per graph server; with
``scheduler="tcp://host:8786"`` an existing cluster (``dask scheduler`` plus ``dask
worker`` processes, on this or other machines). Servers are Dask actors pinned to a
worker each; Dask carries only control calls (start, run, stop), the training data moves
over the ZeroMQ data plane.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import Iterator

from stages.errors import DorylusError

log = logging.getLogger("dorylus.train.placement")
CONNECT_TIMEOUT_S = 10


@contextmanager
def dask_client(num_parts: int, scheduler: str | None = None, processes: bool = True) -> Iterator:
    """A Dask client: to ``scheduler`` if given, else to a fresh LocalCluster."""
    from dask.distributed import Client, LocalCluster

    if scheduler:
        try:
            client = Client(scheduler, timeout=CONNECT_TIMEOUT_S)
        except OSError as exc:
            raise DorylusError(f"cannot reach the Dask scheduler at {scheduler}: {exc}; start it with `dask scheduler`") from None
        try:
            yield client
        finally:
            client.close()
        return
    where = {"host": "127.0.0.1"} if processes else {}  # in-process workers talk over inproc://
    cluster = LocalCluster(
        n_workers=num_parts, threads_per_worker=2, processes=processes, dashboard_address=None,
        # the scheduler and workers serve HTTP routes even without a dashboard: keep them on loopback
        scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
        worker_dashboard_address="127.0.0.1:0", **where,
    )
    client = Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def workers(client) -> list[str]:
    found = sorted(client.scheduler_info()["workers"])
    if not found:
        raise DorylusError("the Dask cluster has no workers; start some with `dask worker SCHEDULER`")
    return found


def place(client, cls, spec: dict, worker: str):
    """Start ``cls(spec)`` as an actor on ``worker``; returns the actor proxy."""
    return client.submit(cls, spec, actor=True, workers=[worker], allow_other_workers=False, pure=False).result()
