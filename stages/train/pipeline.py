"""One training run: place the servers, wire them, follow the epochs, collect the results.

``run_training`` starts the parameter servers and one graph server per partition as Dask
actors, gives them a fresh data-plane key, lets the ``Coordinator`` follow the run until a
stop condition, then collects the weights of the stop epoch, the predictions of the best
and the final epoch, and the per-epoch metrics.
"""

from __future__ import annotations

import logging
import os
import secrets
import time
from dataclasses import dataclass

import numpy as np

from stages.errors import DorylusError
from stages.partition.layout import PartitionSet
from stages.train import placement
from stages.train.config import TrainConfig
from stages.train.coordinator import Coordinator, TrainingFailed
from stages.train.graph_server import GraphServer
from stages.train.parameter_server import ParameterServer
from stages.train.reference import init_gat_weights, init_gcn_weights

log = logging.getLogger("dorylus.train")


@dataclass
class TrainResult:
    metrics: list[dict]
    weights: dict[str, np.ndarray]
    predictions: dict[str, np.ndarray]
    coordinator: Coordinator
    train_time: float
    status: list[dict]
    sizes: list[int]


def model_spec(cfg: TrainConfig, sizes: list[int], num_train: int, row_normalize: bool = True) -> dict:
    """What every tensor task needs to know about the model (it travels in the event)."""
    return {
        "kind": cfg.model, "sizes": sizes, "activation": cfg.activation, "dropout": cfg.dropout, "seed": cfg.seed,
        "streams": 2 if cfg.dropout > 0 else 1, "num_train": num_train, "normalize_features": row_normalize,
        "narrow_last": len(sizes) > 2 and cfg.model == "gcn",
        "heads": cfg.heads, "negative_slope": cfg.negative_slope,  # GAT
        # in-process tensor tasks read the layer outputs the server holds; remote workers
        # rematerialize them instead of fetching them over their slow network (the paper's choice)
        "reuse_output": cfg.backend == "cpu",
    }


def split_counts(parts: PartitionSet, split: int) -> dict[int, int]:
    counts = {1: 0, 2: 0, 3: 0}
    for part in parts.parts():
        if split >= part.splits.shape[0]:
            raise DorylusError(f"split {split} does not exist: the dataset has {part.splits.shape[0]} split(s)")
        codes = np.asarray(part.splits[split])
        labeled = np.asarray(part.labels) >= 0
        for code in counts:
            counts[code] += int(((codes == code) & labeled).sum())
    return counts


def row_normalize(parts: PartitionSet, cfg: TrainConfig) -> bool:
    if cfg.normalize_features != "auto":
        return cfg.normalize_features == "row"
    return all(float(np.min(parts.part(i).features, initial=0.0)) >= 0.0 for i in range(parts.num_parts))


