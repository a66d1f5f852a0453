"""``dorylus ingest``: --json output, caching, the cleaning flags, an S3 store, and user
errors (exit 2, one line, no traceback). The real console script runs in a subprocess;
the flag tests call ``flows.cli.main`` in-process."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from flows.cli import main
from stages.ingest.dataset import IngestedGraph

REPO = Path(__file__).resolve().parents[2]


def dorylus(*args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("dorylus", path=str(Path(sys.executable).parent))
    cmd = [exe] if exe else [sys.executable, "-m", "flows.cli"]
    return subprocess.run([*cmd, *args], cwd=REPO, capture_output=True, text=True, timeout=120)


@pytest.fixture
def small_npz(tmp_path) -> Path:
    """6 nodes on a path 0-1-2-3-4-5, a self loop on 5, and the edge 0-1 listed twice."""
    path = tmp_path / "data" / "small.npz"
    path.parent.mkdir()
    np.savez(
        path,
        node_features=np.ones((6, 3), np.float32),
        node_labels=np.array([0, 1, 0, 1, 0, 1]),
        edges=np.array([[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [5, 5], [1, 0]]),
        train_masks=np.array([[1, 1, 0, 0, 0, 0]], bool),
        val_masks=np.array([[0, 0, 1, 1, 0, 0]], bool),
        test_masks=np.array([[0, 0, 0, 0, 1, 1]], bool),
    )
    return path


def test_json_and_cache(small_npz, tmp_path):
    store = tmp_path / "store"
    args = ("ingest", "npz:small.npz", "--root", str(small_npz.parent), "--store", str(store), "--json")
    first = dorylus(*args)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.strip().splitlines()
    assert len(lines) == 1
    result = json.loads(lines[0])
    assert result["stage"] == "ingest" and result["cached"] is False
    assert (result["num_nodes"], result["num_edges"], result["feature_dim"], result["num_classes"]) == (6, 10, 3, 2)
    assert Path(result["uri"]) == store / "ingest" / result["key"]
    assert IngestedGraph(result["uri"]).num_edges == 10

    again = json.loads(dorylus(*args).stdout)
    assert again["cached"] is True and again["key"] == result["key"]


def test_user_error_is_one_line_and_exit_2(tmp_path):
    done = dorylus("ingest", "npz:missing.npz", "--root", str(tmp_path), "--store", str(tmp_path / "store"), "--json")
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "missing.npz does not exist" in lines[0]
    assert "Traceback" not in done.stderr
    assert not any((tmp_path / "store").rglob("*.parquet"))


@pytest.mark.parametrize("argv, message", [
    (["ingest", "graphml:g.xml"], "unknown source 'graphml:g.xml'"),
    (["ingest", "planetoid:cora"], "pass --root FOLDER"),
    (["ingest", "planetoid:nell", "--root", "."], "planetoid dataset 'nell' is not known"),
])
def test_user_errors_in_process(argv, message, tmp_path, capsys):
    assert main([*argv, "--store", str(tmp_path / "store")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0]


@pytest.mark.parametrize("flags, edges, directed, loops", [
    ([], 10, False, "drop"),  # path of 5 edges, both directions; loop and duplicate gone
    (["--self-loops", "keep"], 11, False, "keep"),
    (["--directed"], 6, True, "drop"),  # as listed: 0-1, 1-0, 1-2, 2-3, 3-4, 4-5
    (["--directed", "--keep-duplicates", "--self-loops", "keep"], 7, True, "keep"),
    (["--keep-duplicates"], 12, False, "drop"),  # 0-1 and 1-0 each listed twice
])
def test_cleaning_flags(small_npz, tmp_path, capsys, flags, edges, directed, loops):
    argv = ["ingest", "npz:small.npz", "--root", str(small_npz.parent), "--store", str(tmp_path / "s"), "--json", *flags]
    assert main(argv) == 0
    result = json.loads(capsys.readouterr().out)
    meta = IngestedGraph(result["uri"]).meta
    assert result["num_edges"] == meta["num_edges"] == edges
    assert result["directed"] is directed is meta["directed"]
    assert meta["self_loops"] == {"in_source": 1, "policy": loops}
    assert meta["dedupe"] is ("--keep-duplicates" not in flags)


def test_s3_store(small_npz, s3_bucket):
    store = f"s3://{s3_bucket}/cli"
    args = ("ingest", "npz:small.npz", "--root", str(small_npz.parent), "--store", store, "--json")
    first = dorylus(*args)  # the moto fixture's AWS_* environment is inherited
    assert first.returncode == 0, first.stderr
    result = json.loads(first.stdout)
    assert result["uri"] == f"{store}/ingest/{result['key']}" and result["cached"] is False
    again = json.loads(dorylus(*args).stdout)
    assert again["cached"] is True and again["uri"] == result["uri"], (result, again)
