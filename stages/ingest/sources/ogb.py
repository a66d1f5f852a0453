"""``ogb:DIR``: an Open Graph Benchmark node-property dataset in its raw download layout.

``DIR`` is the dataset folder (e.g. ``ogbn_arxiv``) holding::

    raw/edge.csv.gz            src,dst per line, no header
    raw/node-feat.csv.gz       one row of comma-separated floats per node (optional)
    raw/node-label.csv.gz      one label per node (NaN or -1: unlabeled)
    raw/num-node-list.csv.gz   the node count (optional; else the largest id + 1)
    split/<name>/{train,valid,test}.csv.gz   node ids, one per line

The split folder is the dataset's own (``time`` for ogbn-arxiv, ``sales_ranking`` for
ogbn-products, ...); ``options["split"]`` names another one. Edges are kept as stored:
OGB stores ogbn-arxiv as a directed citation graph and ogbn-products with each undirected
edge once, and its loaders add the reverse edges when the dataset's ``add_inverse_edge``
is set; the known datasets below carry that flag, unknown ones are read as directed
(``--undirected`` is the user's choice).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from stages.errors import DorylusError
from stages.hashing import sha256_file
from stages.ingest.schema import GraphSource, splits_from_masks
from stages.ingest.sources.edgelist import read_blocks, read_matrix

# OGB's master.csv: the split folder, whether node features exist, add_inverse_edge
KNOWN = {
    "ogbn-arxiv": ("time", True, False),
    "ogbn-products": ("sales_ranking", True, True),
    "ogbn-papers100M": ("time", True, False),
    "ogbn-proteins": ("species", False, True),
}


def _known(argument: str) -> tuple[str, bool, bool] | None:
    name = Path(argument.rstrip("/")).name.replace("_", "-")
    return KNOWN.get(name) or KNOWN.get(f"ogbn-{name}")


def _split_name(argument: str, options: dict) -> str:
    if options.get("split"):
        return options["split"]
    known = _known(argument)
    if known:
        return known[0]
    folder = Path(argument, "split")
    names = sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
    if len(names) == 1:
        return names[0]
    raise DorylusError(
        f"ogb:{argument}: cannot tell which split folder to use "
        f"({'found ' + ', '.join(names) if names else 'no split/ folder found here'}); "
        "give the local dataset folder (the one holding raw/ and split/) or name the split in options['split']"
    )


def _has_features(argument: str) -> bool:
    known = _known(argument)
    if known:
        return known[1]
    local = Path(argument, "raw")
    return (local / "node-feat.csv.gz").is_file() if local.is_dir() else True


def required_files(argument: str, options: dict) -> list[str]:
    if not argument:
        raise DorylusError("ogb source needs the dataset folder: ogb:DIR (the folder holding raw/ and split/)")
    split = _split_name(argument, options)
    files = ["raw/edge.csv.gz", "raw/node-label.csv.gz"]
    if _has_features(argument):
        files.append("raw/node-feat.csv.gz")
    local = Path(argument, "raw", "num-node-list.csv.gz")
    if _known(argument) or local.is_file():
        files.append("raw/num-node-list.csv.gz")
    files += [f"split/{split}/{part}.csv.gz" for part in ("train", "valid", "test")]
    return [f"{argument.rstrip('/')}/{f}" for f in files]


def load(argument: str, root: Path | None, options: dict) -> GraphSource:
    at = (lambda f: Path(root, f)) if root is not None else Path
    rels = required_files(argument, options)
    files = {f: sha256_file(at(f)) for f in rels}
    prefix = argument.rstrip("/") + "/"
    path = {f.removeprefix(prefix): at(f) for f in rels}  # keyed as in the layout above
    name = Path(argument.rstrip("/")).name

    edges = path["raw/edge.csv.gz"]
    n_listed = None
    if "raw/num-node-list.csv.gz" in path:
        counts = read_matrix(path["raw/num-node-list.csv.gz"], np.int64, "node count", columns=1)[:, 0]
        if len(counts) != 1:
            raise DorylusError(
                f"{path['raw/num-node-list.csv.gz']}: expected one node count, found {len(counts)} "
                "(a heterogeneous graph such as ogbn-mag is not supported)"
            )
        n_listed = int(counts[0])

    y = read_matrix(path["raw/node-label.csv.gz"], np.float64, "label")
    if y.shape[1] != 1:
        raise DorylusError(
            f"{path['raw/node-label.csv.gz']}: {y.shape[1]} labels per node (multi-label, e.g. ogbn-proteins); "
            "only single-label node classification is supported"
        )
    y = y[:, 0]
    unlabeled = np.isnan(y) | (y == -1)
    if not np.array_equal(y[~unlabeled], np.round(y[~unlabeled])) or (y[~unlabeled] < 0).any():
        raise DorylusError(
            f"{path['raw/node-label.csv.gz']}: labels must be non-negative integers (NaN or -1 = unlabeled)"
        )
    labels = np.where(unlabeled, -1, y).astype(np.int64)

    x = read_matrix(path["raw/node-feat.csv.gz"], np.float32, "feature") if "raw/node-feat.csv.gz" in path else None

    def edge_chunks():
        for _, rows in read_blocks(edges, np.int64, "edge", columns=2, nonnegative=True):
            if len(rows):
                yield rows[:, 0], rows[:, 1]

    n = n_listed
    if n is None:  # one pass over the edges for the largest id
        n = max(len(labels), 1 + max((int(max(s.max(), d.max())) for s, d in edge_chunks()), default=-1))
    for what, count in (("node-label", len(labels)), ("node-feat", None if x is None else len(x))):
        if count is not None and count != n:
            raise DorylusError(f"ogb:{argument}: raw/{what}.csv.gz has {count} rows but the graph has {n} nodes")

    masks = []
    for part in ("train", "valid", "test"):
        f = path[f"split/{_split_name(argument, options)}/{part}.csv.gz"]
        ids = read_matrix(f, np.int64, "node id", columns=1)[:, 0]
        if ids.size and (ids.min() < 0 or ids.max() >= n):
            raise DorylusError(f"{f}: node id {int(ids.max() if ids.max() >= n else ids.min())} is outside 0..{n - 1}")
        mask = np.zeros(n, dtype=bool)
        mask[ids] = True
        masks.append(mask)
    split = splits_from_masks(*masks, f"ogb:{argument}")

    known = _known(argument)
    inverse = bool(known and known[2])
    return GraphSource(
        name=name,
        num_nodes=n,
        edge_chunks=edge_chunks,
        features=x,
        labels=labels,
        num_classes=int(labels.max()) + 1 if (labels >= 0).any() else 0,
        splits=[split],
        split_definition=f"OGB's split/{_split_name(argument, options)} (train/valid/test node ids)",
        undirected=inverse,
        files=files,
        notes={
            "edges": "each undirected edge stored once (OGB add_inverse_edge)" if inverse else "directed as stored",
        },
    )
