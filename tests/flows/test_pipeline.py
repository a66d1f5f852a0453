"""The end-to-end flow through `dorylus run`, `dorylus stage` and `dorylus reproduce LOCKFILE`,
on a small synthetic graph with every stage real (ingest, partition, train, evaluate)."""

from __future__ import annotations

import json

import pytest

from flows.cli import main

TINY = """
[ingest]
source = "synthetic:nodes=800,avg_degree=8,features=8,classes=3,homophily=0.8,seed=3"
[partition]
parts = 2
method = "hash"
[train]
epochs = 4
backend = "cpu"
staleness = "sync"
seed = 0
[evaluate]
target_accuracy = 0.4
"""


def dorylus(capsys, *argv) -> dict:
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def cached(result) -> dict[str, bool]:
    return {name: s["cached"] for name, s in result["stages"].items()}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, dask_scheduler):
    folder = tmp_path_factory.mktemp("pipeline")
    (folder / "tiny.toml").write_text(TINY + f'[run]\nscheduler = "{dask_scheduler}"\n')
    return folder / "tiny.toml", str(folder / "store")


@pytest.fixture(scope="module")
def first_run(tiny, prefect_api):
    import contextlib
    import io

    config, store = tiny
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["run", str(config), "--store", store, "--json"]) == 0
    return json.loads(out.getvalue())


def test_first_run_computes_every_stage_and_writes_report_and_lock(first_run):
    assert cached(first_run) == {"ingest": False, "partition": False, "train": False, "evaluate": False}
    report = open(first_run["report"]).read()
    assert report.startswith("# Evaluation of train run") and "estimate" in report
    for key in ("test_acc_at_best_val", "train_time", "cost_usd", "value"):
        assert first_run[key] is not None
    lock = json.load(open(first_run["lock_file"]))
    assert list(lock["stages"]) == ["ingest", "partition", "train", "evaluate"]
    for name, entry in lock["stages"].items():
        assert entry["key"] == first_run["stages"][name]["key"] and entry["digest"] == first_run["stages"][name]["digest"]
    assert lock["config"]["train"]["epochs"] == 4 and lock["git"]["commit"] and lock["packages"]["torch"]


def test_identical_run_reuses_every_stage(first_run, tiny, capsys):
    again = dorylus(capsys, "run", str(tiny[0]), "--store", tiny[1])
    assert all(cached(again).values())
    assert {n: s["key"] for n, s in again["stages"].items()} == {n: s["key"] for n, s in first_run["stages"].items()}


def test_a_changed_parameter_reruns_that_stage_and_the_ones_after(first_run, tiny, capsys):
    changed = dorylus(capsys, "run", str(tiny[0]), "--store", tiny[1], "--set", "evaluate.target_accuracy=0.45")
    assert cached(changed) == {"ingest": True, "partition": True, "train": True, "evaluate": False}
    changed = dorylus(capsys, "run", str(tiny[0]), "--store", tiny[1], "--set", "train.epochs=3")
    assert cached(changed) == {"ingest": True, "partition": True, "train": False, "evaluate": False}
    assert changed["stages"]["train"]["key"] != first_run["stages"]["train"]["key"]


def test_a_code_change_reruns_that_stage_and_the_ones_after(first_run, tiny, capsys, monkeypatch):
    import stages.contract

    real = stages.contract.code_digest
    monkeypatch.setattr(stages.contract, "code_digest", lambda package: real(package) + ("-edited" if package == "stages.train" else ""))
    edited = dorylus(capsys, "run", str(tiny[0]), "--store", tiny[1])
    assert cached(edited) == {"ingest": True, "partition": True, "train": False, "evaluate": False}


def test_force_reruns_one_stage_and_only_what_its_output_changes(first_run, tiny, capsys):
    forced = dorylus(capsys, "run", str(tiny[0]), "--store", tiny[1], "--force", "partition")
    assert cached(forced)["ingest"] and not cached(forced)["partition"]
    # partitioning is deterministic: same digest, so train and evaluate are reused
    assert forced["stages"]["partition"]["digest"] == first_run["stages"]["partition"]["digest"]
    assert cached(forced)["train"] and cached(forced)["evaluate"]
    assert main(["run", str(tiny[0]), "--store", tiny[1], "--force", "training"]) == 2
    assert "not a stage of the run" in capsys.readouterr().err


def test_stage_reruns_one_stage_against_the_runs_upstream_artifacts(first_run, tiny, capsys):
    result = dorylus(capsys, "stage", "evaluate", "--run", first_run["lock_file"], "--set", "evaluate.target_accuracy=0.35")
    assert result["stage"] == "evaluate" and result["target_accuracy"] == 0.35 and not result["cached"]
    manifest = json.load(open(f"{result['uri']}/manifest.json"))
    assert manifest["inputs"]["train"]["key"] == first_run["stages"]["train"]["key"]
    assert main(["stage", "evaluate", "--run", first_run["lock_file"], "--set", "train.epochs=9"]) == 2
    assert "does not change stage evaluate" in capsys.readouterr().err


def test_reproduce_reruns_the_lock_into_a_fresh_store_and_compares_digests(first_run, capsys, tmp_path):
    result = dorylus(capsys, "reproduce", first_run["lock_file"], "--store", str(tmp_path / "again"))
    stages = result["stages"]
    assert list(stages) == ["ingest", "partition", "train", "evaluate"]
    assert all(s["uri"].startswith(str(tmp_path / "again")) for s in stages.values())
    # same source files and parameters: the same key and the same bytes
    assert stages["ingest"]["key_matches"] and stages["ingest"]["digest_matches"]
    assert stages["partition"]["key_matches"]
    for name, s in stages.items():  # whatever differs is named, file by file
        assert s["digest_matches"] == (not s["files_differing"]), name
    assert result["all_digests_match"] == all(s["digest_matches"] for s in stages.values())
    assert result["verdict"].startswith("reproduced") == result["all_digests_match"]
    assert result["git"]["locked"] == first_run_lock_commit(first_run) and result["git"]["now"]


def test_human_output_says_where_the_report_is(first_run, tiny, capsys):
    assert main(["run", str(tiny[0]), "--store", tiny[1]]) == 0
    out = capsys.readouterr().out
    assert f"run done: {first_run['report']}" in out


def first_run_lock_commit(run: dict) -> str:
    return json.load(open(run["lock_file"]))["git"]["commit"]


def test_a_run_on_an_s3_store_reuses_its_stages_from_s3(tiny, s3_bucket, capsys, prefect_api):
    store = f"s3://{s3_bucket}/runs"
    first = dorylus(capsys, "run", str(tiny[0]), "--store", store)
    assert all(s["uri"].startswith(f"{store}/") for s in first["stages"].values())
    assert open(first["report"]).read().startswith("# Evaluation")  # a verified local copy
    again = dorylus(capsys, "run", str(tiny[0]), "--store", store)
    assert all(cached(again).values())
