"""The OGB source on small folders written in OGB's raw layout (as ogbn-arxiv unpacks)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from stages.errors import DorylusError
from stages.ingest import ingest
from stages.ingest.dataset import IngestedGraph
from stages.ingest.schema import SPLIT_NONE, SPLIT_TEST, SPLIT_TRAIN, SPLIT_VAL

EDGES = [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3), (1, 4)]
FEATURES = [[0.5, -1.0], [-0.25, 0.0], [1e-3, 3.0], [2.0, 2.0], [-.5, .75], [0.0, -2.5]]


def _gz(path: Path, lines) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        f.write("".join(f"{line}\n" for line in lines))


def write_ogb(folder: Path, split="time", labels=("3", "0", "1", "nan", "2", "0"), features=True, num_nodes=6):
    _gz(folder / "raw/edge.csv.gz", [f"{a},{b}" for a, b in EDGES])
    if features:
        _gz(folder / "raw/node-feat.csv.gz", [",".join(repr(v) for v in row) for row in FEATURES])
    _gz(folder / "raw/node-label.csv.gz", labels)
    if num_nodes is not None:
        _gz(folder / "raw/num-node-list.csv.gz", [num_nodes])
    _gz(folder / "raw/num-edge-list.csv.gz", [len(EDGES)])  # present in OGB downloads, not needed
    for part, ids in (("train", [0, 1, 2]), ("valid", [3]), ("test", [4])):
        _gz(folder / f"split/{split}/{part}.csv.gz", ids)
    return folder


def test_arxiv_layout(tmp_path, store):
    folder = write_ogb(tmp_path / "ogbn_arxiv")
    g = IngestedGraph(ingest("ogb:ogbn_arxiv", str(tmp_path), store=store).path())
    assert (g.num_nodes, g.num_edges, g.feature_dim, g.num_classes) == (6, 7, 2, 4)
    assert g.meta["directed"] is True and g.meta["notes"]["edges"] == "directed as stored"
    src, dst = g.edges()
    assert sorted(zip(src.tolist(), dst.tolist())) == sorted(EDGES)
    np.testing.assert_allclose(g.features(), FEATURES)
    np.testing.assert_array_equal(g.labels(), [3, 0, 1, -1, 2, 0])  # nan: unlabeled
    np.testing.assert_array_equal(g.split(), [SPLIT_TRAIN] * 3 + [SPLIT_VAL, SPLIT_TEST, SPLIT_NONE])
    assert g.meta["split"]["definition"].startswith("OGB's split/time")
    assert "ogbn_arxiv/split/time/train.csv.gz" in g.meta["source_files"]
    assert folder.is_dir()


def test_unknown_dataset_finds_its_only_split_and_user_undirected(tmp_path, store):
    write_ogb(tmp_path / "my_graph", split="random", num_nodes=None)
    g = IngestedGraph(ingest(f"ogb:{tmp_path / 'my_graph'}", store=store, undirected=True).path())
    assert g.num_nodes == 6 and g.num_edges == 14 and g.meta["directed"] is False
    assert "split/random" in g.meta["split"]["definition"]


def test_products_stores_each_edge_once(tmp_path, store):
    write_ogb(tmp_path / "ogbn_products", split="sales_ranking")
    g = IngestedGraph(ingest(f"ogb:{tmp_path / 'ogbn_products'}", store=store).path())
    assert g.meta["directed"] is False and g.num_edges == 14


def test_no_node_features(tmp_path, store):
    write_ogb(tmp_path / "plain", features=False)
    g = IngestedGraph(ingest(f"ogb:{tmp_path / 'plain'}", store=store).path())
    assert g.feature_dim == 1 and g.meta["features"].startswith("none in source")


@pytest.mark.parametrize("change, message", [
    (dict(labels=("0", "1", "2")), "node-label.csv.gz has 3 rows but the graph has 6 nodes"),
    (dict(labels=("0", "1", "2", "0", "1", "0.5")), "labels must be non-negative integers"),
    (dict(labels=("0,1",) * 6), "multi-label"),
    (dict(num_nodes=4), "node-label.csv.gz has 6 rows but the graph has 4 nodes"),
])
def test_inconsistent_files(tmp_path, store, assert_nothing_written, change, message):
    write_ogb(tmp_path / "bad", **change)
    with pytest.raises(DorylusError, match=message):
        ingest(f"ogb:{tmp_path / 'bad'}", store=store)
    assert_nothing_written(store)


def test_edge_beyond_node_count(tmp_path, store):
    folder = write_ogb(tmp_path / "bad")
    _gz(folder / "raw/edge.csv.gz", ["0,1", "1,9"])
    with pytest.raises(DorylusError, match="edge endpoint 9 is out of range"):
        ingest(f"ogb:{folder}", store=store)


def test_split_choice(tmp_path, store):
    folder = write_ogb(tmp_path / "two", split="a")
    write_ogb(folder, split="b")
    with pytest.raises(DorylusError, match="found a, b"):
        ingest(f"ogb:{folder}", store=store)
    g = IngestedGraph(ingest(f"ogb:{folder}", store=store, options={"split": "b"}).path())
    assert "split/b" in g.meta["split"]["definition"]
    with pytest.raises(DorylusError, match="does not exist"):
        ingest(f"ogb:{folder}", store=store, options={"split": "c"})


def test_missing_split_file(tmp_path, store):
    folder = write_ogb(tmp_path / "ogbn_arxiv")
    (folder / "split/time/valid.csv.gz").unlink()
    with pytest.raises(DorylusError, match="valid.csv.gz does not exist"):
        ingest(f"ogb:{folder}", store=store)
