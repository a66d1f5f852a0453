import csv

import pytest

from stages.errors import DorylusError
from stages.evaluate import evaluate
from stages.evaluate.experiment import compare


def test_compare_two_real_evaluations(sage_run, cora, eval_store):
    a = evaluate(sage_run, store=eval_store, target_accuracy=0.3)
    b = evaluate(sage_run, store=eval_store, target_accuracy=0.3, graph_instance="p3.2xlarge")
    art = compare("demo", "small", {"c5n": a, "p3": b}, store=eval_store, target_accuracy=0.3)
    folder = art.path()
    rows = list(csv.DictReader(open(folder / "table.csv")))
    assert [r["variant"] for r in rows] == ["c5n", "p3"]
    # same run, dearer instance: same time, cost ratio = price ratio, value inverse
    assert float(rows[1]["cost_ratio"]) == pytest.approx(3.06 / 0.432, rel=1e-6)
    assert float(rows[1]["speedup"]) == pytest.approx(1.0)
    assert float(rows[1]["value_ratio"]) == pytest.approx(0.432 / 3.06, rel=1e-6)
    for name in ("table.md", "report.md", "accuracy_epochs.png", "accuracy_time.png", "time_cost_value.png"):
        assert (folder / name).stat().st_size > 0
    with pytest.raises(DorylusError, match="not an evaluation"):
        compare("demo", "small", {"x": cora}, store=eval_store)
