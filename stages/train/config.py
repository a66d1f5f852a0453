"""Training settings: one dataclass, its defaults, the paper preset, and validation.

The defaults are the standard settings under which a 2-layer GCN reaches the published
accuracy on Cora (Kipf and Welling): 16 hidden, ReLU, dropout 0.5, weight decay 5e-4,
Adam with lr 0.01, 200 epochs. ``model="gat"`` switches the model defaults to the GAT
paper's (8 heads of 8 hidden, ELU, dropout 0.6, lr 0.005). ``preset="paper"`` gives the
Dorylus settings instead: tanh, no dropout, no weight decay, and the hidden size of the
authors' config for the dataset.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace

from stages.errors import DorylusError

MODELS = ("gcn", "gat")
BACKENDS = ("cpu", "local", "lambda")
ACTIVATIONS = ("relu", "tanh", "elu")

# hidden size per dataset in the authors' run/*.config files (input/hidden/output)
PAPER_HIDDEN = {"reddit": 128, "reddit-small": 128, "reddit-large": 128, "amazon": 64, "friendster": 48, "cora": 16}
PAPER_DEFAULT_HIDDEN = 128


@dataclass(frozen=True)
class TrainConfig:
    model: str = "gcn"
    hidden: tuple[int, ...] | None = None  # hidden layer sizes; None = the model's default
    activation: str | None = None  # None = relu (GCN) / elu (GAT)
    dropout: float | None = None
    lr: float | None = None
    weight_decay: float = 5e-4
    adam_eps: float = 1e-8
    heads: int = 8  # GAT attention heads of the hidden layers (the last layer has one)
    negative_slope: float = 0.2  # GAT LeakyReLU
    epochs: int = 200
    target_accuracy: float | None = None  # stop once validation accuracy reaches it
    patience: int | None = None  # stop after this many epochs without a better validation accuracy
    staleness: str = "sync"  # "sync", "0", "1", ... or "inf"
    switch_to_sync: float | None = None  # go synchronous once val acc is within this of the target
    backend: str = "cpu"
    intervals_per_server: int = 4
    num_workers: int = 2  # tensor workers per graph server (local backend)
    graph_threads: int = 1  # graph tasks running at once on a graph server
    num_parameter_servers: int = 1
    seed: int = 0
    split: int = 0  # which of the dataset's splits trains and evaluates
    # "auto": divide each feature row by its sum (Kipf and Welling's preprocessing) only when
    # every feature is >= 0, as for bag-of-words; on signed features it scrambles the signal
    normalize_features: str = "auto"
    worker_memory_mb: int = 3008  # what a Lambda would be configured with (for cost)
    relaunch_ratio: float = 5.0  # relaunch a tensor task running longer than ratio x average...
    relaunch_min_s: float = 10.0  # ...and longer than this (the first tasks include worker start-up)
    latency_ms: float = 0.0  # simulated network between tensor workers and servers (local backend)
    bandwidth_mbps: float = 0.0  # 0 = unlimited
    # lambda backend: the function that runs the tensor-worker handler
    lambda_function: str = "dorylus-tensor-worker"
    lambda_region: str | None = None  # None = boto3's default region
    lambda_endpoint_url: str | None = None  # e.g. a local moto server
    faults: tuple = ()  # injected worker faults for tests: ({"task","epoch","layer","interval","kind"}, ...)
    preset: str | None = None

    # --- derived -----------------------------------------------------------------------
    def lambda_settings(self) -> dict:
        """What the graph servers' lambda invokers need (no credentials: boto3 finds those)."""
        return {"function": self.lambda_function, "region": self.lambda_region, "endpoint_url": self.lambda_endpoint_url,
                "memory_mb": self.worker_memory_mb}

    @property
    def staleness_bound(self) -> float | None:
        """None for sync, else the bound S (math.inf for unbounded)."""
        if self.staleness == "sync":
            return None
        return math.inf if self.staleness == "inf" else int(self.staleness)

    def sizes(self, feature_dim: int, num_classes: int) -> list[int]:
        """Layer widths from input to output. For GAT the hidden widths are per head."""
        return [feature_dim, *self.hidden, num_classes]

    def to_params(self) -> dict:
        d = asdict(self)
        d["hidden"] = list(self.hidden)
        d["faults"] = [dict(f) for f in self.faults]
        return d

    @classmethod
    def from_params(cls, params: dict) -> "TrainConfig":
        known = {f.name for f in fields(cls)}
        d = {k: v for k, v in params.items() if k in known}
        if d.get("hidden") is not None:
            d["hidden"] = tuple(d["hidden"])
        d["faults"] = tuple(dict(f) for f in d.get("faults", ()))
        return cls(**d)


