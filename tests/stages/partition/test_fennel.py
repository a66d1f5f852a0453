"""The streaming partitioner: its stream, its cap, its determinism and its quality."""

from __future__ import annotations

import numpy as np

from stages.partition.assign import Knobs, hash_owner
from stages.partition.fennel import fennel_owner, vertex_batches


def _cut(graph, owner) -> float:
    src, dst = graph.edges()
    return float(np.mean(owner[src] != owner[dst]))


def test_vertex_batches_cover_every_vertex_and_edge_once(planted, monkeypatch):
    import stages.partition.fennel as fennel

    monkeypatch.setattr(fennel, "READ_ROWS", 1000)  # many Parquet batches: vertices straddle them
    graph = planted.graph
    src, dst = graph.edges()
    got_src, got_dst, ranges = [], [], []
    for a, b, s, d in vertex_batches(graph, 37):
        assert 0 < b - a <= 37
        assert np.all((s >= a) & (s < b))
        ranges.append((a, b))
        got_src.append(s)
        got_dst.append(d)
    assert ranges[0][0] == 0 and ranges[-1][1] == graph.num_nodes
    assert all(ranges[k][1] == ranges[k + 1][0] for k in range(len(ranges) - 1))
    np.testing.assert_array_equal(np.concatenate(got_src), src)
    np.testing.assert_array_equal(np.concatenate(got_dst), dst)


def test_deterministic_for_a_seed(synthetic):
    g = synthetic.graph
    work = np.bincount(g.edges()[1], minlength=g.num_nodes) + 1
    a = fennel_owner(g, work, 4, 3, Knobs())
    np.testing.assert_array_equal(a, fennel_owner(g, work, 4, 3, Knobs()))
    assert np.any(a != fennel_owner(g, work, 4, 4, Knobs()))


def test_hard_cap_holds_for_every_slack(tolokers):
    g = tolokers.graph
    work = np.bincount(g.edges()[1], minlength=g.num_nodes) + 1
    for slack in (1.0, 1.05, 1.3):
        for parts in (2, 5):
            owner = fennel_owner(g, work, parts, 0, Knobs(slack=slack, passes=2))
            loads = np.bincount(owner, weights=work, minlength=parts)
            cap = max(slack * work.sum() / parts, work.sum() / parts + work.max())
            assert loads.max() <= cap + 1e-6
            assert set(owner.tolist()) == set(range(parts))


def test_restreaming_improves_on_one_pass_and_both_beat_hash(cora, synthetic):
    for data in (cora, synthetic):
        g = data.graph
        work = np.bincount(g.edges()[1], minlength=g.num_nodes) + 1
        hashed = _cut(g, hash_owner(g.num_nodes, 4, 0))
        one = _cut(g, fennel_owner(g, work, 4, 0, Knobs(passes=1)))
        three = _cut(g, fennel_owner(g, work, 4, 0, Knobs(passes=3)))
        assert one < 0.8 * hashed
        assert three < one
