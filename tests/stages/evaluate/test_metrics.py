import json

import numpy as np
import pytest

from stages.errors import DorylusError
from stages.evaluate import metrics


def test_classification_against_hand_computed_scores():
    labels = np.array([0, 0, 0, 1, 1, 2])
    preds = np.array([0, 0, 1, 1, 2, 2])
    s = metrics.classification(labels, preds)
    assert s["accuracy"] == pytest.approx(4 / 6)
    # class 0: p=1, r=2/3 -> 0.8; class 1: p=1/2, r=1/2 -> 0.5; class 2: p=1/2, r=1 -> 2/3
    assert s["macro_f1"] == pytest.approx((0.8 + 0.5 + 2 / 3) / 3)
    assert s["per_class"] == {
        "0": {"support": 3, "accuracy": pytest.approx(2 / 3)},
        "1": {"support": 2, "accuracy": 0.5},
        "2": {"support": 1, "accuracy": 1.0},
    }


def test_macro_f1_counts_a_class_that_is_only_predicted():
    s = metrics.classification(np.array([0, 0]), np.array([0, 3]))
    # class 0: p=1, r=1/2 -> 2/3; class 3: never true, predicted once -> 0
    assert s["macro_f1"] == pytest.approx((2 / 3 + 0) / 2)
    assert "3" not in s["per_class"]  # no support: no per-class accuracy


def test_split_scores_use_only_labelled_nodes_of_each_split():
    pred = {
        "label": np.array([0, 1, -1, 1, 0]),
        "split": np.array([1, 3, 3, 3, 2]),
        "pred_best": np.array([0, 1, 1, 0, 0]),
        "pred_final": np.array([1, 1, 0, 1, 1]),
    }
    s = metrics.split_scores(pred)
    assert s["best"]["test"]["count"] == 2 and s["best"]["test"]["accuracy"] == 0.5
    assert s["final"]["test"]["accuracy"] == 1.0
    assert s["final"]["val"]["accuracy"] == 0.0 and s["best"]["train"]["accuracy"] == 1.0


def _records():
    return [
        {"epoch": 2, "time": 2.5, "epoch_time": 1.0, "test_acc": 0.6, "task_time": {"GA": 0.5, "AV": 0.25}, "task_count": {"GA": 2, "AV": 2}},
        {"epoch": 1, "time": 1.5, "epoch_time": 1.5, "test_acc": 0.3, "task_time": {"GA": 0.5, "AV": 0.75}, "task_count": {"GA": 2, "AV": 2}},
        {"epoch": 3, "time": 3.0, "epoch_time": 0.5, "test_acc": 0.7, "task_time": {"GA": 1.0, "WU": 1.0}, "task_count": {"GA": 2, "WU": 1}},
    ]


def test_timeline_figures(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in _records()) + "\n")
    records = metrics.load_metrics(path)
    assert [r["epoch"] for r in records] == [1, 2, 3]
    assert metrics.time_to_target(records, "test_acc", 0.6) == {"reached": True, "time": 2.5, "epochs": 2}
    assert metrics.time_to_target(records, "test_acc", 0.9)["reached"] is False
    e = metrics.epoch_times(records)
    assert e["mean"] == pytest.approx(1.0) and e["median"] == 1.0 and e["mean_after_first"] == pytest.approx(0.75)
    b = metrics.task_breakdown(records)
    assert b["GA"] == {"seconds": 2.0, "count": 6, "share": pytest.approx(0.5)}
    assert b["AV"]["seconds"] == 1.0 and b["WU"]["count"] == 1


def test_bad_metrics_file_is_a_user_error(tmp_path):
    path = tmp_path / "metrics.jsonl"
    with pytest.raises(DorylusError, match="missing"):
        metrics.load_metrics(path)
    path.write_text('{"epoch": 1, "time": 1.0}\n')
    with pytest.raises(DorylusError, match="line 1"):
        metrics.load_metrics(path)
    path.write_text("\n")
    with pytest.raises(DorylusError, match="no epochs"):
        metrics.load_metrics(path)


def test_predictions_must_be_plain_arrays_of_equal_length(tmp_path):
    path = tmp_path / "predictions.npz"
    np.savez(path, node_id=np.arange(3), label=np.arange(3), split=np.ones(3), pred_best=np.arange(3), pred_final=np.arange(2))
    with pytest.raises(DorylusError, match="differ in length"):
        metrics.load_predictions(path)
    np.savez(path, node_id=np.array([{"a": 1}], dtype=object), label=np.arange(1), split=np.ones(1), pred_best=np.arange(1), pred_final=np.arange(1))
    with pytest.raises(DorylusError, match="not a predictions archive"):
        metrics.load_predictions(path)  # object arrays need pickle: refused
