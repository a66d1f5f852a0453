"""Prefect for the flow tests: offline settings in the session's private state folder.

Prefect reads its settings when first imported, so they are put in place here, after the
session's DORYLUS_HOME exists and before any test imports prefect.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def prefect_settings(dorylus_home):
    import sys

    assert "prefect" not in sys.modules, "prefect was imported before its settings were in place"
    from flows import settings

    return settings.configure()


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
