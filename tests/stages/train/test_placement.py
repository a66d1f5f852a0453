"""Graph and parameter servers on a Dask cluster started as separate processes."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from stages.train import TrainConfig, train

REPO_CONFTEST = Path(__file__).resolve().parents[2] / "conftest.py"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def external_scheduler(tmp_path_factory):
    """`dask scheduler` and two `dask worker` processes on 127.0.0.1; yields the address."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    scratch = tmp_path_factory.mktemp("dask")
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    procs = [subprocess.Popen([*dask, "--host", "127.0.0.1", "--port", str(port), "--dashboard-address", "127.0.0.1:0"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        for _ in range(2):
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "2", "--host", "127.0.0.1",
                 "--no-dashboard", "--local-directory", str(scratch)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from dask.distributed import Client

        deadline = time.monotonic() + 90
        with Client(address, timeout=60) as client:
            while len(client.scheduler_info()["workers"]) < 2:
                if time.monotonic() > deadline:
                    raise RuntimeError("dask workers did not register")
                time.sleep(0.2)
        yield address
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def test_training_on_an_external_dask_cluster(external_scheduler, cora_parts, cora_reference, train_store, losses_equal):
    history, _ = cora_reference(5)
    art = train(cora_parts(3), TrainConfig(epochs=5, intervals_per_server=2), store=train_store,
                scheduler=external_scheduler, force=True)
    losses_equal(art, history)


def test_unreachable_scheduler_is_a_user_error(cora_parts, train_store, monkeypatch):
    from stages.errors import DorylusError
    from stages.train import placement

    monkeypatch.setattr(placement, "CONNECT_TIMEOUT_S", 2)
    port = _free_port()
    with pytest.raises(DorylusError, match="cannot reach the Dask scheduler"):
        train(cora_parts(1), TrainConfig(epochs=1), store=train_store, scheduler=f"tcp://127.0.0.1:{port}", force=True)
