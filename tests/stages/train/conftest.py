"""Fixtures of the train tests: Cora ingested and partitioned once, an in-process Dask
cluster reused by every test, and the full-graph PyTorch reference."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from stages.ingest import ingest
from stages.ingest.dataset import IngestedGraph
from stages.partition import partition
from stages.store import ArtifactStore
from stages.train import placement
from stages.train.reference import ReferenceGAT, ReferenceGCN, gat_edges, normalized_adjacency, train_reference


@pytest.fixture(scope="session")
def train_store(tmp_path_factory):
    return ArtifactStore.open(str(tmp_path_factory.mktemp("train-store")))


@pytest.fixture(scope="session")
def cora(datasets, train_store):
    return ingest("planetoid:cora", str(datasets / "planetoid"), store=train_store)


@pytest.fixture(scope="session")
def cora_parts(cora, train_store):
    """Partition artifacts of Cora by number of parts (made on first use)."""
    made = {}

    def get(p: int):
        if p not in made:
            made[p] = partition(cora, p, "fennel" if p > 1 else "hash", store=train_store, scheduler="inprocess")
        return made[p]

    return get


@pytest.fixture(scope="session")
def dask_inprocess():
    """Four Dask workers in this process: graph servers as threads, still wired over ZeroMQ."""
    with placement.dask_client(4, processes=False) as client:
        yield client


@pytest.fixture(scope="session")
def cora_reference(cora):
    """reference(epochs, seed=0, dropout=0.5) -> per-epoch history of the full-graph model."""
    g = IngestedGraph(cora.path())
    src, dst = g.edges()
    adj = normalized_adjacency(src, dst, g.num_nodes)
    x = torch.from_numpy(g.features().copy())
    x = x / x.sum(1, keepdim=True).clamp(min=1e-12)  # the graph servers' row normalization

    def run(epochs: int, seed: int = 0, dropout: float = 0.5, activation: str = "relu", hidden=(16,)):
        model = ReferenceGCN([g.feature_dim, *hidden, g.num_classes], activation, dropout, seed)
        history = train_reference(model, adj, x, g.labels(), g.split(0), epochs=epochs, lr=0.01, weight_decay=5e-4)
        return history, model

    run.graph = g
    run.adj = adj
    run.x = x
    return run


@pytest.fixture(scope="session")
def cora_gat_reference(cora_reference):
    """gat_reference(epochs, seed=0, dropout=0.6) -> (history, model) of the full-graph GAT
    with the default settings (8 heads of 8, ELU, lr 0.005, weight decay 5e-4)."""
    g = cora_reference.graph
    src, dst = g.edges()
    edges = gat_edges(src, dst, g.num_nodes)

    def run(epochs: int, seed: int = 0, dropout: float = 0.6):
        model = ReferenceGAT([g.feature_dim, 8, g.num_classes], heads=8, dropout=dropout, seed=seed)
        history = train_reference(model, edges, cora_reference.x, g.labels(), g.split(0), epochs=epochs, lr=0.005,
                                  weight_decay=5e-4)
        return history, model

    run.edges = edges
    run.x = cora_reference.x
    run.graph = g
    return run


def _metrics(artifact) -> list[dict]:
    return [json.loads(line) for line in (artifact.path() / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture
def read_metrics():
    return _metrics


@pytest.fixture
def losses_equal():
    """Check an artifact's per-epoch training loss against a reference history."""

    def check(artifact, history, rtol=1e-4):
        got = np.array([m["loss"] for m in _metrics(artifact)])
        want = np.array([h["loss"] for h in history])
        assert len(got) == len(want)
        np.testing.assert_allclose(got, want, rtol=rtol)

    return check
