"""The npz source on the real heterophilous and nettack archives, and on bad archives."""

from __future__ import annotations

import numpy as np
import pytest

from stages.errors import DorylusError
from stages.ingest import ingest
from stages.ingest.schema import SPLIT_TEST, SPLIT_TRAIN, SPLIT_VAL


def test_tolokers_ten_splits(ingested, datasets):
    g = ingested("npz:heterophilous/tolokers.npz")
    assert (g.num_nodes, g.num_edges, g.feature_dim, g.num_classes) == (11758, 2 * 519000, 10, 2)
    assert g.meta["split"]["num_splits"] == 10
    with np.load(datasets / "heterophilous" / "tolokers.npz") as raw:
        np.testing.assert_array_equal(g.labels(), raw["node_labels"])
        np.testing.assert_array_equal(g.features(), raw["node_features"])
        for k in (0, 9):
            s = g.split(k)
            np.testing.assert_array_equal(s == SPLIT_TRAIN, raw["train_masks"][k])
            np.testing.assert_array_equal(s == SPLIT_VAL, raw["val_masks"][k])
            np.testing.assert_array_equal(s == SPLIT_TEST, raw["test_masks"][k])
    assert not np.array_equal(g.split(0), g.split(1))
    with pytest.raises(DorylusError, match="10 split"):
        g.split(10)


@pytest.mark.parametrize("name, nodes, undirected_edges, features, classes", [
    ("squirrel", 5201, 198353, 2089, 5),
    ("actor", 7600, 26659, 932, 5),
])
def test_heterophilous_counts(ingested, name, nodes, undirected_edges, features, classes):
    g = ingested(f"npz:heterophilous/{name}.npz")
    assert (g.num_nodes, g.num_edges, g.feature_dim, g.num_classes) == (nodes, 2 * undirected_edges, features, classes)
    assert g.meta["split"]["num_splits"] == 10


def test_nettack_cora_ml(ingested):
    g = ingested("npz:nettack/cora_ml.npz")
    # 8,158 undirected edges once the stored (asymmetric) adjacency is symmetrized
    assert (g.num_nodes, g.num_edges, g.feature_dim, g.num_classes) == (2995, 2 * 8158, 2879, 7)
    assert g.meta["split"]["definition"].startswith("none in source")
    assert (g.split() == 0).all()


def test_truncated_archive(tmp_path, datasets, store, assert_nothing_written):
    data = (datasets / "heterophilous" / "actor.npz").read_bytes()
    (tmp_path / "actor.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(DorylusError, match="truncated"):
        ingest("npz:actor.npz", str(tmp_path), store=store)
    assert_nothing_written(store)


NAN = np.array([[0, 1], [2, 3], [4, np.nan], [6, 7], [8, 9], [10, 11]], dtype=np.float32)
INF = np.where(np.isnan(NAN), np.inf, NAN)


@pytest.mark.parametrize("overrides, match", [
    (dict(node_labels=np.array([0, 1, 0, 1, 2])), r"labels have shape \(5,\), expected \(6,\)"),
    (dict(edges=np.array([0, 1, 1, 2])), r"'edges' has shape \(4,\), expected \(E, 2\)"),
    (dict(edges=np.array([[0, 1], [1, 6]])), "edge endpoint 6 is out of range"),
    (dict(edges=np.array([[0, 1], [-1, 2]])), "edge endpoint -1 is out of range"),
    (dict(edges=np.array([[0.0, 1.0]])), "must be integers"),
    (dict(node_features=NAN), "node 2, column 1 is nan"),
    (dict(node_features=INF), "node 2, column 1 is inf"),
    (dict(node_labels=np.array([0, 1, 0, 1, 2, -3])), "label -3 of node 5 is outside the class range"),
    (dict(val_masks=np.array([[0, 1, 1, 1, 0, 0]], dtype=bool)), "the split overlaps"),
    (dict(node_features=np.zeros((0, 2), np.float32), node_labels=np.zeros(0, np.int64), edges=np.zeros((0, 2), np.int64),
          train_masks=np.zeros((1, 0), bool), val_masks=np.zeros((1, 0), bool), test_masks=np.zeros((1, 0), bool)), "empty"),
    (dict(edges=np.array([[1, 1], [2, 2]])), "no edges after cleaning"),
    (dict(test_masks=None), "lacks test_masks"),
    (dict(edges=None), "unknown npz layout"),
])
def test_bad_archives(make_npz, store, assert_nothing_written, overrides, match):
    path = make_npz("bad", **overrides)
    with pytest.raises(DorylusError, match=match):
        ingest("npz:bad.npz", str(path.parent), store=store)
    assert_nothing_written(store)


def test_bad_nettack_parts(tmp_path, store, assert_nothing_written):
    np.savez(
        tmp_path / "net.npz",
        adj_data=np.ones(2, np.float32), adj_indices=np.array([1, 5]), adj_indptr=np.array([0, 1, 2]), adj_shape=np.array([2, 2]),
        attr_data=np.ones(1, np.float32), attr_indices=np.array([0]), attr_indptr=np.array([0, 1, 1]), attr_shape=np.array([2, 1]),
        labels=np.array([0, 1]),
    )
    with pytest.raises(DorylusError, match="adj_\\* arrays do not form a valid CSR"):
        ingest("npz:net.npz", str(tmp_path), store=store)
    assert_nothing_written(store)


def test_pickled_object_arrays_are_refused(tmp_path, store, assert_nothing_written):
    np.savez(tmp_path / "obj.npz", node_features=np.array([{"a": 1}], dtype=object), edges=np.zeros((1, 2), np.int64))
    with pytest.raises(DorylusError, match="not a readable .npz"):
        ingest("npz:obj.npz", str(tmp_path), store=store)
    assert_nothing_written(store)
