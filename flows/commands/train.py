"""``dorylus train PARTITIONS``: Dorylus-style GNN training on a partition artifact."""

from __future__ import annotations

from dataclasses import fields

from stages.errors import DorylusError
from stages.store import ArtifactStore
from stages.train import train
from stages.train.config import TrainConfig, canonical_staleness
from stages.train.coordinator import TrainingFailed

_DEFAULTS = {f.name: f.default for f in fields(TrainConfig)}


def _hidden(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise DorylusError(f"--hidden {text!r}: give comma-separated layer sizes such as 16 or 128,64") from None
    return sizes


def add_parser(sub) -> None:
    from flows.cli import add_common

    p = sub.add_parser("train", help="train a GCN with graph servers and tensor workers", description=__doc__)
    p.add_argument("partitions", help="a partition artifact: folder, s3:// URI or stage key")
    p.add_argument("--model", choices=("gcn", "gat"), default="gcn")
    p.add_argument("--preset", choices=("paper",), help="paper: the Dorylus settings (tanh, no dropout, the authors' hidden size)")
    p.add_argument("--backend", choices=("cpu", "local", "lambda"), default="cpu",
                   help="who runs tensor tasks: cpu (the graph servers), local (a process pool), lambda (default: cpu)")
    p.add_argument("--staleness", default="sync", help="sync (default), a bound 0, 1, ... or inf")
    p.add_argument("--switch-to-sync", type=float, help="go synchronous when val accuracy is within this of the target")
    p.add_argument("--hidden", help="hidden layer sizes, comma-separated (default 16)")
    p.add_argument("--activation", choices=("relu", "tanh", "elu"))
    p.add_argument("--dropout", type=float)
    p.add_argument("--lr", type=float)
    p.add_argument("--weight-decay", type=float, default=_DEFAULTS["weight_decay"])
    p.add_argument("--epochs", type=int, default=_DEFAULTS["epochs"])
    p.add_argument("--target-accuracy", type=float)
    p.add_argument("--patience", type=int)
    p.add_argument("--intervals", type=int, default=_DEFAULTS["intervals_per_server"], help="vertex intervals per graph server")
    p.add_argument("--workers", type=int, default=_DEFAULTS["num_workers"], help="tensor workers per graph server (local backend)")
    p.add_argument("--lambda-function", default=_DEFAULTS["lambda_function"],
                   help="the tensor-worker Lambda function (lambda backend; default %(default)s)")
    p.add_argument("--lambda-region", help="its AWS region (default: boto3's, e.g. AWS_DEFAULT_REGION)")
    p.add_argument("--lambda-endpoint-url", help="a Lambda endpoint other than AWS's, e.g. a local moto server")
    p.add_argument("--worker-memory-mb", type=int, default=_DEFAULTS["worker_memory_mb"],
                   help="the function's memory, for the cost figures (default %(default)s)")
    p.add_argument("--parameter-servers", type=int, default=_DEFAULTS["num_parameter_servers"])
    p.add_argument("--seed", type=int, default=_DEFAULTS["seed"])
    p.add_argument("--normalize-features", choices=("auto", "row", "none"), default="auto",
                   help="row-normalize features (auto: only when all are >= 0)")
    p.add_argument("--split", type=int, default=_DEFAULTS["split"], help="which of the dataset's splits to use")
    p.add_argument("--latency-ms", type=float, default=0.0, help="simulated worker network latency (local backend)")
    p.add_argument("--bandwidth-mbps", type=float, default=0.0, help="simulated per-worker bandwidth (local backend)")
    p.add_argument("--scheduler", help="Dask scheduler address (default: a local cluster, one process per graph server)")
    add_common(p)
    p.set_defaults(handler=run)


def config_from_args(args) -> TrainConfig:
    return TrainConfig(
        model=args.model,
        preset=args.preset,
        backend=args.backend,
        staleness=canonical_staleness(args.staleness),
        switch_to_sync=args.switch_to_sync,
        hidden=_hidden(args.hidden) if args.hidden else None,
        activation=args.activation,
        dropout=args.dropout,
        lr=args.lr,
        weight_decay=args.weight_decay,
        epochs=args.epochs,
        target_accuracy=args.target_accuracy,
        patience=args.patience,
        intervals_per_server=args.intervals,
        num_workers=args.workers,
        num_parameter_servers=args.parameter_servers,
        seed=args.seed,
        split=args.split,
        normalize_features=args.normalize_features,
        latency_ms=args.latency_ms,
        bandwidth_mbps=args.bandwidth_mbps,
        lambda_function=args.lambda_function,
        lambda_region=args.lambda_region,
        lambda_endpoint_url=args.lambda_endpoint_url,
        worker_memory_mb=args.worker_memory_mb,
    )


def run(args) -> dict:
    config = config_from_args(args)
    if config.backend == "lambda":
        from stages.train.lambda_backend import check_function

        check_function(config.lambda_settings())  # a missing or unreachable function is a one-line error
    try:
        artifact = train(
            args.partitions,
            config,
            store=ArtifactStore.open(args.store),
            scheduler=args.scheduler,
            force=args.force,
        )
    except TrainingFailed as exc:  # e.g. a tensor task failed for good: say why, without a traceback
        raise DorylusError(f"training failed: {exc}") from None
    return artifact.result()
