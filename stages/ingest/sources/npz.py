"""``npz:PATH``: the two NumPy archive layouts in common use, read without pickle.

- heterophilous-graphs (Platonov et al.): ``node_features``, ``node_labels``, ``edges``
  (E x 2, each undirected edge once), ``train_masks``/``val_masks``/``test_masks``
  (k x N, k splits).
- nettack / gnn-meta-attack (Zügner et al.): CSR parts ``adj_*`` and ``attr_*``, ``labels``;
  no split is defined.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from stages.errors import DorylusError
from stages.hashing import sha256_file
from stages.ingest.schema import GraphSource, splits_from_masks

EDGE_CHUNK = 1 << 22
HETEROPHILOUS_KEYS = ("node_features", "node_labels", "edges", "train_masks", "val_masks", "test_masks")
NETTACK_KEYS = tuple(f"{m}_{p}" for m in ("adj", "attr") for p in ("data", "indices", "indptr", "shape")) + ("labels",)


def required_files(argument: str, options: dict) -> list[str]:
    if not argument:
        raise DorylusError("npz source needs a path: npz:PATH")
    return [argument]


def load(argument: str, root: Path | None, options: dict) -> GraphSource:
    path = Path(root, argument) if root is not None else Path(argument)
    try:
        with np.load(path, allow_pickle=False) as archive:
            data = {k: archive[k] for k in archive.files}
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise DorylusError(f"{path} is not a readable .npz archive ({exc}); the file may be truncated") from None
    name = path.stem
    files = {path.name: sha256_file(path)}
    if "edges" in data and "node_features" in data:
        _require(path, data, HETEROPHILOUS_KEYS)
        return _heterophilous(name, data, files)
    if "adj_indptr" in data and "attr_indptr" in data:
        _require(path, data, NETTACK_KEYS)
        return _nettack(name, data, files)
    raise DorylusError(
        f"{path}: unknown npz layout (keys {sorted(data)}); expected the heterophilous layout "
        "(node_features, node_labels, edges, *_masks) or the nettack layout (adj_*, attr_*, labels)"
    )


def _require(path: Path, data: dict, keys: tuple[str, ...]) -> None:
    missing = [k for k in keys if k not in data]
    if missing:
        raise DorylusError(f"{path}: the archive lacks {', '.join(missing)}; it needs all of {', '.join(keys)}")


def _heterophilous(name: str, d: dict, files: dict) -> GraphSource:
    x, y, edges = d["node_features"], d["node_labels"].astype(np.int64), d["edges"]
    n = x.shape[0]
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise DorylusError(f"{name}: 'edges' has shape {edges.shape}, expected (E, 2)")
    masks = [d[k] for k in ("train_masks", "val_masks", "test_masks")]
    if masks[0].ndim == 1:
        masks = [m[None, :] for m in masks]
    splits = [splits_from_masks(tr, va, te, f"{name} split {k}") for k, (tr, va, te) in enumerate(zip(*masks))]

    def chunks():
        for s in range(0, len(edges), EDGE_CHUNK):
            yield edges[s : s + EDGE_CHUNK, 0], edges[s : s + EDGE_CHUNK, 1]

    return GraphSource(
        name=name,
        num_nodes=n,
        edge_chunks=chunks,
        features=x,
        labels=y,
        num_classes=int(y.max()) + 1 if y.size else 0,  # an empty graph is rejected by the writer
        splits=splits,
        split_definition=f"{len(splits)} fixed splits from the source (train_masks/val_masks/test_masks)",
        undirected=True,
        files=files,
    )


def _csr(d: dict, prefix: str) -> sp.csr_matrix:
    try:
        m = sp.csr_matrix(
            (d[f"{prefix}_data"], d[f"{prefix}_indices"], d[f"{prefix}_indptr"]), shape=tuple(d[f"{prefix}_shape"])
        )
        m.check_format(full_check=True)  # indices within the shape, indptr consistent
    except (ValueError, TypeError) as exc:
        raise DorylusError(f"the {prefix}_* arrays do not form a valid CSR matrix ({exc})") from None
    return m


def _nettack(name: str, d: dict, files: dict) -> GraphSource:
    adj = _csr(d, "adj").tocoo()
    x = _csr(d, "attr").toarray().astype(np.float32)
    y = d["labels"].astype(np.int64)
    return GraphSource(
        name=name,
        num_nodes=adj.shape[0],
        edge_chunks=lambda: iter([(adj.row, adj.col)]),
        features=x,
        labels=y,
        num_classes=int(y.max()) + 1 if y.size else 0,  # an empty graph is rejected by the writer
        split_definition="none in source (nettack layout)",
        undirected=True,  # the adjacency is not stored symmetric; GCN work uses it as undirected
        files=files,
    )
