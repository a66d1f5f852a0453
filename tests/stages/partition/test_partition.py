"""The partition stage end to end: every method and P on real and synthetic graphs."""

from __future__ import annotations

import json

import numpy as np
import pytest

from stages.errors import DorylusError
from stages.partition import METHODS, partition
from stages.partition.layout import PartitionSet
from tests.stages.partition.checks import check_partition_set


@pytest.mark.parametrize("dataset", ["cora", "tolokers", "synthetic", "planted"])
@pytest.mark.parametrize("method", METHODS)
def test_parts_rebuild_the_normalized_adjacency(request, part_store, dataset, method):
    data = request.getfixturevalue(dataset)
    for parts in (1, 2, 3, 8):
        art = partition(data.artifact, parts, method, store=part_store)
        ps = check_partition_set(art.path(), data.graph, data.direct)
        meta = ps.meta
        assert meta["num_parts"] == parts and meta["method"] == method
        assert sum(p["num_local"] for p in meta["parts"]) == data.graph.num_nodes
        assert sum(p["num_in_edges"] for p in meta["parts"]) == data.graph.num_edges
        q = meta["quality"]
        cut = sum(int((ps.owner()[ps.part(i).ghosts] != i).sum()) for i in range(parts))
        assert cut == sum(p["num_ghosts"] for p in meta["parts"])
        assert q["replication_factor"] == pytest.approx(cut / data.graph.num_nodes)
        if parts == 1:
            assert q["edge_cut_fraction"] == 0 and q["vertex_balance"] == 1
        else:
            owner = np.asarray(ps.owner())
            src, dst = data.graph.edges()
            assert q["edge_cut_fraction"] == pytest.approx(np.mean(owner[src] != owner[dst]))
        for key in ("edge_cut_fraction", "replication_factor", "vertex_balance", "edge_balance", "seconds", "peak_memory_bytes"):
            assert key in art.summary


def test_streaming_beats_hash_and_balances(cora, tolokers, synthetic, planted, part_store):
    for data in (cora, tolokers, synthetic, planted):
        for parts in (3, 8):
            fennel = partition(data.artifact, parts, "fennel", store=part_store)
            hashed = partition(data.artifact, parts, "hash", store=part_store)
            assert fennel.summary["edge_cut_fraction"] < 0.8 * hashed.summary["edge_cut_fraction"]
            # the hard cap: a part's work (in-edges plus self loops) is at most 1.1 x the mean
            meta = PartitionSet(fennel.path()).meta
            work = [p["num_in_edges"] + p["num_local"] for p in meta["parts"]]
            assert max(work) <= 1.1 * sum(work) / parts + 1e-6


def test_cached_and_deterministic(cora, part_store):
    first = partition(cora.artifact, 3, "fennel", store=part_store, seed=5)
    again = partition(cora.artifact, 3, "fennel", store=part_store, seed=5)
    assert again.cached and again.uri == first.uri
    rerun = partition(cora.artifact, 3, "fennel", store=part_store, seed=5, force=True)
    assert not rerun.cached and rerun.digest == first.digest
    other = partition(cora.artifact, 3, "fennel", store=part_store, seed=6)
    assert other.key != first.key
    assert partition(cora.artifact, 3, "fennel", store=part_store, seed=5, slack=1.2).key != first.key


def test_by_key_and_uri(cora, part_store):
    by_key = partition(cora.artifact.key[:10], 2, "range", store=part_store)
    by_uri = partition(cora.artifact.uri, 2, "range", store=part_store)
    assert by_key.uri == by_uri.uri
    meta = PartitionSet(by_key.path()).meta
    # no URI: the partition's content must not depend on where the store is
    assert meta["dataset"] == {"key": cora.artifact.key, "digest": cora.artifact.digest}


