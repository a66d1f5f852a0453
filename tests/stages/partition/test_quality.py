"""Quality metrics from per-part counts."""

from __future__ import annotations

import pytest

from stages.partition.quality import quality


def test_quality_figures():
    parts = [
        {"num_local": 3, "num_ghosts": 2, "num_in_edges": 6, "num_cut_in_edges": 2},
        {"num_local": 1, "num_ghosts": 1, "num_in_edges": 2, "num_cut_in_edges": 1},
    ]
    q = quality(parts, num_nodes=4, num_edges=8)
    assert q["edge_cut_fraction"] == pytest.approx(3 / 8)
    assert q["replication_factor"] == pytest.approx(3 / 4)
    assert q["replication_per_part"] == pytest.approx([2 / 3, 1.0])
    assert q["vertex_balance"] == pytest.approx(3 / 2)
    assert q["edge_balance"] == pytest.approx(6 / 4)
