"""Where the partition stage's parallel tasks run: in this process, a LocalCluster, or a given scheduler.

Tasks are module-level functions that take file paths and small values, so they run the
same in every mode; with a remote scheduler the workers must see the same filesystem
paths (the ingest artifact and the store).
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable, Iterator

from stages.errors import DorylusError

# Below this many edges a Dask cluster costs more to start (seconds on 2 cores) than the
# whole job; "auto" then runs the tasks in-process, one after another.
IN_PROCESS_EDGES = 2_000_000
CONNECT_TIMEOUT = "20s"  # how long to wait for a given scheduler before giving up


class InProcess:
    """The executor interface, run sequentially here."""

    name = "in-process"

    def map(self, fn: Callable, *iterables: Iterable) -> list:
        return [fn(*args) for args in zip(*iterables)]

    def map_reduce(self, fn: Callable, items: Iterable, combine: Callable):
        result = None
        for item in items:
            value = fn(item)
            result = value if result is None else combine(result, value)
        return result


class DaskExecutor:
    def __init__(self, client, name: str):
        self.client = client
        self.name = name

    def map(self, fn: Callable, *iterables: Iterable) -> list:
        futures = self.client.map(fn, *iterables, pure=False)
        return self.client.gather(futures)

    def map_reduce(self, fn: Callable, items: Iterable, combine: Callable):
        """Combine pairwise on the workers (a tree), so one result comes back here, not one per item."""
        futures = self.client.map(fn, list(items), pure=False)
        while len(futures) > 1:
            pairs = [self.client.submit(combine, a, b, pure=False) for a, b in zip(futures[::2], futures[1::2])]
            futures = pairs + futures[len(pairs) * 2 :]
        return futures[0].result() if futures else None


@contextmanager
def open_executor(scheduler: str | None, num_edges: int, workers: int, local_directory: Path) -> Iterator[InProcess | DaskExecutor]:
    """``scheduler``: None/"auto" (in-process for small graphs, else a LocalCluster),
    "inprocess", "local" (always a LocalCluster) or a scheduler address ``tcp://HOST:PORT``."""
    mode = scheduler or "auto"
    if mode == "inprocess" or (mode == "auto" and num_edges < IN_PROCESS_EDGES):
        yield InProcess()
        return
    from distributed import Client, LocalCluster

    if mode in ("auto", "local"):
        local_directory.mkdir(parents=True, exist_ok=True)
        with LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",  # its HTTP server starts anyway: loopback, free port
            local_directory=str(local_directory),
            silence_logs=logging.WARNING,
        ) as cluster, Client(cluster) as client:
            yield DaskExecutor(client, f"LocalCluster({workers} workers)")
        return
    if "://" not in mode:
        raise DorylusError(
            f"scheduler {scheduler!r} is not understood; give auto, inprocess, local or a Dask scheduler address like tcp://HOST:8786"
        )
    try:
        client = Client(mode, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        raise DorylusError(f"cannot reach the Dask scheduler at {mode} ({exc}); start it or check the address") from None
    with client:
        yield DaskExecutor(client, mode)
