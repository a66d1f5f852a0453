"""The reader a graph server uses: memory-mapped, read-only, absent lists are empty."""

from __future__ import annotations

import numpy as np
import pytest

from stages.errors import DorylusError
from stages.partition import partition
from stages.partition.layout import PART_ARRAYS, PartitionSet, to_scipy_in_adjacency, to_scipy_out_adjacency


@pytest.fixture(scope="module")
def cora_parts(cora, part_store) -> PartitionSet:
    return PartitionSet(partition(cora.artifact, 3, "metis", store=part_store).path())


def test_arrays_are_read_only_memory_maps(cora_parts):
    part = cora_parts.part(1)
    for name in PART_ARRAYS:
        array = getattr(part, name)
        assert isinstance(array, np.memmap), name
        assert not array.flags.writeable
    with pytest.raises(ValueError):
        part.features[0, 0] = 1.0
    assert part.features.shape == (part.num_local, cora_parts.meta["feature_dim"])
    assert part.splits.shape == (1, part.num_local)
    assert isinstance(cora_parts.owner(), np.memmap)


def test_adjacency_shapes(cora_parts):
    for part in cora_parts.parts():
        a = to_scipy_in_adjacency(part)
        assert a.shape == (part.num_local, part.num_local + part.num_ghosts)
        assert a.nnz == cora_parts.meta["parts"][part.index]["nnz"]
        t = to_scipy_out_adjacency(part)
        assert t.shape == (part.num_local, part.num_local + part.num_out_ghosts)
        assert t.nnz == a.nnz  # Cora is undirected: as many out-edges as in-edges per part


def test_peers_and_absent_lists(cora_parts, tmp_path):
    part = cora_parts.part(0)
    assert part.peers() == [1, 2]  # METIS leaves Cora's three parts connected to each other
    assert part.send_fwd(0).size == 0 and part.send_fwd(0).dtype.kind == "i"  # no file for itself
    assert all(part.send_fwd(j).size > 0 for j in part.peers())


def test_not_a_partition(tmp_path, cora_parts):
    with pytest.raises(DorylusError, match="not a partition artifact"):
        PartitionSet(tmp_path)
    with pytest.raises(DorylusError, match="parts 0..2"):
        cora_parts.part(3)
