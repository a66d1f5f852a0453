"""Relaunch of hung and killed tensor tasks on the local backend (first result wins)."""

from __future__ import annotations

import json

import pytest

from stages.train import TrainConfig, train

EPOCHS = 4


@pytest.mark.parametrize("kind", ["hang", "kill"])
def test_faulty_worker_task_is_relaunched(kind, cora_parts, cora_reference, dask_inprocess, train_store, losses_equal):
    history, _ = cora_reference(EPOCHS)
    fault = {"type": "AV_b", "epoch": 2, "layer": 0, "interval": 1, "kind": kind}
    cfg = TrainConfig(epochs=EPOCHS, backend="local", intervals_per_server=2, num_workers=2, relaunch_min_s=1.0,
                      faults=(fault,))
    art = train(cora_parts(3), cfg, store=train_store, client=dask_inprocess, force=True)
    summary = json.loads((art.path() / "summary.json").read_text())
    # one interval on each of the 3 graph servers matches the fault
    assert summary["relaunched_tasks"] >= 3
    losses_equal(art, history)  # the same result as without the fault
