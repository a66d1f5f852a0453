"""The partition stage: an ingest artifact split into P parts, one per graph server.

``partition(dataset, parts, method)`` assigns every vertex an owner (``hash``, ``range``,
``metis`` or the streaming ``fennel``; see ``assign``) and writes, for each part,
everything its graph server needs to start without reading the whole graph again. The
folders are built by parallel Dask tasks (see ``build`` and ``executor``).

The artifact (all arrays ``.npy``, no pickle, ``np.load(path, mmap_mode="r")`` works;
read it with ``stages.partition.layout.PartitionSet``)::

    META.json             {"num_parts": P, "method", "seed", "num_nodes", "num_edges",
                           "feature_dim", "num_classes", "num_splits", "id_dtype", "directed",
                           "normalization": "gcn-sym-in-degree",
                           "dataset": {"key", "digest"} (no URI: the content must not depend on where the store is),
                           "owner_map": "owner.npy", "local_index_map": "local_index.npy",
                           "parts": [{"num_local", "num_ghosts", "num_out_ghosts",
                                      "num_in_edges", "nnz"}, ...],
                           "quality": {"edge_cut_fraction", "replication_factor",
                                       "replication_per_part", "vertex_balance", "edge_balance"}}
    owner.npy             (N,) int32: owning part of every global vertex
    local_index.npy       (N,) int32 (int64 if N >= 2**31): index of every vertex among its
                          owner's local vertices
    part_<i>/
      vertices.npy        (n_i,) global ids of the local vertices, ascending (local id = position)
      in_indptr.npy       (n_i+1,) int64: CSR over local destinations of the in-edges,
                          INCLUDING the self loop of A+I
      in_indices.npy      (nnz,) int32 (int64 only if n_i+g_i >= 2**31): source columns:
                          [0, n_i) local vertices, n_i + k = ghost k; ascending within a row
      in_weights.npy      (nnz,) float32: Â = D^-1/2 (A+I) D^-1/2 with GLOBAL in-degrees,
                          w(u->v) = 1/sqrt((deg_in(u)+1)(deg_in(v)+1)), self loop 1/(deg_in(v)+1),
                          computed in float64 and rounded once, so the parts' rows are
                          bit-for-bit the whole graph's rows
      ghosts.npy          (g_i,) global ids of in-ghosts (remote sources of local in-edges), ascending
      ghost_owner.npy     (g_i,) int32 owner of each ghost
      out_indptr.npy      (n_i+1,) int64: Â^T for the backward gather: CSR over local SOURCES,
      out_indices.npy     columns = destinations, [0, n_i) local, n_i + k = out-ghost k,
      out_weights.npy     with the forward edge's weight
      out_ghosts.npy      (h_i,) global ids of out-ghosts (remote destinations of local out-edges)
      out_ghost_owner.npy (h_i,) int32
      send_fwd_<j>.npy    local ids whose forward activations go to peer j: this part's vertices
                          in j's ghosts.npy, in j's order
      recv_fwd_<j>.npy    positions in this part's ghosts.npy that peer j fills, in the order j
                          sends them (its send_fwd_<i>)
      send_bwd_<j>.npy    local ids whose backward gradient rows go to peer j: this part's
                          vertices in j's out_ghosts.npy, in j's order
      recv_bwd_<j>.npy    positions in this part's out_ghosts.npy that peer j fills
      features.npy        (n_i, F) float32
      labels.npy          (n_i,) int32 (-1 = unlabeled)
      splits.npy          (num_splits, n_i) int8 split codes (0 none, 1 train, 2 val, 3 test)

A peer with nothing to exchange has no file (absent = empty list). For an undirected
graph in_* and out_* hold the same edges and ghosts == out_ghosts; both are written
anyway, so a graph server reads one layout whatever the graph: a directed graph's
backward gather needs Â^T, which is not Â. A part may be empty (n_i = 0) when P is close
to N (``hash`` is random; METIS and Fennel may leave a part empty on a tiny graph); its
folder then holds empty arrays. ``range`` gives every part at least one vertex.
If the ingest stage kept self loops or duplicate edges, they appear as extra entries
beside the added self loop (summed, they give A+I).

The manifest summary (``--json``) adds the time and the peak memory of the largest
process (the driver or a Dask worker); ``META.json`` holds only what is deterministic,
so the same inputs give the same digest whichever executor ran the tasks.
"""

