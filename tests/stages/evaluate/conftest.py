"""Real artifacts for the evaluate tests: Cora, ingested once, and trainers run on it once."""

from __future__ import annotations

import pytest

from stages.store import ArtifactStore


@pytest.fixture(scope="session")
def eval_store(tmp_path_factory) -> ArtifactStore:
    return ArtifactStore.open(str(tmp_path_factory.mktemp("evaluate-store")))


@pytest.fixture(scope="session")
def cora(datasets, eval_store):
    from stages.ingest import ingest

    return ingest("planetoid:cora", str(datasets / "planetoid"), store=eval_store)


@pytest.fixture(scope="session")
def sage_run(cora, eval_store):
    """A real run of the sampling baseline on Cora (it writes the train artifact format)."""
    from stages.evaluate.sage_baseline import sage_baseline

    return sage_baseline(cora, {"epochs": 6, "hidden": 32, "lr": 0.01}, store=eval_store)


@pytest.fixture(scope="session")
def dorylus_run(cora, eval_store):
    """A real run of the train stage on Cora: 2 graph servers, tensor tasks in local
    worker processes (the Lambda handler), 3 epochs."""
    from stages.partition import partition
    from stages.train import TrainConfig, train

    parts = partition(cora, 2, "hash", store=eval_store)
    return train(parts, TrainConfig(epochs=3, backend="local", num_workers=1, intervals_per_server=2), store=eval_store)
