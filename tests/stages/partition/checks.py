"""Checks every partition test applies: the parts rebuild the whole graph exactly."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from stages.ingest.dataset import IngestedGraph
from stages.partition.layout import PartitionSet, to_scipy_in_adjacency, to_scipy_out_adjacency


def direct_normalized_adjacency(graph: IngestedGraph) -> sp.csr_matrix:
    """Â = D^-1/2 (A+I) D^-1/2 built straight from the edge list (rows = destinations)."""
    n = graph.num_nodes
    src, dst = (a.astype(np.int64) for a in graph.edges())
    deg = np.bincount(dst, minlength=n).astype(np.float64)
    rows = np.concatenate([dst, np.arange(n)])
    cols = np.concatenate([src, np.arange(n)])
    w = (1.0 / np.sqrt((deg[rows] + 1.0) * (deg[cols] + 1.0))).astype(np.float32)
    m = sp.csr_matrix((w, (rows, cols)), shape=(n, n))
    m.sort_indices()
    return m


def _global(blocks, n) -> sp.csr_matrix:
    rows, cols, data = zip(*blocks) if blocks else ((), (), ())
    m = sp.csr_matrix(
        (np.concatenate(data), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n)
    )
    m.sort_indices()
    return m


def assert_same(a: sp.csr_matrix, b: sp.csr_matrix) -> None:
    assert a.shape == b.shape
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.data, b.data)  # exact: same bits, not approximately


def check_partition_set(folder, graph: IngestedGraph, direct: sp.csr_matrix) -> PartitionSet:
    ps = PartitionSet(folder)
    n, parts = graph.num_nodes, ps.num_parts
    owner, local_index = np.asarray(ps.owner()), np.asarray(ps.local_index())
    assert owner.dtype == np.int32 and owner.shape == (n,)

    # every vertex has exactly one owner, and the maps agree with the part folders
    seen = np.zeros(n, dtype=np.int64)
    in_blocks, out_blocks = [], []
    for part in ps.parts():
        v = np.asarray(part.vertices)
        assert np.all(np.diff(v) > 0), "local vertices must be ascending"
        seen[v] += 1
        assert np.all(owner[v] == part.index)
        np.testing.assert_array_equal(local_index[v], np.arange(len(v)))
        for prefix, ghosts, ghost_owner, blocks in (
            ("in", part.ghosts, part.ghost_owner, in_blocks),
            ("out", part.out_ghosts, part.out_ghost_owner, out_blocks),
        ):
            ghosts = np.asarray(ghosts)
            assert np.all(np.diff(ghosts) > 0)
            np.testing.assert_array_equal(np.asarray(ghost_owner), owner[ghosts])
            assert np.all(owner[ghosts] != part.index)
            indptr, indices = np.asarray(getattr(part, f"{prefix}_indptr")), np.asarray(getattr(part, f"{prefix}_indices"))
            assert indptr.dtype == np.int64 and indices.dtype == np.int32
            assert getattr(part, f"{prefix}_weights").dtype == np.float32
            row_of = np.repeat(np.arange(len(v)), np.diff(indptr))
            same_row = row_of[1:] == row_of[:-1]
            assert np.all(np.diff(indices.astype(np.int64))[same_row] >= 0), "columns ascending within a row"
            assert np.all(np.bincount(row_of[indices == row_of], minlength=len(v)) >= 1), "self loop in every row"
            adj = (to_scipy_in_adjacency if prefix == "in" else to_scipy_out_adjacency)(part).tocoo()
            columns = np.concatenate([v, ghosts])
            if prefix == "in":
                blocks.append((v[adj.row], columns[adj.col], adj.data))
            else:  # Â^T: row = source, column = destination
                blocks.append((columns[adj.col], v[adj.row], adj.data))
        np.testing.assert_array_equal(np.asarray(part.features), graph.features()[v])
        np.testing.assert_array_equal(np.asarray(part.labels), graph.labels()[v])
        for k in range(ps.meta["num_splits"]):
            np.testing.assert_array_equal(np.asarray(part.splits)[k], graph.split(k)[v])
    np.testing.assert_array_equal(seen, np.ones(n, dtype=np.int64))

    # the parts' rows of Â (and of Â^T) rebuild the whole graph's Â exactly
    assert_same(_global(in_blocks, n), direct)
    assert_same(_global(out_blocks, n), direct)

    # every send list matches the receiving part's ghost list, in its order
    for i in range(parts):
        pi = ps.part(i)
        for j in range(parts):
            pj = ps.part(j)
            for send, recv, ghosts, ghost_owner in (
                (pi.send_fwd(j), pj.recv_fwd(i), pj.ghosts, pj.ghost_owner),
                (pi.send_bwd(j), pj.recv_bwd(i), pj.out_ghosts, pj.out_ghost_owner),
            ):
                wanted = np.flatnonzero(np.asarray(ghost_owner) == i)
                np.testing.assert_array_equal(np.asarray(recv), wanted)
                np.testing.assert_array_equal(np.asarray(pi.vertices)[np.asarray(send, dtype=np.int64)], np.asarray(ghosts)[wanted])
    return ps
