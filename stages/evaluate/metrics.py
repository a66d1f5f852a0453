"""Accuracy figures from a train artifact: classification scores and the training timeline."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from stages.errors import DorylusError

SPLIT_CODES = {"train": 1, "val": 2, "test": 3}
METRICS = ("train_acc", "val_acc", "test_acc")


def classification(labels: np.ndarray, preds: np.ndarray) -> dict:
    """Accuracy, macro-F1 and per-class accuracy (recall) of ``preds`` against ``labels``.

    Macro-F1 averages over the classes present in the labels or the predictions (as
    scikit-learn does); a class with no true and no predicted member is left out, and a
    class with precision + recall = 0 scores 0.
    """
    labels = np.asarray(labels, dtype=np.int64)
    preds = np.asarray(preds, dtype=np.int64)
    if labels.shape != preds.shape:
        raise DorylusError(f"{labels.size} labels but {preds.size} predictions; the train artifact is inconsistent")
    if labels.size == 0:
        return {"count": 0, "accuracy": None, "macro_f1": None, "per_class": {}}
    classes = np.union1d(labels, preds)
    per_class, f1s = {}, []
    for c in classes:
        true_c, pred_c = labels == c, preds == c
        tp = int(np.sum(true_c & pred_c))
        support, predicted = int(true_c.sum()), int(pred_c.sum())
        recall = tp / support if support else 0.0
        precision = tp / predicted if predicted else 0.0
        f1s.append(2 * precision * recall / (precision + recall) if precision + recall else 0.0)
        if support:
            per_class[str(int(c))] = {"support": support, "accuracy": recall}
    return {
        "count": int(labels.size),
        "accuracy": float(np.mean(labels == preds)),
        "macro_f1": float(np.mean(f1s)),
        "per_class": per_class,
    }


def load_predictions(path: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in ("node_id", "label", "split", "pred_best", "pred_final")}
    except FileNotFoundError:
        raise DorylusError(f"{path} is missing: the train artifact is incomplete; rerun train with --force") from None
    except (KeyError, ValueError) as exc:
        raise DorylusError(f"{path} is not a predictions archive of the train stage ({exc})") from None
    n = arrays["label"].shape[0]
    if any(a.shape != (n,) for a in arrays.values()):
        raise DorylusError(f"{path}: arrays differ in length; the train artifact is inconsistent")
    return arrays


def split_scores(pred: dict[str, np.ndarray]) -> dict:
    """Scores of the best-validation and final predictions on each labelled split."""
    labelled = pred["label"] >= 0
    out = {}
    for which in ("best", "final"):
        out[which] = {
            split: classification(pred["label"][m], pred[f"pred_{which}"][m])
            for split, code in SPLIT_CODES.items()
            if (m := labelled & (pred["split"] == code)).any()
        }
    return out


def load_metrics(path: Path) -> list[dict]:
    """The per-epoch records of ``metrics.jsonl``, in epoch order."""
    if not path.exists():
        raise DorylusError(f"{path} is missing: the train artifact is incomplete; rerun train with --force")
    records = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            int(rec["epoch"]), float(rec["time"]), float(rec["epoch_time"])
        except (ValueError, KeyError, TypeError) as exc:
            raise DorylusError(f"{path} line {n} is not an epoch record ({exc}); rerun train with --force") from None
        records.append(rec)
    if not records:
        raise DorylusError(f"{path} holds no epochs; the train run recorded nothing")
    return sorted(records, key=lambda r: r["epoch"])


def time_to_target(records: list[dict], metric: str, target: float) -> dict:
    """The first epoch whose ``metric`` reaches ``target``: its wall time and number."""
    for rec in records:
        acc = rec.get(metric)
        if acc is not None and not math.isnan(acc) and acc >= target:
            return {"reached": True, "time": float(rec["time"]), "epochs": int(rec["epoch"])}
    return {"reached": False, "time": None, "epochs": None}


def epoch_times(records: list[dict]) -> dict:
    times = np.array([float(r["epoch_time"]) for r in records])
    return {
        "mean": float(times.mean()),
        "median": float(np.median(times)),
        "min": float(times.min()),
        "max": float(times.max()),
        # epoch 1 pays one-time costs (worker start, layer-0 gather caching)
        "mean_after_first": float(times[1:].mean()) if len(times) > 1 else float(times[0]),
    }


def task_breakdown(records: list[dict]) -> dict:
    """Seconds and task counts by task type, summed over epochs, with each type's share."""
    seconds: dict[str, float] = {}
    counts: dict[str, int] = {}
    for rec in records:
        for task, s in (rec.get("task_time") or {}).items():
            seconds[task] = seconds.get(task, 0.0) + float(s)
        for task, c in (rec.get("task_count") or {}).items():
            counts[task] = counts.get(task, 0) + int(c)
    total = sum(seconds.values())
    return {
        task: {"seconds": s, "count": counts.get(task, 0), "share": s / total if total else 0.0}
        for task, s in seconds.items()
    }
