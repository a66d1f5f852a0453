"""``musae:DIR``: the MUSAE Facebook Page-Page graph (Rozemberczki et al., 2019).

``DIR`` (under ``--root`` if given) holds three files:

- ``facebook_edges.csv``: header ``id_1,id_2``, one undirected edge per row (the
  published file also lists 179 self loops, counted in ``self_loops.in_source``).
- ``facebook.json``: node id -> list of its active feature ids; the features are the
  binary indicator vectors, of dimension (largest feature id + 1).
- ``facebook_target.csv``: ``id,facebook_id,page_name,page_type``; one row per node, the
  label is ``page_type`` with classes numbered in sorted name order (listed in the
  metadata notes).

There is no split in the source.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv

from stages.errors import DorylusError
from stages.hashing import sha256_file
from stages.ingest.schema import GraphSource

EDGES, FEATURES, TARGET = "facebook_edges.csv", "facebook.json", "facebook_target.csv"


def required_files(argument: str, options: dict) -> list[str]:
    folder = Path(argument or ".")
    return [str(folder / name) for name in (EDGES, FEATURES, TARGET)]


def load(argument: str, root: Path | None, options: dict) -> GraphSource:
    folder = Path(root, argument) if root is not None else Path(argument or ".")
    ids, page_type = _columns(folder / TARGET, {"id": pa.int64(), "page_type": pa.string()})
    n = len(ids)
    if n == 0:
        raise DorylusError(f"{folder / TARGET} has no rows; the graph is empty")
    if not np.array_equal(np.sort(ids), np.arange(n)):
        raise DorylusError(f"{folder / TARGET}: the ids must be 0..{n - 1}, each once (one row per node)")
    classes, codes = np.unique(np.asarray(page_type.to_pylist(), dtype=object).astype(str), return_inverse=True)
    labels = np.empty(n, dtype=np.int64)
    labels[ids] = codes

    src, dst = _columns(folder / EDGES, {"id_1": pa.int64(), "id_2": pa.int64()})
    features, featureless = _features(folder / FEATURES, n)

    return GraphSource(
        name="facebook",
        num_nodes=n,
        edge_chunks=lambda: iter([(src, dst)]),
        features=features,
        labels=labels,
        num_classes=len(classes),
        split_definition="none in source",
        undirected=True,
        files={name: sha256_file(folder / name) for name in (EDGES, FEATURES, TARGET)},
        notes={
            "classes": [str(c) for c in classes],
            "label_column": "page_type",
            "features": f"binary indicators of the feature ids in {FEATURES} (dimension = largest id + 1)",
            "nodes_without_features": featureless,
        },
    )


def _columns(path: Path, types: dict[str, pa.DataType]) -> list:
    """The named columns of a CSV file, read by pyarrow with the types given."""
    try:
        table = pcsv.read_csv(
            path,
            convert_options=pcsv.ConvertOptions(column_types=types, include_columns=list(types)),
        )
    except (pa.ArrowInvalid, pa.ArrowKeyError, OSError) as exc:
        raise DorylusError(f"{path} is not a CSV file with columns {', '.join(types)} ({exc})") from None
    columns = []
    for name in types:
        col = table.column(name)
        empty = col.null_count if pa.types.is_integer(col.type) else int(pc.sum(pc.equal(col, "")).as_py() or 0)
        if empty:
            raise DorylusError(f"{path}: column {name} has {empty} empty values; the file may be truncated")
        columns.append(col.to_numpy() if pa.types.is_integer(col.type) else col)
    return columns


def _features(path: Path, n: int) -> tuple[np.ndarray, int]:
    try:
        active = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DorylusError(f"{path} is not valid JSON ({exc}); the file may be truncated") from None
    if not isinstance(active, dict):
        raise DorylusError(f"{path} must map node ids to lists of feature ids")
    try:
        rows = np.fromiter((int(k) for k in active), dtype=np.int64, count=len(active))
        cols = [np.asarray(v, dtype=np.int64).reshape(-1) for v in active.values()]
    except (TypeError, ValueError) as exc:
        raise DorylusError(f"{path}: node and feature ids must be integers ({exc})") from None
    if rows.size and (rows.min() < 0 or rows.max() >= n):
        raise DorylusError(f"{path}: node id {int(rows.max() if rows.max() >= n else rows.min())} is outside 0..{n - 1}")
    lengths = np.array([len(c) for c in cols], dtype=np.int64)
    flat = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
    if flat.size == 0:
        raise DorylusError(f"{path} lists no feature ids")
    if flat.min() < 0:
        raise DorylusError(f"{path}: feature id {int(flat.min())} is negative")
    x = np.zeros((n, int(flat.max()) + 1), dtype=np.float32)
    x[np.repeat(rows, lengths), flat] = 1.0
    return x, n - int((lengths > 0).sum())  # json keys are unique
