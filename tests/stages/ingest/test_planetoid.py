"""The Planetoid source on the real Cora and Citeseer files."""

from __future__ import annotations

import os
import pickle
import shutil

import numpy as np
import pytest

from stages.errors import DorylusError
from stages.ingest import ingest
from stages.ingest.sources.planetoid import PICKLES, PlanetoidUnpickler
from stages.ingest.schema import SPLIT_NONE, SPLIT_TEST, SPLIT_TRAIN, SPLIT_VAL


def _homophily(g) -> float:
    """Share of edges between two labeled nodes of the same class."""
    src, dst = g.edges()
    y = g.labels()
    both = (y[src] >= 0) & (y[dst] >= 0)
    return float((y[src] == y[dst])[both].mean())


def _raw(folder, name, ext):
    with open(folder / f"ind.{name}.{ext}", "rb") as f:
        return PlanetoidUnpickler(f, encoding="latin1").load()


def test_cora_counts_and_standard_split(ingested, datasets):
    g = ingested("planetoid:cora", str(datasets / "planetoid"))
    assert (g.num_nodes, g.num_edges, g.feature_dim, g.num_classes) == (2708, 10556, 1433, 7)
    assert not g.meta["directed"]
    split = g.split()
    test_index = np.loadtxt(datasets / "planetoid" / "ind.cora.test.index", dtype=np.int64)
    assert np.flatnonzero(split == SPLIT_TRAIN).tolist() == list(range(140))
    assert np.flatnonzero(split == SPLIT_VAL).tolist() == list(range(140, 640))
    assert np.flatnonzero(split == SPLIT_TEST).tolist() == sorted(test_index.tolist())
    assert g.meta["split"]["counts"] == [{"none": 1068, "train": 140, "val": 500, "test": 1000}]
    assert (g.labels() >= 0).all()
    x = g.features()
    assert x.dtype == np.float32 and set(np.unique(x)) == {0.0, 1.0}  # raw binary words, not normalized


def test_cora_test_rows_follow_test_index_order(ingested, datasets):
    g = ingested("planetoid:cora", str(datasets / "planetoid"))
    folder = datasets / "planetoid"
    tx, ty = _raw(folder, "cora", "tx"), _raw(folder, "cora", "ty")
    order = np.loadtxt(folder / "ind.cora.test.index", dtype=np.int64)
    # row i of tx/ty is node test.index[i], in the file's (unsorted) order
    assert not (np.diff(order) > 0).all()
    np.testing.assert_array_equal(g.features()[order], tx.toarray())
    np.testing.assert_array_equal(g.labels()[order], ty.argmax(axis=1))
    # and the placement makes sense as a graph: Cora's published edge homophily is 0.81,
    # and a mis-placed test block would pull the test nodes' share far below it
    assert round(_homophily(g), 2) == 0.81
    src, dst = g.edges()
    y, test = g.labels(), g.split() == SPLIT_TEST
    assert (y[src] == y[dst])[test[src]].mean() > 0.75


def test_citeseer_missing_test_rows_are_unlabeled_and_in_no_split(ingested, datasets):
    g = ingested("planetoid:citeseer", str(datasets / "planetoid"))
    # PyG's Citeseer: 3327 nodes, 9104 directed edges (4552 undirected) after dropping
    # self loops and duplicates
    assert (g.num_nodes, g.num_edges, g.feature_dim, g.num_classes) == (3327, 9104, 3703, 6)
    assert g.meta["self_loops"]["in_source"] > 0
    assert g.meta["split"]["counts"] == [{"none": 1707, "train": 120, "val": 500, "test": 1000}]
    missing = np.flatnonzero(g.labels() == -1)
    assert len(missing) == 15 == g.meta["notes"]["test_nodes_without_rows"]
    assert (g.features()[missing] == 0).all()
    assert (g.split()[missing] == SPLIT_NONE).all()
    test_index = np.loadtxt(datasets / "planetoid" / "ind.citeseer.test.index", dtype=np.int64)
    assert not np.isin(missing, test_index).any()
    assert round(_homophily(g), 2) == 0.74  # published: 0.74


def test_pubmed_name_and_newer_pickles(tmp_path, datasets, store):
    """Pubmed is not in the shared folder: Cora's objects re-pickled by this Python under
    the name pubmed take the same path, and use the current numpy/scipy module names."""
    for ext in PICKLES:
        obj = _raw(datasets / "planetoid", "cora", ext)
        # protocol 4: numpy arrays pickle through _reconstruct under numpy 2's module names
        (tmp_path / f"ind.pubmed.{ext}").write_bytes(pickle.dumps(obj, protocol=4))
    shutil.copy(datasets / "planetoid" / "ind.cora.test.index", tmp_path / "ind.pubmed.test.index")
    art = ingest("planetoid:pubmed", str(tmp_path), store=store)
    assert (art.summary["name"], art.summary["num_nodes"], art.summary["num_edges"]) == ("pubmed", 2708, 10556)


class _Exploit:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("payload", ["exploit", "ordered_dict"])
def test_unpickler_refuses_other_classes(tmp_path, datasets, store, assert_nothing_written, payload):
    import collections

    for f in (datasets / "planetoid").glob("ind.cora.*"):
        shutil.copy(f, tmp_path / f.name)
    marker = tmp_path / "pwned"
    obj = _Exploit(marker) if payload == "exploit" else collections.OrderedDict({0: [1]})
    (tmp_path / "ind.cora.graph").write_bytes(pickle.dumps(obj, protocol=2))
    with pytest.raises(DorylusError, match="refusing to unpickle"):
        ingest("planetoid:cora", str(tmp_path), store=store)
    assert not marker.exists()
    assert_nothing_written(store)


def test_truncated_pickle(tmp_path, datasets, store, assert_nothing_written):
    for f in (datasets / "planetoid").glob("ind.cora.*"):
        shutil.copy(f, tmp_path / f.name)
    data = (datasets / "planetoid" / "ind.cora.allx").read_bytes()
    (tmp_path / "ind.cora.allx").write_bytes(data[: len(data) // 2])
    with pytest.raises(DorylusError, match=r"ind\.cora\.allx.*truncated"):
        ingest("planetoid:cora", str(tmp_path), store=store)
    assert_nothing_written(store)


def test_mismatched_files(tmp_path, datasets, store, assert_nothing_written):
    for f in (datasets / "planetoid").glob("ind.cora.*"):
        shutil.copy(f, tmp_path / f.name)
    shutil.copy(datasets / "planetoid" / "ind.citeseer.ty", tmp_path / "ind.cora.ty")
    with pytest.raises(DorylusError, match="class counts"):
        ingest("planetoid:cora", str(tmp_path), store=store)
    assert_nothing_written(store)


def test_needs_root_and_a_known_name(datasets, store):
    with pytest.raises(DorylusError, match="--root"):
        ingest("planetoid:cora", None, store=store)
    with pytest.raises(DorylusError, match="cora, citeseer, pubmed"):
        ingest("planetoid:nell", str(datasets / "planetoid"), store=store)
    with pytest.raises(DorylusError, match=r"ind\.cora\.x does not exist"):
        ingest("planetoid:cora", str(datasets), store=store)
