"""Building the part folders from an owner map, as parallel tasks over files.

Three rounds, each a map over small arguments (file paths, a part number):

1. ``in_degree``: one task per edge Parquet file counts global in-degrees (for the GCN
   weights and the vertex work).
2. ``spill``: one task per edge file routes each edge to the part that owns its
   destination (in-edges) and to the part that owns its source (out-edges), appending
   raw pairs to scratch files ``in_<i>/<file>.bin`` and ``out_<i>/<file>.bin``.
3. ``build_part``: one task per part reads only its own scratch files and its rows of
   ``nodes.parquet``, and writes the part folder.

So no process ever holds the whole edge list: a task holds one Parquet batch, or one
part's edges. The owner and local-index maps (N int32 each) are memory-mapped by every
task from the staging folder.
"""

from __future__ import annotations

import resource
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from stages.partition.layout import index_dtype, part_dir

READ_ROWS = 1 << 21  # edges per Parquet batch a task holds


def peak_rss() -> int:
    """This process's peak resident memory in bytes (a worker's, when run by Dask)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def gcn_weights(deg_a: np.ndarray, deg_b: np.ndarray) -> np.ndarray:
    """1/sqrt((deg_in(u)+1)(deg_in(v)+1)) of A+I's symmetric normalization, rounded once to float32.

    Computed in float64 from global degrees, so every part gives the bits the whole graph would.
    """
    return (1.0 / np.sqrt((deg_a + 1.0) * (deg_b + 1.0))).astype(np.float32)


# --- round 1 -------------------------------------------------------------------------
def in_degree(edge_file: str, num_nodes: int) -> tuple[np.ndarray, int]:
    deg = np.zeros(num_nodes, dtype=np.int64)
    for batch in pq.ParquetFile(edge_file).iter_batches(batch_size=READ_ROWS, columns=["dst"]):
        deg += np.bincount(batch.column(0).to_numpy(), minlength=num_nodes)
    return deg, peak_rss()


def add_degrees(a: tuple[np.ndarray, int], b: tuple[np.ndarray, int]) -> tuple[np.ndarray, int]:
    """Sum of two ``in_degree`` results (in place into the first array)."""
    deg = a[0]
    deg += b[0]
    return deg, max(a[1], b[1])


# --- round 2 -------------------------------------------------------------------------
def spill(edge_file: str, file_no: int, owner_path: str, scratch: str, parts: int) -> int:
    owner = np.load(owner_path, mmap_mode="r")
    handles: dict[tuple[str, int], object] = {}
    try:
        for batch in pq.ParquetFile(edge_file).iter_batches(batch_size=READ_ROWS, columns=["src", "dst"]):
            src, dst = batch.column(0).to_numpy(), batch.column(1).to_numpy()
            for direction, key in (("in", owner[dst]), ("out", owner[src])):
                order = np.argsort(key, kind="stable")
                bounds = np.searchsorted(key[order], np.arange(parts + 1))
                pairs = np.stack([src[order], dst[order]], axis=1)
                for i in np.flatnonzero(np.diff(bounds)):
                    if (direction, i) not in handles:
                        folder = Path(scratch, f"{direction}_{i}")
                        folder.mkdir(exist_ok=True)
                        handles[direction, i] = open(folder / f"{file_no:05d}.bin", "wb")
                    handles[direction, i].write(pairs[bounds[i] : bounds[i + 1]].tobytes())
    finally:
        for handle in handles.values():
            handle.close()
    return peak_rss()


def _read_pairs(folder: Path, dtype) -> tuple[np.ndarray, np.ndarray]:
    files = sorted(folder.glob("*.bin")) if folder.is_dir() else []
    pairs = np.concatenate([np.fromfile(f, dtype=dtype) for f in files]) if files else np.zeros(0, dtype=dtype)
    pairs = pairs.reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


# --- round 3 -------------------------------------------------------------------------
def build_part(i: int, out: str, scratch: str, ingest: str, id_type: str, num_splits: int) -> dict:
    out, scratch = Path(out), Path(scratch)
    folder = part_dir(out, i)
    owner = np.load(out / "owner.npy", mmap_mode="r")
    local_index = np.load(out / "local_index.npy", mmap_mode="r")
    deg = np.load(scratch / "deg_in.npy", mmap_mode="r")
    vertices = np.flatnonzero(owner == i).astype(id_type)
    np.save(folder / "vertices.npy", vertices)

    src, dst = _read_pairs(scratch / f"in_{i}", id_type)
    in_stats = _adjacency(folder, "in", "ghosts", "ghost_owner", i, vertices, dst, src, owner, local_index, deg, id_type)
    del src, dst
    src, dst = _read_pairs(scratch / f"out_{i}", id_type)
    out_stats = _adjacency(folder, "out", "out_ghosts", "out_ghost_owner", i, vertices, src, dst, owner, local_index, deg, id_type)
    del src, dst
    _exchange_lists(out, i, "fwd", folder / "ghosts.npy", folder / "ghost_owner.npy", local_index)
    _exchange_lists(out, i, "bwd", folder / "out_ghosts.npy", folder / "out_ghost_owner.npy", local_index)
    _node_data(folder, Path(ingest), owner, i, len(vertices), num_splits)
    return {
        "part": i,
        "num_local": len(vertices),
        "num_ghosts": in_stats["ghosts"],
        "num_out_ghosts": out_stats["ghosts"],
        "num_in_edges": in_stats["edges"],
        "num_cut_in_edges": in_stats["cut"],
        "nnz": in_stats["edges"] + len(vertices),
        "peak_memory_bytes": peak_rss(),
    }


def _adjacency(folder, prefix, ghost_name, owner_name, i, vertices, row_ids, col_ids, owner, local_index, deg, id_type) -> dict:
    """CSR over local ``row_ids`` with columns local-first then ghosts, plus A+I's self loops."""
    n_i = len(vertices)
    col_owner = owner[col_ids]
    remote = col_owner != i
    ghosts = np.unique(col_ids[remote])  # ascending global ids
    g_i = len(ghosts)
    cols = np.empty(len(col_ids), dtype=np.int64)
    cols[~remote] = local_index[col_ids[~remote]]
    cols[remote] = n_i + np.searchsorted(ghosts, col_ids[remote])
    rows = np.concatenate([local_index[row_ids].astype(np.int64), np.arange(n_i, dtype=np.int64)])
    cols = np.concatenate([cols, np.arange(n_i, dtype=np.int64)])
    weights = gcn_weights(
        np.concatenate([deg[row_ids], deg[vertices]]).astype(np.float64),
        np.concatenate([deg[col_ids], deg[vertices]]).astype(np.float64),
    )
    order = np.argsort(rows * (n_i + g_i) + cols, kind="stable")  # rows, then columns within a row
    indptr = np.zeros(n_i + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_i), out=indptr[1:])
    np.save(folder / f"{prefix}_indptr.npy", indptr)
    np.save(folder / f"{prefix}_indices.npy", cols[order].astype(index_dtype(n_i + g_i)))
    np.save(folder / f"{prefix}_weights.npy", weights[order])
    np.save(folder / f"{ghost_name}.npy", ghosts.astype(id_type))
    np.save(folder / f"{owner_name}.npy", owner[ghosts].astype(np.int32))
    return {"ghosts": g_i, "edges": len(row_ids), "cut": int(remote.sum())}


