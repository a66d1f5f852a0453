"""The dorylus source on graph/features/labels .bsnap files written here byte by byte."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from stages.errors import DorylusError
from stages.ingest import ingest
from stages.ingest.dataset import IngestedGraph
from stages.ingest.sources import dorylus_binary

EDGES = [(0, 1), (1, 0), (1, 2), (2, 1), (3, 2), (2, 4), (4, 2), (0, 4)]


def write_bsnap(folder: Path, edges=EDGES, n=5, dim=3, kinds=3, labels=(0, 1, 2, 1, 0)) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    pairs = b"".join(struct.pack("<II", a, b) for a, b in edges)
    (folder / "graph.bsnap").write_bytes(struct.pack("<iIQ", 4, n, len(edges)) + pairs)
    x = np.arange(n * dim, dtype="<f4").reshape(n, dim) / 4 - 1
    (folder / "features.bsnap").write_bytes(struct.pack("<I", dim) + x.tobytes())
    (folder / "labels.bsnap").write_bytes(struct.pack("<I", kinds) + np.asarray(labels, dtype="<u4").tobytes())
    return folder


def test_reads_all_three_files(tmp_path, store):
    folder = write_bsnap(tmp_path / "small")
    g = IngestedGraph(ingest(f"dorylus:{folder}", store=store).path())
    assert (g.num_nodes, g.num_edges, g.feature_dim, g.num_classes) == (5, 8, 3, 3)
    src, dst = g.edges()
    assert sorted(zip(src.tolist(), dst.tolist())) == sorted(EDGES)
    np.testing.assert_array_equal(g.features(), np.arange(15, dtype=np.float32).reshape(5, 3) / 4 - 1)
    np.testing.assert_array_equal(g.labels(), [0, 1, 2, 1, 0])
    assert g.meta["directed"] is True and g.meta["name"] == "small"
    assert set(g.meta["source_files"]) == {"graph.bsnap", "features.bsnap", "labels.bsnap"}


def test_streams_edges_in_chunks(tmp_path, monkeypatch):
    rng = np.random.default_rng(0)
    edges = rng.integers(0, 50, size=(1000, 2)).tolist()
    folder = write_bsnap(tmp_path / "g", edges=edges, n=50, labels=np.zeros(50))
    monkeypatch.setattr(dorylus_binary, "EDGE_CHUNK", 64)
    source = dorylus_binary.load(str(folder), None, {})
    chunks = list(source.edge_chunks())
    assert len(chunks) == 16
    np.testing.assert_array_equal(np.stack([np.concatenate(c) for c in zip(*chunks)], 1), edges)


def _truncate(path: Path, cut: int) -> None:
    path.write_bytes(path.read_bytes()[:-cut])


@pytest.mark.parametrize("damage, message", [
    (lambda f: _truncate(f / "graph.bsnap", 3), r"graph.bsnap: 77 bytes, but its header describes 16 \+ 8 edges x 8 = 80 bytes; the file is truncated"),
    (lambda f: (f / "graph.bsnap").write_bytes(b"\x04\x00"), "too short for the 16-byte bsnap header"),
    (lambda f: _truncate(f / "features.bsnap", 4), "features.bsnap: 60 bytes, .* = 64 bytes; the file is truncated"),
    (lambda f: (f / "features.bsnap").write_bytes((f / "features.bsnap").read_bytes() + b"\0\0\0\0"), "longer than its header says"),
    (lambda f: _truncate(f / "labels.bsnap", 1), "labels.bsnap: 23 bytes"),
    (lambda f: (f / "labels.bsnap").write_bytes(b"\x03"), "too short for the uint32 labelKinds header"),
    (lambda f: write_bsnap(f, labels=(0, 1, 3, 1, 0)), "vertex 2 has label 3 but labelKinds is 3"),
    (lambda f: write_bsnap(f, edges=[(0, 1), (1, 7)]), "edge endpoint 7 is out of range"),
    (lambda f: (f / "graph.bsnap").write_bytes(struct.pack("<iIQ", 8, 5, 0)), "sizeOfVertexType is 8"),
    (lambda f: (f / "labels.bsnap").unlink(), "labels.bsnap does not exist"),
])
def test_damaged_files(tmp_path, store, assert_nothing_written, damage, message):
    folder = write_bsnap(tmp_path / "d")
    damage(folder)
    with pytest.raises(DorylusError, match=message):
        ingest(f"dorylus:{folder}", store=store)
    assert_nothing_written(store)
