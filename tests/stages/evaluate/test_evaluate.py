"""The evaluate stage on real training runs of Cora."""

import json

import numpy as np
import pytest

from stages.errors import DorylusError
from stages.evaluate import evaluate
from stages.evaluate.metrics import classification


def test_evaluation_of_a_real_run(sage_run, eval_store):
    art = evaluate(sage_run, store=eval_store, target_accuracy=0.3)
    folder = art.path()
    ev = json.loads((folder / "evaluation.json").read_text())
    summary = json.loads((sage_run.path() / "summary.json").read_text())
    records = [json.loads(line) for line in (sage_run.path() / "metrics.jsonl").read_text().splitlines()]
    with np.load(sage_run.path() / "predictions.npz", allow_pickle=False) as p:
        test = (p["split"] == 3) & (p["label"] >= 0)
        expected = classification(p["label"][test], p["pred_best"][test])

    assert ev["accuracy"]["test_at_best_val"] == pytest.approx(expected["accuracy"])
    assert ev["accuracy"]["test_at_best_val"] == pytest.approx(summary["test_acc_at_best_val"])
    assert ev["accuracy"]["consistent_with_train"] is True
    assert sum(c["support"] for c in ev["accuracy"]["per_class"].values()) == 1000  # Cora's test set
    first = next(r for r in records if r["test_acc"] >= 0.3)
    assert ev["time"]["target"] == {"value": 0.3, "metric": "test_acc", "source": "evaluate parameter", "reached": True, "time": first["time"], "epochs": first["epoch"]}
    assert ev["time"]["per_epoch"]["mean"] == pytest.approx(np.mean([r["epoch_time"] for r in records]))
    assert ev["cost"]["total"] > 0 and ev["value"] == pytest.approx(1 / (summary["train_time"] * ev["cost"]["total"]))
    assert art.summary["cost_usd"] == ev["cost"]["total"] and art.summary["report"] == "report.md"

    report = (folder / "report.md").read_text()
    for png in ("accuracy_epochs.png", "accuracy_time.png", "time_breakdown.png"):
        assert (folder / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({png})" in report
    assert "an estimate" in report and "us-east-1" in report


def test_second_evaluation_is_cached_and_new_prices_are_a_new_key(sage_run, eval_store):
    from stages.evaluate.pricing import load_pricing

    a = evaluate(sage_run, store=eval_store, target_accuracy=0.5)
    b = evaluate(sage_run, store=eval_store, target_accuracy=0.5)
    assert b.cached and b.key == a.key
    pricing = load_pricing()
    pricing["ec2"]["c5n.2xlarge"] *= 2
    c = evaluate(sage_run, store=eval_store, target_accuracy=0.5, pricing=pricing)
    assert c.key != a.key
    assert c.summary["cost_usd"] == pytest.approx(2 * a.summary["cost_usd"])  # graph servers only: cpu backend


def test_unreached_target_and_bad_parameters(sage_run, cora, eval_store):
    art = evaluate(sage_run, store=eval_store, target_accuracy=1.0)
    assert art.summary["time_to_target"] is None and art.summary["epochs_to_target"] is None
    assert "not reached" in (art.path() / "report.md").read_text()
    with pytest.raises(DorylusError, match="not in \\(0, 1\\]"):
        evaluate(sage_run, store=eval_store, target_accuracy=80)
    with pytest.raises(DorylusError, match="target metric"):
        evaluate(sage_run, store=eval_store, target_metric="f1")
    with pytest.raises(DorylusError, match="needs a train"):
        evaluate(cora, store=eval_store)
    with pytest.raises(DorylusError, match="no price for instance type"):
        evaluate(sage_run, store=eval_store, graph_instance="z1.mega")


def test_evaluation_of_a_dorylus_run_prices_lambda_from_its_tensor_tasks(dorylus_run, eval_store):
    from stages.evaluate.pricing import load_pricing

    art = evaluate(dorylus_run, store=eval_store)
    ev = json.loads((art.path() / "evaluation.json").read_text())
    summary = json.loads((dorylus_run.path() / "summary.json").read_text())
    prices = load_pricing()
    counts = summary["task_count_total"]
    assert ev["accuracy"]["consistent_with_train"] is True
    assert ev["time"]["target"]["source"] == "none set" and art.summary["time_to_target"] is None
    assert ev["cost"]["lambda"] is True and ev["cost"]["lambda_requests"] == counts["AV"] + counts["AE"] + counts["AV_b"] + counts["AE_b"]
    assert ev["cost"]["items"]["lambda_compute"] == pytest.approx(summary["tensor_task_seconds"] * 3008 / 1024 * prices["lambda"]["gb_second"])
    assert ev["cost"]["items"]["graph_servers"] == pytest.approx(summary["server_seconds"]["graph"] / 3600 * prices["ec2"]["c5n.2xlarge"])
    breakdown = ev["time"]["breakdown"]
    assert {"GA", "AV", "SC", "WU"} <= set(breakdown) and breakdown["GA"]["count"] == sum(
        json.loads(line)["task_count"]["GA"] for line in (dorylus_run.path() / "metrics.jsonl").read_text().splitlines())
    assert sum(row["share"] for row in breakdown.values()) == pytest.approx(1.0)
