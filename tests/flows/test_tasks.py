"""Stages as Prefect tasks: cache keys are stage keys, results are manifests, the store wins.

Runs real ingest and partition stages on Cora against the session's local Prefect server
(PREFECT_HOME in the session's private state folder).
"""

import json
import shutil

import pytest


@pytest.fixture(scope="module")
def cora_spec(datasets):
    return {"source": "planetoid:cora", "root": str(datasets / "planetoid")}


def test_second_run_is_a_prefect_cache_hit_and_results_are_json_manifests(cora_spec, store, prefect_api):
    from prefect import flow

    from flows import tasks
    from flows.settings import prefect_home

    @flow
    def two_runs():
        first = tasks.stage_task.with_options(name="ingest")("ingest", cora_spec, {}, store.uri, return_state=True)
        second = tasks.stage_task.with_options(name="ingest")("ingest", cora_spec, {}, store.uri, return_state=True)
        return first.name, second.name, second.result()

    first, second, result = two_runs()
    assert (first, second) == ("Completed", "Cached")
    key = result["manifest"]["key"]
    records = list((prefect_home() / "results").glob(f"ingest-{key}-*"))
    assert len(records) == 1
    record = json.loads(records[0].read_text())
    assert record["metadata"]["serializer"]["type"] == "json"  # a manifest, not a pickle
    assert json.loads(record["result"])["uri"] == result["uri"]


def test_only_changed_and_forced_stages_rerun_and_the_store_wins(cora_spec, store, prefect_api):
    from prefect import flow

    from flows import tasks

    @flow
    def chain(part_spec: dict, force: list[str]):
        dataset = tasks.run("ingest", cora_spec, {}, store, force="ingest" in force)
        parts = tasks.run("partition", part_spec, {"dataset": dataset}, store, force="partition" in force)
        return dataset, parts

    d1, p1 = chain({"parts": 2, "method": "hash", "seed": 0}, [])
    d2, p2 = chain({"parts": 2, "method": "hash", "seed": 0}, [])
    assert d2.cached and p2.cached and p2.key == p1.key
    d3, p3 = chain({"parts": 2, "method": "hash", "seed": 1}, [])
    assert d3.cached and not p3.cached and p3.key != p1.key
    d4, p4 = chain({"parts": 2, "method": "hash", "seed": 0}, ["partition"])
    assert d4.cached and not p4.cached and p4.key == p1.key
    shutil.rmtree(p1.uri)  # Prefect still remembers it; the store does not
    _, p5 = chain({"parts": 2, "method": "hash", "seed": 0}, [])
    assert not p5.cached and store.has("partition", p1.key)


def test_each_stage_publishes_its_key_figures_as_a_prefect_table(cora_spec, store, prefect_api):
    from prefect import flow
    from prefect.artifacts import Artifact as PrefectArtifact

    from flows import tasks

    @flow
    def one():
        return tasks.run("ingest", cora_spec, {}, store)

    dataset = one()
    table = PrefectArtifact.get("ingest-figures")
    assert table is not None and table.type == "table"
    rows = json.loads(table.data)
    assert {"figure": "key", "value": dataset.key} in rows and {"figure": "num_nodes", "value": 2708} in rows
