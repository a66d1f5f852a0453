"""The stages as Prefect tasks, cached by their stage keys.

Each task runs one stage through :mod:`flows.calls` and returns the artifact's URI and
manifest: a small JSON document, never data. Its Prefect cache key *is* the stage key
(stage name, version, code digest, parameters, input digests; no run id), so the Prefect
UI shows a reused stage as ``Cached``. The artifact store stays the source of truth: a
Prefect cache hit on an artifact that has gone from the store is run again, and a fresh
Prefect home still reuses every artifact (``run_stage`` finds it by key).
"""

from __future__ import annotations

from flows import settings

settings.configure()

from prefect import task  # noqa: E402
from prefect.artifacts import create_markdown_artifact, create_table_artifact  # noqa: E402
from prefect.context import TaskRunContext  # noqa: E402

from flows import calls  # noqa: E402
from stages.contract import Artifact  # noqa: E402
from stages.hashing import sha256_json  # noqa: E402
from stages.store import MANIFEST, ArtifactStore, exists, join, read_manifest  # noqa: E402


def _inputs(inputs: dict[str, dict]) -> dict[str, Artifact]:
    # the manifest is re-read from the store: a cached Prefect result could be older than
    # a forced rerun made outside Prefect
    return {name: Artifact(ref["uri"], read_manifest(ref["uri"]), cached=True) for name, ref in inputs.items()}


def stage_cache_key(context: TaskRunContext, parameters: dict) -> str:
    """``<stage>-<stage key>-<store>``: the stage key, computed by the stage's own entry point.

    The store's name is appended because the cached result is the artifact's location: the
    same stage key in another store (a reproduction) is another artifact.
    """
    name, store = parameters["name"], ArtifactStore.open(parameters["store"])
    key = calls.stage_key(name, parameters["spec"], _inputs(parameters["inputs"]), store)
    return f"{name}-{key}-{sha256_json(store.uri)[:8]}"


@task(
    cache_key_fn=stage_cache_key,
    persist_result=True,
    result_serializer="json",  # results are manifests: plain JSON, never pickles
    task_run_name="{name}",
)
def stage_task(name: str, spec: dict, inputs: dict[str, dict], store: str, scheduler: str | None = None, force: bool = False) -> dict:
    artifact = calls.CALLS[name](spec, _inputs(inputs), ArtifactStore.open(store), force, scheduler)
    return {"uri": artifact.uri, "cached": artifact.cached, "manifest": artifact.manifest}


def run(name: str, spec: dict, inputs: dict[str, Artifact], store: ArtifactStore, scheduler: str | None = None, force: bool = False) -> Artifact:
    """Run one stage as a Prefect task (inside a flow) and publish its key figures."""
    task_ = stage_task.with_options(name=name, refresh_cache=True) if force else stage_task.with_options(name=name)
    refs = {k: {"uri": a.uri, "digest": a.digest} for k, a in inputs.items()}
    state = task_(name, spec, refs, store.uri, scheduler, force, return_state=True)
    result = state.result()
    if state.name == "Cached" and not exists(join(result["uri"], MANIFEST)):
        # Prefect remembers an artifact the store no longer has: the store wins
        state = task_.with_options(refresh_cache=True)(name, spec, refs, store.uri, scheduler, force, return_state=True)
        result = state.result()
    # reused: a Prefect cache hit, or a run whose stage found its artifact in the store
    cached = state.name == "Cached" or bool(result["cached"])
    artifact = Artifact(result["uri"], read_manifest(result["uri"]), cached=cached)
    publish(artifact)
    return artifact


def publish(artifact: Artifact) -> None:
    """The stage's key figures as a Prefect table artifact (keys: lowercase, digits, dashes)."""
    rows = [{"figure": k, "value": v if isinstance(v, (int, float, str, bool)) or v is None else str(v)} for k, v in artifact.result().items()]
    create_table_artifact(table=rows, key=f"{artifact.stage}-figures", description=f"{artifact.stage} {artifact.key}: key figures")


def publish_markdown(key: str, markdown: str, description: str) -> None:
    create_markdown_artifact(markdown=markdown, key=key, description=description)
