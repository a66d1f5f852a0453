"""The evaluate stage: accuracy, time, cost and value of a train run, with figures and a report.

Input: one ``train`` artifact (see the train stage's ``metrics.jsonl``, ``predictions.npz``
and ``summary.json``). Output files:

    evaluation.json        every figure below, machine-readable
    report.md              the Markdown report, embedding the PNGs
    accuracy_epochs.png    train/val/test accuracy against epochs
    accuracy_time.png      the same against wall time
    time_breakdown.png     seconds by task type (GA, AV, SC, AE, their backward tasks, WU)

Parameters: the pricing table (its whole content, so new prices are a new key), the target
accuracy and the metric it applies to, and optional instance types to price the run as.
"""

from __future__ import annotations

import json

from stages.contract import Artifact, Stage, StageContext, run_stage
from stages.errors import DorylusError
from stages.evaluate import cost as costs
from stages.evaluate import metrics, plots, report
from stages.evaluate.pricing import check_pricing, load_pricing
from stages.store import ArtifactStore

VERSION = "1"
TRAINERS = ("train", "baseline")  # stages whose artifacts have the train format
FIGURES = {
    "accuracy_epochs": "accuracy_epochs.png",
    "accuracy_time": "accuracy_time.png",
    "time_breakdown": "time_breakdown.png",
}


def _run(ctx: StageContext) -> dict:
    p = ctx.params
    folder = ctx.inputs["train"].path()
    with ctx.timer("load"):
        try:
            summary = json.loads((folder / "summary.json").read_text())
        except (FileNotFoundError, json.JSONDecodeError) as exc:
            raise DorylusError(f"{folder}/summary.json is missing or corrupt ({exc}); rerun train with --force") from None
        records = metrics.load_metrics(folder / "metrics.jsonl")
        predictions = metrics.load_predictions(folder / "predictions.npz")
    with ctx.timer("figures"):
        ev = evaluation(ctx.inputs["train"], summary, records, predictions, p)
        target = ev["time"]["target"]["value"]
        out = ctx.out
        plots.accuracy_curves(records, "epoch", out / FIGURES["accuracy_epochs"], target)
        plots.accuracy_curves(records, "time", out / FIGURES["accuracy_time"], target)
        plots.time_breakdown(ev["time"]["breakdown"], out / FIGURES["time_breakdown"])
    (out / "evaluation.json").write_text(json.dumps(ev, indent=2))
    (out / "report.md").write_text(report.render(ev, FIGURES))
    return key_figures(ev)


def evaluation(train: Artifact, summary: dict, records: list[dict], predictions: dict, p: dict) -> dict:
    """Every figure of the evaluation as one JSON-able dict."""
    scores = metrics.split_scores(predictions)
    best_test = scores["best"].get("test") or {}
    final_test = scores["final"].get("test") or {}
    if not best_test:
        raise DorylusError("the train run's predictions have no labelled test nodes; use a dataset split with a test set")
    train_time = float(summary.get("train_time") or records[-1]["time"])

    target_value, source = p.get("target_accuracy"), "evaluate parameter"
    if target_value is None and summary.get("target_accuracy") is not None:
        target_value, source = summary["target_accuracy"], "train target"
    reached = metrics.time_to_target(records, p["target_metric"], target_value) if target_value is not None else {"reached": False, "time": None, "epochs": None}

    estimate = costs.estimate_cost(summary, p["pricing"], p.get("graph_instance"), p.get("parameter_instance"))
    summary_best = summary.get("test_acc_at_best_val")
    return {
        "train": {"uri": train.uri, "key": train.key, "digest": train.digest},
        "run": {k: summary.get(k) for k in ("model", "layers", "activation", "backend", "staleness", "num_parts",
                                            "intervals_per_server", "num_workers", "epochs_run", "stopped_because")},
        "accuracy": {
            "best_val_epoch": summary.get("best_val_epoch"),
            "best_val_acc": summary.get("best_val_acc"),
            "test_at_best_val": best_test["accuracy"],
            "final_test": final_test.get("accuracy"),
            "macro_f1_at_best_val": best_test["macro_f1"],
            "macro_f1_final": final_test.get("macro_f1"),
            "per_class": best_test["per_class"],
            "splits": scores,
            "train_summary": {k: summary.get(k) for k in ("test_acc_at_best_val", "final_test_acc")},
            # the train stage computes the same figure from the same predictions; a gap means a bug
            "consistent_with_train": summary_best is None or abs(summary_best - best_test["accuracy"]) < 1e-6,
        },
        "time": {
            "train_time": train_time,
            "epochs_run": len(records),
            "per_epoch": metrics.epoch_times(records),
            "target": {"value": target_value, "metric": p["target_metric"], "source": source if target_value is not None else "none set", **reached},
            "breakdown": metrics.task_breakdown(records),
        },
        "cost": estimate,
        "value": costs.value(train_time, estimate["total"]),
        "value_units": "1 / (second x dollar)",
        "curves": {m: [r.get(m) for r in records] for m in ("epoch", "time", *metrics.METRICS)},
    }


def key_figures(ev: dict) -> dict:
    t = ev["time"]
    return {
        "test_acc_at_best_val": ev["accuracy"]["test_at_best_val"],
        "final_test_acc": ev["accuracy"]["final_test"],
        "macro_f1": ev["accuracy"]["macro_f1_at_best_val"],
        "train_time": t["train_time"],
        "per_epoch_time": t["per_epoch"]["mean"],
        "target_accuracy": t["target"]["value"],
        "time_to_target": t["target"]["time"],
        "epochs_to_target": t["target"]["epochs"],
        "cost_usd": ev["cost"]["total"],
        "value": ev["value"],
        "report": "report.md",
    }


STAGE = Stage(name="evaluate", version=VERSION, package="stages.evaluate", run=_run)


def evaluate(
    train: Artifact,
    *,
    store: ArtifactStore | None = None,
    pricing: dict | str | None = None,
    target_accuracy: float | None = None,
    target_metric: str = "test_acc",
    graph_instance: str | None = None,
    parameter_instance: str | None = None,
    force: bool = False,
) -> Artifact:
    """Evaluate a train artifact; cached by the train digest, the prices and the target."""
    if train.stage not in TRAINERS:
        raise DorylusError(f"{train.uri} is a {train.stage!r} artifact; evaluate needs a train (or baseline) artifact")
    if target_metric not in metrics.METRICS:
        raise DorylusError(f"target metric {target_metric!r} is not one of {', '.join(metrics.METRICS)}")
    if target_accuracy is not None and not 0 < float(target_accuracy) <= 1:
        raise DorylusError(f"target accuracy {target_accuracy} is not in (0, 1]; write e.g. 0.8 for 80%")
    table = pricing if isinstance(pricing, dict) else load_pricing(pricing)
    check_pricing(table)
    for instance in (graph_instance, parameter_instance):
        if instance is not None and instance not in table.get("ec2", {}):
            raise DorylusError(f"no price for instance type {instance!r}; known: {', '.join(sorted(table['ec2']))}")
    params = {
        "pricing": table,
        "target_accuracy": None if target_accuracy is None else float(target_accuracy),
        "target_metric": target_metric,
        "graph_instance": graph_instance,
        "parameter_instance": parameter_instance,
    }
    return run_stage(STAGE, params, {"train": train}, store=store, force=force)
