"""The sampling baseline of the paper's Fig. 9 / Table 5: GraphSAGE on sampled minibatches.

The paper compares Dorylus with DGL's GraphSAGE trained on neighbour-sampled minibatches.
PyTorch Geometric's ``NeighborLoader`` would do the sampling, but it needs ``pyg-lib`` or
``torch-sparse``, which have no wheels for torch 2.13. So this module samples itself and
feeds PyG's ``SAGEConv`` (mean aggregator), which needs neither:

- the in-neighbour lists of the whole graph are one CSR (from the ingest artifact);
- a minibatch of ``batch_size`` training vertices is expanded hop by hop: each frontier
  vertex keeps ``min(degree, fanout)`` in-neighbours drawn uniformly without replacement
  (fan-outs listed hop by hop from the batch outwards, as PyG's ``num_neighbors``: the
  default [25, 10] is DGL's default fan-out "10,25", which lists layers from the input); the union of the sampled edges is the minibatch's subgraph, and the
  model runs every layer on it, reading the outputs of the batch vertices (the same
  semantics as ``NeighborLoader``);
- evaluation runs each layer over the full graph (no sampling), as GraphSAGE does.

This is exactly "GraphSAGE with uniform neighbour sampling on one CPU process", labelled
so in every table; it is neither DGL nor a GPU run. It writes the train stage's artifact
format (``metrics.jsonl``, ``predictions.npz``, ``summary.json``, ``weights.pt``), so the
evaluate stage prices and reports it like any training run (one graph-server instance for
the training time, no Lambda).
"""

from __future__ import annotations

import json
import time

import numpy as np

from stages.contract import Artifact, Stage, StageContext, run_stage
from stages.errors import DorylusError
from stages.ingest.dataset import IngestedGraph
from stages.store import ArtifactStore

VERSION = "1"
DEFAULTS = {"fanouts": [25, 10], "batch_size": 1024, "hidden": 64, "lr": 0.003, "dropout": 0.5, "epochs": 20, "seed": 0, "split": 0}


def in_csr(graph: IngestedGraph) -> tuple[np.ndarray, np.ndarray]:
    """indptr, indices of in-neighbours (row = destination)."""
    src, dst = graph.edges()
    order = np.argsort(dst, kind="stable")
    indptr = np.zeros(graph.num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=graph.num_nodes), out=indptr[1:])
    return indptr, src[order].astype(np.int64)


def sample_hop(indptr: np.ndarray, indices: np.ndarray, frontier: np.ndarray, fanout: int, rng: np.random.Generator):
    """(neighbour, vertex) pairs: up to ``fanout`` uniform in-neighbours of each frontier vertex."""
    if frontier.size == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    deg = indptr[frontier + 1] - indptr[frontier]
    owner = np.repeat(np.arange(frontier.size), deg)
    starts = np.repeat(indptr[frontier] - np.cumsum(np.r_[0, deg[:-1]]), deg)
    positions = starts + np.arange(owner.size)
    # a random rank inside each vertex's list; keeping ranks < fanout is sampling without replacement
    keys = rng.random(owner.size)
    order = np.lexsort((keys, owner))
    rank = np.arange(owner.size) - np.repeat(np.cumsum(np.r_[0, deg[:-1]]), deg)
    keep = order[rank < fanout]
    return indices[positions[keep]], frontier[owner[keep]]


