"""Prefect and Dask for the flow tests, started once per session.

Prefect reads its settings when first imported, so they are put in place here, after the
session's DORYLUS_HOME exists and before any test imports prefect. Tests that run flows
use ``prefect_api``: one real ``prefect server start`` on 127.0.0.1 (what schedules need
too), instead of a temporary server per process.
"""

from __future__ import annotations

import os
import sys

import pytest

from tests.conftest import free_port


@pytest.fixture(scope="session", autouse=True)
def prefect_settings(dorylus_home):
    assert "prefect" not in sys.modules, "prefect was imported before its settings were in place"
    from flows import settings

    return settings.configure()


@pytest.fixture(scope="session")
def prefect_api(prefect_settings, tmp_path_factory):
    """A local Prefect server for the session; PREFECT_API_URL points at it."""
    assert "prefect" not in sys.modules, "prefect was imported before PREFECT_API_URL was set"
    from flows.server import PrefectServer

    server = PrefectServer(port=free_port(), home=tmp_path_factory.mktemp("prefect-server")).start()
    os.environ["PREFECT_API_URL"] = server.api_url
    try:
        yield server
        _drain_prefect_workers()  # before the server goes, or the log/event workers retry at exit
    finally:
        server.stop()
        os.environ.pop("PREFECT_API_URL", None)


def _drain_prefect_workers() -> None:
    import inspect

    if "prefect" not in sys.modules:
        return
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker
    from prefect.utilities.asyncutils import run_coro_as_sync

    async def drain():
        try:
            result = APILogWorker.instance().drain()
            if inspect.isawaitable(result):
                await result
        except RuntimeError:  # never started
            pass
        result = EventsWorker.drain_all()
        if inspect.isawaitable(result):
            await result

    run_coro_as_sync(drain())


@pytest.fixture(scope="session")
def dask_scheduler():
    """One local Dask cluster (2 worker processes, 127.0.0.1) that the flow tests' training
    runs share through ``run.scheduler``, instead of starting a cluster per run."""
    from dask.distributed import LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=2, processes=True, host="127.0.0.1", dashboard_address=None)
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()
