"""Building the part folders from an owner map, as parallel tasks over files.

Three rounds, each a map over small arguments (file paths, a part number):

1. ``in_degree``: one task per edge Parquet file counts global in-degrees (for the GCN
   weights and the vertex work).
2. ``spill_edges``: one task per edge file routes each edge to the part that owns its
   destination (in-edges) and to the part that owns its source (out-edges), appending
   raw pairs to scratch files ``in_<i>/<file>.bin`` and ``out_<i>/<file>.bin``;
   ``spill_nodes``: one task per row group of ``nodes.parquet`` routes each node's
   features, label and split codes to its owner's scratch folder ``nodes_<i>/``.
3. ``build_part``: one task per part reads only its own scratch files and writes the part
   folder.

So no process ever holds the whole edge list: a task holds one Parquet batch, or one
part's edges. The owner and local-index maps (N int32 each) are read by every task from
the staging folder.
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


def _route(key: np.ndarray, parts: int) -> tuple[np.ndarray, np.ndarray]:
    """Order grouping rows by part, and each part's [start, stop) in it."""
    small = key.astype(np.int16) if parts <= 2**15 else key  # int16 sorts by radix: linear time
    order = np.argsort(small, kind="stable")
    bounds = np.searchsorted(small[order], np.arange(parts + 1))
    return order, bounds


# --- round 1 -------------------------------------------------------------------------
def in_degree(edge_file: str, num_nodes: int) -> tuple[np.ndarray, int]:
    deg = np.zeros(num_nodes, dtype=np.int64)
    for batch in pq.ParquetFile(edge_file).iter_batches(batch_size=READ_ROWS, columns=["dst"]):
        deg += np.bincount(batch.column(0).to_numpy(), minlength=num_nodes)
    return deg, peak_rss()


def add_degrees(a: tuple[np.ndarray, int], b: tuple[np.ndarray, int]) -> tuple[np.ndarray, int]:
    """Sum of two ``in_degree`` results; pure, so a retried Dask task sums the same inputs."""
    return a[0] + b[0], max(a[1], b[1])


# --- round 2 -------------------------------------------------------------------------
def spill_edges(edge_file: str, file_no: int, owner_path: str, scratch: str, parts: int) -> int:
    owner = np.load(owner_path)
    handles: dict[tuple[str, int], object] = {}
    try:
        for batch in pq.ParquetFile(edge_file).iter_batches(batch_size=READ_ROWS, columns=["src", "dst"]):
            src, dst = batch.column(0).to_numpy(), batch.column(1).to_numpy()
            for direction, key in (("in", owner[dst]), ("out", owner[src])):
                order, bounds = _route(key, parts)
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


def spill_nodes(nodes_file: str, row_group: int, start: int, owner_path: str, scratch: str, parts: int, num_splits: int) -> int:
    """Features, labels and split codes of one row group, routed to their owners in id order."""
    nodes = pq.ParquetFile(nodes_file)
    feature_dim = nodes.schema_arrow.field("features").type.list_size
    split_columns = ["split"] + [f"split_{k}" for k in range(1, num_splits)]
    table = nodes.read_row_group(row_group, columns=["features", "label", *split_columns])
    rows = table.num_rows
    owner = np.load(owner_path, mmap_mode="r")[start : start + rows]
    x = table.column("features").combine_chunks().flatten().to_numpy().reshape(rows, feature_dim)
    y = table.column("label").to_numpy().astype(np.int32)
    s = np.stack([table.column(c).to_numpy().astype(np.int8) for c in split_columns], axis=1)  # (rows, splits)
    order, bounds = _route(np.asarray(owner), parts)
    for i in np.flatnonzero(np.diff(bounds)):
        pick = order[bounds[i] : bounds[i + 1]]  # ascending ids: the stable sort keeps row order
        folder = Path(scratch, f"nodes_{i}")
        folder.mkdir(exist_ok=True)
        for suffix, values in (("x", x), ("y", y), ("s", s)):
            values[pick].tofile(folder / f"{row_group:06d}.{suffix}")
    return peak_rss()


def _read_pairs(folder: Path, dtype) -> tuple[np.ndarray, np.ndarray]:
    files = sorted(folder.glob("*.bin")) if folder.is_dir() else []
    pairs = np.concatenate([np.fromfile(f, dtype=dtype) for f in files]) if files else np.zeros(0, dtype=dtype)
    pairs = pairs.reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


def _read_nodes(folder: Path, suffix: str, dtype, width: int) -> np.ndarray:
    files = sorted(folder.glob(f"*.{suffix}")) if folder.is_dir() else []  # row-group order = id order
    flat = np.concatenate([np.fromfile(f, dtype=dtype) for f in files]) if files else np.zeros(0, dtype=dtype)
    return flat.reshape(-1, width)