def resolve(config: TrainConfig, dataset_name: str | None = None) -> TrainConfig:
    """Fill the model- and preset-dependent defaults and validate everything."""
    c = config
    if c.model not in MODELS:
        raise DorylusError(f"unknown model {c.model!r}: use one of {', '.join(MODELS)}")
    if c.preset not in (None, "paper"):
        raise DorylusError(f"unknown preset {c.preset!r}: the only preset is 'paper'")
    if c.preset == "paper":
        name = (dataset_name or "").lower()
        hidden = next((h for k, h in PAPER_HIDDEN.items() if k in name), PAPER_DEFAULT_HIDDEN)
        c = replace(
            c,
            hidden=c.hidden or (hidden,),
            activation=c.activation or "tanh",
            dropout=0.0 if c.dropout is None else c.dropout,
            lr=c.lr or 0.01,
            weight_decay=0.0,
            adam_eps=1e-7,
        )
    if c.model == "gcn":
        c = replace(
            c,
            hidden=tuple(c.hidden) if c.hidden is not None else (16,),
            activation=c.activation or "relu",
            dropout=0.5 if c.dropout is None else c.dropout,
            lr=c.lr or 0.01,
        )
    else:
        c = replace(
            c,
            hidden=tuple(c.hidden) if c.hidden is not None else (8,),
            activation=c.activation or "elu",
            dropout=0.6 if c.dropout is None else c.dropout,
            lr=c.lr or 0.005,
        )
    _validate(c)
    return c


def _validate(c: TrainConfig) -> None:
    def bad(what: str) -> None:
        raise DorylusError(f"invalid training setting: {what}")

    if any(int(h) < 1 for h in c.hidden):
        bad(f"hidden sizes must be positive integers, got {list(c.hidden)}")
    if c.activation not in ACTIVATIONS:
        bad(f"activation {c.activation!r}; use one of {', '.join(ACTIVATIONS)}")
    if not 0.0 <= c.dropout < 1.0:
        bad(f"dropout {c.dropout} must be in [0, 1)")
    if not c.lr > 0:
        bad(f"learning rate {c.lr} must be positive")
    if c.normalize_features not in ("auto", "row", "none"):
        bad(f"normalize_features {c.normalize_features!r}; use auto, row or none")
    if c.weight_decay < 0:
        bad(f"weight decay {c.weight_decay} must be >= 0")
    if c.epochs < 1:
        bad(f"epochs {c.epochs} must be >= 1")
    if c.target_accuracy is not None and not 0 < c.target_accuracy <= 1:
        bad(f"target accuracy {c.target_accuracy} must be in (0, 1]")
    if c.patience is not None and c.patience < 1:
        bad(f"patience {c.patience} must be >= 1")
    if c.staleness != "sync" and c.staleness != "inf":
        try:
            if int(c.staleness) < 0:
                raise ValueError
        except ValueError:
            bad(f"staleness {c.staleness!r}: use sync, a bound 0, 1, 2, ... or inf")
    if c.switch_to_sync is not None and (c.target_accuracy is None or c.switch_to_sync < 0):
        bad("switch_to_sync needs a target accuracy and a threshold >= 0")
    if c.backend not in BACKENDS:
        bad(f"backend {c.backend!r}: use one of {', '.join(BACKENDS)}")
    for name in ("intervals_per_server", "num_workers", "graph_threads", "num_parameter_servers", "heads"):
        if getattr(c, name) < 1:
            bad(f"{name.replace('_', ' ')} must be >= 1")
    if c.latency_ms < 0 or c.bandwidth_mbps < 0:
        bad("simulated latency and bandwidth must be >= 0")
    if not c.lambda_function or not isinstance(c.lambda_function, str):
        bad("lambda_function must name the Lambda function (or give its ARN)")
    if not 128 <= c.worker_memory_mb <= 10240:
        bad(f"worker memory {c.worker_memory_mb} MB: Lambda allows 128 to 10240 MB")
    if (c.latency_ms or c.bandwidth_mbps) and c.backend != "local":
        bad("the simulated network applies to the local backend only (tensor workers in separate processes)")
    if c.relaunch_ratio <= 1 or c.relaunch_min_s <= 0:
        bad("relaunch ratio must be > 1 and relaunch_min_s > 0")


def canonical_staleness(value) -> str:
    text = str(value).strip().lower()
    return text if text in ("sync", "inf") else str(int(text)) if text.isdigit() else text

