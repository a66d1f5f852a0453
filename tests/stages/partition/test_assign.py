"""Owner maps of the cheap baselines, and the method dispatch."""

from __future__ import annotations

import numpy as np
import pytest

from stages.errors import DorylusError
from stages.partition.assign import Knobs, assign_owners, check_method, hash_owner, range_owner


def test_hash_is_seeded_balanced_and_in_range():
    owner = hash_owner(100_000, 7, seed=0)
    assert owner.dtype == np.int32 and owner.min() == 0 and owner.max() == 6
    counts = np.bincount(owner, minlength=7)
    assert counts.max() / counts.mean() < 1.03  # a good hash spreads ids evenly
    np.testing.assert_array_equal(owner, hash_owner(100_000, 7, seed=0))
    assert np.mean(owner != hash_owner(100_000, 7, seed=1)) > 0.8
    # neighbouring ids are not placed together (unlike id mod P, it breaks id locality)
    assert np.mean(owner[1:] == owner[:-1]) < 0.2


def test_range_is_contiguous_and_balances_work():
    rng = np.random.default_rng(0)
    work = rng.pareto(1.5, 50_000).astype(np.int64) + 1
    owner = range_owner(work, 5)
    assert np.all(np.diff(owner) >= 0) and set(owner.tolist()) == set(range(5))
    loads = np.bincount(owner, weights=work, minlength=5)
    assert loads.max() <= work.sum() / 5 + work.max()  # each cut is within one vertex of the ideal


def test_range_gives_every_part_a_vertex_even_with_a_giant():
    work = np.array([1, 10_000, 1, 1, 1, 1])
    owner = range_owner(work, 4)
    assert sorted(set(owner.tolist())) == [0, 1, 2, 3]
    assert np.all(np.diff(owner) >= 0)
    np.testing.assert_array_equal(range_owner(np.ones(4, dtype=np.int64), 4), [0, 1, 2, 3])


def test_knobs_and_method_checks():
    Knobs().check()
    for bad in (Knobs(slack=0.9), Knobs(gamma=1.0), Knobs(passes=0), Knobs(passes=1.5)):
        with pytest.raises(DorylusError):
            bad.check()
    with pytest.raises(DorylusError, match="choose one of hash, range, metis, fennel"):
        check_method("spectral")


def test_one_part_owns_everything(cora):
    deg = np.bincount(cora.graph.edges()[1], minlength=cora.graph.num_nodes)
    for method in ("hash", "range", "metis", "fennel"):
        owner = assign_owners(method, cora.graph, deg, 1, 0, Knobs())
        assert owner.shape == (cora.graph.num_nodes,) and not owner.any()