def test_local_cluster_gives_the_same_artifact(planted, part_store, tmp_path):
    from stages.store import ArtifactStore

    store = ArtifactStore.open(str(tmp_path / "store"))
    here = partition(planted.artifact, 3, "hash", store=store, scheduler="inprocess")
    dask = partition(planted.artifact, 3, "hash", store=store, scheduler="local", force=True)
    assert dask.summary["executor"].startswith("LocalCluster")
    assert dask.digest == here.digest
    check_partition_set(dask.path(), planted.graph, planted.direct)


def test_scheduler_address(planted, tmp_path):
    from distributed import LocalCluster

    from stages.store import ArtifactStore

    store = ArtifactStore.open(str(tmp_path / "store"))
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=True, host="127.0.0.1", dashboard_address="127.0.0.1:0") as cluster:
        art = partition(planted.artifact, 4, "fennel", store=store, scheduler=cluster.scheduler_address)
    assert art.summary["executor"] == cluster.scheduler_address
    check_partition_set(art.path(), planted.graph, planted.direct)


def test_user_errors_leave_nothing(cora, part_store, tmp_path, monkeypatch):
    from stages.partition import executor
    from stages.store import ArtifactStore

    monkeypatch.setattr(executor, "CONNECT_TIMEOUT", "1s")  # nothing listens there: fail fast
    store = ArtifactStore.open(str(tmp_path / "store"))
    n = cora.graph.num_nodes
    with pytest.raises(DorylusError, match=f"at most {n} parts"):
        partition(cora.artifact, n + 1, "hash", store=store)
    for bad in (0, -2, 2.5, "3"):
        with pytest.raises(DorylusError, match="positive integer"):
            partition(cora.artifact, bad, "hash", store=store)
    with pytest.raises(DorylusError, match="unknown partition method 'kmeans'"):
        partition(cora.artifact, 2, "kmeans", store=store)
    with pytest.raises(DorylusError, match="slack"):
        partition(cora.artifact, 2, "fennel", store=store, slack=0.5)
    with pytest.raises(DorylusError, match="no artifact"):
        partition("0123456789abcdef", 2, "hash", store=store)
    with pytest.raises(DorylusError, match="scheduler 'nowhere'"):
        partition(cora.artifact, 2, "hash", store=store, scheduler="nowhere")
    with pytest.raises(DorylusError, match="cannot reach the Dask scheduler"):
        partition(cora.artifact, 2, "hash", store=store, scheduler="tcp://127.0.0.1:9")
    assert not (tmp_path / "store" / "partition").exists() or not any((tmp_path / "store" / "partition").iterdir())


def test_partition_of_a_partition_is_refused(cora, part_store):
    art = partition(cora.artifact, 2, "hash", store=part_store)
    with pytest.raises(DorylusError, match="'partition' artifact"):
        partition(art.uri, 2, "hash", store=part_store)


def test_p_equals_n(part_store):
    from tests.stages.partition.conftest import Dataset, ingest_source, planted_graph

    tiny = Dataset(ingest_source(planted_graph(n=40, communities=2, out_degree=3, seed=1), part_store))
    for method in ("hash", "range"):
        art = partition(tiny.artifact, 40, method, store=part_store)
        ps = check_partition_set(art.path(), tiny.graph, tiny.direct)
        if method == "range":
            assert [p["num_local"] for p in ps.meta["parts"]] == [1] * 40
    meta = json.loads((art.path() / "META.json").read_text())
    assert meta["quality"]["edge_cut_fraction"] == 1.0


def test_s3_store(cora, s3_bucket):
    """Into a real S3 endpoint (moto's server): uploaded, then read back through a verified download."""
    from stages.store import ArtifactStore

    store = ArtifactStore.open(f"s3://{s3_bucket}/artifacts")
    art = partition(cora.artifact, 2, "range", store=store)
    assert art.uri.startswith("s3://")
    again = partition(cora.artifact, 2, "range", store=store)
    assert again.cached
    check_partition_set(again.path(), cora.graph, cora.direct)