def _exchange_lists(out: Path, i: int, kind: str, ghosts_path: Path, owner_path: Path, local_index) -> None:
    """Part i's ghosts owned by j: i receives them (recv_<kind>_j here), j sends them (send_<kind>_i there).

    Only task i writes ``send_<kind>_i`` files, so tasks never write the same file.
    """
    ghosts, ghost_owner = np.load(ghosts_path), np.load(owner_path)
    for j in np.unique(ghost_owner):
        positions = np.flatnonzero(ghost_owner == j)
        np.save(part_dir(out, i) / f"recv_{kind}_{j}.npy", positions.astype(index_dtype(len(ghosts))))
        np.save(part_dir(out, int(j)) / f"send_{kind}_{i}.npy", local_index[ghosts[positions]])


def _node_data(folder: Path, ingest: Path, owner, i: int, n_i: int, num_splits: int) -> None:
    """Features, labels and split codes of the local vertices, read row group by row group."""
    nodes = pq.ParquetFile(ingest / "nodes.parquet")
    feature_dim = nodes.schema_arrow.field("features").type.list_size
    split_columns = ["split"] + [f"split_{k}" for k in range(1, num_splits)]
    features = _array(folder / "features.npy", (n_i, feature_dim), np.float32)
    labels = _array(folder / "labels.npy", (n_i,), np.int32)
    splits = _array(folder / "splits.npy", (num_splits, n_i), np.int8)
    start = filled = 0
    for g in range(nodes.num_row_groups):
        rows = nodes.metadata.row_group(g).num_rows
        mine = np.flatnonzero(owner[start : start + rows] == i)
        start += rows
        if len(mine) == 0:
            continue  # range partitions skip most row groups
        table = nodes.read_row_group(g, columns=["features", "label", *split_columns])
        x = table.column("features").combine_chunks().flatten().to_numpy().reshape(rows, feature_dim)
        end = filled + len(mine)
        features[filled:end] = x[mine]
        labels[filled:end] = table.column("label").to_numpy()[mine]
        for k, name in enumerate(split_columns):
            splits[k, filled:end] = table.column(name).to_numpy()[mine]
        filled = end
    for array in (features, labels, splits):
        if isinstance(array, np.memmap):
            array.flush()


def _array(path: Path, shape: tuple, dtype) -> np.ndarray:
    """A writable memory-mapped .npy, or a saved empty one (a zero-byte file cannot be mapped)."""
    if int(np.prod(shape)) == 0:
        empty = np.zeros(shape, dtype=dtype)
        np.save(path, empty)
        return empty
    return np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)
