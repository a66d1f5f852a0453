"""Benchmark of the train stage, side by side with its peers. Prints figures and saves JSON
under tests/bench/results/. Not a test: it asserts nothing about time.

    .venv/bin/python tests/bench/bench_train.py [--nodes 200000] [--epochs 5] [--parts a,b,c,d]

(a) cpu backend, P=1, against PyTorch Geometric's full-graph GCN (GCNConv, cached
    normalization, torch CSR adjacency, same sizes and threads): epoch time ratio; the
    authors' C++ CPU backend took about 1.37 s per epoch on this graph here.
(b) the same graph, P=2, local backend (tensor workers in separate processes): overhead
    against (a).
(c) with a simulated Lambda network (200 Mbit/s per worker, 20 ms per request), on a
    smaller graph of the same kind: pipelined asynchronous (S=0, many intervals) against
    synchronous with one interval per server (no overlap).
(d) the Gather kernel's achieved bandwidth against this machine's measured memory bandwidth.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "tests" / "bench" / "results"
CPP_CPU_EPOCH_S = 1.37  # the authors' C++ implementation, CPU backend, one graph server, this machine


def synthetic(nodes: int, degree: int, features: int, classes: int) -> str:
    return f"synthetic:nodes={nodes},avg_degree={degree},features={features},classes={classes},homophily=0.8,seed=0"


def epoch_times(artifact) -> list[float]:
    rows = [json.loads(line) for line in (artifact.path() / "metrics.jsonl").read_text().splitlines()]
    return [r["epoch_time"] for r in rows]


def steady(times: list[float]) -> float:
    """Median epoch time, leaving out the first epoch (start-up, the cached layer-0 Gather)."""
    return statistics.median(times[1:] if len(times) > 1 else times)


def bench_pyg(ingested, hidden: int, epochs: int) -> float:
    from torch_geometric.nn import GCNConv

    from stages.ingest.dataset import IngestedGraph

    g = IngestedGraph(ingested.path())
    src, dst = g.edges()
    n = g.num_nodes
    x = torch.from_numpy(np.ascontiguousarray(g.features()))
    y = torch.from_numpy(g.labels().astype(np.int64))
    train = torch.from_numpy(g.split(0) == 1) if g.meta["split"]["num_splits"] else torch.ones(n, dtype=torch.bool)
    edge_index = torch.from_numpy(np.stack([src, dst]).astype(np.int64))
    adj_t = torch.sparse_coo_tensor(edge_index.flip(0), torch.ones(edge_index.shape[1]), (n, n)).coalesce().to_sparse_csr()

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.c1 = GCNConv(g.feature_dim, hidden, cached=True, bias=False)
            self.c2 = GCNConv(hidden, g.num_classes, cached=True, bias=False)

        def forward(self, x, adj):
            return self.c2(torch.relu(self.c1(x, adj)), adj)

    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    times = []
    for _ in range(epochs):
        t0 = time.perf_counter()
        opt.zero_grad()
        out = model(x, adj_t)
        loss = torch.nn.functional.cross_entropy(out[train], y[train])
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    return steady(times)


def memory_bandwidth() -> float:
    """GB/s of a large copy (bytes read + written)."""
    a = np.ones(64 * 2**20 // 4 * 4, dtype=np.float32)  # 256 MiB
    b = np.empty_like(a)
    best = min(_timed(lambda: np.copyto(b, a)) for _ in range(5))
    return 2 * a.nbytes / best / 1e9


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def gather_bandwidth(partitions, width: int) -> dict:
    """Time GA (Â H for all local rows) on part 0 and count the bytes it must move."""
    from stages.partition.layout import PartitionSet
    from stages.train.graph_server import _csr_rows

    part = PartitionSet(partitions.path()).part(0)
    n, g = part.num_local, part.num_ghosts
    adj = _csr_rows(part.in_indptr, part.in_indices, part.in_weights, 0, n, n + g)
    h = torch.randn(n + g, width)
    adj @ h
    best = min(_timed(lambda: adj @ h) for _ in range(3))
    nnz = int(part.in_indptr[-1])
    compulsory = nnz * (4 + 4) + (n + 1) * 8 + (n + g) * width * 4 + n * width * 4
    gathered = nnz * (4 + 4 + width * 4) + n * width * 4  # each edge fetches its source row
    return {"seconds": best, "nnz": nnz, "width": width, "gb_s_compulsory": compulsory / best / 1e9,
            "gb_s_gathered": gathered / best / 1e9}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=200_000)
    ap.add_argument("--degree", type=int, default=20)
    ap.add_argument("--features", type=int, default=128)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--classes", type=int, default=8)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--small-nodes", type=int, default=20_000, help="graph size of (c)")
    ap.add_argument("--pipeline-intervals", type=int, default=8, help="(c): intervals and workers per server when pipelined")
    ap.add_argument("--parts", default="a,b,c,d")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    os.environ.setdefault("DORYLUS_HOME", str(Path(tempfile.gettempdir()) / "dorylus-bench"))
    torch.set_num_threads(os.cpu_count() or 1)

    from stages.ingest import ingest
    from stages.partition import partition
    from stages.train import TrainConfig, placement, train

    todo = set(args.parts.split(","))
    out: dict = {"machine": {"cpus": os.cpu_count()}, "args": vars(args)}
    t0 = time.perf_counter()
    big = ingest(synthetic(args.nodes, args.degree, args.features, args.classes))
    p1 = partition(big, 1, "hash", scheduler="inprocess")
    out["setup_s"] = time.perf_counter() - t0
    cfg = TrainConfig(hidden=(args.hidden,), dropout=0.0, weight_decay=0.0, epochs=args.epochs)

    if "a" in todo or "b" in todo:
        with placement.dask_client(1) as client:
            a = train(p1, TrainConfig(**{**cfg.__dict__, "intervals_per_server": 1}), client=client, force=True)
        ours = steady(epoch_times(a))
        pyg = bench_pyg(big, args.hidden, args.epochs)
        out["a"] = {"dorylus_cpu_p1_epoch_s": ours, "pyg_epoch_s": pyg, "ratio_vs_pyg": ours / pyg,
                    "cpp_epoch_s": CPP_CPU_EPOCH_S, "ratio_vs_cpp": ours / CPP_CPU_EPOCH_S}
        print(f"(a) cpu P=1: {ours:.3f} s/epoch; PyG {pyg:.3f} s -> {ours / pyg:.2f}x; C++ {CPP_CPU_EPOCH_S} s -> {ours / CPP_CPU_EPOCH_S:.2f}x")
    if "b" in todo:
        p2 = partition(big, 2, "hash", scheduler="inprocess")
        with placement.dask_client(2) as client:
            b = train(p2, TrainConfig(**{**cfg.__dict__, "backend": "local", "intervals_per_server": 2, "num_workers": 2}),
                      client=client, force=True)
        local = steady(epoch_times(b))
        out["b"] = {"local_p2_epoch_s": local, "overhead_vs_a": local / out["a"]["dorylus_cpu_p1_epoch_s"]}
        print(f"(b) local P=2: {local:.3f} s/epoch -> {local / out['a']['dorylus_cpu_p1_epoch_s']:.2f}x of (a)")
    if "c" in todo:
        small = ingest(synthetic(args.small_nodes, args.degree, args.features, args.classes))
        ps = partition(small, 2, "hash", scheduler="inprocess")
        net = {"backend": "local", "latency_ms": 20.0, "bandwidth_mbps": 200.0, "epochs": max(3, args.epochs // 2)}
        with placement.dask_client(2) as client:
            sync = train(ps, TrainConfig(**{**cfg.__dict__, **net, "staleness": "sync", "intervals_per_server": 1,
                                            "num_workers": 1}), client=client, force=True)
            pipe = train(ps, TrainConfig(**{**cfg.__dict__, **net, "staleness": "0", "intervals_per_server": args.pipeline_intervals,
                                            "num_workers": args.pipeline_intervals}), client=client, force=True)
        s, p = steady(epoch_times(sync)), steady(epoch_times(pipe))
        out["c"] = {"sync_one_interval_epoch_s": s, "pipelined_s0_epoch_s": p, "speedup": s / p, "nodes": args.small_nodes}
        print(f"(c) simulated Lambda network, {args.small_nodes} nodes: sync 1 interval {s:.3f} s, pipelined S=0 {p:.3f} s -> {s / p:.2f}x faster")
    if "d" in todo:
        mem = memory_bandwidth()
        ga = gather_bandwidth(p1, args.hidden)
        out["d"] = {"memory_gb_s": mem, "gather": ga, "ratio_compulsory": ga["gb_s_compulsory"] / mem,
                    "ratio_gathered": ga["gb_s_gathered"] / mem}
        print(f"(d) GA {ga['seconds']:.3f} s for {ga['nnz']} nnz x {args.hidden}: {ga['gb_s_compulsory']:.2f} GB/s compulsory, "
              f"{ga['gb_s_gathered']:.2f} GB/s gathered; memory copy {mem:.2f} GB/s")
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"bench_train_{time.strftime('%Y%m%dT%H%M%S')}.json"
    path.write_text(json.dumps(out, indent=2))
    print(f"saved {path}")


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
