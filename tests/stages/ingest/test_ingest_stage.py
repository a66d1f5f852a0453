"""The ingest stage function: caching by source content, --force, and an S3 store."""

from __future__ import annotations

import shutil
from pathlib import Path

import boto3
import numpy as np
import pytest

from stages.config import cache_dir
from stages.contract import resolve_artifact
from stages.errors import DorylusError
from stages.ingest import ingest
from stages.ingest.dataset import IngestedGraph
from stages.store import ArtifactStore


def test_second_run_is_cached(make_npz, store):
    path = make_npz()
    first = ingest("npz:small.npz", str(path.parent), store=store)
    again = ingest("npz:small.npz", str(path.parent), store=store)
    assert not first.cached and again.cached
    assert (again.key, again.uri, again.digest) == (first.key, first.uri, first.digest)
    result = again.result()
    assert result["cached"] is True and result["uri"] == first.uri and result["num_nodes"] == 6
    assert set(first.manifest["outputs"]) == {"edges/part-00000.parquet", "nodes.parquet", "metadata.json"}
    assert first.manifest["params"]["files"] == {"small.npz": first.manifest["params"]["files"]["small.npz"]}


def test_changed_file_or_option_is_a_new_key(make_npz, store):
    path = make_npz()
    first = ingest("npz:small.npz", str(path.parent), store=store)
    make_npz(node_labels=np.array([1, 1, 0, 1, 2, 2]))  # same name, new content
    changed = ingest("npz:small.npz", str(path.parent), store=store)
    assert not changed.cached and changed.key != first.key and changed.digest != first.digest
    kept = ingest("npz:small.npz", str(path.parent), store=store, self_loops="keep")
    directed = ingest("npz:small.npz", str(path.parent), store=store, undirected=False)
    assert len({first.key, changed.key, kept.key, directed.key}) == 4
    assert directed.summary["directed"] and directed.summary["num_edges"] == 5
    assert changed.summary["num_edges"] == 10
    assert len(store.find("")) == 4


def test_force_recomputes(make_npz, store):
    path = make_npz()
    first = ingest("npz:small.npz", str(path.parent), store=store)
    forced = ingest("npz:small.npz", str(path.parent), store=store, force=True)
    assert not forced.cached and forced.key == first.key
    assert forced.manifest["created"] != first.manifest["created"]
    assert forced.digest == first.digest  # the same content, recomputed
    assert resolve_artifact(first.key, store).manifest["created"] == forced.manifest["created"]
    assert [p.name for p in Path(store.uri, "ingest").iterdir()] == [first.key]  # replaced, nothing left over


def test_user_errors_leave_nothing(make_npz, store, assert_nothing_written, tmp_path):
    with pytest.raises(DorylusError, match="unknown source 'graphml:x'.*planetoid:"):
        ingest("graphml:x", str(tmp_path), store=store)
    with pytest.raises(DorylusError, match="unknown source"):
        ingest("cora", str(tmp_path), store=store)
    with pytest.raises(DorylusError, match=r"file .*nothere\.npz does not exist"):
        ingest("npz:nothere.npz", str(tmp_path), store=store)
    with pytest.raises(DorylusError, match="npz:PATH"):
        ingest("npz:", None, store=store)
    assert_nothing_written(store)


def test_s3_store(make_npz, s3_bucket):
    path = make_npz("ons3")
    s3 = ArtifactStore.open(f"s3://{s3_bucket}/runs")
    first = ingest("npz:ons3.npz", str(path.parent), store=s3)
    assert first.uri == f"s3://{s3_bucket}/runs/ingest/{first.key}" and not first.cached
    again = ingest("npz:ons3.npz", str(path.parent), store=s3)
    assert again.cached and again.key == first.key

    found = resolve_artifact(first.key[:10], s3, stage="ingest")
    assert found.uri == first.uri
    local = found.path()  # downloaded and checked against the manifest
    g = IngestedGraph(local)
    assert (g.num_nodes, g.num_edges, g.feature_dim) == (6, 10, 2)
    np.testing.assert_array_equal(g.features(), np.arange(12, dtype=np.float32).reshape(6, 2))

    # a file changed on S3 no longer matches its manifest: the download is refused
    shutil.rmtree(local)
    boto3.client("s3").put_object(Bucket=s3_bucket, Key=f"runs/ingest/{first.key}/nodes.parquet", Body=b"tampered")
    with pytest.raises(DorylusError, match="nodes.parquet does not match its manifest checksum"):
        resolve_artifact(first.key, s3).path()
    assert not (cache_dir("artifacts") / "ingest" / first.key).exists()
