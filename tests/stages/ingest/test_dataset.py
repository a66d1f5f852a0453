"""``IngestedGraph``: reading an ingest artifact back."""

from __future__ import annotations

import numpy as np
import pytest

from stages.errors import DorylusError
from stages.ingest import writer
from stages.ingest.dataset import IngestedGraph
from stages.ingest.schema import GraphSource
from stages.ingest.writer import CleanOptions, write_dataset


@pytest.fixture
def written(tmp_path, monkeypatch):
    """A graph of 70,000 nodes (two node row groups) in 3 edge parts, and what went in."""
    monkeypatch.setattr(writer, "NODES_PER_BUCKET", 25_000)
    rng = np.random.default_rng(1)
    n = 70_000
    src = rng.integers(0, n, 50_000)
    dst = (src + rng.integers(1, 50, len(src))) % n  # no self loops
    x = rng.standard_normal((n, 2)).astype(np.float32)
    y = rng.integers(-1, 3, n)
    splits = [rng.integers(0, 4, n).astype(np.int8) for _ in range(3)]
    source = GraphSource("rand", n, lambda: iter([(src, dst)]), x, y, 3, splits=splits, split_definition="3 random")
    write_dataset(source, tmp_path / "g", CleanOptions(undirected=False, dedupe=False))
    return tmp_path / "g", src, dst, x, y, splits


def test_reads_back_what_was_written(written):
    folder, src, dst, x, y, splits = written
    g = IngestedGraph(folder)
    assert (g.num_nodes, g.feature_dim, g.num_classes) == (70_000, 2, 3)
    assert len(g.edge_files()) == 3 and all(p.is_file() for p in g.edge_files())
    order = np.lexsort((dst, src))
    s, d = g.edges()
    np.testing.assert_array_equal(s, src[order])
    np.testing.assert_array_equal(d, dst[order])
    assert g.num_edges == len(s)
    features = g.features()
    assert features.dtype == np.float32 and features.shape == (70_000, 2)
    np.testing.assert_array_equal(features, x)
    np.testing.assert_array_equal(g.labels(), y)
    for k in range(3):
        np.testing.assert_array_equal(g.split(k), splits[k])


def test_iter_edges_streams_in_order(written):
    folder = written[0]
    g = IngestedGraph(folder)
    batches = list(g.iter_edges(batch_rows=4096))
    assert max(len(s) for s, _ in batches) <= 4096
    assert len(batches) > len(g.edge_files())
    s, d = g.edges()
    np.testing.assert_array_equal(np.concatenate([b[0] for b in batches]), s)
    np.testing.assert_array_equal(np.concatenate([b[1] for b in batches]), d)


def test_missing_split_and_not_an_artifact(written, tmp_path):
    g = IngestedGraph(written[0])
    with pytest.raises(DorylusError, match="split 3 does not exist: this dataset has 3 split"):
        g.split(3)
    with pytest.raises(DorylusError, match="not an ingest artifact"):
        IngestedGraph(tmp_path)