def sample_subgraph(indptr, indices, batch: np.ndarray, fanouts: list[int], rng) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (batch first) and local edge_index of the sampled multi-hop subgraph."""
    nodes, frontier = [batch], batch
    srcs, dsts = [], []
    seen = np.zeros(indptr.size - 1, dtype=bool)
    seen[batch] = True
    for fanout in fanouts:
        s, d = sample_hop(indptr, indices, frontier, fanout, rng)
        srcs.append(s)
        dsts.append(d)
        new = np.unique(s[~seen[s]])
        seen[new] = True
        nodes.append(new)
        frontier = new
    vertices = np.concatenate(nodes)
    local = np.full(indptr.size - 1, -1, dtype=np.int64)
    local[vertices] = np.arange(vertices.size)
    src, dst = np.concatenate(srcs), np.concatenate(dsts)
    return vertices, np.stack([local[src], local[dst]])


def _model(in_dim: int, hidden: int, out_dim: int, layers: int, dropout: float):
    import torch
    from torch_geometric.nn import SAGEConv

    class GraphSAGE(torch.nn.Module):
        def __init__(self):
            super().__init__()
            sizes = [in_dim] + [hidden] * (layers - 1) + [out_dim]
            self.convs = torch.nn.ModuleList(SAGEConv(a, b, aggr="mean") for a, b in zip(sizes, sizes[1:]))

        def forward(self, x, edge_index):
            for i, conv in enumerate(self.convs):
                x = conv(x, edge_index)
                if i < len(self.convs) - 1:
                    x = torch.nn.functional.dropout(torch.relu(x), dropout, self.training)
            return x

    return GraphSAGE()


def _run(ctx: StageContext) -> dict:
    import torch

    try:
        import torch_geometric  # noqa: F401
    except ImportError:
        raise DorylusError("the sampling baseline needs PyTorch Geometric: pip install 'dorylus-pipeline[sampling]' (torch-geometric)") from None
    p = ctx.params
    graph = IngestedGraph(ctx.inputs["dataset"].path())
    torch.manual_seed(p["seed"])
    rng = np.random.default_rng(p["seed"])
    with ctx.timer("load"):
        indptr, indices = in_csr(graph)
        x = torch.from_numpy(np.array(graph.features()))  # a writable copy for torch
        labels = graph.labels().astype(np.int64)
        split = graph.split(p["split"])
        full_edges = torch.from_numpy(np.stack([indices, np.repeat(np.arange(graph.num_nodes), np.diff(indptr))]))
    y = torch.from_numpy(labels)
    train_nodes = np.flatnonzero((split == 1) & (labels >= 0))
    if train_nodes.size == 0:
        raise DorylusError("the dataset split has no labelled training vertices")
    model = _model(graph.feature_dim, p["hidden"], graph.num_classes, len(p["fanouts"]), p["dropout"])
    opt = torch.optim.Adam(model.parameters(), lr=p["lr"])
    records, best = [], {"val": -1.0}
    clock = 0.0
    for epoch in range(1, p["epochs"] + 1):
        model.train()
        t_sample = t_compute = loss_sum = 0.0
        batches = 0
        for batch in np.array_split(rng.permutation(train_nodes), max(1, -(-train_nodes.size // p["batch_size"]))):
            t0 = time.perf_counter()
            vertices, edge_index = sample_subgraph(indptr, indices, batch, p["fanouts"], rng)
            t1 = time.perf_counter()
            opt.zero_grad()
            out = model(x[torch.from_numpy(vertices)], torch.from_numpy(edge_index))[: batch.size]
            loss = torch.nn.functional.cross_entropy(out, y[torch.from_numpy(batch)])
            loss.backward()
            opt.step()
            t2 = time.perf_counter()
            t_sample, t_compute, batches = t_sample + t1 - t0, t_compute + t2 - t1, batches + 1
            loss_sum += loss.item()
        epoch_time = t_sample + t_compute
        clock += epoch_time  # training time only: full-graph evaluation is not part of it
        model.eval()
        with torch.no_grad():
            pred = model(x, full_edges).argmax(1).numpy()
        acc = {name: float(np.mean(pred[m] == labels[m])) if (m := (split == code) & (labels >= 0)).any() else None
               for name, code in (("train_acc", 1), ("val_acc", 2), ("test_acc", 3))}
        records.append({"epoch": epoch, "time": clock, "epoch_time": epoch_time, "loss": loss_sum / batches, **acc,
                        "task_time": {"sample": t_sample, "compute": t_compute}, "task_count": {"sample": batches, "compute": batches},
                        "bytes": {"server_server": 0, "server_worker": 0}, "stalls": 0, "stall_time": 0.0, "staleness_mode": "sampling"})
        if (acc["val_acc"] or 0.0) > best["val"]:
            best = {"val": acc["val_acc"] or 0.0, "epoch": epoch, "pred": pred.copy(), "test": acc["test_acc"]}
    out = ctx.out
    (out / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    torch.save(model.state_dict(), out / "weights.pt")
    np.savez(out / "predictions.npz", node_id=np.arange(graph.num_nodes), label=labels, split=split,
             pred_best=best["pred"], pred_final=pred)
    summary = {
        "model": "graphsage-sampling", "layers": [graph.feature_dim] + [p["hidden"]] * (len(p["fanouts"]) - 1) + [graph.num_classes],
        "activation": "relu", "backend": "cpu", "staleness": "sampling", "num_parts": 1, "intervals_per_server": None,
        "num_workers": 0, "epochs_run": len(records), "stopped_because": "epochs", "best_val_epoch": best["epoch"],
        "best_val_acc": best["val"], "test_acc_at_best_val": best["test"], "final_test_acc": records[-1]["test_acc"],
        "train_time": clock, "target_accuracy": None, "time_to_target": None, "epochs_to_target": None,
        "task_time_total": {k: sum(r["task_time"][k] for r in records) for k in ("sample", "compute")},
        "task_count_total": {k: sum(r["task_count"][k] for r in records) for k in ("sample", "compute")},
        "tensor_task_seconds": 0.0, "worker_memory_mb": None,
        "server_seconds": {"graph": clock, "parameter": 0.0}, "bytes_total": {"server_server": 0, "server_worker": 0},
        "baseline": "GraphSAGE (PyG SAGEConv, mean) with uniform neighbour sampling on one CPU process",
        "fanouts": p["fanouts"], "batch_size": p["batch_size"],
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return {k: summary[k] for k in ("epochs_run", "best_val_acc", "test_acc_at_best_val", "final_test_acc", "train_time")}


STAGE = Stage(name="baseline", version=VERSION, package="stages.evaluate.sage_baseline", run=_run)


def sage_baseline(dataset: Artifact, settings: dict | None = None, *, store: ArtifactStore | None = None, force: bool = False) -> Artifact:
    """Train the sampling baseline on an ingest artifact; the artifact has the train format."""
    if dataset.stage != "ingest":
        raise DorylusError(f"{dataset.uri} is a {dataset.stage!r} artifact; the baseline trains on an ingest artifact")
    unknown = set(settings or {}) - set(DEFAULTS)
    if unknown:
        raise DorylusError(f"unknown baseline setting(s) {', '.join(sorted(unknown))}; known: {', '.join(DEFAULTS)}")
    params = {**DEFAULTS, **(settings or {})}
    if not params["fanouts"] or any(int(f) < 1 for f in params["fanouts"]):
        raise DorylusError(f"baseline fanouts {params['fanouts']} must be positive integers, one per layer")
    for name in ("batch_size", "hidden", "epochs"):
        if int(params[name]) < 1:
            raise DorylusError(f"baseline {name} must be at least 1, not {params[name]}")
    params["fanouts"] = [int(f) for f in params["fanouts"]]
    return run_stage(STAGE, params, {"dataset": dataset}, store=store, force=force)
