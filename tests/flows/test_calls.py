"""The stage-key probe must give exactly the key the stage then uses."""

from flows import calls


def test_probed_keys_equal_the_artifact_keys(datasets, store):
    ingest_spec = {"source": "planetoid:cora", "root": str(datasets / "planetoid")}
    probed = calls.stage_key("ingest", ingest_spec, {}, store)
    assert not store.has("ingest", probed)  # probing runs nothing
    dataset = calls.CALLS["ingest"](ingest_spec, {}, store, False, None)
    assert dataset.key == probed

    part_spec = {"parts": 2, "method": "hash", "seed": 3}
    probed = calls.stage_key("partition", part_spec, {"dataset": dataset}, store)
    assert calls.CALLS["partition"](part_spec, {"dataset": dataset}, store, False, None).key == probed
    assert calls.stage_key("partition", {**part_spec, "seed": 4}, {"dataset": dataset}, store) != probed
