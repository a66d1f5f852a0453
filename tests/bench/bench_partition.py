"""The partition stage at scale: every method side by side with pymetis run directly.

Synthetic graphs (the ``synthetic:`` source's degree-corrected block model, average degree
10, so about 1M, 10M and 50M directed edges) are partitioned into P = 4 and 16 parts by:

- the stage with ``hash``, ``range``, ``fennel`` (3 passes, and 1 pass) and ``metis``:
  the whole job (degrees, owners, part folders) in its default executor;
- ``pymetis`` run directly: the symmetric CSR built from the edge Parquet in memory, then
  ``pymetis.part_graph`` with the same vertex weights: the peer.

Each run is a fresh child process, so its peak memory is its own (for the stage: the
largest of the driver and the Dask workers). The figures: wall time of the whole run, the
time of the owner assignment alone, peak memory and edge-cut fraction; then fennel's
ratios to pymetis (time, cut). Saved to tests/bench/results/partition.json.

Run: .venv/bin/python tests/bench/bench_partition.py [--sizes 1M,10M,50M] [--parts 4,16]
     [--methods hash,range,fennel,fennel1,metis,pymetis] [--store DIR] [--repeat K] [--name NAME]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "tests" / "bench" / "results"
SIZES = {"1M": 100_000, "10M": 1_000_000, "50M": 5_000_000}  # nodes at average degree 10
METHODS = ("hash", "range", "fennel", "fennel1", "metis", "pymetis")


def spec(nodes: int) -> str:
    return f"synthetic:nodes={nodes},avg_degree=10,features=8,classes=8,homophily=0.8,seed=0"


def _peak() -> int:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) * 1024


def child(store: str, dataset: str, parts: int, method: str) -> dict:
    """One measurement, in this (fresh) process."""
    import numpy as np

    from stages.contract import resolve_artifact
    from stages.ingest.dataset import IngestedGraph
    from stages.partition import partition
    from stages.store import ArtifactStore

    st = ArtifactStore.open(store)
    artifact = resolve_artifact(dataset, st, stage="ingest")
    t0 = time.perf_counter()
    if method == "pymetis":
        import pymetis

        from stages.partition.metis import symmetric_adjacency

        graph = IngestedGraph(artifact.path())
        deg = np.zeros(graph.num_nodes, dtype=np.int64)
        for _, dst in graph.iter_edges():
            deg += np.bincount(dst, minlength=graph.num_nodes)
        xadj, adjncy = symmetric_adjacency(graph, pymetis.zero_copy_dtype())
        t1 = time.perf_counter()
        result = pymetis.part_graph(
            parts, adjacency=pymetis.CSRAdjacency(xadj, adjncy), vweights=(deg + 1).astype(xadj.dtype)
        )
        assign_s = time.perf_counter() - t1
        owner = np.asarray(result.vertex_part)
        src, dst = graph.edges()
        cut = float(np.mean(owner[src] != owner[dst]))
        return {"seconds": time.perf_counter() - t0, "assign_s": assign_s, "peak_memory_bytes": _peak(), "edge_cut_fraction": cut}
    name, passes = ("fennel", 1) if method == "fennel1" else (method, 3)
    art = partition(artifact, parts, name, store=st, force=True, passes=passes)
    s = art.summary
    return {
        "seconds": time.perf_counter() - t0,
        "assign_s": art.manifest["timings"]["assign"],
        "peak_memory_bytes": max(s["peak_memory_bytes"], _peak()),
        "edge_cut_fraction": s["edge_cut_fraction"],
        "replication_factor": s["replication_factor"],
        "vertex_balance": s["vertex_balance"],
        "edge_balance": s["edge_balance"],
        "executor": s["executor"],
    }


def run_child(store: str, dataset: str, parts: int, method: str) -> dict:
    cmd = [sys.executable, __file__, "--child", json.dumps([store, dataset, parts, method])]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if proc.returncode != 0:
        # e.g. killed for memory: report it, it is a result too
        return {"error": f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:] }"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1M,10M,50M")
    ap.add_argument("--parts", default="4,16")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--store", default=None, help="artifact store (default: the state folder's)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each measurement (the fastest is kept)")
    ap.add_argument("--name", default="partition", help="results file name under tests/bench/results/")
    args = ap.parse_args()

    from stages.ingest import ingest
    from stages.store import ArtifactStore

    store = ArtifactStore.open(args.store)
    rows = []
    for size in args.sizes.split(","):
        t = time.perf_counter()
        dataset = ingest(spec(SIZES[size]), store=store)
        print(f"{size}: {dataset.summary['num_nodes']:,} nodes, {dataset.summary['num_edges']:,} edges "
              f"(ingest {time.perf_counter() - t:.1f} s, cached={dataset.cached})", flush=True)
        for parts in (int(p) for p in args.parts.split(",")):
            for method in args.methods.split(","):
                runs = [run_child(store.uri, dataset.uri, parts, method) for _ in range(args.repeat)]
                r = min(runs, key=lambda x: x.get("seconds", float("inf")))
                r.update(size=size, edges=dataset.summary["num_edges"], parts=parts, method=method)
                rows.append(r)
                if "error" in r:
                    print(f"  P={parts:<3} {method:8} {r['error']}", flush=True)
                else:
                    print(f"  P={parts:<3} {method:8} total {r['seconds']:7.2f} s  assign {r['assign_s']:7.2f} s  "
                          f"peak {r['peak_memory_bytes'] / 2**30:5.2f} GiB  cut {r['edge_cut_fraction']:.4f}", flush=True)
    ratios = []
    for size in args.sizes.split(","):
        for parts in (int(p) for p in args.parts.split(",")):
            by = {r["method"]: r for r in rows if r["size"] == size and r["parts"] == parts and "error" not in r}
            if "fennel" in by and "pymetis" in by:
                f, m = by["fennel"], by["pymetis"]
                ratio = {
                    "size": size,
                    "parts": parts,
                    "pymetis_over_fennel_assign_time": m["assign_s"] / f["assign_s"],
                    "pymetis_whole_over_fennel_assign_time": m["seconds"] / f["assign_s"],
                    "fennel_over_pymetis_cut": f["edge_cut_fraction"] / m["edge_cut_fraction"],
                    "hash_over_fennel_cut": by["hash"]["edge_cut_fraction"] / f["edge_cut_fraction"] if "hash" in by else None,
                    "fennel_over_pymetis_peak_memory": f["peak_memory_bytes"] / m["peak_memory_bytes"],
                }
                ratios.append(ratio)
                print(f"{size} P={parts}: pymetis/fennel time (partitioner only) {ratio['pymetis_over_fennel_assign_time']:.1f}x, "
                      f"fennel/pymetis cut {ratio['fennel_over_pymetis_cut']:.2f}x, "
                      f"fennel/pymetis peak memory {ratio['fennel_over_pymetis_peak_memory']:.2f}x")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"{args.name}.json"
    out.write_text(json.dumps({"rows": rows, "ratios": ratios, "cpus": os.cpu_count()}, indent=2))
    print(f"saved {out}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        print(json.dumps(child(*json.loads(sys.argv[2]))))
    else:
        main()
