"""``dorylus evaluate TRAIN_RUN``: accuracy, time, cost and value of a train run, with a report."""

from __future__ import annotations

from stages.store import ArtifactStore


def add_parser(sub) -> None:
    from flows.cli import add_common

    p = sub.add_parser("evaluate", help="evaluate a train artifact: accuracy, time, cost, value, figures", description=__doc__)
    p.add_argument("train_run", metavar="TRAIN_RUN", help="the train artifact: its folder, s3:// URI or stage key (prefix)")
    p.add_argument("--target", type=float, help="target accuracy for time-to-accuracy (default: the train run's target)")
    p.add_argument("--target-metric", default="test_acc", choices=("train_acc", "val_acc", "test_acc"), help="the accuracy the target applies to (default: test_acc, as in the paper's figures)")
    p.add_argument("--pricing", metavar="TOML", help="pricing table (default: infra/pricing.toml)")
    p.add_argument("--graph-instance", help="EC2 type to price each graph server as (default: by backend, from the pricing table)")
    p.add_argument("--parameter-instance", help="EC2 type to price each parameter server as")
    add_common(p)
    p.set_defaults(handler=run)


def run(args) -> dict:
    from stages.contract import resolve_artifact
    from stages.evaluate import evaluate

    store = ArtifactStore.open(args.store)
    train = resolve_artifact(args.train_run, store)  # evaluate checks it is a train (or baseline) run
    artifact = evaluate(
        train,
        store=store,
        pricing=args.pricing,
        target_accuracy=args.target,
        target_metric=args.target_metric,
        graph_instance=args.graph_instance,
        parameter_instance=args.parameter_instance,
        force=args.force,
    )
    result = artifact.result()
    result["report"] = str(artifact.path() / "report.md")
    return result
