"""The paper's experiments as flows: presets load, and the small presets run end to end."""

from __future__ import annotations

import csv
import json

import pytest

from flows.cli import main
from flows.experiments import EXPERIMENTS


@pytest.mark.parametrize("preset", ["small", "paper"])
@pytest.mark.parametrize("name", EXPERIMENTS)
def test_every_preset_expands_into_valid_run_configurations(name, preset):
    from flows.calls import train_config
    from flows.experiments.runner import load_experiment

    spec = load_experiment(name, preset)
    assert len(spec["variants"]) >= 2 and spec["title"]
    for variant in spec["variants"].values():
        train_config(variant["config"]["train"])  # every key is a TrainConfig field
    if preset == "paper":
        assert all("CHANGE-ME" in v["config"]["ingest"]["root"] for v in spec["variants"].values())


def test_unknown_experiment_or_preset_is_a_user_error(capsys):
    assert main(["reproduce", "latency"]) == 2
    assert "neither a lock file nor an experiment" in capsys.readouterr().err
    from flows.experiments.runner import load_experiment
    from stages.errors import DorylusError

    with pytest.raises(DorylusError, match="no experiment"):
        load_experiment("latency")


def _run(capsys, name: str, store: str, scheduler: str) -> dict:
    argv = ["reproduce", name, "--preset", "small", "--store", store, "--set", f"run.scheduler={scheduler}", "--json"]
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _rows(result) -> list[dict]:
    return list(csv.DictReader(open(result["table"])))


def test_asynchrony_small_preset_end_to_end(capsys, tmp_path, prefect_api, dask_scheduler):
    from prefect.artifacts import Artifact as PrefectArtifact

    result = _run(capsys, "asynchrony", str(tmp_path / "store"), dask_scheduler)
    rows = _rows(result)
    assert [r["variant"] for r in rows] == ["sync", "s0", "s1"]
    assert [r["staleness"] for r in rows] == ["sync", "0", "1"]
    assert float(rows[0]["speedup"]) == 1.0 and all(float(r["per_epoch_s"]) > 0 for r in rows)
    folder = result["table"].rsplit("/", 1)[0]
    for name in ("table.md", "report.md", "accuracy_epochs.png", "accuracy_time.png", "time_cost_value.png"):
        assert open(f"{folder}/{name}", "rb").read(4)
    assert PrefectArtifact.get("experiment-asynchrony-small-table") is not None
    # the three variants share one ingest and one partition artifact
    manifests = [json.load(open(f"{uri}/manifest.json")) for uri in result["evaluations"].values()]
    trains = [json.load(open(f"{m['inputs']['train']['uri']}/manifest.json")) for m in manifests]
    assert len({t["inputs"]["partitions"]["key"] for t in trains}) == 1


def test_scaling_small_preset_end_to_end(capsys, tmp_path, prefect_api, dask_scheduler):
    result = _run(capsys, "scaling", str(tmp_path / "store"), dask_scheduler)
    rows = _rows(result)
    assert [int(r["graph_servers"]) for r in rows] == [1, 2, 4, 8]
    assert all(float(r["cost_usd"]) > 0 and float(r["value"]) > 0 for r in rows)
