"""How the flows call each stage: from a configuration table and upstream artifacts to an artifact.

One function per stage, all with the same shape ``call(spec, inputs, store, force,
scheduler) -> Artifact`` so flows, ``dorylus stage`` and the stage-key probe treat them
alike. ``inputs`` maps the stage's input names to upstream artifacts. No Prefect here.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Callable

from stages.contract import Artifact
from stages.errors import DorylusError
from stages.store import ArtifactStore

ORDER = ("ingest", "partition", "build", "train", "evaluate")
# the upstream stage each stage reads, under the input name the stage expects; build reads
# no artifact (its key is the images' content digests) and runs only when [build] enabled
UPSTREAM = {"ingest": None, "partition": ("dataset", "ingest"), "build": None, "train": ("partitions", "partition"), "evaluate": ("train", "train")}
BUILD_OPTIONS = ("push", "require_images", "base_image", "python_version", "repository_prefix")


def call_ingest(spec: dict, inputs: dict, store: ArtifactStore, force: bool, scheduler: str | None) -> Artifact:
    from stages.ingest import ingest

    return ingest(
        spec["source"],
        spec.get("root") or None,
        store=store,
        options=spec.get("options") or {},
        undirected=spec.get("undirected"),
        dedupe=spec.get("dedupe", True),
        self_loops=spec.get("self_loops", "drop"),
        force=force,
    )


def call_partition(spec: dict, inputs: dict, store: ArtifactStore, force: bool, scheduler: str | None) -> Artifact:
    from stages.partition import partition

    kwargs = {k: spec[k] for k in ("seed", "slack", "passes") if k in spec}
    return partition(inputs["dataset"], int(spec.get("parts", 2)), spec.get("method", "fennel"), store=store, scheduler=scheduler, force=force, **kwargs)


def call_build(spec: dict, inputs: dict, store: ArtifactStore, force: bool, scheduler: str | None) -> Artifact:
    from stages.build import build

    return build(store=store, force=force, **{k: spec[k] for k in BUILD_OPTIONS if k in spec})


def train_config(spec: dict):
    from stages.train.config import TrainConfig

    known = {f.name for f in fields(TrainConfig)}
    unknown = set(spec) - known
    if unknown:
        raise DorylusError(f"unknown key(s) {', '.join(sorted(unknown))} in [train]; known: {', '.join(sorted(known))}")
    return TrainConfig.from_params(spec)


def call_train(spec: dict, inputs: dict, store: ArtifactStore, force: bool, scheduler: str | None) -> Artifact:
    from stages.train import train

    return train(inputs["partitions"], train_config(spec), store=store, scheduler=scheduler, force=force)


def call_evaluate(spec: dict, inputs: dict, store: ArtifactStore, force: bool, scheduler: str | None) -> Artifact:
    from stages.evaluate import evaluate

    return evaluate(
        inputs["train"],
        store=store,
        pricing=spec.get("pricing"),
        target_accuracy=spec.get("target_accuracy"),
        target_metric=spec.get("target_metric", "test_acc"),
        graph_instance=spec.get("graph_instance"),
        parameter_instance=spec.get("parameter_instance"),
        force=force,
    )


def call_baseline(spec: dict, inputs: dict, store: ArtifactStore, force: bool, scheduler: str | None) -> Artifact:
    from stages.evaluate.sage_baseline import sage_baseline

    return sage_baseline(inputs["dataset"], spec, store=store, force=force)


CALLS: dict[str, Callable[..., Artifact]] = {
    "ingest": call_ingest,
    "partition": call_partition,
    "build": call_build,
    "train": call_train,
    "evaluate": call_evaluate,
    "baseline": call_baseline,  # experiments only: the sampling baseline trainer
}


class _KeyFound(Exception):
    def __init__(self, key: str):
        self.key = key


class _KeyProbe(ArtifactStore):
    """A store that stops ``run_stage`` the moment it has computed the stage key.

    A stage's key depends on the parameters its entry point derives (ingest hashes the
    files it will read, train resolves its defaults), so the only faithful way to learn the
    key before running is to let that entry point build them and stop right there.
    ``run_stage`` asks the store for the artifact's URI before doing any work.
    """

    def artifact_uri(self, stage: str, key: str) -> str:
        raise _KeyFound(key)


def stage_key(name: str, spec: dict, inputs: dict, store: ArtifactStore) -> str:
    """The key ``name`` would have with this configuration and these inputs (nothing runs)."""
    try:
        CALLS[name](spec, inputs, _KeyProbe(store.uri), False, None)
    except _KeyFound as found:
        return found.key
    raise RuntimeError(f"stage {name} returned without computing a key")  # pragma: no cover
