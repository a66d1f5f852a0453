"""`dorylus evaluate` on a real training run (the sampling baseline on Cora)."""

import json

import pytest

from flows.cli import main


@pytest.fixture(scope="module")
def baseline_run(datasets, tmp_path_factory):
    from stages.evaluate.sage_baseline import sage_baseline
    from stages.ingest import ingest
    from stages.store import ArtifactStore

    store = ArtifactStore.open(str(tmp_path_factory.mktemp("cli-evaluate")))
    cora = ingest("planetoid:cora", str(datasets / "planetoid"), store=store)
    return store, sage_baseline(cora, {"epochs": 3}, store=store)


def test_evaluate_by_key_prefix_prints_json(baseline_run, capsys):
    store, run = baseline_run
    assert main(["evaluate", run.key[:10], "--store", store.uri, "--target", "0.4", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["stage"] == "evaluate" and out["target_accuracy"] == 0.4
    assert out["report"].endswith("report.md") and open(out["report"]).read().startswith("# Evaluation")
    assert main(["evaluate", run.uri, "--store", store.uri, "--target", "0.4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cached"] is True


def test_evaluate_mistakes_exit_2_with_a_message(baseline_run, capsys, tmp_path):
    store, run = baseline_run
    assert main(["evaluate", "ffffffff", "--store", store.uri]) == 2
    assert "no artifact" in capsys.readouterr().err
    assert main(["evaluate", run.uri, "--store", store.uri, "--pricing", str(tmp_path / "none.toml")]) == 2
    assert "pricing table" in capsys.readouterr().err
    assert main(["evaluate", run.uri, "--store", store.uri, "--graph-instance", "q9.big"]) == 2
    assert "q9.big" in capsys.readouterr().err
