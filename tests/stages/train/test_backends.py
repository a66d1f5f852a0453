"""Relaunch of hung and killed tensor tasks on the local backend (first result wins)."""

from __future__ import annotations

import json

from stages.train import TrainConfig, train

EPOCHS = 4


def test_hung_and_killed_worker_tasks_are_relaunched(cora_parts, cora_reference, dask_inprocess, train_store, losses_equal):
    history, _ = cora_reference(EPOCHS)
    faults = (
        {"type": "AV_b", "epoch": 2, "layer": 0, "interval": 1, "kind": "hang"},  # sleeps for an hour
        {"type": "FUSED", "epoch": 3, "layer": 1, "interval": 0, "kind": "kill"},  # the process dies
    )
    cfg = TrainConfig(epochs=EPOCHS, backend="local", intervals_per_server=2, num_workers=2, relaunch_min_s=1.0, faults=faults)
    art = train(cora_parts(3), cfg, store=train_store, client=dask_inprocess, force=True)
    summary = json.loads((art.path() / "summary.json").read_text())
    # each fault matches one interval on each of the 3 graph servers
    assert summary["relaunched_tasks"] >= 6
    losses_equal(art, history)  # the same result as without the faults
