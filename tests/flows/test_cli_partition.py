"""``dorylus partition`` through the real console script: --json, caching, user errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flows.cli import main

DORYLUS = str(Path(sys.executable).parent / "dorylus")


@pytest.fixture(scope="module")
def cora_key(datasets, tmp_path_factory):
    store = tmp_path_factory.mktemp("cli-partition-store")
    from stages.ingest import ingest
    from stages.store import ArtifactStore

    art = ingest("planetoid:cora", str(datasets / "planetoid"), store=ArtifactStore.open(str(store)))
    return str(store), art.key


def test_partition_json_then_cached(cora_key, capsys):
    store, key = cora_key
    assert main(["partition", key[:8], "--parts", "3", "--method", "range", "--store", store, "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["stage"] == "partition" and first["cached"] is False and first["num_parts"] == 3
    assert 0 < first["edge_cut_fraction"] < 1 and first["vertex_balance"] >= 1
    assert Path(first["uri"], "META.json").exists() and Path(first["uri"], "part_2", "in_indptr.npy").exists()
    assert main(["partition", key, "-p", "3", "-m", "range", "--store", store, "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["cached"] is True and again["uri"] == first["uri"]


def test_console_script_and_errors_exit_2_without_traceback(cora_key):
    store, key = cora_key
    env = {**os.environ}
    ok = subprocess.run(
        [DORYLUS, "partition", key, "--parts", "2", "--method", "fennel", "--passes", "1", "--store", store],
        capture_output=True, text=True, env=env,
    )
    assert ok.returncode == 0, ok.stderr
    assert "partition done:" in ok.stdout and "edge_cut_fraction" in ok.stdout
    for args, message in (
        (["--parts", "5000"], "cannot split 2708 vertices into 5000 parts"),
        (["--parts", "0"], "positive integer"),
        (["--parts", "2", "--slack", "0.5"], "slack must be at least 1.0"),
        (["--parts", "2", "--scheduler", "nowhere"], "scheduler 'nowhere' is not understood"),
    ):
        bad = subprocess.run([DORYLUS, "partition", key, *args, "--store", store], capture_output=True, text=True, env=env)
        assert bad.returncode == 2, bad.stderr
        assert message in bad.stderr and "Traceback" not in bad.stderr
    missing = subprocess.run([DORYLUS, "partition", "ffffffffff", "--parts", "2", "--store", store], capture_output=True, text=True)
    assert missing.returncode == 2 and "no artifact 'ffffffffff'" in missing.stderr
