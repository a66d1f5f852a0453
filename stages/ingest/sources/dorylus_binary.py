"""``dorylus:DIR``: the authors' binary dataset files (``inputs/`` of the reference code).

All little-endian:

- ``graph.bsnap``: a 16-byte header ``int32 sizeOfVertexType (= 4)``, ``uint32 numVertices``,
  ``uint64 numEdges``, then ``numEdges`` pairs ``(uint32 src, uint32 dst)``;
- ``features.bsnap``: ``uint32 featDim``, then ``numVertices x featDim`` float32, row-major;
- ``labels.bsnap``: ``uint32 labelKinds``, then ``numVertices`` uint32 labels.

Every size is checked against its header before anything is read, so a truncated file is
an error that says how many bytes are missing. Edges stream from a memory map in chunks.
``graphtobinary --undirected=1`` already wrote both directions and the file does not say
which it was, so the edges are kept as stored (``--undirected`` adds reverse edges). The
authors' train/val/test split is positional inside each partition, so it is not a property
of the dataset; none is recorded.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stages.errors import DorylusError
from stages.hashing import sha256_file
from stages.ingest.schema import GraphSource

GRAPH, FEATURES, LABELS = "graph.bsnap", "features.bsnap", "labels.bsnap"
HEADER = np.dtype([("vertex_size", "<i4"), ("num_vertices", "<u4"), ("num_edges", "<u8")])
EDGE = np.dtype([("src", "<u4"), ("dst", "<u4")])
EDGE_CHUNK = 1 << 23


def required_files(argument: str, options: dict) -> list[str]:
    if not argument:
        raise DorylusError("dorylus source needs the folder holding graph.bsnap, features.bsnap and labels.bsnap: dorylus:DIR")
    return [f"{argument.rstrip('/')}/{f}" for f in (GRAPH, FEATURES, LABELS)]


def _check_size(path: Path, expected: int, layout: str) -> None:
    actual = path.stat().st_size
    if actual != expected:
        state = "truncated" if actual < expected else "longer than its header says"
        raise DorylusError(
            f"{path}: {actual} bytes, but its header describes {layout} = {expected} bytes; the file is {state} "
            "(re-copy or regenerate it)"
        )


def _header_u32(path: Path, what: str) -> int:
    with open(path, "rb") as f:
        head = f.read(4)
    if len(head) < 4:
        raise DorylusError(f"{path}: {len(head)} bytes, too short for the uint32 {what} header")
    return int(np.frombuffer(head, "<u4")[0])


def load(argument: str, root: Path | None, options: dict) -> GraphSource:
    at = (lambda f: Path(root, f)) if root is not None else Path
    graph, feats, labs = (at(f) for f in required_files(argument, options))

    if graph.stat().st_size < HEADER.itemsize:
        raise DorylusError(f"{graph}: {graph.stat().st_size} bytes, too short for the 16-byte bsnap header")
    header = np.fromfile(graph, dtype=HEADER, count=1)[0]
    if header["vertex_size"] != 4:
        raise DorylusError(
            f"{graph}: sizeOfVertexType is {header['vertex_size']}, expected 4 (uint32 ids); "
            "is this a graph.bsnap written by graphtobinary?"
        )
    n, m = int(header["num_vertices"]), int(header["num_edges"])
    _check_size(graph, HEADER.itemsize + m * EDGE.itemsize, f"16 + {m} edges x 8")

    dim = _header_u32(feats, "featDim")
    if dim == 0:
        raise DorylusError(f"{feats}: featDim is 0")
    _check_size(feats, 4 + n * dim * 4, f"4 + {n} vertices x {dim} features x 4")
    x = np.fromfile(feats, dtype="<f4", offset=4).reshape(n, dim)

    kinds = _header_u32(labs, "labelKinds")
    _check_size(labs, 4 + n * 4, f"4 + {n} vertices x 4")
    y = np.fromfile(labs, dtype="<u4", offset=4).astype(np.int64)
    if n and y.max() >= kinds:
        i = int(np.argmax(y >= kinds))
        raise DorylusError(
            f"{labs}: vertex {i} has label {int(y[i])} but labelKinds is {kinds} "
            "(the authors' genlabs can emit labelKinds itself); fix the labels file"
        )

    def edge_chunks():
        edges = np.memmap(graph, dtype=EDGE, mode="r", offset=HEADER.itemsize, shape=(m,)) if m else []
        for start in range(0, m, EDGE_CHUNK):
            block = edges[start : start + EDGE_CHUNK]
            yield block["src"].astype(np.int64), block["dst"].astype(np.int64)

    return GraphSource(
        name=Path(argument.rstrip("/")).name or "dorylus",
        num_nodes=n,
        edge_chunks=edge_chunks,
        features=x,
        labels=y,
        num_classes=kinds,
        split_definition="none in source (the authors' split is positional per partition, not stored)",
        undirected=False,
        files={f.name: sha256_file(f) for f in (graph, feats, labs)},
        notes={"edges": "as stored in graph.bsnap (graphtobinary --undirected=1 already wrote both directions)"},
    )
