"""The experiment stage: several evaluations side by side, as a table, figures and a report.

Inputs: evaluate artifacts, one per variant (input names are the variant labels, prefixed
with their position so the order survives). Output files:

    table.csv, table.md    one row per variant: time, epochs, accuracy, cost, value, and
                           ratios against the first variant (the baseline of the comparison)
    accuracy_epochs.png    test accuracy against epochs, one line per variant
    accuracy_time.png      test accuracy against wall time
    time_cost_value.png    training time, cost and value per variant
    report.md              all of the above
    experiment.json        the rows and the settings
"""

from __future__ import annotations

import csv
import json

from stages.contract import Artifact, Stage, StageContext, run_stage
from stages.errors import DorylusError
from stages.evaluate import plots
from stages.store import ArtifactStore

VERSION = "1"
COLUMNS = (
    "variant", "backend", "staleness", "graph_servers", "epochs", "train_time_s", "per_epoch_s",
    "epochs_to_target", "time_to_target_s", "test_acc_at_best_val", "final_test_acc", "macro_f1",
    "cost_usd", "value", "speedup", "cost_ratio", "value_ratio",
)


def _row(label: str, ev: dict) -> dict:
    t, run = ev["time"], ev["run"]
    return {
        "variant": label,
        "backend": run.get("backend"),
        "staleness": run.get("staleness"),
        "graph_servers": run.get("num_parts"),
        "epochs": t["epochs_run"],
        "train_time_s": t["train_time"],
        "per_epoch_s": t["per_epoch"]["mean"],
        "epochs_to_target": t["target"]["epochs"],
        "time_to_target_s": t["target"]["time"],
        "test_acc_at_best_val": ev["accuracy"]["test_at_best_val"],
        "final_test_acc": ev["accuracy"]["final_test"],
        "macro_f1": ev["accuracy"]["macro_f1_at_best_val"],
        "cost_usd": ev["cost"]["total"],
        "value": ev["value"],
    }


def _ratios(rows: list[dict], time_column: str) -> None:
    """Speed-up, cost and value relative to the first variant (the paper's normalisation)."""
    base = rows[0]
    for r in rows:
        bt, t = base[time_column], r[time_column]
        r["speedup"] = bt / t if bt and t else None
        r["cost_ratio"] = r["cost_usd"] / base["cost_usd"] if base["cost_usd"] else None
        r["value_ratio"] = r["value"] / base["value"] if base["value"] and r["value"] else None


def _fmt(v) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 0.01 and v else f"{v:.4g}" if abs(v) >= 1000 else f"{v:.3f}"
    return str(v)


def markdown_table(rows: list[dict]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_fmt(r.get(c)) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def _run(ctx: StageContext) -> dict:
    p = ctx.params
    labels = p["variants"]
    evaluations = {}
    for i, label in enumerate(labels):
        folder = ctx.inputs[f"{i:02d}-{label}"].path()
        evaluations[label] = json.loads((folder / "evaluation.json").read_text())
    rows = [_row(label, evaluations[label]) for label in labels]
    # time to target is the paper's measure when every variant reaches it; else total time
    time_column = "time_to_target_s" if all(r["time_to_target_s"] for r in rows) else "train_time_s"
    _ratios(rows, time_column)
    out = ctx.out
    with open(out / "table.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    table = markdown_table(rows)
    (out / "table.md").write_text(table + "\n")
    curves = {label: ev["curves"] for label, ev in evaluations.items()}
    plots.series_plot({l: (c["epoch"], c["test_acc"]) for l, c in curves.items()}, "epoch", "test accuracy", out / "accuracy_epochs.png", p["title"])
    plots.series_plot({l: (c["time"], c["test_acc"]) for l, c in curves.items()}, "wall time (s)", "test accuracy", out / "accuracy_time.png", p["title"])
    plots.bar_panels(labels, {
        "training time (s)": [r["train_time_s"] for r in rows],
        "cost ($, estimated)": [r["cost_usd"] for r in rows],
        "value 1/(s x $)": [r["value"] for r in rows],
    }, out / "time_cost_value.png", p["title"])
    target = p.get("target_accuracy")
    report = [
        f"# Experiment `{p['experiment']}`, preset `{p['preset']}`",
        "",
        p.get("description", ""),
        "",
        f"Target accuracy {target if target is not None else 'none'} (on test accuracy). Ratios are against the first "
        f"variant ({labels[0]}); speed-up uses {'time to target' if time_column == 'time_to_target_s' else 'total training time (not every variant reached the target)'}. "
        "Costs are estimates: each run is priced as its equivalent AWS deployment from its measured task durations (see each evaluation's report).",
        "",
        table,
        "",
        "![test accuracy against epochs](accuracy_epochs.png)",
        "",
        "![test accuracy against wall time](accuracy_time.png)",
        "",
        "![time, cost and value](time_cost_value.png)",
        "",
        "Evaluations: " + ", ".join(f"{label}: `{ctx.inputs[f'{i:02d}-{label}'].key}`" for i, label in enumerate(labels)),
        "",
    ]
    (out / "report.md").write_text("\n".join(report))
    (out / "experiment.json").write_text(json.dumps({"params": {k: v for k, v in p.items()}, "rows": rows, "time_column": time_column}, indent=2))
    return {"experiment": p["experiment"], "preset": p["preset"], "variants": labels, "report": "report.md",
            "rows": [{k: r[k] for k in ("variant", "train_time_s", "time_to_target_s", "cost_usd", "value", "speedup", "value_ratio")} for r in rows]}


STAGE = Stage(name="experiment", version=VERSION, package="stages.evaluate.experiment", run=_run)


def compare(
    experiment: str,
    preset: str,
    evaluations: dict[str, Artifact],
    *,
    store: ArtifactStore | None = None,
    title: str = "",
    description: str = "",
    target_accuracy: float | None = None,
    force: bool = False,
) -> Artifact:
    """Tabulate and plot evaluate artifacts (in the given order) as one experiment artifact."""
    if not evaluations:
        raise DorylusError(f"experiment {experiment}: no variants to compare")
    for label, art in evaluations.items():
        if art.stage != "evaluate":
            raise DorylusError(f"variant {label}: {art.uri} is a {art.stage!r} artifact, not an evaluation")
    labels = list(evaluations)
    params = {"experiment": experiment, "preset": preset, "variants": labels, "title": title or experiment,
              "description": description, "target_accuracy": target_accuracy}
    inputs = {f"{i:02d}-{label}": evaluations[label] for i, label in enumerate(labels)}
    return run_stage(STAGE, params, inputs, store=store, force=force)
