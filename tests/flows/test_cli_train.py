"""``dorylus train`` end to end: the real console command on a real partition artifact."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

DORYLUS = str(Path(sys.executable).parent / "dorylus")


@pytest.fixture(scope="module")
def cora_partitions(datasets, tmp_path_factory):
    from stages.ingest import ingest
    from stages.partition import partition
    from stages.store import ArtifactStore

    store = ArtifactStore.open(str(tmp_path_factory.mktemp("cli-train-store")))
    art = partition(ingest("planetoid:cora", str(datasets / "planetoid"), store=store), 2, "fennel", store=store,
                    scheduler="inprocess")
    return store, art


def test_train_json(cora_partitions):
    store, parts = cora_partitions
    out = subprocess.run(
        [DORYLUS, "train", parts.key, "--store", store.uri, "--epochs", "3", "--intervals", "2", "--json"],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["stage"] == "train" and result["epochs_run"] == 3
    folder = Path(result["uri"])
    assert {"metrics.jsonl", "weights.pt", "predictions.npz", "summary.json"} <= {p.name for p in folder.iterdir()}
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["num_parts"] == 2 and summary["backend"] == "cpu" and summary["staleness"] == "sync"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--staleness", "soon"], "staleness"),
        (["--dropout", "1.5"], "dropout"),
        (["--hidden", "16,x"], "--hidden"),
        (["--latency-ms", "20"], "local backend"),
    ],
)
def test_bad_settings_exit_2_with_a_message(cora_partitions, args, message, capsys):
    from flows.cli import main

    store, parts = cora_partitions
    assert main(["train", parts.key, "--store", store.uri, *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_not_a_partition_artifact(cora_partitions, capsys):
    from flows.cli import main

    store, _ = cora_partitions
    assert main(["train", "nosuchkey", "--store", store.uri]) == 2
    assert "no artifact" in capsys.readouterr().err
