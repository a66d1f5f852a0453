"""The METIS path: its input graph, its balance, and the error without the extra."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import scipy.sparse as sp

from stages.errors import DorylusError
from stages.partition import partition
from stages.partition.metis import metis_owner, symmetric_adjacency


@pytest.mark.parametrize("name", ["cora", "planted"])
def test_symmetric_adjacency_is_the_simple_undirected_graph(request, name):
    graph = request.getfixturevalue(name).graph
    n = graph.num_nodes
    xadj, adjncy = symmetric_adjacency(graph)
    got = sp.csr_matrix((np.ones(len(adjncy)), adjncy, xadj), shape=(n, n))
    src, dst = graph.edges()
    a = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    want = ((a + a.T) > 0).astype(np.float64)
    want.setdiag(0)
    want.eliminate_zeros()
    assert (got != want).nnz == 0
    assert got.max() == 1  # no duplicates


def test_metis_balances_edges_and_cuts_little(tolokers):
    g = tolokers.graph
    src, dst = g.edges()
    work = np.bincount(dst, minlength=g.num_nodes) + 1
    owner = metis_owner(g, work, 4, 0)
    loads = np.bincount(owner, weights=work, minlength=4)
    assert loads.max() / loads.mean() < 1.1  # METIS's default 3% imbalance, with slack for rounding
    assert np.mean(owner[src] != owner[dst]) < 0.5  # hash cuts 75% at P=4


def test_missing_pymetis_is_a_clear_error(cora, part_store, monkeypatch):
    monkeypatch.setitem(sys.modules, "pymetis", None)  # what Python does when it is not installed
    with pytest.raises(DorylusError, match=r"pip install 'dorylus-pipeline\[metis\]'"):
        partition(cora.artifact, 2, "metis", store=part_store, force=True)
