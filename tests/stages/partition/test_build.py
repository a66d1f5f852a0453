"""The three rounds that write part folders, run directly on one graph."""

from __future__ import annotations

import json

import numpy as np

import pyarrow.parquet as pq

from stages.partition.build import build_part, gcn_weights, in_degree, spill_edges, spill_nodes
from stages.partition.layout import PartitionSet, part_dir
from tests.stages.partition.checks import check_partition_set


def test_gcn_weights_are_the_float64_formula_rounded_once():
    deg_u, deg_v = np.array([0.0, 3.0, 99.0]), np.array([0.0, 8.0, 1.0])
    w = gcn_weights(deg_u, deg_v)
    assert w.dtype == np.float32
    np.testing.assert_array_equal(w, np.float32([1.0, 1 / 6, 1 / np.sqrt(200.0)]))
    np.testing.assert_array_equal(gcn_weights(deg_v, deg_u), w)  # symmetric to the bit


def test_in_degree_per_file_sums_to_bincount(planted):
    g = planted.graph
    total = sum(in_degree(str(f), g.num_nodes)[0] for f in g.edge_files())
    np.testing.assert_array_equal(total, np.bincount(g.edges()[1], minlength=g.num_nodes))


def test_rounds_with_an_empty_part(planted, tmp_path):
    """A part with no vertices (METIS may leave one on tiny graphs) is a valid, empty folder."""
    g = planted.graph
    n, parts = g.num_nodes, 3
    owner = np.where(np.arange(n) % 2 == 0, 0, 2).astype(np.int32)  # part 1 gets nothing
    out, scratch = tmp_path / "out", tmp_path / "scratch"
    out.mkdir()
    scratch.mkdir()
    np.save(out / "owner.npy", owner)
    local_index = np.empty(n, dtype=np.int32)
    for i in range(parts):
        local_index[owner == i] = np.arange(int((owner == i).sum()))
        part_dir(out, i).mkdir()
    np.save(out / "local_index.npy", local_index)
    np.save(scratch / "deg_in.npy", np.bincount(g.edges()[1], minlength=n))
    files = [str(f) for f in g.edge_files()]
    for k, f in enumerate(files):
        spill_edges(f, k, str(out / "owner.npy"), str(scratch), parts)
    nodes = str(g.folder / "nodes.parquet")
    start = 0
    for group in range(pq.ParquetFile(nodes).num_row_groups):
        spill_nodes(nodes, group, start, str(out / "owner.npy"), str(scratch), parts, 2)
        start += pq.ParquetFile(nodes).metadata.row_group(group).num_rows
    stats = [build_part(i, parts, str(out), str(scratch), "int32", 2, g.feature_dim) for i in range(parts)]
    assert stats[1]["num_local"] == 0 and stats[1]["num_ghosts"] == 0
    assert sum(s["num_in_edges"] for s in stats) == g.num_edges
    meta = {"num_parts": parts, "num_splits": 2, "owner_map": "owner.npy", "local_index_map": "local_index.npy"}
    (out / "META.json").write_text(json.dumps(meta))
    ps = check_partition_set(out, g, planted.direct)
    empty = ps.part(1)
    assert empty.features.shape == (0, g.feature_dim) and empty.splits.shape == (2, 0)
    assert empty.peers() == []
    assert PartitionSet(out).part(0).peers() == [2]