# --- round 3 -------------------------------------------------------------------------
def build_part(i: int, parts: int, out: str, scratch: str, id_type: str, num_splits: int, feature_dim: int) -> dict:
    out, scratch = Path(out), Path(scratch)
    folder = part_dir(out, i)
    owner = np.load(out / "owner.npy")
    local_index = np.load(out / "local_index.npy")
    deg = np.load(scratch / "deg_in.npy")
    vertices = np.flatnonzero(owner == i).astype(id_type)
    np.save(folder / "vertices.npy", vertices)

    maps = (owner, local_index, deg, id_type)
    src, dst = _read_pairs(scratch / f"in_{i}", id_type)
    in_stats = _adjacency(folder, "in", "ghosts", "ghost_owner", i, vertices, dst, src, maps)
    del src, dst
    src, dst = _read_pairs(scratch / f"out_{i}", id_type)
    out_stats = _adjacency(folder, "out", "out_ghosts", "out_ghost_owner", i, vertices, src, dst, maps)
    del src, dst
    _exchange_lists(out, i, "fwd", folder / "ghosts.npy", folder / "ghost_owner.npy", local_index, parts)
    _exchange_lists(out, i, "bwd", folder / "out_ghosts.npy", folder / "out_ghost_owner.npy", local_index, parts)

    nodes = scratch / f"nodes_{i}"
    np.save(folder / "features.npy", _read_nodes(nodes, "x", np.float32, feature_dim))
    np.save(folder / "labels.npy", _read_nodes(nodes, "y", np.int32, 1).reshape(-1))
    np.save(folder / "splits.npy", np.ascontiguousarray(_read_nodes(nodes, "s", np.int8, num_splits).T))
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


def _adjacency(folder, prefix, ghost_name, owner_name, i, vertices, row_ids, col_ids, maps) -> dict:
    """CSR over local ``row_ids`` with columns local-first then ghosts, plus A+I's self loops."""
    owner, local_index, deg, id_type = maps
    n_i = len(vertices)
    remote = owner[col_ids] != i
    is_ghost = np.zeros(len(owner), dtype=bool)  # a bitmap beats np.unique by far for ids < N
    is_ghost[col_ids[remote]] = True
    ghosts = np.flatnonzero(is_ghost)  # ascending global ids
    g_i, width = len(ghosts), n_i + len(ghosts)
    cols = local_index[col_ids].astype(np.int64)
    ghost_rank = np.cumsum(is_ghost, dtype=np.int64) - 1
    cols[remote] = n_i + ghost_rank[col_ids[remote]]
    del ghost_rank, is_ghost
    # one sorted key per entry (row, then column): A's edges plus the self loops of A+I.
    # Equal keys are equal entries (duplicate edges), so sorting the keys alone is enough.
    local_rows = np.arange(n_i, dtype=np.int64)
    key = np.concatenate([local_index[row_ids].astype(np.int64) * width + cols, local_rows * width + local_rows])
    del cols
    key.sort()
    rows, cols = np.divmod(key, width) if width else (key, key)
    del key
    indptr = np.zeros(n_i + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n_i), out=indptr[1:])
    column_ids = np.concatenate([vertices.astype(np.int64), ghosts])
    weights = gcn_weights(deg[vertices[rows]].astype(np.float64), deg[column_ids[cols]].astype(np.float64))
    np.save(folder / f"{prefix}_indptr.npy", indptr)
    np.save(folder / f"{prefix}_indices.npy", cols.astype(index_dtype(width)))
    np.save(folder / f"{prefix}_weights.npy", weights)
    np.save(folder / f"{ghost_name}.npy", ghosts.astype(id_type))
    np.save(folder / f"{owner_name}.npy", owner[ghosts].astype(np.int32))
    return {"ghosts": g_i, "edges": len(row_ids), "cut": int(remote.sum())}


def _exchange_lists(out: Path, i: int, kind: str, ghosts_path: Path, owner_path: Path, local_index, parts: int) -> None:
    """Part i's ghosts owned by j: i receives them (recv_<kind>_j here), j sends them (send_<kind>_i there).

    Only task i writes ``send_<kind>_i`` files, so tasks never write the same file.
    """
    ghosts, ghost_owner = np.load(ghosts_path), np.load(owner_path)
    order, bounds = _route(ghost_owner, parts)
    for j in np.flatnonzero(np.diff(bounds)):
        positions = order[bounds[j] : bounds[j + 1]]  # ascending: the stable sort keeps ghost order
        np.save(part_dir(out, i) / f"recv_{kind}_{j}.npy", positions.astype(index_dtype(len(ghosts))))
        np.save(part_dir(out, int(j)) / f"send_{kind}_{i}.npy", local_index[ghosts[positions]])
