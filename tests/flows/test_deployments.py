"""Schedules for real: a local Prefect server on 127.0.0.1, `dorylus serve` registering the
cron deployment, and a triggered run of the end-to-end flow that completes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest


TINY = """
[ingest]
source = "synthetic:nodes=600,avg_degree=6,features=8,classes=3,homophily=0.8,seed=5"
[partition]
parts = 2
method = "hash"
[train]
epochs = 3
backend = "cpu"
staleness = "sync"
[evaluate]
target_accuracy = 0.5
"""


def _dorylus() -> str:
    return shutil.which("dorylus", path=str(Path(sys.executable).parent)) or "dorylus"


def test_serve_needs_a_server(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    proc = subprocess.run([_dorylus(), "serve"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "prefect server start" in proc.stderr and "Traceback" not in proc.stderr


def test_cron_deployment_is_registered_and_a_triggered_run_completes(prefect_api, dask_scheduler, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.deployments import run_deployment

    config = tmp_path / "tiny.toml"
    config.write_text(TINY + f'[run]\nscheduler = "{dask_scheduler}"\n')
    store = tmp_path / "store"
    env = {**os.environ, "PREFECT_API_URL": prefect_api.api_url}
    log = open(tmp_path / "serve.log", "wb")
    serve = subprocess.Popen(
        [_dorylus(), "serve", str(config), "--cron", "*/30 * * * *", "--store", str(store)],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        # this process talks to the same server (PREFECT_API_URL)
        with get_client(sync_client=True) as client:
            deadline = time.monotonic() + 120
            while True:
                try:
                    deployment = client.read_deployment_by_name("end-to-end/scheduled")
                    break
                except Exception:
                    assert serve.poll() is None, (tmp_path / "serve.log").read_text()
                    assert time.monotonic() < deadline, "the deployment was never registered"
                    time.sleep(1)
            crons = [s.schedule.cron for s in deployment.schedules if s.active]
            assert crons == ["*/30 * * * *"]
            assert deployment.parameters["config"]["train"]["epochs"] == 3
            run = run_deployment("end-to-end/scheduled", timeout=300, poll_interval=2)
            assert run.state.is_completed(), (tmp_path / "serve.log").read_text()[-3000:]
        assert len(list((store / "evaluate").glob("*/report.md"))) == 1  # the run wrote its report
    finally:
        os.killpg(serve.pid, signal.SIGINT)
        try:
            serve.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(serve.pid, signal.SIGKILL)
            serve.wait(timeout=10)
        log.close()
