"""The ingest artifact's schema, and what a source loader hands to the writer.

An ingest artifact is one Parquet dataset::

    edges/part-00000.parquet ...   src, dst: int32 when num_nodes < 2**31, else int64.
                                   One row per directed edge, sorted by (src, dst); an
                                   undirected graph stores both directions. Part files
                                   cover increasing, disjoint ranges of src.
    nodes.parquet                  node_id (same int type), features
                                   (fixed_size_list<float32>[feature_dim]),
                                   label (int32; -1 = unlabeled), split (int8 split codes
                                   of the default split), split_1 ... split_{k-1} when the
                                   source defines k > 1 splits. Rows in node_id order.
    metadata.json                  counts, feature_dim, num_classes, directed, self loops,
                                   duplicates removed, id type, source and its checksums,
                                   split definition (see ``Metadata``).

Split codes: 0 = none, 1 = train, 2 = validation, 3 = test. A source without features
gets one constant feature (1.0); a source without labels has num_classes = 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np
import pyarrow as pa

from stages.errors import DorylusError

SPLIT_NONE, SPLIT_TRAIN, SPLIT_VAL, SPLIT_TEST = 0, 1, 2, 3
SPLIT_NAMES = {SPLIT_NONE: "none", SPLIT_TRAIN: "train", SPLIT_VAL: "val", SPLIT_TEST: "test"}
INT32_LIMIT = 2**31 - 1


def id_type(num_nodes: int) -> pa.DataType:
    return pa.int32() if num_nodes <= INT32_LIMIT else pa.int64()


def edge_schema(num_nodes: int) -> pa.Schema:
    t = id_type(num_nodes)
    return pa.schema([("src", t), ("dst", t)])


def node_schema(num_nodes: int, feature_dim: int, num_splits: int) -> pa.Schema:
    fields = [
        ("node_id", id_type(num_nodes)),
        ("features", pa.list_(pa.float32(), feature_dim)),
        ("label", pa.int32()),
        ("split", pa.int8()),
    ]
    fields += [(f"split_{k}", pa.int8()) for k in range(1, num_splits)]
    return pa.schema(fields)


EdgeChunks = Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]]


@dataclass
class GraphSource:
    """What a loader produces: everything in memory except the edges, which stream.

    ``edge_chunks()`` yields ``(src, dst)`` integer arrays; it may be called more than once.
    ``undirected`` says the source describes an undirected graph (each edge may be listed
    once or in both directions): the writer then stores both directions.
    """

    name: str
    num_nodes: int
    edge_chunks: EdgeChunks
    features: np.ndarray | None  # (num_nodes, F) float32, or None
    labels: np.ndarray | None  # (num_nodes,) int, -1 = unlabeled, or None
    num_classes: int
    splits: list[np.ndarray] = field(default_factory=list)  # split-code arrays (int8)
    split_definition: str = "none"
    undirected: bool = False
    files: dict[str, str] = field(default_factory=dict)  # source file -> sha256
    notes: dict = field(default_factory=dict)


def splits_from_masks(train, val, test, what: str) -> np.ndarray:
    """One split-code array from three boolean masks; overlapping masks are an error."""
    train, val, test = (np.asarray(m, dtype=bool) for m in (train, val, test))
    overlap = (train.astype(np.int8) + val + test) > 1
    if overlap.any():
        first = int(np.flatnonzero(overlap)[0])
        raise DorylusError(
            f"{what}: the split overlaps ({int(overlap.sum())} nodes are in more than one of train/val/test, "
            f"first node {first}); fix the masks so each node is in at most one"
        )
    codes = np.zeros(train.shape[0], dtype=np.int8)
    codes[train], codes[val], codes[test] = SPLIT_TRAIN, SPLIT_VAL, SPLIT_TEST
    return codes
