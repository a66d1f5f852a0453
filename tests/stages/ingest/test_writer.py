"""``write_dataset``: cleaning options, part files, the Parquet schema, and validation."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from stages.errors import DorylusError
from stages.ingest import writer
from stages.ingest.dataset import IngestedGraph
from stages.ingest.schema import GraphSource, id_type
from stages.ingest.writer import CleanOptions, write_dataset

# 0-1 twice (once per direction), 1-2, a self loop on 3, and 2-3
SRC = np.array([0, 1, 1, 3, 3, 2])
DST = np.array([1, 0, 2, 3, 2, 3])


def _source(n=4, src=SRC, dst=DST, undirected=True, chunks=1, **kw) -> GraphSource:
    fields = dict(
        name="toy",
        num_nodes=n,
        edge_chunks=lambda: zip(np.array_split(np.asarray(src), chunks), np.array_split(np.asarray(dst), chunks)),
        features=np.arange(n * 3, dtype=np.float64).reshape(n, 3),
        labels=np.arange(n) % 2,
        num_classes=2,
        undirected=undirected,
    )
    fields.update(kw)
    return GraphSource(**fields)


def _pairs(folder) -> list[tuple[int, int]]:
    src, dst = IngestedGraph(folder).edges()
    return list(zip(src.tolist(), dst.tolist()))


@pytest.mark.parametrize("options, pairs, loops, removed", [
    # undirected source: reverse edges added, duplicates and the self loop dropped
    (CleanOptions(), [(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2)], 1, 4),
    (CleanOptions(self_loops="keep"), [(0, 1), (1, 0), (1, 2), (2, 1), (2, 3), (3, 2), (3, 3)], 1, 4),
    # --directed: the edges exactly as listed (still deduplicated and loop-free)
    (CleanOptions(undirected=False), [(0, 1), (1, 0), (1, 2), (2, 3), (3, 2)], 1, 0),
    (CleanOptions(undirected=False, dedupe=False, self_loops="keep"), [(0, 1), (1, 0), (1, 2), (2, 3), (3, 2), (3, 3)], 1, 0),
    # --keep-duplicates: 0-1 listed in both directions, so each direction twice
    (CleanOptions(dedupe=False), [(0, 1), (0, 1), (1, 0), (1, 0), (1, 2), (2, 1), (2, 3), (2, 3), (3, 2), (3, 2)], 1, 0),
])
def test_clean_options(tmp_path, options, pairs, loops, removed):
    meta = write_dataset(_source(chunks=2), tmp_path / "out", options)
    assert _pairs(tmp_path / "out") == pairs
    assert meta["num_edges"] == len(pairs)
    assert meta["edges_in_source"] == len(SRC)
    assert meta["self_loops"] == {"in_source": loops, "policy": options.self_loops}
    assert meta["duplicates_removed"] == removed
    assert meta["dedupe"] == options.dedupe
    assert meta["directed"] is (options.undirected is False)
    assert json.loads((tmp_path / "out" / "metadata.json").read_text()) == meta


def test_undirected_flag_on_a_directed_source(tmp_path):
    meta = write_dataset(_source(src=[0, 2], dst=[1, 3], undirected=False), tmp_path / "d", CleanOptions())
    assert _pairs(tmp_path / "d") == [(0, 1), (2, 3)] and meta["directed"]
    meta = write_dataset(_source(src=[0, 2], dst=[1, 3], undirected=False), tmp_path / "u", CleanOptions(undirected=True))
    assert _pairs(tmp_path / "u") == [(0, 1), (1, 0), (2, 3), (3, 2)] and not meta["directed"]


def test_parts_cover_disjoint_increasing_source_ranges(tmp_path, monkeypatch):
    monkeypatch.setattr(writer, "NODES_PER_BUCKET", 100)  # many parts from a small graph
    rng = np.random.default_rng(0)
    n, m = 1000, 20000
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    meta = write_dataset(_source(n=n, src=src, dst=dst, chunks=7), tmp_path / "out", CleanOptions())
    parts = meta["edge_parts"]
    assert len(parts) == 10
    assert all(a["src_max"] < b["src_min"] for a, b in zip(parts, parts[1:]))

    keys = np.concatenate([src * n + dst, dst * n + src])
    keys = np.unique(keys[np.tile(src != dst, 2)])  # the expected clean edge set, sorted
    g = IngestedGraph(tmp_path / "out")
    s, d = g.edges()
    np.testing.assert_array_equal(s.astype(np.int64) * n + d, keys)
    assert meta["num_edges"] == len(keys) == sum(p["rows"] for p in parts)
    for part in parts:
        t = pq.read_table(tmp_path / "out" / part["file"])
        assert t.num_rows == part["rows"]
        assert (pc.min(t["src"]).as_py(), pc.max(t["src"]).as_py()) == (part["src_min"], part["src_max"])


def test_parquet_schema(tmp_path):
    splits = [np.array([1, 2, 3, 0], np.int8), np.array([3, 2, 1, 0], np.int8)]
    write_dataset(_source(splits=splits), tmp_path / "out", CleanOptions())
    edges = pq.read_schema(tmp_path / "out" / "edges" / "part-00000.parquet")
    assert edges.types == [pa.int32(), pa.int32()] and edges.names == ["src", "dst"]
    nodes = pq.read_schema(tmp_path / "out" / "nodes.parquet")
    assert nodes.names == ["node_id", "features", "label", "split", "split_1"]
    assert nodes.field("node_id").type == pa.int32()
    assert nodes.field("features").type == pa.list_(pa.float32(), 3)  # fixed_size_list<float32>[3]
    assert nodes.field("label").type == pa.int32()
    assert nodes.field("split").type == nodes.field("split_1").type == pa.int8()
    table = pq.read_table(tmp_path / "out" / "nodes.parquet")
    assert table["node_id"].to_pylist() == [0, 1, 2, 3]
    assert table["split_1"].to_pylist() == [3, 2, 1, 0]
    assert id_type(2**31 - 1) == pa.int32() and id_type(2**31) == pa.int64()


def test_no_features_and_no_labels(tmp_path):
    meta = write_dataset(_source(features=None, labels=None, num_classes=0), tmp_path / "out", CleanOptions())
    g = IngestedGraph(tmp_path / "out")
    assert g.feature_dim == 1 and g.features().tolist() == [[1.0]] * 4
    assert g.labels().tolist() == [-1] * 4 and meta["labeled_nodes"] == 0
    assert meta["features"].startswith("none in source")
    assert meta["split"]["definition"] == "none" and g.split().tolist() == [0] * 4


@pytest.mark.parametrize("change, match", [
    (dict(num_nodes=0, features=None, labels=None), "empty"),
    (dict(features=np.ones((3, 3))), r"features have shape \(3, 3\), expected \(4, F\)"),
    (dict(features=np.ones((4, 0))), "zero columns"),
    (dict(features=np.array([[0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, -np.inf]])), "node 3, column 2 is -inf"),
    (dict(labels=np.array([0.0, 1.0, 0.0, 1.0])), "labels must be integers"),
    (dict(labels=np.array([0, 1, 2, 1])), "label 2 of node 2 is outside the class range 0..1"),
    (dict(labels=np.array([0, 1])), r"labels have shape \(2,\)"),
    (dict(splits=[np.array([0, 1, 4, 0])]), "codes outside 0..3"),
    (dict(splits=[np.array([0, 1, 2])]), r"split 0 has shape \(3,\)"),
    (dict(src=[0, 1], dst=[1, 4]), "edge endpoint 4 is out of range"),
    (dict(src=[0.5], dst=[1.0]), "must be integers"),
    (dict(src=[3, 3], dst=[3, 3]), "no edges after cleaning"),
])
def test_validation(tmp_path, change, match):
    with pytest.raises(DorylusError, match=match):
        write_dataset(_source(**change), tmp_path / "out", CleanOptions())


def test_mismatched_chunk(tmp_path):
    source = _source(edge_chunks=lambda: iter([(np.array([0, 1]), np.array([1]))]))
    with pytest.raises(DorylusError, match="mismatched src/dst shapes"):
        write_dataset(source, tmp_path / "out", CleanOptions())


def test_bad_self_loop_policy():
    with pytest.raises(DorylusError, match="'drop' or 'keep'"):
        CleanOptions(self_loops="merge")
