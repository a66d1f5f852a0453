"""GAT through the distributed pipeline (AV, AE, GA and their backward as Dorylus tasks)
against the plain full-graph PyTorch GAT, and its accuracy on Cora."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from stages.train import TrainConfig, train
from stages.train.reference import ReferenceGAT

EPOCHS = 20


@pytest.mark.parametrize("backend", ["cpu", "local"])
@pytest.mark.parametrize("parts", [1, 3])
def test_sync_gat_loss_equals_full_graph_pytorch(parts, backend, cora_parts, cora_gat_reference, dask_inprocess, train_store,
                                                 losses_equal, read_metrics):
    history, model = cora_gat_reference(EPOCHS)
    cfg = TrainConfig(model="gat", epochs=EPOCHS, backend=backend, intervals_per_server=3, num_workers=2)
    art = train(cora_parts(parts), cfg, store=train_store, client=dask_inprocess, force=True)
    losses_equal(art, history)
    weights = torch.load(art.path() / "weights.pt", weights_only=True)
    assert set(weights) == set(model.state_dict())
    for name, value in model.state_dict().items():
        np.testing.assert_allclose(weights[name].numpy(), value.numpy(), rtol=1e-3, atol=1e-5)
    rows = read_metrics(art)
    for row, ref in zip(rows, history):
        assert abs(row["val_acc"] - ref["val_acc"]) < 1e-6 and abs(row["test_acc"] - ref["test_acc"]) < 1e-6
    # every interval runs AV, AE, GA and their backward once per layer; the loss task counts as AV
    k = 3 * parts
    for row in rows:
        c = row["task_count"]
        assert (c["AV"], c["AE"], c["GA"], c["AV_b"], c["AE_b"], c["GA_b"]) == (3 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k)
        assert row["task_time"]["AE"] > 0 and row["task_time"]["AE_b"] > 0 and c["WU"] == 2
