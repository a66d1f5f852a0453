"""The stage contract: keys, caching, manifests, failure cleanup, resolving references."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stages.contract import Stage, resolve_artifact, run_stage, stage_key
from stages.errors import DorylusError


def _write_numbers(ctx):
    n = ctx.params["n"]
    with ctx.timer("write"):
        (ctx.out / "numbers.txt").write_text("\n".join(map(str, range(n))))
    return {"count": n}


def _fail_halfway(ctx):
    (ctx.out / "partial.txt").write_text("half")
    raise DorylusError("bad input: fix it")


NUMBERS = Stage(name="numbers", version="1", package="stages.store", run=_write_numbers)
FAILING = Stage(name="failing", version="1", package="stages.store", run=_fail_halfway)


def _summing(ctx):
    text = (ctx.inputs["numbers"].path() / "numbers.txt").read_text()
    (ctx.out / "sum.txt").write_text(str(sum(map(int, text.split()))))
    return {}


SUM = Stage(name="sum", version="1", package="stages.store", run=_summing)


def test_second_run_is_a_cache_hit_with_the_same_key(store):
    first = run_stage(NUMBERS, {"n": 5}, store=store)
    second = run_stage(NUMBERS, {"n": 5}, store=store)
    assert not first.cached and second.cached
    assert first.key == second.key and first.uri == second.uri
    assert second.summary == {"count": 5}


def test_key_changes_with_params_version_and_inputs(store):
    a = run_stage(NUMBERS, {"n": 5}, store=store)
    b = run_stage(NUMBERS, {"n": 6}, store=store)
    assert a.key != b.key
    bumped = Stage(name="numbers", version="2", package="stages.store", run=_write_numbers)
    assert stage_key(bumped, {"n": 5}, {}) != a.key
    s1 = run_stage(SUM, {}, inputs={"numbers": a}, store=store)
    s2 = run_stage(SUM, {}, inputs={"numbers": b}, store=store)
    assert s1.key != s2.key
    assert (Path(s2.uri) / "sum.txt").read_text() == str(sum(range(6)))


def test_manifest_records_what_the_contract_promises(store):
    art = run_stage(NUMBERS, {"n": 3}, store=store)
    manifest = json.loads((Path(art.uri) / "manifest.json").read_text())
    for field in ("stage", "version", "key", "code_digest", "params", "inputs", "outputs", "digest",
                  "timings", "peak_memory_bytes", "host", "libraries", "summary"):
        assert field in manifest, field
    entry = manifest["outputs"]["numbers.txt"]
    assert entry["size"] == len("0\n1\n2")
    assert manifest["timings"]["write"] >= 0 and manifest["timings"]["total"] >= manifest["timings"]["write"]
    assert manifest["peak_memory_bytes"] > 0
    assert "numpy" in manifest["libraries"]


def test_force_recomputes_and_replaces(store):
    first = run_stage(NUMBERS, {"n": 4}, store=store)
    marker = Path(first.uri) / "numbers.txt"
    marker.write_text("tampered")
    forced = run_stage(NUMBERS, {"n": 4}, store=store, force=True)
    assert not forced.cached and forced.uri == first.uri
    assert marker.read_text() == "0\n1\n2\n3"


def test_failure_leaves_nothing_behind(store):
    with pytest.raises(DorylusError, match="bad input"):
        run_stage(FAILING, {}, store=store)
    leftovers = list(Path(store.uri).rglob("*"))
    assert [p for p in leftovers if p.is_file()] == []


def test_resolve_by_uri_key_prefix_and_stage(store):
    art = run_stage(NUMBERS, {"n": 2}, store=store)
    assert resolve_artifact(art.uri, store).key == art.key
    assert resolve_artifact(art.key[:8], store).uri == art.uri
    with pytest.raises(DorylusError, match="is a 'numbers' artifact"):
        resolve_artifact(art.key, store, stage="ingest")
    with pytest.raises(DorylusError, match="no artifact"):
        resolve_artifact("ffffffffff", store)


def test_ambiguous_key_prefix_is_an_error(store):
    keys = [run_stage(NUMBERS, {"n": n}, store=store).key for n in range(40)]
    shared = next(k[:1] for k in keys if sum(other.startswith(k[:1]) for other in keys) > 1)
    with pytest.raises(DorylusError, match="ambiguous"):
        resolve_artifact(shared, store)


def test_s3_store_publishes_caches_and_downloads_verified(moto_server, s3_bucket):
    import boto3

    from stages.store import ArtifactStore

    s3 = ArtifactStore.open(f"s3://{s3_bucket}/runs")
    art = run_stage(NUMBERS, {"n": 7}, store=s3)
    assert art.uri == f"s3://{s3_bucket}/runs/numbers/{art.key}"
    assert run_stage(NUMBERS, {"n": 7}, store=s3).cached
    found = resolve_artifact(art.key[:10], s3)
    assert (found.path() / "numbers.txt").read_text() == "\n".join(map(str, range(7)))
    # a downstream stage reads it through the verified local copy
    total = run_stage(SUM, {}, inputs={"numbers": found}, store=s3)
    key = f"runs/sum/{total.key}/sum.txt"
    assert boto3.client("s3").get_object(Bucket=s3_bucket, Key=key)["Body"].read() == b"21"


def test_s3_download_detects_a_corrupt_object(moto_server, s3_bucket, dorylus_home):
    import boto3

    from stages.store import ArtifactStore

    s3 = ArtifactStore.open(f"s3://{s3_bucket}/x")
    art = run_stage(NUMBERS, {"n": 9}, store=s3)
    boto3.client("s3").put_object(Bucket=s3_bucket, Key=f"x/numbers/{art.key}/numbers.txt", Body=b"evil")
    with pytest.raises(DorylusError, match="checksum"):
        resolve_artifact(art.uri, s3).path()
