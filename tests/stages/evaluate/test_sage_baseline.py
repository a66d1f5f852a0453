import json

import numpy as np
import pytest

from stages.errors import DorylusError
from stages.evaluate.sage_baseline import sage_baseline, sample_hop, sample_subgraph


def _csr(rng, n=50, e=400):
    dst, src = rng.integers(0, n, e), rng.integers(0, n, e)
    order = np.argsort(dst, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    return indptr, src[order].astype(np.int64)


def test_sampled_neighbours_are_distinct_in_neighbours_capped_by_fanout():
    rng = np.random.default_rng(0)
    indptr, indices = _csr(rng)
    frontier = np.arange(50)
    nbr, vertex = sample_hop(indptr, indices, frontier, 3, rng)
    for v in frontier:
        row = indices[indptr[v]:indptr[v + 1]]
        got = nbr[vertex == v]
        assert got.size == min(3, row.size)
        # positions are drawn without replacement, so each neighbour appears at most as often as in the row
        values, counts = np.unique(got, return_counts=True)
        assert all(c <= np.sum(row == x) for x, c in zip(values, counts))


def test_sampling_is_uniform_over_the_neighbour_list():
    rng = np.random.default_rng(1)
    indptr, indices = np.array([0, 10]), np.arange(10) + 100
    counts = np.zeros(10)
    for _ in range(2000):
        nbr, _ = sample_hop(indptr, indices, np.array([0]), 2, rng)
        counts[nbr - 100] += 1
    assert counts.sum() == 4000 and counts.min() > 300  # each ~400: uniform, not the first two


def test_subgraph_keeps_the_batch_first_and_edges_local():
    rng = np.random.default_rng(2)
    indptr, indices = _csr(rng)
    batch = np.array([3, 7, 9])
    vertices, edge_index = sample_subgraph(indptr, indices, batch, [4, 2], rng)
    assert list(vertices[:3]) == [3, 7, 9] and len(set(vertices)) == vertices.size
    assert edge_index.min() >= 0 and edge_index.max() < vertices.size
    src, dst = vertices[edge_index[0]], vertices[edge_index[1]]
    for s, d in zip(src, dst):  # every edge is a real in-edge of the graph
        assert s in indices[indptr[d]:indptr[d + 1]]


def test_baseline_learns_cora_and_writes_the_train_format(sage_run):
    folder = sage_run.path()
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["test_acc_at_best_val"] > 0.5  # 7 classes: chance is ~0.3 at best
    assert summary["epochs_run"] == 6 and "sampling" in summary["baseline"]
    records = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]
    assert [r["epoch"] for r in records] == list(range(1, 7))
    assert all(b["time"] > a["time"] for a, b in zip(records, records[1:]))
    with np.load(folder / "predictions.npz", allow_pickle=False) as p:
        assert p["pred_best"].shape == (2708,) and set(np.unique(p["split"])) <= {0, 1, 2, 3}


def test_bad_settings_are_user_errors(cora, eval_store):
    with pytest.raises(DorylusError, match="unknown baseline setting"):
        sage_baseline(cora, {"fanout": [5]}, store=eval_store)
    with pytest.raises(DorylusError, match="fanouts"):
        sage_baseline(cora, {"fanouts": [5, 0]}, store=eval_store)
