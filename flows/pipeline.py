"""The end-to-end flow: ingest -> partition -> (build) -> train -> evaluate, each a cached task.

A second identical run reuses every stage (their keys are unchanged); after a change to one
stage's code or parameters that stage and the ones after it rerun, because a new output
digest changes every downstream key. ``force`` names stages to rerun regardless. Every run
writes a lock file (see :mod:`flows.lockfile`).

The build stage (the graph-server and Lambda images) runs when ``[build] enabled``: training
here runs the Lambda handler in local processes and needs no image, and without a Docker
engine the build artifact records that it was skipped and why.
"""

from __future__ import annotations

from flows import settings

settings.configure()

from prefect import flow  # noqa: E402

from flows import calls, lockfile, progress, tasks  # noqa: E402
from flows.config import check_config  # noqa: E402
from stages.contract import Artifact  # noqa: E402
from stages.errors import DorylusError  # noqa: E402
from stages.store import ArtifactStore  # noqa: E402


def check_force(force) -> list[str]:
    force = [force] if isinstance(force, str) else list(force or [])
    if "all" in force:
        return list(calls.ORDER)
    unknown = set(force) - set(calls.ORDER)
    if unknown:
        raise DorylusError(f"--force {', '.join(sorted(unknown))}: not a stage of the run; stages: {', '.join(calls.ORDER)}, or all")
    return force


def stage_names(config: dict) -> list[str]:
    """The stages a run of ``config`` goes through, in order."""
    return [n for n in calls.ORDER if n != "build" or config.get("build", {}).get("enabled", False)]


def run_stages(config: dict, store: ArtifactStore, force: list[str], upto: str = "evaluate") -> dict[str, Artifact]:
    """Run the chain up to ``upto`` inside the current flow; returns the artifacts by stage."""
    scheduler = config.get("run", {}).get("scheduler")
    artifacts: dict[str, Artifact] = {}
    names = stage_names(config)
    for name in calls.ORDER[: calls.ORDER.index(upto) + 1]:
        if name not in names:
            continue
        upstream = calls.UPSTREAM[name]
        inputs = {upstream[0]: artifacts[upstream[1]]} if upstream else {}
        with progress.step(name) as outcome:
            artifacts[name] = tasks.run(name, config[name], inputs, store, scheduler, force=name in force)
            outcome["state"] = "cached" if artifacts[name].cached else "done"
    return artifacts


@flow(name="end-to-end", persist_result=False)
def end_to_end(config: dict, force: list[str] | None = None, store: str | None = None) -> dict:
    """Ingest, partition, train and evaluate as configured; returns the run's result."""
    config = check_config(config)
    store_ = ArtifactStore.open(store)
    artifacts = run_stages(config, store_, check_force(force))
    evaluation = artifacts["evaluate"]
    report = evaluation.path() / "report.md"
    tasks.publish_markdown("run-report", report.read_text(), f"evaluation {evaluation.key}")
    lock_path = lockfile.write_lock(lockfile.lock(config, store_.uri, artifacts, {"report": str(report)}))
    return result(artifacts, report, lock_path, store_)


def result(artifacts: dict[str, Artifact], report, lock_path, store: ArtifactStore) -> dict:
    """What ``dorylus run`` prints: where the report is, and the run's key figures."""
    figures = {k: v for k, v in artifacts["evaluate"].summary.items() if k != "report"}
    return {
        "stage": "run",
        "uri": str(report),
        "report": str(report),
        "lock_file": str(lock_path),
        "store": store.uri,
        **figures,
        "stages": {
            name: {"uri": a.uri, "key": a.key, "digest": a.digest, "cached": a.cached} for name, a in artifacts.items()
        },
    }
