"""``mat:PATH``: a Facebook100 university graph (Traud et al., 2012) as a MATLAB v5 file.

The file holds ``A`` (sparse symmetric adjacency) and ``local_info`` (one int row per
node: status, gender, major, second major, dorm, year, high school; 0 = missing).

As in the LINKX benchmark loader (Lim et al., 2021), which made these graphs a standard
node-classification benchmark:

- label = gender: 1 and 2 become classes 0 and 1; 0 (missing) becomes -1 (unlabeled).
- features = one-hot of each of the other six columns, concatenated in column order. A
  column's one-hot has one entry per distinct value present, and 0 (missing) keeps its own
  entry: "unknown dorm" is itself informative, and dropping it would leave an all-zero
  block that GCN cannot tell from a missing row. The layout (column, offset, values) is
  recorded in the metadata notes. (LINKX's ``label_binarize`` gives a two-valued column
  a single 0/1 entry; here every column gets one entry per value.)

There is no split in the source.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

from stages.errors import DorylusError
from stages.hashing import sha256_file
from stages.ingest.schema import GraphSource

COLUMNS = ("status", "gender", "major", "second_major", "dorm", "year", "high_school")
LABEL = COLUMNS.index("gender")


def required_files(argument: str, options: dict) -> list[str]:
    if not argument:
        raise DorylusError("mat source needs a path: mat:PATH (a Facebook100 .mat file)")
    return [argument]


def load(argument: str, root: Path | None, options: dict) -> GraphSource:
    path = Path(root, argument) if root is not None else Path(argument)
    try:
        mat = scipy.io.loadmat(path, variable_names=["A", "local_info"])
    except NotImplementedError:  # scipy's answer to MATLAB v7.3 (HDF5) files
        raise DorylusError(f"{path} is a MATLAB v7.3 file; save it as v5 (-v7) or earlier") from None
    except Exception as exc:  # a damaged file raises many kinds (ValueError, TypeError, zlib.error, ...)
        raise DorylusError(f"{path} is not a readable MATLAB file ({type(exc).__name__}: {exc}); the file may be truncated") from None
    for name in ("A", "local_info"):
        if name not in mat:
            raise DorylusError(f"{path} has no variable {name!r}; a Facebook100 file holds A and local_info")

    adj, info = mat["A"], np.asarray(mat["local_info"])
    if not sp.issparse(adj) or adj.ndim != 2 or adj.shape[0] != adj.shape[1]:
        raise DorylusError(f"{path}: A must be a square sparse adjacency matrix, got {type(adj).__name__} {getattr(adj, 'shape', '')}")
    n = adj.shape[0]
    if info.shape != (n, len(COLUMNS)) or not np.issubdtype(info.dtype, np.integer):
        raise DorylusError(
            f"{path}: local_info has shape {info.shape} and type {info.dtype}, expected ({n}, {len(COLUMNS)}) integers "
            f"(columns {', '.join(COLUMNS)})"
        )
    info = info.astype(np.int64)

    gender = info[:, LABEL]
    if gender.min() < 0 or gender.max() > 2:
        raise DorylusError(f"{path}: the gender column holds {int(gender.max() if gender.max() > 2 else gender.min())}; expected 0 (missing), 1 or 2")
    labels = gender - 1

    features, layout = _one_hot(info)
    coo = adj.tocoo()
    src, dst = coo.row.astype(np.int64), coo.col.astype(np.int64)
    return GraphSource(
        name=path.stem,
        num_nodes=n,
        edge_chunks=lambda: iter([(src, dst)]),
        features=features,
        labels=labels,
        num_classes=2,
        split_definition="none in source",
        undirected=True,
        files={path.name: sha256_file(path)},
        notes={
            "label": "gender column of local_info: 1 -> class 0, 2 -> class 1, 0 (missing) -> -1",
            "features": "one-hot of each other local_info column; 0 (missing) keeps its own entry",
            "feature_layout": layout,
        },
    )


def _one_hot(info: np.ndarray) -> tuple[np.ndarray, list[dict]]:
    blocks, layout, offset = [], [], 0
    for c, name in enumerate(COLUMNS):
        if c == LABEL:
            continue
        values, index = np.unique(info[:, c], return_inverse=True)
        blocks.append((offset, index))
        layout.append({"column": name, "offset": offset, "values": len(values)})
        offset += len(values)
    x = np.zeros((info.shape[0], offset), dtype=np.float32)
    rows = np.arange(info.shape[0])
    for start, index in blocks:
        x[rows, start + index] = 1.0
    return x, layout