from __future__ import annotations

import contextvars
import json
import logging
import shutil
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from stages.config import state_dir
from stages.contract import Artifact, Stage, StageContext, resolve_artifact, run_stage
from stages.errors import DorylusError
from stages.ingest.dataset import IngestedGraph
from stages.partition.assign import METHODS, Knobs, assign_owners, check_method
from stages.partition.build import add_degrees, build_part, in_degree, peak_rss, spill_edges, spill_nodes
from stages.partition.executor import open_executor
from stages.partition.layout import META, index_dtype, part_dir
from stages.partition.quality import quality
from stages.store import ArtifactStore

VERSION = "1"
log = logging.getLogger("dorylus.partition")
__all__ = ["METHODS", "STAGE", "VERSION", "partition"]

# Where the tasks run changes how fast, never what is written, so it stays out of the
# params (and the key): ``partition()`` hands it to the stage through this variable.
_SCHEDULER: contextvars.ContextVar[str | None] = contextvars.ContextVar("partition_scheduler", default=None)


def _run(ctx: StageContext) -> dict:
    t0 = time.perf_counter()
    p = ctx.params
    dataset = ctx.inputs["dataset"]
    graph = IngestedGraph(dataset.path())
    parts, n, m = int(p["parts"]), graph.num_nodes, graph.num_edges
    check_parts(parts, n)
    knobs = Knobs(**p.get("knobs", {}))
    files = [str(f) for f in graph.edge_files()]
    num_splits = int(graph.meta["split"]["num_splits"])
    id_type = str(np.dtype(np.int32 if graph.meta["id_type"] == "int32" else np.int64))
    out = ctx.out
    scratch = Path(tempfile.mkdtemp(prefix=".scratch-partition-", dir=out.parent))
    try:
        workers = min(parts, 2)
        with open_executor(_SCHEDULER.get(), m, workers, state_dir() / "dask") as ex:
            log.info("partition: %d vertices, %d edges in %d files into %d parts by %s (%s)", n, m, len(files), parts, p["method"], ex.name)
            with ctx.timer("degrees"):
                deg, peak = ex.map_reduce(partial(in_degree, num_nodes=n), files, add_degrees)
                np.save(scratch / "deg_in.npy", deg)
            with ctx.timer("assign"):  # the partitioning method alone
                owner = assign_owners(p["method"], graph, deg, parts, int(p["seed"]), knobs)
                del deg
            with ctx.timer("maps"):
                _save_maps(out, owner, parts)
                sizes = np.bincount(owner, minlength=parts)
                del owner
            log.info("partition: owners assigned in %.2f s; building the part folders", ctx.timings["assign"])
            for i in range(parts):
                part_dir(out, i).mkdir()
            with ctx.timer("spill"):
                owner_path, k = str(out / "owner.npy"), len(files)
                peaks = ex.map(spill_edges, files, range(k), [owner_path] * k, [str(scratch)] * k, [parts] * k)
                groups = _row_groups(graph.folder / "nodes.parquet")
                peaks += ex.map(
                    spill_nodes, [str(graph.folder / "nodes.parquet")] * len(groups), range(len(groups)), groups,
                    [owner_path] * len(groups), [str(scratch)] * len(groups), [parts] * len(groups), [num_splits] * len(groups),
                )
            with ctx.timer("build"):
                stats = ex.map(
                    build_part, range(parts), [parts] * parts, [str(out)] * parts, [str(scratch)] * parts,
                    [id_type] * parts, [num_splits] * parts, [graph.feature_dim] * parts,
                )
            where = ex.name
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if [s["num_local"] for s in stats] != sizes.tolist():
        raise RuntimeError("part folders disagree with the owner map")  # a bug, never a user error
    q = quality(stats, n, m)
    log.info("partition: edge cut %.4f, replication %.3f, edge balance %.3f", q["edge_cut_fraction"], q["replication_factor"], q["edge_balance"])
    meta = {
        "num_parts": parts,
        "method": p["method"],
        "seed": int(p["seed"]),
        "knobs": p.get("knobs", {}),
        "num_nodes": n,
        "num_edges": m,
        "feature_dim": graph.feature_dim,
        "num_classes": graph.num_classes,
        "num_splits": num_splits,
        "id_dtype": id_type,
        "directed": bool(graph.meta.get("directed", True)),
        "normalization": "gcn-sym-in-degree",
        "dataset": {"key": dataset.key, "digest": dataset.digest},
        "owner_map": "owner.npy",
        "local_index_map": "local_index.npy",
        "parts": [{k: s[k] for k in ("num_local", "num_ghosts", "num_out_ghosts", "num_in_edges", "nnz")} for s in stats],
        "quality": q,
    }
    (out / META).write_text(json.dumps(meta, indent=2))
    return {
        "num_parts": parts,
        "method": p["method"],
        "num_nodes": n,
        "num_edges": m,
        "edge_cut_fraction": round(q["edge_cut_fraction"], 6),
        "replication_factor": round(q["replication_factor"], 6),
        "vertex_balance": round(q["vertex_balance"], 6),
        "edge_balance": round(q["edge_balance"], 6),
        "seconds": round(time.perf_counter() - t0, 3),
        "peak_memory_bytes": max([peak_rss(), peak, *peaks, *(s["peak_memory_bytes"] for s in stats)]),
        "executor": where,
    }