def run_training(folder, cfg: TrainConfig, client, torch_threads: int | None = None) -> TrainResult:
    parts = PartitionSet(folder)
    meta = parts.meta
    P = parts.num_parts
    sizes = cfg.sizes(int(meta["feature_dim"]), int(meta["num_classes"]))
    counts = split_counts(parts, cfg.split)
    if counts[1] == 0:
        raise DorylusError(f"split {cfg.split} has no labeled training vertices: nothing to train on")
    key = secrets.token_bytes(32)
    intervals = [max(1, min(cfg.intervals_per_server, int(p["num_local"]))) for p in meta["parts"]]
    model = model_spec(cfg, sizes, counts[1], row_normalize=row_normalize(parts, cfg))
    gs_cfg = {
        "split": cfg.split, "graph_threads": cfg.graph_threads, "backend": cfg.backend, "num_workers": cfg.num_workers,
        "relaunch_ratio": cfg.relaunch_ratio, "relaunch_min_s": cfg.relaunch_min_s, "epochs": cfg.epochs,
        "staleness_bound": cfg.staleness_bound, "latency_ms": cfg.latency_ms, "bandwidth_mbps": cfg.bandwidth_mbps,
        "faults": [dict(f) for f in cfg.faults], "lambda": cfg.lambda_settings(),
    }
    init = init_gat_weights(sizes, cfg.heads, cfg.seed) if cfg.model == "gat" else init_gcn_weights(sizes, cfg.seed)
    names = ("weights", "att_src", "att_dst") if cfg.model == "gat" else ("weights",)
    where = placement.workers(client)
    threads = torch_threads if torch_threads is not None else max(1, (os.cpu_count() or 1) // P)

    ps_actors, gs_actors = [], []
    coordinator = Coordinator(key, P, cfg, counts)
    try:
        for i in range(cfg.num_parameter_servers):
            layers = {l: [[f"{n}.{l}", init[f"{n}.{l}"].numpy()] for n in names] for l in range(len(sizes) - 1)
                      if l % cfg.num_parameter_servers == i}
            spec = {"key": key.hex(), "layers": layers, "num_intervals": sum(intervals), "lr": cfg.lr,
                    "weight_decay": cfg.weight_decay, "eps": cfg.adam_eps}
            ps_actors.append(placement.place(client, ParameterServer, spec, where[i % len(where)]))
        ps_addresses = [a.start().result() for a in ps_actors]
        for i in range(P):
            spec = {"index": i, "num_parts": P, "partitions": str(folder), "key": key.hex(), "config": gs_cfg,
                    "model": model, "intervals_per_part": intervals, "torch_threads": threads}
            gs_actors.append(placement.place(client, GraphServer, spec, where[i % len(where)]))
        gs_addresses = [f.result() for f in [a.start() for a in gs_actors]]
        coordinator.connect(gs_addresses)
        started = time.perf_counter()
        for f in [a.run(gs_addresses, ps_addresses, coordinator.address) for a in gs_actors]:
            f.result()

        last_check = [time.monotonic()]

        def alive():
            if time.monotonic() - last_check[0] < 5:
                return
            last_check[0] = time.monotonic()
            for i, a in enumerate(gs_actors):
                errors = a.status().result(timeout=30)["errors"]
                if errors:
                    raise TrainingFailed(f"graph server {i} failed: {errors[0]}")

        coordinator.run(started, alive=alive)
        train_time = coordinator.metrics[-1]["time"]
        stop = coordinator.stop_after
        best = coordinator.best_epoch
        weights = ps_actors[0].weights(stop).result()
        for a in ps_actors[1:]:
            weights.update(a.weights(stop).result())
        wu = [a.stats().result() for a in ps_actors]
        for row in coordinator.metrics:
            e = row["epoch"]
            row["task_time"]["WU"] = sum(s["wu_time"].get(e, 0.0) for s in wu)
            row["task_count"]["WU"] = sum(s["wu_count"].get(e, 0) for s in wu)
        pieces = [a.predictions([best, stop]).result() for a in gs_actors]
        status = [a.status().result() for a in gs_actors]
    finally:
        for a in gs_actors:
            try:
                a.stop().result(timeout=60)
            except Exception:  # noqa: BLE001 - keep stopping the others
                log.exception("stopping a graph server failed")
        for a in ps_actors:
            try:
                a.stop().result(timeout=60)
            except Exception:  # noqa: BLE001
                log.exception("stopping a parameter server failed")
        coordinator.close()

    node_id = np.concatenate([p["vertices"] for p in pieces])
    order = np.argsort(node_id, kind="stable")
    predictions = {
        "node_id": node_id[order],
        "label": np.concatenate([p["labels"] for p in pieces])[order],
        "split": np.concatenate([p["split"] for p in pieces])[order],
        "pred_best": np.concatenate([p[f"pred_{best}"] for p in pieces])[order],
        "pred_final": np.concatenate([p[f"pred_{stop}"] for p in pieces])[order],
    }
    return TrainResult(coordinator.metrics, weights, predictions, coordinator, train_time, status, sizes)
