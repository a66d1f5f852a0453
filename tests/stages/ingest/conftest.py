"""Fixtures for the ingest tests: real datasets ingested once per session, small npz
archives built on the spot, and a check that a failed ingest left nothing behind."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest


@pytest.fixture(scope="session")
def ingested(datasets, tmp_path_factory):
    """``ingested(spec, **kwargs)`` -> the ``IngestedGraph`` of a real dataset, ingested
    once per session into a private store (root: the shared datasets folder)."""
    from stages.ingest import ingest
    from stages.ingest.dataset import IngestedGraph
    from stages.store import ArtifactStore

    store = ArtifactStore.open(str(tmp_path_factory.mktemp("real-store")))
    done: dict = {}

    def get(spec: str, root: str | None = None, **kwargs) -> IngestedGraph:
        key = (spec, root, tuple(sorted(kwargs.items())))
        if key not in done:
            artifact = ingest(spec, root or str(datasets), store=store, **kwargs)
            done[key] = IngestedGraph(artifact.path())
        return done[key]

    return get


@pytest.fixture
def make_npz(tmp_path):
    """``make_npz(name, **arrays)`` writes a small heterophilous-layout archive (6 nodes,
    a path graph, one split); keyword arrays replace or (as None) remove its entries."""

    def make(name: str = "small", **overrides) -> Path:
        arrays = {
            "node_features": np.arange(12, dtype=np.float32).reshape(6, 2),
            "node_labels": np.array([0, 1, 0, 1, 2, 2]),
            "edges": np.array([[0, 1], [1, 2], [2, 3], [3, 4], [4, 5]]),
            "train_masks": np.array([[1, 1, 0, 0, 0, 0]], dtype=bool),
            "val_masks": np.array([[0, 0, 1, 1, 0, 0]], dtype=bool),
            "test_masks": np.array([[0, 0, 0, 0, 1, 1]], dtype=bool),
        }
        arrays.update(overrides)
        path = tmp_path / f"{name}.npz"
        np.savez(path, **{k: v for k, v in arrays.items() if v is not None})
        return path

    return make


@pytest.fixture
def assert_nothing_written():
    """Checks that a store holds no artifact and no staging or spill folder."""

    def check(store) -> None:
        root = Path(store.uri)
        leftovers = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() or p.name.startswith("."))
        assert leftovers == [], f"a failed ingest left {leftovers}"
        assert store.find("") == []

    return check