def _row_groups(nodes_file: Path) -> list[int]:
    """The first node id of each row group of nodes.parquet (rows are in id order)."""
    meta = pq.ParquetFile(nodes_file).metadata
    sizes = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
    return np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(int).tolist() if sizes else []


def _save_maps(out: Path, owner: np.ndarray, parts: int) -> None:
    """owner.npy, and local_index.npy: a vertex's rank among its owner's vertices by global id."""
    n = len(owner)
    if owner.shape != (n,) or (n and (owner.min() < 0 or owner.max() >= parts)):
        raise RuntimeError("a partition method returned an owner outside 0..P-1")  # a bug, not a user error
    order = np.argsort(owner, kind="stable")
    starts = np.concatenate([[0], np.cumsum(np.bincount(owner, minlength=parts))[:-1]])
    local_index = np.empty(n, dtype=index_dtype(n))
    local_index[order] = np.arange(n) - starts[owner[order]]
    np.save(out / "owner.npy", owner.astype(np.int32))
    np.save(out / "local_index.npy", local_index)


STAGE = Stage(name="partition", version=VERSION, package="stages.partition", run=_run)


def check_parts(parts, num_nodes: int) -> None:
    if isinstance(parts, bool) or not isinstance(parts, (int, np.integer)) or parts < 1:
        raise DorylusError(f"the number of parts must be a positive integer, not {parts!r}")
    if parts > num_nodes:
        raise DorylusError(
            f"cannot split {num_nodes} vertices into {parts} parts: every graph server needs a vertex; "
            f"use at most {num_nodes} parts"
        )


def partition(
    dataset: str | Artifact,
    parts: int,
    method: str = "fennel",
    *,
    store: ArtifactStore | None = None,
    seed: int = 0,
    scheduler: str | None = None,
    force: bool = False,
    slack: float = 1.1,
    passes: int = 3,
) -> Artifact:
    """Partition an ingest artifact (an Artifact, URI or key) into ``parts``; cached.

    ``scheduler``: None or "auto" (in-process below ``executor.IN_PROCESS_EDGES`` edges,
    else a LocalCluster), "inprocess", "local", or a Dask scheduler address. ``slack`` and
    ``passes`` tune ``fennel`` only (see ``fennel``).
    """
    store = store or ArtifactStore.open()
    artifact = dataset if isinstance(dataset, Artifact) else resolve_artifact(str(dataset), store, stage="ingest")
    if artifact.stage != "ingest":
        raise DorylusError(f"{artifact.uri} is a {artifact.stage!r} artifact; partition needs an ingest artifact")
    check_method(method)
    check_parts(parts, int(artifact.summary["num_nodes"]))
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise DorylusError(f"seed must be a non-negative integer, not {seed!r}")
    params = {"parts": int(parts), "method": method, "seed": int(seed)}
    if method == "fennel":  # knobs of other methods would only split the cache
        knobs = Knobs(slack=float(slack), passes=passes)
        knobs.check()
        params["knobs"] = {"slack": knobs.slack, "gamma": knobs.gamma, "passes": int(knobs.passes)}
    if method == "metis":
        from stages.partition.metis import _pymetis

        _pymetis()  # fail before any work when the extra is missing
    token = _SCHEDULER.set(scheduler)
    try:
        return run_stage(STAGE, params, inputs={"dataset": artifact}, store=store, force=force)
    finally:
        _SCHEDULER.reset(token)
