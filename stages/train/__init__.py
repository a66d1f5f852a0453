"""The train stage: Dorylus-style GNN training on a partition artifact.

Graph servers (one per partition, ``graph_server.py``) run Gather and Scatter and move
vertex intervals through a pipeline; tensor workers (``worker.py``, the Lambda handler)
run ApplyVertex, ApplyEdge (GAT) and the fused last layer; parameter servers (``parameter_server.py``)
hold the weights and Adam; the coordinator (``coordinator.py``) enforces the staleness
bound and the stop conditions. Servers are placed on Dask (``placement.py``).

Artifact files:

- ``metrics.jsonl``: one JSON object per epoch (epoch, time, epoch_time, loss, train/val/
  test accuracy, task_time and task_count per task type GA AV SC AE GA_b AV_b SC_b AE_b WU,
  bytes server_server/server_worker, stalls, stall_time, staleness_mode). The fused last
  layer counts as an AV task. Accuracies are those of the weights that entered the epoch,
  measured without dropout.
- ``weights.pt``: a ``state_dict`` for ``reference.ReferenceGCN`` (``weights.<l>``, (in, out)),
  or with ``model="gat"`` for ``reference.ReferenceGAT`` (adds ``att_src.<l>``, ``att_dst.<l>``):
  the weights after the last epoch's update, as an ordinary training loop leaves them (so
  one update past the last metrics row, which measures the weights that entered its epoch).
- ``predictions.npz``: node_id, label, split, pred_best (best validation epoch), pred_final.
- ``summary.json``: see ``_summary``.
"""

from __future__ import annotations

import json
from contextvars import ContextVar

import numpy as np
import torch

from stages.contract import Artifact, Stage, StageContext, resolve_artifact, run_stage
from stages.partition.layout import PartitionSet
from stages.store import ArtifactStore
from stages.train import placement
from stages.train.config import TrainConfig, resolve
from stages.train.graph_server import TASKS
from stages.train.pipeline import run_training

VERSION = "1"
TENSOR_TASKS = ("AV", "AE", "AV_b", "AE_b")

# how to reach Dask: not part of the key (placement does not change what is computed)
_PLACEMENT: ContextVar[dict] = ContextVar("train_placement", default={})


def _run(ctx: StageContext) -> dict:
    cfg = TrainConfig.from_params(ctx.params["config"])
    folder = ctx.inputs["partitions"].path()
    where = _PLACEMENT.get()
    num_parts = PartitionSet(folder).num_parts
    with ctx.timer("train"):
        if where.get("client") is not None:
            result = run_training(folder, cfg, where["client"], where.get("torch_threads"))
        else:
            with placement.dask_client(num_parts, where.get("scheduler")) as client:
                result = run_training(folder, cfg, client, where.get("torch_threads"))
    with ctx.timer("write"):
        with open(ctx.out / "metrics.jsonl", "w") as f:
            for row in result.metrics:
                f.write(json.dumps(row) + "\n")
        torch.save({k: torch.from_numpy(np.array(v)) for k, v in result.weights.items()}, ctx.out / "weights.pt")
        np.savez(ctx.out / "predictions.npz", **result.predictions)
        summary = _summary(cfg, num_parts, result)
        (ctx.out / "summary.json").write_text(json.dumps(summary, indent=2))
    keys = ("epochs_run", "best_val_acc", "test_acc_at_best_val", "final_test_acc", "train_time", "time_to_target")
    return {k: summary[k] for k in keys}


def _summary(cfg: TrainConfig, num_parts: int, result) -> dict:
    m, c = result.metrics, result.coordinator
    best = m[c.best_epoch - 1]
    total_time = {t: sum(r["task_time"].get(t, 0.0) for r in m) for t in TASKS}
    total_count = {t: sum(r["task_count"].get(t, 0) for r in m) for t in TASKS}
    return {
        "model": cfg.model,
        "layers": result.sizes,
        "activation": cfg.activation,
        "backend": cfg.backend,
        "staleness": cfg.staleness,
        "num_parts": num_parts,
        "intervals_per_server": cfg.intervals_per_server,
        "num_workers": cfg.num_workers,
        "epochs_run": len(m),
        "stopped_because": c.stopped_because,
        "best_val_epoch": c.best_epoch,
        "best_val_acc": best["val_acc"],
        "test_acc_at_best_val": best["test_acc"],
        "final_test_acc": m[-1]["test_acc"],
        "train_time": result.train_time,
        "target_accuracy": cfg.target_accuracy,
        "time_to_target": c.time_to_target,
        "epochs_to_target": c.epochs_to_target,
        "task_time_total": total_time,
        "task_count_total": total_count,
        "tensor_task_seconds": sum(total_time[t] for t in TENSOR_TASKS),
        "worker_memory_mb": cfg.worker_memory_mb,
        "server_seconds": {"graph": num_parts * result.train_time, "parameter": cfg.num_parameter_servers * result.train_time},
        "bytes_total": {k: sum(r["bytes"][k] for r in m) for k in ("server_server", "server_worker")},
        "relaunched_tasks": sum(s["relaunched"] for s in result.status),
        "failed_invocations": sum(s.get("failed_invocations", 0) for s in result.status),  # lambda: retried
        "tensor_concurrency": [s.get("concurrency") for s in result.status],  # autotuned, per graph server, at the end
        "dropped_messages": sum(s["dropped"] for s in result.status),
    }


STAGE = Stage(name="train", version=VERSION, package="stages.train", run=_run)


def train(
    partitions: str | Artifact,
    config: TrainConfig | None = None,
    *,
    store: ArtifactStore | None = None,
    scheduler: str | None = None,
    client=None,
    torch_threads: int | None = None,
    force: bool = False,
) -> Artifact:
    """Train on a partition artifact (an Artifact, URI or key); cached by config and input.

    ``scheduler`` is a Dask scheduler address (default: a fresh LocalCluster with one
    worker process per graph server); ``client`` an existing ``dask.distributed.Client``.
    """
    store = store or ArtifactStore.open()
    art = partitions if isinstance(partitions, Artifact) else resolve_artifact(partitions, store, stage="partition")
    dataset = ((art.manifest.get("summary") or {}).get("dataset")) or art.manifest.get("inputs", {}).get("dataset", {}).get("uri", "")
    cfg = resolve(config or TrainConfig(), str(dataset))
    params = {"config": cfg.to_params()}
    token = _PLACEMENT.set({"scheduler": scheduler, "client": client, "torch_threads": torch_threads})
    try:
        return run_stage(STAGE, params, {"partitions": art}, store=store, force=force)
    finally:
        _PLACEMENT.reset(token)


__all__ = ["train", "TrainConfig", "STAGE", "VERSION"]
